"""The chunker loses no text, respects its bounds, cuts where a reader would, and terminates."""

from __future__ import annotations

import itertools
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from core.domain.chunks import (
    ChunkingOptions,
    PassageMention,
    SourceDocument,
    TextSpan,
    build_chunks,
    chunk_id,
    chunk_text,
    split_document,
    workspace_tenant_id,
)

TENANT = UUID("00000000-0000-0000-0000-0000000000aa")

#: Text made of words, spaces, sentence ends, line and paragraph breaks, and long runs.
texty = st.lists(
    st.one_of(
        st.text(alphabet="abcdefghij", min_size=1, max_size=12),
        st.sampled_from([" ", "  ", ". ", "! ", "\n", "\n\n", "\n \n", "\t", "é\u0301", "x" * 40]),
    ),
    max_size=120,
).map("".join)


def covered(text: str, spans: list[TextSpan]) -> set[int]:
    positions: set[int] = set()
    for span in spans:
        positions.update(range(span.start, span.end))
    return positions


@settings(max_examples=300, deadline=None)
@given(text=texty, size=st.integers(1, 200), overlap_share=st.floats(0, 0.99))
def test_every_non_whitespace_character_is_in_some_passage(
    text: str, size: int, overlap_share: float
) -> None:
    overlap = min(int(size * overlap_share), size - 1)
    spans = chunk_text(text, size, overlap)
    missing = {i for i in range(len(text)) if not text[i].isspace()} - covered(text, spans)
    assert not missing


@settings(max_examples=300, deadline=None)
@given(text=texty, size=st.integers(1, 200), overlap_share=st.floats(0, 0.99))
def test_passages_are_exact_slices_within_the_size_never_blank_and_in_order(
    text: str, size: int, overlap_share: float
) -> None:
    overlap = min(int(size * overlap_share), size - 1)
    spans = chunk_text(text, size, overlap)
    for span in spans:
        assert span.text == text[span.start : span.end]
        assert 0 < span.end - span.start <= size
        assert span.text.strip() == span.text != ""
    assert [s.start for s in spans] == sorted({s.start for s in spans})


@settings(max_examples=200, deadline=None)
@given(text=texty, size=st.integers(2, 120))
def test_consecutive_passages_overlap_by_no_more_than_asked(text: str, size: int) -> None:
    overlap = size // 3
    spans = chunk_text(text, size, overlap)
    for left, right in itertools.pairwise(spans):
        assert right.start > left.start
        assert left.end - right.start <= overlap


def test_a_text_shorter_than_the_size_is_one_passage_without_surrounding_whitespace() -> None:
    assert chunk_text("\n  Wing flutter.  \n", 100, 10) == [TextSpan(3, 16, "Wing flutter.")]


def test_whitespace_only_and_empty_text_make_no_passage() -> None:
    assert chunk_text("", 100, 10) == []
    assert chunk_text(" \n\t\n ", 100, 10) == []
    assert split_document(" \n ", ChunkingOptions(whole_documents=True)) == []


def test_a_cut_prefers_a_paragraph_break_to_a_sentence_end() -> None:
    first = "One sentence here. Another sentence follows it"
    text = first + "\n\nSecond paragraph. " + "more words " * 10
    spans = chunk_text(text, 80, 0)
    assert spans[0].text == first


def test_a_cut_prefers_a_sentence_end_to_a_space() -> None:
    text = "The wing was tested in the tunnel. Results show lift rises with the angle of attack"
    spans = chunk_text(text, 60, 0)
    assert spans[0].text == "The wing was tested in the tunnel."


def test_a_cut_falls_back_to_a_line_break_then_a_space_then_a_hard_cut() -> None:
    assert chunk_text("aaaa bbbb cccc\ndddd eeee", 20, 0)[0].text == "aaaa bbbb cccc"
    assert chunk_text("aaaa bbbb cccc dddd eeee", 20, 0)[0].text == "aaaa bbbb cccc dddd"
    assert [s.text for s in chunk_text("x" * 25, 10, 0)] == ["x" * 10, "x" * 10, "x" * 5]


def test_the_overlap_repeats_the_end_of_a_passage_at_the_start_of_the_next() -> None:
    text = " ".join(f"w{i:03d}" for i in range(60))
    spans = chunk_text(text, 100, 30)
    assert len(spans) > 2
    for left, right in itertools.pairwise(spans):
        shared = left.end - right.start
        assert 20 <= shared <= 30
        assert text[right.start : left.end] == left.text[-shared:]


def test_an_overlap_as_large_as_the_size_is_refused_before_any_cutting() -> None:
    with pytest.raises(ValidationError, match="overlap"):
        chunk_text("some text", 10, 10)
    with pytest.raises(ValidationError):
        ChunkingOptions(size=100, overlap=150)
    with pytest.raises(ValidationError):
        ChunkingOptions(size=0, overlap=0)


def test_the_largest_overlap_still_moves_forward_and_ends() -> None:
    spans = chunk_text("abcdefghij" * 5, 10, 9)
    assert spans[0].start == 0 and spans[-1].end == 50
    assert len(spans) == 41


def test_a_hard_cut_never_separates_a_letter_from_its_combining_accent() -> None:
    text = "e\u0301" * 30
    for span in chunk_text(text, 7, 0):
        assert span.text[0] != "\u0301"


def test_whole_document_mode_keeps_the_document_as_one_passage() -> None:
    text = "  A long document.\n\n" + "word " * 1000
    (span,) = split_document(text, ChunkingOptions(whole_documents=True))
    assert span.start == 2 and span.text == text.strip()


def test_an_identical_passage_repeated_in_a_document_is_stored_once() -> None:
    paragraph = "The same boilerplate paragraph appears on every page of the report."
    text = "\n\n".join([paragraph, "Something else entirely, said once.", paragraph])
    document = SourceDocument(source_id="report.pdf", text=text, title="Report")
    spans = chunk_text(text, 70, 0)
    assert [s.text for s in spans].count(paragraph) == 2
    chunks = build_chunks(document, TENANT, spans)
    assert [c.text for c in chunks].count(paragraph) == 1
    assert [c.chunk_index for c in chunks] == [0, 1]
    assert len({c.id for c in chunks}) == len(chunks)
    assert chunks[0].id == chunk_id("report.pdf", paragraph)
    assert all(c.metadata["title"] == "Report" for c in chunks)


def test_built_chunks_carry_offsets_entities_and_mention_positions_of_their_passage() -> None:
    text = "Dr Smith went to NASA.\n\nLater NASA replied."
    document = SourceDocument(source_id="memo.txt", text=text)
    spans = chunk_text(text, 25, 0)
    nasa = UUID(int=1)
    smith = UUID(int=2)
    mentions = [
        PassageMention(3, 8, smith),
        PassageMention(17, 21, nasa),
        PassageMention(30, 34, nasa),
    ]
    first, second = build_chunks(document, TENANT, spans, mentions)
    assert (first.start_char, first.end_char) == (0, 22)
    assert first.entity_ids == [smith, nasa]
    assert second.entity_ids == [nasa]
    (mention,) = second.metadata["mentions"]
    assert second.text[mention["start"] : mention["end"]] == "NASA"
    assert text[second.start_char : second.end_char] == second.text


def test_a_pdf_passage_knows_the_page_it_starts_on() -> None:
    text = "page one text\n\npage two text"
    document = SourceDocument(source_id="a.pdf", text=text, metadata={"page_starts": [0, 15]})
    chunks = build_chunks(document, TENANT, chunk_text(text, 14, 0))
    assert [c.metadata["page"] for c in chunks] == [1, 2]


def test_a_workspace_name_maps_to_one_tenant_id_for_ever() -> None:
    assert workspace_tenant_id("research") == workspace_tenant_id(" research ")
    assert workspace_tenant_id("research") != workspace_tenant_id("Research")
    assert workspace_tenant_id("research") == UUID("" + str(workspace_tenant_id("research")))
    with pytest.raises(ValueError, match="empty"):
        workspace_tenant_id("  ")


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=400), size=st.integers(1, 60))
def test_any_unicode_text_is_covered_by_exact_non_blank_slices(text: str, size: int) -> None:
    spans = chunk_text(text, size, size // 4)
    assert all(span.text == text[span.start : span.end] and span.text.strip() for span in spans)
    assert {i for i, c in enumerate(text) if not c.isspace()} <= covered(text, spans)
