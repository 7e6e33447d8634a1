"""Readers turn real files into clean text, or refuse them with a reason in plain words.

Every file here is made in the test (fpdf2, python-docx, zipfile, raw bytes), so each case
says what the file is.
"""

from __future__ import annotations

import json
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.domain.chunks import MAX_SOURCE_ID_CHARS, storable_text_problem
from core.ingest.limits import DEFAULT_MAX_BYTES
from core.ingest.names import sanitise_source_id
from core.ingest.plain_text import clean_text, decode_text
from core.ingest.readers import file_kind, read_file
from core.ingest.results import ReadError
from tests.fixtures.files import docx_bytes, image_only_pdf_bytes, pdf_bytes, zip_bytes


def refused(name: str, data: bytes) -> str:
    with pytest.raises(ReadError) as caught:
        read_file(name, data)
    return caught.value.reason


def only_text(name: str, data: bytes) -> str:
    (document,) = read_file(name, data).documents
    return document.text


# --- plain text and Markdown ---------------------------------------------------------------


def test_utf8_text_is_read_as_is_and_its_byte_order_mark_dropped() -> None:
    assert only_text("notes.txt", "Résumé of the wing tests.\n".encode()) == (
        "Résumé of the wing tests.\n"
    )
    assert only_text("notes.md", b"\xef\xbb\xbf# Title\n\nBody") == "# Title\n\nBody"


def test_latin1_text_is_detected_and_decoded_without_mojibake() -> None:
    text = "Café naïve, résumé à la crème brûlée; garçon, façade, déjà vu. " * 3
    result = read_file("legacy.txt", text.encode("latin-1"))
    assert result.documents[0].text == text
    assert result.notes == ["decoded as Windows-1252 (not UTF-8)"]


def test_other_legacy_encodings_are_left_to_detection() -> None:
    text = "Příliš žluťoučký kůň úpěl ďábelské ódy. " * 3
    result = read_file("czech.txt", text.encode("cp1250"))
    assert result.documents[0].text == text
    assert result.notes == ["decoded as cp1250 (detected; not UTF-8)"]


def test_utf16_text_with_a_byte_order_mark_is_decoded() -> None:
    assert only_text("wide.txt", "Flutter of panels".encode("utf-16")) == "Flutter of panels"


def test_a_few_invalid_bytes_in_utf8_text_become_replacement_characters_and_are_noted() -> None:
    data = "Über die Grenzschicht — Messungen. ".encode() * 4 + b"\xff end"
    result = read_file("mostly-utf8.txt", data)
    assert result.documents[0].text.startswith("Über die Grenzschicht")
    assert result.documents[0].text.endswith("\ufffd end")
    assert result.notes == ["replaced 1 invalid UTF-8 byte sequence with U+FFFD"]


def test_an_empty_file_is_refused_saying_it_is_empty() -> None:
    assert refused("empty.txt", b"") == "the file is empty — nothing stored"


def test_a_whitespace_only_file_is_refused_saying_so() -> None:
    assert refused("blank.md", b" \n\t\r\n  ") == "the file has only whitespace — nothing stored"


def test_binary_junk_named_txt_is_refused_as_not_text() -> None:
    junk = bytes(range(256)) * 8 + os.urandom(4096)
    assert refused("photo.txt", junk).startswith("not text")


def test_nul_bytes_in_text_are_removed_and_reported_so_the_passage_can_be_stored() -> None:
    data = b"The wing\x00 was tested in the tunnel.\x00 Lift rose with incidence." * 3
    result = read_file("nul.txt", data)
    text = result.documents[0].text
    assert "\x00" not in text and storable_text_problem(text) is None
    assert text.startswith("The wing was tested in the tunnel. Lift rose")
    assert result.notes == ["removed 6 NUL characters"]


def test_lone_surrogates_are_replaced_so_the_text_is_storable() -> None:
    text, notes = clean_text("half a pair \ud83d here")
    assert text == "half a pair \ufffd here" and storable_text_problem(text) is None
    assert notes == ["replaced unpaired UTF-16 surrogates with U+FFFD"]


def test_a_fifty_megabyte_text_file_loads_whole() -> None:
    line = "Measurements of the boundary layer on a flat plate at Mach 2.5, run {}.\n"
    data = "".join(line.format(i) for i in range(700_000)).encode()
    assert 50_000_000 <= len(data) < DEFAULT_MAX_BYTES
    (document,) = read_file("big.txt", data).documents
    assert len(document.text) == len(data)


def test_a_file_over_the_size_limit_is_refused_before_reading_with_both_sizes() -> None:
    with pytest.raises(ReadError, match=r"file too large: 2\.0 MB, the limit is 1\.0 MB") as err:
        read_file("big.txt", b"x" * (2 * 1024 * 1024), max_bytes=1024 * 1024)
    # The refusal names the setting that raises the limit (a 556 MB BEIR corpus met it in
    # ``load`` with no word on how to get past it).
    assert "LEXPLAIN_MAX_UPLOAD_MB" in str(err.value)


def test_an_unsupported_extension_is_refused_naming_what_is_supported() -> None:
    reason = refused("slides.pptx", b"whatever")
    assert reason.startswith("unsupported file type .pptx (supported: ")
    assert "docx" in reason and "jsonl" in reason


def test_decoding_text_never_guesses_binary_as_text() -> None:
    with pytest.raises(ReadError):
        decode_text(b"\x00\x01\x02\x03" * 500)


# --- HTML --------------------------------------------------------------------------------

HOSTILE_HTML = b"""<!doctype html>
<html><head><title>Wing  report</title>
<style>body { color: red }</style>
<script>document.write("SCRIPT-TEXT"); fetch("http://example.invalid/steal")</script>
</head>
<body onload="alert('ONLOAD-TEXT')">
<h1>Results</h1>
<p>The <b>lift</b> rose<br>with incidence.</p>
<img src="http://example.invalid/pixel.png" onerror="alert('ONERROR-TEXT')">
<noscript>NOSCRIPT-TEXT</noscript>
<template><p>TEMPLATE-TEXT</p></template>
<div hidden>HIDDEN-TEXT</div>
<a href="javascript:alert(1)" onclick="steal()">a link</a>
<!-- COMMENT-TEXT -->
<script type="text/javascript">var x = "SECOND-SCRIPT";</script>
</body></html>"""


def test_html_keeps_visible_text_only_with_paragraph_breaks_and_the_title() -> None:
    (document,) = read_file("report.html", HOSTILE_HTML).documents
    assert document.text == "Results\n\nThe lift rose\nwith incidence.\n\na link"
    assert document.title == "Wing report"


def test_script_style_and_event_handler_text_never_reaches_the_passage() -> None:
    text = only_text("report.htm", HOSTILE_HTML)
    for hidden in ("SCRIPT", "ONLOAD", "ONERROR", "NOSCRIPT", "TEMPLATE", "HIDDEN", "COMMENT"):
        assert hidden not in text
    assert "color: red" not in text and "alert" not in text and "example.invalid" not in text


def test_html_with_a_declared_charset_is_decoded_with_it() -> None:
    page = '<meta charset="iso-8859-1"><p>Café crème</p>'.encode("latin-1")
    assert only_text("menu.html", page) == "Café crème"


def test_html_with_nothing_visible_is_refused() -> None:
    assert refused("empty.html", b"<html><script>x()</script></html>") == (
        "the file has no visible text — nothing stored"
    )


def test_a_hundred_thousand_nested_divs_are_read_in_one_linear_pass() -> None:
    # 1.1 MB; the tree-building reader took more than 300 s (quadratic in the depth).
    page = ("<div>" * 100_000 + "deep text" + "</div>" * 100_000).encode()
    assert only_text("nested.html", page) == "deep text"


def test_hostile_markup_that_stalls_the_stdlib_html_parser_is_read_at_once() -> None:
    # html.parser (Python 3.11) needs about a minute for 50,000 unterminated comments.
    page = ("<p>kept</p>" + "<!--" * 50_000).encode()
    assert only_text("comments.html", page) == "kept"


def test_hidden_text_deep_inside_nested_elements_stays_hidden() -> None:
    page = ("<div>" * 5_000 + "<span hidden>SECRET</span>shown" + "</div>" * 5_000).encode()
    assert only_text("deep.html", page) == "shown"


@pytest.mark.parametrize("extension", ["txt", "md", "html", "htm", "jsonl"])
def test_random_bytes_are_refused_whatever_the_extension(extension: str) -> None:
    noise = random.Random(8).randbytes(8192)
    refused(f"noise.{extension}", noise)


@pytest.mark.parametrize("extension", ["txt", "html"])
def test_utf8_with_one_bad_byte_sequence_is_read_as_utf8_and_the_repair_noted(
    extension: str,
) -> None:
    # Read as Windows-1252 before: "Müller" became "MÃ¼ller".
    data = "<p>Müller sagt hallo".encode() + b"\xff\xfe" + " und tschüs</p>".encode()
    result = read_file(f"greeting.{extension}", data)
    assert "Müller sagt hallo\ufffd\ufffd und tschüs" in result.documents[0].text
    assert result.notes == ["replaced 1 invalid UTF-8 byte sequence with U+FFFD"]


# --- PDF ---------------------------------------------------------------------------------


def test_pdf_pages_become_paragraphs_and_their_starts_are_kept() -> None:
    (document,) = read_file(
        "paper.pdf", pdf_bytes(["Page one text.", "Page two text."], title="A paper")
    ).documents
    assert document.text == "Page one text.\n\nPage two text."
    assert document.title == "A paper"
    assert document.metadata["page_starts"] == [0, 16]


def test_a_truncated_pdf_is_refused_and_nothing_is_half_read() -> None:
    data = pdf_bytes(["Page one text.", "Page two text."])
    assert refused("cut.pdf", data[: len(data) // 2]) == (
        "truncated PDF: the end-of-file marker is missing — nothing stored"
    )


def test_a_password_protected_pdf_is_refused_saying_it_needs_a_password() -> None:
    data = pdf_bytes(["Secret text."], user_password="open-sesame")
    assert refused("locked.pdf", data) == "encrypted PDF: it needs a password — nothing stored"


def test_a_pdf_encrypted_only_against_editing_opens_and_is_read() -> None:
    assert only_text("no-edit.pdf", pdf_bytes(["Readable text."], user_password="")) == (
        "Readable text."
    )


def test_a_scanned_pdf_without_a_text_layer_is_refused_with_a_reason() -> None:
    assert refused("scan.pdf", image_only_pdf_bytes()) == (
        "scanned PDF without a text layer — nothing stored"
    )


def test_a_file_named_pdf_that_is_not_one_is_refused() -> None:
    assert refused("fake.pdf", b"hello there") == "not a PDF: the file does not start with %PDF"


# --- DOCX --------------------------------------------------------------------------------


def test_docx_paragraphs_are_joined_by_blank_lines_and_tables_kept_in_order() -> None:
    data = docx_bytes(
        ["First paragraph.", "", "Second paragraph."],
        title="Memo",
        table=[["Mach", "Lift"], ["2.5", "0.31"]],
    )
    (document,) = read_file("memo.docx", data).documents
    assert document.text == "First paragraph.\n\nSecond paragraph.\n\nMach | Lift\n\n2.5 | 0.31"
    assert document.title == "Memo"


def test_a_docx_that_is_a_zip_of_something_else_is_refused_saying_what_is_missing() -> None:
    data = zip_bytes({"readme.txt": "not a document", "data/values.csv": "1,2"})
    assert refused("archive.docx", data) == (
        "not a DOCX: the file is a zip without word/document.xml"
    )


def test_a_docx_that_is_not_a_zip_at_all_is_refused() -> None:
    assert refused("old.docx", b"\xd0\xcf\x11\xe0 an OLE2 .doc file").startswith(
        "not a DOCX: the file is not a zip archive"
    )


def test_a_docx_with_a_broken_document_part_is_refused_as_damaged() -> None:
    data = zip_bytes({"[Content_Types].xml": "<Types/>", "word/document.xml": "<w:document"})
    assert refused("broken.docx", data).startswith("damaged DOCX")


# --- BEIR / JSONL ------------------------------------------------------------------------


def jsonl(*lines: object) -> bytes:
    return "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines).encode()


def test_a_beir_record_becomes_title_newline_text_under_its_own_id() -> None:
    result = read_file(
        "corpus.jsonl",
        jsonl(
            {"_id": "184", "title": "scale models", "text": "thermo-aeroelastic similarity"},
            {"_id": 7, "title": "", "text": "no title here"},
        ),
    )
    first, second = result.documents
    assert (first.source_id, first.text, first.title) == (
        "184",
        "scale models\nthermo-aeroelastic similarity",
        "scale models",
    )
    assert (second.source_id, second.text) == ("7", "no title here")


def test_a_malformed_jsonl_line_is_skipped_and_reported_and_the_good_lines_kept() -> None:
    result = read_file(
        "corpus.jsonl",
        jsonl(
            {"_id": "1", "text": "first"},
            '{"_id": "2", "text": "broken',
            "[1, 2, 3]",
            {"title": "no id", "text": "x"},
            {"_id": "1", "text": "duplicate"},
            {"_id": "3", "text": "third"},
        ),
    )
    assert [d.source_id for d in result.documents] == ["1", "3"]
    assert [(p.line, p.reason.split(" (")[0]) for p in result.problems] == [
        (2, "not valid JSON"),
        (3, "not a JSON object — line skipped"),
        (4, 'no "_id" string — line skipped'),
        (5, "duplicate _id '1'"),
    ]


def test_empty_beir_records_are_skipped_with_a_note_not_an_error() -> None:
    result = read_file(
        "corpus.jsonl", jsonl({"_id": "471", "title": "", "text": ""}, {"_id": "1", "text": "x"})
    )
    assert [d.source_id for d in result.documents] == ["1"]
    assert result.problems == [] and result.notes == ["1 empty record left out (no title, no text)"]


def test_nul_and_surrogate_escapes_in_jsonl_are_cleaned_and_noted_per_line() -> None:
    result = read_file("c.jsonl", b'{"_id": "1", "text": "a\\u0000b \\ud800 c"}')
    assert result.documents[0].text == "ab \ufffd c"
    assert len(result.notes) == 2 and all(n.startswith("line 1: ") for n in result.notes)


def test_a_jsonl_file_with_no_usable_line_is_refused_with_the_first_reasons() -> None:
    assert refused("bad.jsonl", b"{oops\nnot json\n").startswith(
        "no usable records in the JSONL file (line 1: not valid JSON"
    )


# --- names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\bob\\report.docx", "report.docx"),
        ("evil\x00name\x1b[31m.txt", "evilname[31m.txt"),
        ("cv\u202egnp.exe.txt", "cvgnp.exe.txt"),
        ("   ", "unnamed"),
        ("..", "unnamed"),
        ("Q3 report (final).pdf", "Q3 report (final).pdf"),
    ],
)
def test_a_file_name_becomes_a_readable_source_id_without_separators_or_controls(
    name: str, expected: str
) -> None:
    assert sanitise_source_id(name) == expected


def test_folder_relative_paths_keep_their_folders_as_the_user_wrote_them() -> None:
    assert sanitise_source_id("reports/2024/q1.txt", keep_directories=True) == (
        "reports/2024/q1.txt"
    )
    assert sanitise_source_id("../a\\b/./c.md", keep_directories=True) == "a/b/c.md"


def test_a_very_long_file_name_is_shortened_keeping_its_extension() -> None:
    source_id = sanitise_source_id("x" * 900 + ".pdf")
    assert len(source_id) == MAX_SOURCE_ID_CHARS and source_id.endswith("….pdf")


def test_a_file_name_with_path_separators_and_controls_is_read_under_a_clean_id() -> None:
    (document,) = read_file("../up/\x07bell.txt", b"text").documents
    assert document.source_id == "bell.txt"
    assert file_kind("../up/\x07bell.TXT") == "text"


# --- robustness ----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.binary(max_size=3000),
    name=st.sampled_from(["a.txt", "a.md", "a.html", "a.pdf", "a.docx", "a.jsonl"]),
    prefix=st.sampled_from([b"", b"%PDF-1.4\n", b"PK\x03\x04", b'{"_id": "1", "text": "']),
)
def test_any_bytes_give_documents_or_a_read_error_never_a_crash(
    data: bytes, name: str, prefix: bytes
) -> None:
    try:
        result = read_file(name, prefix + data)
    except ReadError as exc:
        assert exc.reason
    else:
        for document in result.documents:
            assert document.text.strip() and storable_text_problem(document.text) is None


def test_a_damaged_pdf_body_is_refused_as_damaged_not_crashed() -> None:
    data = pdf_bytes(["Some text."])
    middle = len(data) // 2
    damaged = data[:middle] + b"\x00garbage\xff" * 50 + data[middle + 500 :]
    try:
        result = read_file("damaged.pdf", damaged)
    except ReadError as exc:
        assert "PDF" in exc.reason
    else:  # pypdf may recover a readable page from the intact objects
        assert result.documents[0].text


def test_a_jsonl_id_is_kept_verbatim_even_with_a_slash_so_qrels_still_match() -> None:
    result = read_file(
        "corpus.jsonl",
        jsonl(
            {"_id": "<dbpedia:AC/DC>", "text": "band"},
            {"_id": "<dbpedia:DC>", "text": "city"},
            {"_id": "ok\x07bell", "text": "x"},
            {"_id": "\x01\x02", "text": "y"},
        ),
    )
    assert [d.source_id for d in result.documents] == ["<dbpedia:AC/DC>", "<dbpedia:DC>", "okbell"]
    assert result.documents[2].metadata == {"corpus_id": "ok\x07bell"}
    assert [p.line for p in result.problems] == [4]


def test_hostile_jsonl_records_are_skipped_each_with_a_plain_reason_and_the_rest_kept() -> None:
    lines = [
        b'{"_id": "ok", "text": "fine text"}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"_id": ' + b"9" * 5000 + b', "text": "x"}',
        b'{"_id": "a\\u0000b", "text": "x"}',
        b'{"_id": "a\\ud800b", "text": "x"}',
        json.dumps({"_id": "x" * 10_000, "text": "y"}).encode(),
        b'{"_id": "brackets", "text": "' + b"[" * 500 + b'"}',
    ]
    result = read_file("corpus.jsonl", b"\n".join(lines))
    assert [d.source_id for d in result.documents] == ["ok", "brackets"]
    assert [(p.line, p.reason) for p in result.problems] == [
        (2, "nested 100,000 levels deep; the limit is 64 — line skipped"),
        (3, "holds a number with more than 4,300 digits — line skipped"),
        (4, "the _id contains a NUL character at offset 1; no store can keep it — line skipped"),
        (
            5,
            "the _id contains a lone surrogate U+D800 at offset 1; no store can keep it"
            " — line skipped",
        ),
        (6, "the source id is 10,000 characters long; the longest kept is 512 — line skipped"),
    ]


@pytest.mark.parametrize(
    ("invisible", "named"),
    [
        ("\u200b", "U+200B (ZERO WIDTH SPACE)"),
        ("\u200d", "U+200D (ZERO WIDTH JOINER)"),
        ("\ufeff", "U+FEFF (ZERO WIDTH NO-BREAK SPACE)"),
        ("\u202e", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
    ],
)
def test_a_jsonl_id_with_an_invisible_character_is_refused_naming_it_and_its_line(
    invisible: str, named: str
) -> None:
    result = read_file(
        "corpus.jsonl",
        jsonl({"_id": "doc1", "text": "kept"}, {"_id": f"doc{invisible}1", "text": "looks alike"}),
    )
    assert [d.source_id for d in result.documents] == ["doc1"]
    assert [(p.line, p.reason) for p in result.problems] == [
        (
            2,
            f"the _id contains the invisible format character {named} at offset 3; remove it"
            " — line skipped",
        )
    ]


def test_a_file_name_loses_its_invisible_characters_in_its_source_id() -> None:
    assert sanitise_source_id("re\u200bport\u2066.txt") == "report.txt"
