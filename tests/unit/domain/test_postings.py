"""The columnar query kernel against a plain-Python reference of the truncation order."""

from __future__ import annotations

from uuid import UUID

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.domain.bm25 import CorpusStats
from core.domain.chunks import StoredChunk
from core.domain.postings import (
    BIT_TERMS,
    EMPTY_POSTING,
    SCATTER_ORDER_ROWS,
    SMALL_WORDS,
    Posting,
    bit_selection,
    bit_tf_columns,
    dense_tf_columns,
    in_key_order,
    posting_bits,
    postings_candidates,
    tf_columns,
    truncation_order,
)

TENANT = UUID("00000000-0000-0000-0000-000000000008")
TERMS = ("a", "b", "c", "d")

#: A corpus: per row, tf of each of TERMS (0 = absent).
corpora = st.lists(st.tuples(*[st.integers(0, 3)] * len(TERMS)), min_size=0, max_size=40)


def reference(corpus: list[tuple[int, ...]], ranks: list[int], limit: int) -> list[int]:
    """Rows matching a term: matched count desc, then id rank asc, first ``limit``."""
    matching = [r for r, tfs in enumerate(corpus) if any(tfs)]
    key = {r: (-sum(1 for tf in corpus[r] if tf), ranks[r]) for r in matching}
    return sorted(matching, key=key.__getitem__)[:limit]


def postings_of(corpus: list[tuple[int, ...]]) -> list[Posting]:
    out = []
    for j in range(len(TERMS)):
        rows = [r for r, tfs in enumerate(corpus) if tfs[j]]
        out.append(
            (
                np.array(rows, dtype=np.int32),
                np.array([corpus[r][j] for r in rows], dtype=np.int32),
            )
        )
    return out


def chunk(row: int) -> StoredChunk:
    text = f"passage {row}"
    return StoredChunk(
        tenant_id=TENANT, source_id="s", text=text, chunk_index=row, start_char=0, end_char=9
    )


@settings(max_examples=150, deadline=None)
@given(corpora, st.integers(0, 45), st.randoms(use_true_random=False), st.booleans())
def test_the_kernel_selects_and_orders_rows_as_the_plain_reference_does(
    corpus: list[tuple[int, ...]], limit: int, rng: object, shuffled: bool
) -> None:
    n = len(corpus)
    ranks = list(range(n))
    if shuffled:
        rng.shuffle(ranks)  # type: ignore[attr-defined]
    id_rank = np.array(ranks, dtype=np.int64) if shuffled else None
    postings = postings_of(corpus)
    lengths = np.array([sum(tfs) + 3 for tfs in corpus], dtype=np.int64)
    ids = np.empty(n, dtype=object)
    ids[:] = [f"id{r}" for r in range(n)]
    stats = CorpusStats(n_docs=n, avg_doc_length=float(lengths.mean()) if n else 0.0)
    found = postings_candidates(
        stats, TERMS, postings, lengths, ids, limit, lambda rows: [chunk(r) for r in rows], id_rank
    )
    expected = reference(corpus, ranks, limit)
    assert list(found.ids) == [f"id{r}" for r in expected]
    assert found.matching == sum(1 for tfs in corpus if any(tfs))
    assert found.tfs.tolist() == [list(corpus[r]) for r in expected]
    assert found.doc_lengths.tolist() == [int(lengths[r]) for r in expected]
    assert found.id_order.tolist() == [ranks[r] for r in expected]
    assert [c.chunk_index for c in found.chunks(range(len(found)))] == expected
    head = found.head(limit // 2)  # after the ids were read: the head has its own
    assert list(head.ids) == [f"id{r}" for r in expected[: limit // 2]]
    assert len(head) == len(head.ids) == len(head.id_order)


@settings(max_examples=100, deadline=None)
@given(corpora, st.data())
def test_both_ways_of_reading_tf_columns_agree(
    corpus: list[tuple[int, ...]], data: st.DataObject
) -> None:
    n = len(corpus)
    selected = np.array(
        data.draw(st.lists(st.integers(0, max(n - 1, 0)), unique=True, max_size=n) if n else
                  st.just([])),
        dtype=np.int64,
    )  # fmt: skip
    postings = postings_of(corpus)
    few = tf_columns(postings, selected[:1], n)  # the binary-search path
    many = tf_columns(postings, selected, n)  # the position-map path
    assert many.tolist() == [list(corpus[r]) for r in selected.tolist()]
    assert few.tolist() == many[:1].tolist()
    bits = [(j, posting_bits(rows, n)) for j, (rows, _) in enumerate(postings) if len(rows)]
    assert bit_tf_columns(postings, bits, selected).tolist() == many.tolist()
    dense = np.zeros((len(TERMS), n), dtype=np.int64)
    for j, (rows, tfs) in enumerate(postings):
        dense[j, rows] = tfs
    assert dense_tf_columns(postings, dense.__getitem__, selected).tolist() == many.tolist()


@pytest.mark.parametrize("seed", range(6))
def test_tf_columns_read_off_bitsets_match_the_postings_across_many_words(seed: int) -> None:
    """Rows far apart (thousands of words), out of order, some in no posting: each row's place
    in a posting is its term's bits below it, so the tfs are the postings' own."""
    rng = np.random.default_rng(seed)
    n, terms = int(rng.integers(1, 20_000)), int(rng.integers(1, 7))
    present = rng.random((n, terms)) < rng.random(terms) ** 2
    tf = present * rng.integers(1, 50, (n, terms))
    postings = [
        (np.flatnonzero(present[:, j]).astype(np.int32), tf[present[:, j], j].astype(np.int32))
        for j in range(terms)
    ]
    bits = [(j, posting_bits(rows, n)) for j, (rows, _) in enumerate(postings) if len(rows)]
    selected = rng.permutation(n)[: int(rng.integers(0, min(n, 3_000) + 1))].astype(np.int64)
    got = bit_tf_columns(postings, bits, selected)
    assert got.tolist() == tf[selected].tolist()
    assert got.tolist() == tf_columns(postings, selected, n).tolist()


def test_a_limit_inside_a_level_keeps_its_smallest_ids() -> None:
    counts = np.array([1, 2, 1, 2, 2, 0, 1], dtype=np.int64)
    assert truncation_order(counts, 2, 4).tolist() == [1, 3, 4, 0]
    rank = np.array([6, 5, 4, 3, 2, 1, 0], dtype=np.int64)
    assert truncation_order(counts, 2, 4, rank).tolist() == [4, 3, 1, 6]


@settings(max_examples=40)
@given(
    n=st.integers(0, 3 * SCATTER_ORDER_ROWS),
    spread=st.sampled_from([1, 2, 40]),
    repeats=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_rows_come_in_key_order_however_their_keys_are_spread(
    n: int, spread: int, repeats: bool, seed: int
) -> None:
    """Dense distinct keys are placed by a scatter; sparse or repeated ones are sorted:
    either way the order is a stable sort's."""
    rng = np.random.default_rng(seed)
    keys = (
        rng.integers(0, max(n, 1), size=n) if repeats else rng.permutation(n * spread)[:n]
    ).astype(np.int64)
    rows = rng.permutation(10 * n + 1)[:n].astype(np.int64)
    assert in_key_order(rows, keys).tolist() == rows[np.argsort(keys, kind="stable")].tolist()


def test_terms_and_postings_must_pair_up() -> None:
    with pytest.raises(ValueError, match="2 terms but 1 postings"):
        postings_candidates(
            CorpusStats(n_docs=0, avg_doc_length=0.0), ("a", "b"), [EMPTY_POSTING],
            np.zeros(0, dtype=np.int64), np.empty(0, dtype=object), 5, lambda rows: [],
        )  # fmt: skip


@settings(max_examples=120, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 300),
    st.integers(1, BIT_TERMS + 2),
    st.sampled_from([0, 1, 5, 63, 64, 65, 200, 2**62]),
    st.booleans(),
)
def test_rows_counted_on_bitsets_come_in_the_order_the_per_row_count_gives(
    seed: int, n: int, terms: int, limit: int, kept: bool
) -> None:
    rng = np.random.default_rng(seed)
    density = rng.random(terms) ** 3  # some terms in most rows, some in a few
    present = rng.random((n, terms)) < density
    corpus = [tuple(int(x) for x in row) for row in present * rng.integers(1, 4, (n, terms))]
    names = tuple(f"t{j:02d}" for j in range(terms))
    postings = [
        (np.flatnonzero(present[:, j]).astype(np.int32), np.asarray([c[j] for c in corpus if c[j]],
                                                                    dtype=np.int32))
        for j in range(terms)
    ]  # fmt: skip
    bits = (lambda j: posting_bits(postings[j][0], n)) if kept else None
    lengths = np.full(n, 7, dtype=np.int64)
    ids = np.empty(n, dtype=object)
    ids[:] = [f"id{r:04d}" for r in range(n)]
    found = postings_candidates(
        CorpusStats(n_docs=n, avg_doc_length=7.0), names, postings, lengths, ids, limit,
        lambda rows: [chunk(r) for r in rows], bits=bits,
    )  # fmt: skip
    matching = [r for r in range(n) if any(corpus[r])]
    expected = sorted(matching, key=lambda r: (-sum(1 for tf in corpus[r] if tf), r))[:limit]
    assert found.matching == len(matching)
    assert found.id_order.tolist() == expected
    assert found.tfs.tolist() == [list(corpus[r]) for r in expected]


@pytest.mark.parametrize("words", [1, 3, SMALL_WORDS, SMALL_WORDS + 1, 4 * SMALL_WORDS])
@pytest.mark.parametrize("most", [1, 70, 10**9])
def test_the_first_rows_of_a_bitset_are_its_smallest_whatever_its_size(
    words: int, most: int
) -> None:
    rng = np.random.default_rng(words * 7 + most)
    for density in (0.0, 0.001, 0.3):
        rows = np.flatnonzero(rng.random(words * 64) < density).astype(np.int32)
        matching, found = bit_selection([posting_bits(rows, words * 64)], 1, most)
        assert matching == len(rows)
        assert (found.tolist() if found is not None else []) == rows[:most].tolist()
