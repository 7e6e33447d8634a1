"""The PostgreSQL store's pure half: posting blocks built, decoded and merged with no server."""

from __future__ import annotations

import pickle
import struct
import uuid
from collections import Counter

import asyncpg
import numpy as np
import pytest

from core.domain.chunks import StoredChunk
from core.domain.tokenize import Profile, TokenizedTexts, tokenize, tokenize_many
from core.stores.postgres import blocks
from core.stores.postgres.blocks import (
    MAX_SEGMENTS,
    MERGE_FACTOR,
    Blocks,
    live_postings,
    mergeable,
    stage,
    terms_and_blocks,
)
from core.stores.postgres.resilience import broken, causes, retryable, write_conflict
from core.stores.postgres.writes import SOURCE_LOCK_BUCKETS, source_bucket, source_lock_keys
from tests.fixtures.binary_copy import copied_rows

TENANT = uuid.UUID(int=7)


def _copied(data: bytes) -> list[tuple[uuid.UUID, str, int, bytes, bytes]]:
    """The postings rows of one binary COPY."""
    rows = []
    for tenant, term, segment, ordinals, tfs in copied_rows(data):
        assert tenant and term and segment and ordinals is not None and tfs is not None
        rows.append(
            (uuid.UUID(bytes=tenant), term.decode(), struct.unpack(">q", segment)[0], ordinals, tfs)
        )
    return rows


def _records(
    blocks: Blocks, tenant: uuid.UUID, segment: int, offset: int = 0, rows: int = 1 << 30
) -> list[tuple[uuid.UUID, str, int, bytes, bytes]]:
    """Every row the blocks' COPY pieces send."""
    pieces = blocks.copy_data(tenant, segment, offset, rows)
    return [row for piece in pieces for row in _copied(piece.tobytes())]


def _rows(blocks: Blocks, segment: int, offset: int = 0) -> list[dict[str, object]]:
    return [
        {"term": term, "ordinals": ordinals, "tfs": tfs}
        for _, term, _, ordinals, tfs in _records(blocks, TENANT, segment, offset)
    ]


def test_a_batch_becomes_one_block_per_term_that_decodes_back_to_its_postings() -> None:
    blocks = Blocks(
        [(0, Counter({"wing": 2, "flow": 1})), (1, Counter({"flow": 3})), (2, Counter({"wing": 1}))]
    )
    assert blocks.terms == ["flow", "wing"]
    assert blocks.df.tolist() == [2, 2]
    (flow_ordinals, flow_tfs), (wing_ordinals, wing_tfs) = live_postings(
        ["flow", "wing"], _rows(blocks, 0), np.arange(3, dtype=np.int64)
    )
    assert flow_ordinals.tolist() == [0, 1] and flow_tfs.tolist() == [1, 3]
    assert wing_ordinals.tolist() == [0, 2] and wing_tfs.tolist() == [2, 1]


def test_blocks_built_before_ordinals_are_reserved_move_by_the_offset() -> None:
    blocks = Blocks([(0, Counter({"a": 1})), (1, Counter({"a": 4}))])
    [(ordinals, tfs)] = live_postings(["a"], _rows(blocks, 40, 40), np.arange(42, dtype=np.int64))
    assert ordinals.tolist() == [40, 41] and tfs.tolist() == [1, 4]


def test_the_blocks_of_some_passages_equal_blocks_built_from_those_alone() -> None:
    """A batch staged in the worker carries no tf per passage, only its blocks: when some of
    its passages were already stored, the new ones' blocks are cut out of them."""
    passages = [
        (0, Counter({"wing": 2, "flow": 1})),
        (1, Counter({"flow": 3, "lift": 1})),
        (2, Counter({"wing": 1})),
        (3, Counter({"drag": 5, "flow": 2})),
    ]
    whole = Blocks(passages)
    for kept in ([0, 2], [1, 3], [3], [0, 1, 2, 3], []):
        alone = Blocks(p for p in passages if p[0] in kept)
        assert whole.only(kept).terms == alone.terms
        assert whole.only(kept).df.tolist() == alone.df.tolist()
        assert _records(whole.only(kept), TENANT, 9, 5) == _records(alone, TENANT, 9, 5)


def test_segments_read_in_order_concatenate_to_ascending_ordinals() -> None:
    first = _rows(Blocks([(0, Counter({"a": 1})), (1, Counter({"a": 2}))]), 0)
    second = _rows(Blocks([(2, Counter({"a": 3}))]), 2)
    [(ordinals, tfs)] = live_postings(["a"], first + second, np.arange(3, dtype=np.int64))
    assert ordinals.tolist() == [0, 1, 2] and tfs.tolist() == [1, 2, 3]


def test_a_deleted_passage_is_dropped_from_its_blocks_on_read() -> None:
    blocks = Blocks([(0, Counter({"a": 1})), (1, Counter({"a": 2})), (2, Counter({"a": 5}))])
    id_rank = np.array([0, -1, 1], dtype=np.int64)  # ordinal 1's passage is gone
    [(ordinals, tfs)] = live_postings(["a"], _rows(blocks, 0), id_rank)
    assert ordinals.tolist() == [0, 2] and tfs.tolist() == [1, 5]


def test_a_term_with_no_block_reads_as_an_empty_posting() -> None:
    [(ordinals, tfs)] = live_postings(["absent"], [], np.arange(0, dtype=np.int64))
    assert len(ordinals) == 0 and len(tfs) == 0


def test_an_ordinal_past_int32_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="at most"):
        Blocks([(2**31, Counter({"a": 1}))])
    blocks = Blocks([(0, Counter({"a": 1}))])
    with pytest.raises(ValueError, match="at most"):
        blocks.copy_data(TENANT, 0, 2**31)


def test_a_one_workspace_batch_is_staged_with_its_blocks_and_a_mixed_one_without() -> None:
    def chunk(tenant: uuid.UUID, text: str) -> StoredChunk:
        return StoredChunk(
            tenant_id=tenant, source_id="s", text=text, chunk_index=0, start_char=0,
            end_char=len(text),
        )  # fmt: skip

    one = stage([chunk(TENANT, "wing flow"), chunk(TENANT, "flow")], {TENANT: Profile.PLAIN})
    assert one.blocks is not None and one.blocks.df.tolist() == [2, 1]
    assert [row[9] for row, _ in one.rows] == [2, 1]  # doc_length after the row's columns
    other = uuid.UUID(int=8)
    mixed = stage([chunk(TENANT, "wing"), chunk(other, "flow")], {})
    assert mixed.blocks is None and len(mixed.rows) == 2


def test_segments_of_mixed_sizes_that_never_line_up_are_still_merged_past_the_cap() -> None:
    alternating = [(i, 1 if i % 2 else 5_000) for i in range(MAX_SEGMENTS)]
    assert mergeable(alternating) == []
    past_cap = [*alternating, (MAX_SEGMENTS, 1)]
    run = mergeable(past_cap)
    assert len(run) == MERGE_FACTOR
    assert run == sorted(run) and run[-1][0] - run[0][0] == MERGE_FACTOR - 1  # adjacent only
    assert sum(p for _, p in run) == min(
        sum(p for _, p in past_cap[i : i + MERGE_FACTOR])
        for i in range(len(past_cap) - MERGE_FACTOR + 1)
    )
    same_tier = [(i, 4_000 + i) for i in range(MERGE_FACTOR + 3)]
    assert mergeable(same_tier) == same_tier[:MERGE_FACTOR]


def _raised_during(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException:
            raise outer  # noqa: B904 - the implicit context is the point
    except BaseException as exc:
        return exc


def test_a_lost_connection_under_an_interface_error_is_retryable() -> None:
    exc = _raised_during(
        asyncpg.InterfaceError("cannot rollback"), ConnectionResetError("reset by peer")
    )
    assert retryable(exc) and not write_conflict(exc)
    assert [type(e) for e in causes(exc)] == [asyncpg.InterfaceError, ConnectionResetError]


def test_a_timeout_is_not_a_lost_connection_though_python_calls_it_an_os_error() -> None:
    assert not retryable(_raised_during(TimeoutError(), ConnectionResetError()))


def test_a_deadlock_down_the_chain_is_a_write_conflict() -> None:
    deadlock = asyncpg.exceptions.DeadlockDetectedError("deadlock detected")
    exc = _raised_during(RuntimeError("while writing"), deadlock)
    assert write_conflict(exc) and retryable(exc) and not broken(exc)


def test_a_driver_left_mid_protocol_is_broken() -> None:
    exc = _raised_during(
        RuntimeError("copy"), asyncpg.InterfaceError("another operation is in progress")
    )
    assert broken(exc) and not broken(asyncpg.InterfaceError("a caller's mistake"))


def test_blocks_of_a_batch_tokenised_at_once_equal_blocks_of_each_passages_counts() -> None:
    texts = ["wing flow wing", "", "flow lift the", "drag", "wing wing wing drag"] * 3
    for profile in Profile:
        counted = Blocks(enumerate(Counter(tokenize(t, profile)) for t in texts))
        batch = Blocks.of_texts(tokenize_many(texts, profile))
        assert batch.terms == counted.terms
        assert batch.df.tolist() == counted.df.tolist()
        assert _records(batch, TENANT, 3, 11) == _records(counted, TENANT, 3, 11)
        assert _records(batch.only([1, 4, 9]), TENANT, 0) == _records(
            counted.only([1, 4, 9]), TENANT, 0
        )


def test_blocks_renumbered_hold_the_same_postings_under_the_passages_ordinals() -> None:
    """A re-index tokenises a batch as texts 0..n-1; its passages keep their ordinals."""
    texts = ["wing flow wing", "flow lift", "drag", "wing wing drag"]
    ordinals = [4, 9, 10, 17]
    counts = [Counter(tokenize(t, Profile.PLAIN)) for t in texts]
    at_ordinals = Blocks(zip(ordinals, counts, strict=True))
    moved = Blocks.of_texts(tokenize_many(texts, Profile.PLAIN)).renumbered(ordinals)
    assert moved.terms == at_ordinals.terms and moved.df.tolist() == at_ordinals.df.tolist()
    assert _records(moved, TENANT, 4) == _records(at_ordinals, TENANT, 4)


def _sliced_at(monkeypatch: pytest.MonkeyPatch, whole: int, piece: int) -> list[int]:
    """``terms_and_blocks`` with ``WHOLE_CHARS`` and ``SLICE_CHARS`` set; the characters of
    each ``tokenize_many`` call, appended to the list returned, as they happen."""
    tokenised: list[int] = []

    def counted_tokenize_many(batch: list[str], profile: Profile) -> TokenizedTexts:
        tokenised.append(sum(map(len, batch)))
        return tokenize_many(batch, profile)

    monkeypatch.setattr(blocks, "WHOLE_CHARS", whole)
    monkeypatch.setattr(blocks, "SLICE_CHARS", piece)
    monkeypatch.setattr(blocks, "tokenize_many", counted_tokenize_many)
    return tokenised


def test_a_batchs_blocks_are_built_a_slice_of_text_at_a_time_and_equal_the_whole_batchs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One huge document is one batch: tokenised whole, its 42 MB took the staging worker to
    760 MiB. Each slice is tokenised alone; the joined blocks are the whole batch's."""
    texts = ["wing flow wing", "", "flow lift the", "drag", "wing wing wing drag", "a"] * 7
    tokenised = _sliced_at(monkeypatch, 80, 40)
    for profile in Profile:
        tokenised.clear()
        lengths, sliced = terms_and_blocks(texts, profile)
        counted = Blocks(enumerate(Counter(tokenize(t, profile)) for t in texts))
        assert lengths == [len(tokenize(t, profile)) for t in texts]
        assert sliced.terms == counted.terms and sliced.df.tolist() == counted.df.tolist()
        assert _records(sliced, TENANT, 3, 11) == _records(counted, TENANT, 3, 11)
        assert len(tokenised) > 5 and max(tokenised) < 40 + max(map(len, texts))


def test_a_batch_up_to_the_whole_size_is_tokenised_at_once_and_a_bigger_one_in_smaller_slices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A load's 20k-passage batch (10.8M characters) is tokenised whole (slices repeat the work
    per distinct word); only a batch over ``WHOLE_CHARS`` (one huge document) is sliced, and
    in slices smaller than it (the staging worker's peak: a 58 MB document 464 -> 397 MiB)."""
    tokenised = _sliced_at(monkeypatch, 100, 30)
    texts = ["wing flow lift"] * 7  # 98 characters: whole
    terms_and_blocks(texts, Profile.PLAIN)
    assert tokenised == [98]
    tokenised.clear()
    terms_and_blocks(texts * 2, Profile.PLAIN)  # 196: slices of about 30
    assert sum(tokenised) == 196 and max(tokenised) <= 30 + 14 and len(tokenised) >= 5


def test_a_batchs_blocks_cross_to_the_writer_in_about_eight_bytes_a_posting() -> None:
    """An ordinal fits in 4 bytes: held in 8, a 42 MB document's 5.2 M postings were 21 MB more
    in the staging worker, in its pickled answer and in the writer."""
    texts = [f"w{n % 97} x{n % 7} y{n % 101} z{n % 13} common" for n in range(20_000)]
    _, batch = terms_and_blocks(texts, Profile.PLAIN)
    postings = int(batch.df.sum())
    assert postings == 100_000 and len(batch.terms) < 250
    assert len(pickle.dumps(batch, pickle.HIGHEST_PROTOCOL)) < postings * 8 + 20_000
    last = 2**31 - 1 - (len(texts) - 1)  # the highest ordinal a block can hold, reached
    rows = _records(batch, TENANT, 0, last)
    highest = max(int(np.frombuffer(row[3], ">i4").max()) for row in rows)
    assert highest == 2**31 - 1


def test_a_batchs_copy_in_pieces_sends_every_row_once_in_term_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The COPY is built in arrays a piece at a time; however it is cut (by terms, by postings,
    a term over the bound alone), the rows are the blocks', terms of any script byte for byte."""
    texts = ["wing flow wing", "flüge ünd ñandú", "flow lift", "日本語 wing", "drag " * 9]
    batch = Blocks.of_texts(tokenize_many(texts * 5, Profile.PLAIN), offset=0)
    whole = _records(batch, TENANT, 6, 100)
    assert [row[1] for row in whole] == batch.terms == sorted(batch.terms)
    ordinals = [np.frombuffer(row[3], ">i4") for row in whole]
    assert [len(o) for o in ordinals] == batch.df.tolist()
    assert all(o.min() >= 100 and (np.diff(o) > 0).all() for o in ordinals)
    for rows, postings in ((1, 1 << 20), (3, 1 << 20), (1 << 30, 6), (2, 1)):
        monkeypatch.setattr(blocks, "COPY_POSTINGS", postings)
        sent = [_copied(piece.tobytes()) for piece in batch.copy_data(TENANT, 6, 100, rows)]
        assert [row for piece in sent for row in piece] == whole
        assert all(0 < len(piece) <= rows for piece in sent)
        held = [sum(len(row[3]) // 4 for row in piece) for piece in sent]
        assert all(n <= postings for n, piece in zip(held, sent, strict=True) if len(piece) > 1)


def test_a_batch_locks_the_buckets_its_sources_fall_in_and_every_writer_agrees_on_them() -> None:
    """A batch takes its sources' bucket locks, found without hashing every source once all
    are named; the buckets are the ones every version computed (writers of one database must
    agree, or they would not wait for each other)."""
    assert [source_bucket(f"s{i}") for i in range(10)] == [8, 12, 6, 15, 7, 6, 9, 13, 11, 13]
    for size in (1, 3, 7, 40, 5_000):
        sources = [f"s{i}" for i in range(size)]
        alone = {key for source in sources for key in source_lock_keys(TENANT, [source])}
        assert source_lock_keys(TENANT, sources) == sorted(alone)
    assert len(source_lock_keys(TENANT, [f"s{i}" for i in range(5_000)])) == SOURCE_LOCK_BUCKETS
