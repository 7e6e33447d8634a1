"""A batch's passage rows as one binary COPY built in numpy (``postgres.passage_copy``): every
field as PostgreSQL reads it, and the rows it leaves to asyncpg."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import numpy as np
import pytest

from core.domain.chunks import StoredChunk
from core.stores.postgres.blocks import staged_row
from core.stores.postgres.passage_copy import passages_copy
from tests.fixtures.binary_copy import copied_rows

TENANT = uuid.UUID(int=7)


def _rows(texts: list[tuple[str, str]], **extra: Any) -> list[tuple[Any, ...]]:
    chunks = [
        StoredChunk(tenant_id=TENANT, source_id=source, text=text, chunk_index=n, start_char=n,
                    end_char=n + len(text), **extra)
        for n, (source, text) in enumerate(texts)
    ]  # fmt: skip
    return [staged_row(chunk, 3 * n + 1) for n, chunk in enumerate(chunks)]


def test_each_passage_field_reads_back_as_postgresql_reads_it_multibyte_text_included() -> None:
    texts = [("d1", "wing flutter"), ("café", "naïve ünïcode ✓ 𝔘"), ("x" * 40, "a")]
    rows = _rows(texts)
    ordinals = np.array([5, 6, 1 << 40], dtype=np.int64)
    for jsonb, nothing in ((True, b"\x01{}"), (False, b"{}")):
        data = passages_copy(rows, ordinals, jsonb=jsonb)
        assert data is not None
        read = copied_rows(data.tobytes())
        assert len(read) == 3
        for n, (fields, row) in enumerate(zip(read, rows, strict=True)):
            tenant, chunk_id, source, index, start, end, text, entities, about, length, ordinal = (
                fields
            )
            assert uuid.UUID(bytes=tenant or b"") == TENANT
            assert (chunk_id or b"").decode() == row[1] and (source or b"").decode() == row[2]
            assert [struct.unpack(">q", f or b"")[0] for f in (index, start, end)] == list(row[3:6])
            assert (text or b"").decode() == row[6]
            assert entities == struct.pack(">iii", 0, 0, 2950)  # an empty uuid[]
            assert about == nothing
            assert struct.unpack(">i", length or b"")[0] == 3 * n + 1
            assert struct.unpack(">q", ordinal or b"")[0] == int(ordinals[n])


def test_rows_with_an_entity_or_metadata_are_left_to_asyncpg() -> None:
    ordinals = np.arange(1, dtype=np.int64)
    assert passages_copy(_rows([("s", "t")], metadata={"title": "T"}), ordinals, jsonb=True) is None
    assert passages_copy(_rows([("s", "t")], entity_ids=[TENANT]), ordinals, jsonb=True) is None
    assert passages_copy([], ordinals[:0], jsonb=True) is None


def test_a_batch_of_more_text_than_the_bound_is_left_to_asyncpg(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Placing the bytes here takes an int64 index per byte: bench_load's loader 309 -> 468 MB.
    from core.stores.postgres import passage_copy

    monkeypatch.setattr(passage_copy, "MOST_TEXT_CHARS", 10)
    ordinals = np.arange(2, dtype=np.int64)
    assert passages_copy(_rows([("s", "12345"), ("t", "67890")]), ordinals, jsonb=True) is not None
    assert passages_copy(_rows([("s", "12345"), ("t", "678901")]), ordinals, jsonb=True) is None
