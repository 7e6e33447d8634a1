"""Passages are content-addressed and always storable."""

from __future__ import annotations

import hashlib
from uuid import UUID

import pytest
from pydantic import ValidationError

from core.domain.chunks import StoredChunk, chunk_id, source_id_problem

A = UUID("00000000-0000-0000-0000-00000000000a")
B = UUID("00000000-0000-0000-0000-00000000000b")


def make(**overrides: object) -> StoredChunk:
    fields: dict[str, object] = dict(
        tenant_id=A, source_id="doc-1", text="wing flutter", chunk_index=0, start_char=0,
        end_char=12,
    )  # fmt: skip
    fields.update(overrides)
    return StoredChunk.model_validate(fields)


def test_the_id_is_sha256_of_source_nul_text() -> None:
    expected = hashlib.sha256(b"doc-1" + b"\x00" + b"wing flutter").hexdigest()
    assert chunk_id("doc-1", "wing flutter") == expected
    assert make().id == expected


def test_the_nul_separator_keeps_source_and_text_apart() -> None:
    assert chunk_id("ab", "c") != chunk_id("a", "bc")


def test_the_same_passage_under_two_tenants_has_the_same_id() -> None:
    assert make(tenant_id=A).id == make(tenant_id=B).id


def test_a_supplied_id_that_disagrees_is_rejected() -> None:
    with pytest.raises(ValidationError, match="disagrees"):
        make(id="0" * 64)
    assert make(id=chunk_id("doc-1", "wing flutter")).id == chunk_id("doc-1", "wing flutter")


def test_a_passage_cannot_be_edited_into_disagreeing_with_its_id() -> None:
    chunk = make()
    with pytest.raises(ValidationError):
        chunk.text = "something else"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "message"),
    [("wing\x00flutter", "NUL character at offset 4"), ("x\ud800", "unicode|surrogate")],
)
def test_unstorable_text_is_rejected_with_the_position(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        make(text=text)


def test_offsets_must_be_ordered_and_text_nonempty() -> None:
    with pytest.raises(ValidationError, match="before start_char"):
        make(start_char=5, end_char=2)
    with pytest.raises(ValidationError):
        make(text="")


def test_metadata_must_be_plain_json() -> None:
    assert make(metadata={"title": "Wing", "page": 3}).metadata["page"] == 3
    with pytest.raises(ValidationError, match="plain JSON"):
        make(metadata={"when": object()})
    with pytest.raises(ValidationError, match="NUL"):
        make(metadata={"title": "a\x00b"})


@pytest.mark.parametrize("invisible", ["\u200b", "\u2060", "\u202e", "\u00ad"])
def test_a_source_id_with_an_invisible_character_is_refused_naming_it(invisible: str) -> None:
    with pytest.raises(ValidationError, match=f"U\\+{ord(invisible):04X}"):
        make(source_id=f"doc{invisible}-1")
    assert source_id_problem("doc-1") is None


def test_the_passages_a_load_builds_unchecked_equal_validated_ones() -> None:
    """``build_chunks`` skips validation for speed; what it makes is what validation makes."""
    from core.domain.chunks import (
        ChunkingOptions,
        PassageMention,
        SourceDocument,
        build_chunks,
        split_document,
    )

    text = " ".join(f"Wing {n} flutters." for n in range(60))
    document = SourceDocument(source_id="s", text=text, title="T")
    spans = split_document(document.text, ChunkingOptions(size=200, overlap=20))
    mention = PassageMention(0, 7, UUID(int=7))
    chunks = build_chunks(document, UUID(int=1), spans, [mention])
    assert len(chunks) > 3 and chunks[0].entity_ids == [UUID(int=7)]
    for chunk in chunks:
        assert chunk == StoredChunk.model_validate(chunk.model_dump())
        assert chunk.model_fields_set == set(StoredChunk.model_fields)


def test_the_passages_a_load_builds_share_one_fields_set_that_a_copy_leaves_alone() -> None:
    # pydantic's set per model (~730 bytes) was more than a tiny passage's own fields: 29 MB of
    # sets for one 42 MB document's passages in flight.
    from pydantic import BaseModel

    from core.domain.chunks import ChunkingOptions, SourceDocument, build_chunks, split_document
    from core.domain.models import builder, built

    class Loose(BaseModel):  # not frozen: an assignment would add to its fields set
        x: int = 0

    document = SourceDocument(source_id="s", text=" ".join(f"word{n}" for n in range(100)))
    spans = split_document(document.text, ChunkingOptions(size=100, overlap=10))
    first, second, *_ = build_chunks(document, UUID(int=1), spans)
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__
    before = set(first.model_fields_set)
    copy = first.model_copy(update={"metadata": {"k": 1}})
    copy.__pydantic_fields_set__.add("extra")
    assert first.model_fields_set == before
    with pytest.raises(ValueError, match="not frozen"):
        built(Loose, {"x": 1}, {"x"})
    with pytest.raises(ValueError, match="not frozen"):
        builder(Loose, {"x"})


def _cut_passages() -> list[StoredChunk]:
    from core.domain.chunks import ChunkingOptions, SourceDocument, build_chunks, split_document

    document = SourceDocument(source_id="s", text=" ".join(f"word{n}." for n in range(80)))
    spans = split_document(document.text, ChunkingOptions(size=100, overlap=10))
    return build_chunks(document, UUID(int=1), spans)


def test_a_write_check_trusts_the_id_of_a_passage_the_chunker_cut_and_hashes_any_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import core.stores.checks as checks

    hashed: list[str] = []

    def counting(source_id: str, text: str) -> str:
        hashed.append(text)
        return chunk_id(source_id, text)

    monkeypatch.setattr(checks, "chunk_id", counting)
    cut = _cut_passages()
    assert checks.checked_for_write(cut, tenant_id=UUID(int=1), source_id="s") == cut
    assert hashed == []  # the chunker derived each id from the passage's own source and text
    validated = [StoredChunk.model_validate(chunk.model_dump()) for chunk in cut]
    assert checks.checked_for_write(validated, tenant_id=UUID(int=1), source_id="s") == cut
    assert len(hashed) == len(cut)


def test_a_cut_passage_changed_after_cutting_loses_the_mark_and_its_wrong_id_is_refused() -> None:
    import pickle

    from core.domain.chunks import was_cut
    from core.stores.checks import checked_for_write

    first, *_ = _cut_passages()
    assert was_cut(first)
    changed = first.model_copy(update={"text": "another text"})
    again = pickle.loads(pickle.dumps(first))
    assert not was_cut(changed) and not was_cut(again) and not was_cut(first.model_copy())
    with pytest.raises(ValueError, match="id not derived from its source and text"):
        checked_for_write([changed], tenant_id=UUID(int=1), source_id="s")
    assert checked_for_write([again], tenant_id=UUID(int=1), source_id="s") == [first]
