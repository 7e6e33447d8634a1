"""A cut read's places: where each passage past the limit stands in the uncut order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.domain.bm25 import CorpusStats
from core.domain.places import Place
from core.domain.postings import BIT_TERMS, postings_candidates
from core.domain.ranking import LexicalCandidates
from tests.unit.domain.test_postings import TERMS, chunk, corpora, postings_of


def read(
    corpus: list[tuple[int, ...]],
    ranks: list[int],
    limit: int,
    shuffled: bool,
    admitted: np.ndarray | None = None,
) -> LexicalCandidates:
    """The kernel's read of ``corpus`` whose row r has the ``ranks[r]``-th id: rows in id
    order (the in-memory store's view) or, ``shuffled``, out of it (PostgreSQL's image)."""
    n = len(corpus)
    ids = np.empty(n, dtype=object)
    ids[:] = [f"p{rank:03d}" for rank in ranks]
    lengths = np.array([sum(tfs) + 3 for tfs in corpus], dtype=np.int64)
    stats = CorpusStats(n_docs=n, avg_doc_length=float(lengths.mean()) if n else 0.0)
    id_rank = np.array(ranks, dtype=np.int64) if shuffled else None
    id_rows = np.argsort(np.array(ranks, dtype=np.int64)) if shuffled else None
    return postings_candidates(
        stats, TERMS, postings_of(corpus), lengths, ids, limit,
        lambda rows: [chunk(r) for r in rows], id_rank, admitted=admitted, id_rows=id_rows,
    )  # fmt: skip


def uncut_places(full: LexicalCandidates) -> dict[str, Place]:
    """Every row of an uncut read as the place it stands at."""
    return {
        str(full.ids_at([row])[0]): Place(row, tuple(int(tf) for tf in full.tfs[row]))
        for row in range(len(full))
    }


@settings(max_examples=200, deadline=None)
@given(corpora, st.integers(1, 45), st.randoms(use_true_random=False), st.booleans(), st.data())
def test_a_cut_read_places_every_passage_where_the_uncut_read_has_it(
    corpus: list[tuple[int, ...]], limit: int, rng: object, shuffled: bool, data: st.DataObject
) -> None:
    n = len(corpus)
    ranks = list(range(n))
    if shuffled:
        rng.shuffle(ranks)  # type: ignore[attr-defined]
    admitted = None
    if data.draw(st.booleans(), label="filtered"):
        admitted = np.array(
            sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n))), dtype=np.int64
        )
    cut = read(corpus, ranks, limit, shuffled, admitted)
    full = read(corpus, ranks, n + 1, shuffled, admitted)
    asked = [f"p{rank:03d}" for rank in range(n)] + ["p999", "nothing", ""]
    if cut.places is None:  # nothing matched, or a read nothing cut (every row is there)
        assert cut.matching == 0 or (limit >= n and not shuffled and admitted is None)
        return
    assert cut.places(asked) == uncut_places(full)


def test_a_place_is_the_rows_holding_more_terms_then_the_smaller_ids_holding_as_many() -> None:
    # Rows 0..4 in id order: tf of a, b, c, d.
    corpus = [(1, 0, 0, 0), (1, 1, 0, 0), (0, 0, 0, 0), (2, 0, 0, 0), (1, 1, 1, 0)]
    cut = read(corpus, list(range(5)), 1, shuffled=False)
    assert cut.ids.tolist() == ["p004"]  # three terms: the only one kept
    assert cut.places is not None
    assert cut.places(["p003", "p000", "p002", "p001"]) == {
        "p001": Place(1, (1, 1, 0, 0)),  # after the one holding three terms
        "p000": Place(2, (1, 0, 0, 0)),  # one term: after both holding more
        "p003": Place(3, (2, 0, 0, 0)),  # one term, and a larger id than p000
    }


def test_many_passages_of_one_level_across_many_words_are_placed_as_one_by_one() -> None:
    # Hundreds of rows a level, past the first bitset word and past the one-by-one count:
    # the running sums place them as the uncut read has them, rows in id order or not.
    rng = np.random.default_rng(7)
    corpus = [tuple(int(tf) for tf in rng.integers(0, 3, len(TERMS))) for _ in range(700)]
    asked = [f"p{rank:03d}" for rank in range(len(corpus))]
    for shuffled in (False, True):
        ranks = rng.permutation(len(corpus)).tolist() if shuffled else list(range(len(corpus)))
        cut = read(corpus, ranks, 50, shuffled)
        full = read(corpus, ranks, len(corpus) + 1, shuffled)
        assert cut.places is not None
        assert cut.places(asked) == uncut_places(full)
        assert cut.places(asked[::97]) == {
            chunk: place for chunk, place in uncut_places(full).items() if chunk in asked[::97]
        }


def test_a_query_of_more_terms_than_bitsets_count_is_placed_from_its_count_array() -> None:
    # Past BIT_TERMS the kernel counts on one bincount, rows in id order or not: the
    # places, one by one and by running sums, are the uncut read's rows still.
    rng = np.random.default_rng(11)
    terms = tuple(f"t{j:02d}" for j in range(BIT_TERMS + 2))
    corpus = [(rng.random(len(terms)) < 0.15).astype(int).tolist() for _ in range(400)]
    postings = []
    for j in range(len(terms)):
        rows = [r for r, tfs in enumerate(corpus) if tfs[j]]
        postings.append((np.array(rows, dtype=np.int32), np.ones(len(rows), dtype=np.int32)))
    lengths = np.full(len(corpus), 5, dtype=np.int64)
    stats = CorpusStats(n_docs=len(corpus), avg_doc_length=5.0)
    for shuffled in (False, True):
        ranks = rng.permutation(len(corpus)).tolist() if shuffled else list(range(len(corpus)))
        ids = np.empty(len(corpus), dtype=object)
        ids[:] = [f"p{rank:03d}" for rank in ranks]
        id_rank = np.array(ranks, dtype=np.int64) if shuffled else None
        id_rows = np.argsort(np.array(ranks)) if shuffled else None

        def read(limit: int) -> LexicalCandidates:
            return postings_candidates(
                stats, terms, postings, lengths, ids, limit,  # noqa: B023
                lambda rows: [chunk(r) for r in rows], id_rank, id_rows=id_rows,  # noqa: B023
            )  # fmt: skip

        cut, full = read(20), read(len(corpus) + 1)
        assert cut.places is not None
        every = sorted(str(i) for i in ids)
        assert cut.places(every) == uncut_places(full)
        assert cut.places(every[::41]) == {
            c: p for c, p in uncut_places(full).items() if c in every[::41]
        }
