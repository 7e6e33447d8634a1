"""PDF and DOCX are parsed under limits that hold whatever the file says (issue 13, item 2).

Every hostile file is generated here: a PDF whose pages share one deflated content stream,
DOCX archives whose members inflate (or claim to inflate) far beyond their size. The limits
given here are small (``ParseLimits``) so each case takes well under a second; the product's
own constants are checked where the check needs no big file (declared sizes).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import zipfile
from io import BytesIO
from pathlib import Path

import pytest

from core.ingest import parse_worker
from core.ingest.jsonlines import MAX_JSON_DEPTH
from core.ingest.limits import (
    DEFAULT_PARSE_LIMITS,
    MAX_CONTENT_BYTES,
    MAX_INFLATED_BYTES,
    MAX_TEXT_BYTES,
    PARSE_MEMORY_BYTES,
    PARSE_SECONDS,
    ParseLimits,
)
from core.ingest.readers import read_file
from core.ingest.results import ReadError
from core.terminal.load import collect_uploads
from tests.fixtures.files import (
    docx_bytes,
    docx_with_member,
    pdf_bytes,
    shared_stream_pdf_bytes,
    zip_bytes,
)

MIB = 1024 * 1024


def refused(name: str, data: bytes, limits: ParseLimits | None = None) -> str:
    with pytest.raises(ReadError) as caught:
        read_file(name, data, limits=limits)
    return caught.value.reason


def test_a_pdf_of_pages_sharing_one_huge_content_stream_is_refused_for_its_text_size() -> None:
    # 3,000 lines of 48 bytes: 0.14 MB of text a page, so the second page passes the 0.25 MB
    # limit (each page extracted costs the parser CPU in proportion to its lines; pages after
    # the refusal none: 12,000 lines and a 1 MB limit said the same in 4x the CPU).
    data = shared_stream_pdf_bytes(30, 3_000)
    assert len(data) < 20_000
    assert refused("shared.pdf", data, ParseLimits(text_bytes=MIB // 4)) == (
        "the PDF expands to more than 0.25 MB of text (the limit per file) — nothing stored"
    )


def test_a_pdf_whose_pages_share_a_huge_content_stream_is_refused_before_extracting() -> None:
    data = shared_stream_pdf_bytes(30, 20_000)  # 30 pages x 1.6 MB of drawing, 15 KB on disk
    assert refused("shared.pdf", data, ParseLimits(content_bytes=16 * MIB, seconds=20)) == (
        "the PDF's page contents inflate to more than 16 MB (the limit per file; pages that"
        " repeat one drawing count once each) — nothing stored"
    )
    (document,) = read_file("one.pdf", shared_stream_pdf_bytes(1, 200)).documents
    assert document.text.startswith("Wind tunnel pressure readings")


def test_the_upload_limits_name_the_pdf_content_cap() -> None:
    assert "page contents may inflate to at most 256 MB in all" in DEFAULT_PARSE_LIMITS.summary()


def test_a_pdf_that_needs_more_memory_than_the_worker_has_is_refused_and_the_next_file_reads() -> (
    None
):
    data = shared_stream_pdf_bytes(1, 10, padding=64 * MIB)
    pool = _fresh_pool(160 * MIB)
    assert refused("bomb.pdf", data, ParseLimits(memory_bytes=160 * MIB)) == (
        "the PDF expands to more than 160 MB in memory while being read (the limit per file)"
        " — nothing stored"
    )
    assert pool == [], "a worker that ran out of memory was kept for reuse"
    (document,) = read_file(
        "fine.pdf", pdf_bytes(["Flutter at NACA."]), limits=ParseLimits(memory_bytes=160 * MIB)
    ).documents
    assert document.text == "Flutter at NACA."


def test_a_pdf_that_takes_longer_than_the_limit_is_refused_and_its_worker_killed() -> None:
    before = {id(w) for pool in parse_worker._idle.values() for w in pool}
    data = shared_stream_pdf_bytes(30, 20_000)
    assert refused("slow.pdf", data, ParseLimits(seconds=0.3)) == (
        "reading the PDF took longer than 0.3 s (the limit per file) — nothing stored"
    )
    after = [w for pool in parse_worker._idle.values() for w in pool if id(w) not in before]
    assert all(w.process.poll() is None for w in after), "a killed worker was kept for reuse"
    assert read_file("next.pdf", pdf_bytes(["Still readable."])).documents[0].text == (
        "Still readable."
    )


def _fresh_pool(memory_bytes: int) -> list[parse_worker._Worker]:
    """The idle pool of workers with ``memory_bytes``, emptied first (a test's own limit)."""
    for worker in parse_worker._idle.pop(memory_bytes, []):
        worker.kill()
    return parse_worker._idle.setdefault(memory_bytes, [])


def test_files_the_reader_refuses_are_answered_by_one_worker_that_then_reads_the_next() -> None:
    # A refusal is the worker's normal answer: a new worker per refused file cost ~0.7 s of CPU.
    limits = ParseLimits(memory_bytes=300 * MIB, text_bytes=100_000)
    pool = _fresh_pool(limits.memory_bytes)
    good = pdf_bytes(["Flutter at NACA."])
    locked = pdf_bytes(["Secret."], user_password="pw")
    broken = zip_bytes({"[Content_Types].xml": "<Types/>", "word/document.xml": "<w:document"})
    assert refused("cut.pdf", good[:-200], limits).startswith("truncated PDF")
    (worker,) = pool
    assert refused("locked.pdf", locked, limits).startswith("encrypted PDF")
    assert refused("broken.docx", broken, limits).startswith("damaged DOCX")  # python-docx raised
    assert refused("long.docx", docx_bytes(["Wings. " * 20_000]), limits).startswith(
        "the DOCX expands to more than"
    )
    assert read_file("fine.pdf", good, limits=limits).documents[0].text == "Flutter at NACA."
    assert pool == [worker] and worker.process.poll() is None


def test_a_worker_where_an_error_escaped_the_reader_is_ended_not_reused() -> None:
    memory_bytes = 310 * MIB
    pool = _fresh_pool(memory_bytes)
    # No options: the worker's entry raises KeyError outside the reader's own refusals.
    with pytest.raises(parse_worker.ParseRefused) as caught:
        parse_worker.run("pdf", pdf_bytes(["x"]), {}, memory_bytes=memory_bytes, seconds=30)
    assert caught.value.reason == "damaged file: 'text_bytes'"
    assert pool == []


def test_a_docx_whose_styles_claim_a_gibibyte_is_refused_before_anything_is_inflated() -> None:
    data = docx_with_member("word/styles.xml", 10_000, declared=1024 * MIB)
    assert refused("bomb.docx", data) == (
        "the DOCX inflates to 1,024 MB, more than the 128 MB allowed per file (a zip bomb?)"
        " — nothing stored"
    )


def test_a_docx_whose_text_part_inflates_past_the_limit_is_refused() -> None:
    data = docx_with_member("word/document.xml", 3 * MIB)
    assert len(data) < 100_000
    assert refused("big.docx", data, ParseLimits(inflated_bytes=2 * MIB)) == (
        "the DOCX inflates to 3.8 MB, more than the 2 MB allowed per file (a zip bomb?)"
        " — nothing stored"
    )


def test_a_docx_member_that_inflates_past_its_declared_size_is_never_inflated_beyond_it() -> None:
    data = docx_with_member("word/styles.xml", 3 * MIB, declared=1_000)
    with zipfile.ZipFile(BytesIO(data)) as archive:
        assert archive.getinfo("word/styles.xml").file_size == 1_000
    assert refused("liar.docx", data, ParseLimits(memory_bytes=160 * MIB)) == (
        "damaged DOCX: Bad CRC-32 for file 'word/styles.xml'"
    )


def test_a_docx_that_expands_to_more_text_than_the_limit_is_refused() -> None:
    data = docx_bytes(["Flutter of heated wings at the root. " * 100] * 40)
    assert refused("long.docx", data, ParseLimits(text_bytes=100_000)) == (
        "the DOCX expands to more than 0.095 MB of text (the limit per file) — nothing stored"
    )


def test_ordinary_pdf_and_docx_read_the_same_through_the_worker() -> None:
    assert read_file("a.pdf", pdf_bytes(["One.", "Two."])).documents[0].text == "One.\n\nTwo."
    assert read_file("a.docx", docx_bytes(["One.", "Two."])).documents[0].text == "One.\n\nTwo."


def test_the_limits_are_the_product_constants_and_the_upload_sentence_names_each() -> None:
    assert (
        ParseLimits(
            memory_bytes=PARSE_MEMORY_BYTES,
            seconds=PARSE_SECONDS,
            text_bytes=MAX_TEXT_BYTES,
            inflated_bytes=MAX_INFLATED_BYTES,
            content_bytes=MAX_CONTENT_BYTES,
        )
        == DEFAULT_PARSE_LIMITS
    )
    sentence = DEFAULT_PARSE_LIMITS.summary(64 * MIB)
    assert sentence == (
        "Limits per file: 64 MB uploaded; a PDF or DOCX is read in a separate process with at"
        " most 1,024 MB of memory and 120 s, and may yield at most 64 MB of text; a PDF's page"
        " contents may inflate to at most 256 MB in all; a DOCX may inflate to at most 128 MB;"
        f" JSON lines may nest {MAX_JSON_DEPTH} levels."
    )


def test_load_refuses_a_docx_bomb_by_name_and_reads_the_other_files(tmp_path: Path) -> None:
    (tmp_path / "bomb.docx").write_bytes(
        docx_with_member("word/styles.xml", 10_000, declared=1024 * MIB)
    )
    (tmp_path / "notes.txt").write_text("Flutter of heated wings.", encoding="utf-8")
    uploads = {Path(u.file_name).name: u for u in collect_uploads([tmp_path])}
    assert uploads["bomb.docx"].error is not None
    assert uploads["bomb.docx"].error.startswith("the DOCX inflates to 1,024 MB")
    assert uploads["notes.txt"].error is None
    assert uploads["notes.txt"].documents[0].text == "Flutter of heated wings."


def test_a_worker_nobody_kills_is_stopped_by_the_kernel_after_its_cpu_allowance() -> None:
    """The backstop for an app that died mid-parse: RLIMIT_CPU ends the worker by itself."""
    worker = parse_worker._Worker(PARSE_MEMORY_BYTES)
    try:
        header = json.dumps(
            {
                "kind": "pdf",
                "options": {"text_bytes": MAX_TEXT_BYTES, "content_bytes": MAX_CONTENT_BYTES},
                "cpu_seconds": 0.5,
            }
        ).encode()
        data = shared_stream_pdf_bytes(30, 20_000)
        request = parse_worker._HEADER.pack(len(header)) + header + data
        with pytest.raises(EOFError):
            worker.ask(request, time.monotonic() + 60)
        assert worker.process.wait(10) == -signal.SIGXCPU
    finally:
        worker.kill()


def test_a_docx_with_a_text_run_over_the_xml_readers_bound_is_refused_in_plain_words() -> None:
    reason = refused("run.docx", docx_bytes(["wing " * 2_100_000]))  # 10.5 M characters
    assert reason.startswith("the DOCX holds one piece of text over 10,000,000 characters long")
    assert "damaged" not in reason and "XML_PARSE_HUGE" not in reason


def test_the_parse_sandbox_starts_without_numpy_so_its_memory_cap_holds_the_parse() -> None:
    # numpy (and its BLAS threads) in the sandbox took address space of its cap before any
    # request: a worker with a small cap died before reading (a passage builder moved into
    # a module that imports numpy, 1a19cc6).
    probe = (
        "import sys, core.ingest.worker_entry; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy')[:3])"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[3],
    )
    assert out.stdout.strip() == "[]", out.stdout
