"""Candidates to ranked passages: ordering, dropping, k, and explanations."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable
from uuid import UUID

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.domain.bm25 import CorpusStats, IdfForm, QueryScorer, bm25_score
from core.domain.chunks import StoredChunk
from core.domain.ranking import (
    LexicalCandidate,
    LexicalCandidates,
    RankedChunk,
    candidate_scores,
    rank_chunks,
)

TENANT = UUID("00000000-0000-0000-0000-000000000001")


def candidate(text: str, tfs: dict[str, int], doc_length: int) -> LexicalCandidate:
    chunk = StoredChunk(
        tenant_id=TENANT, source_id="s", text=text, chunk_index=0, start_char=0, end_char=len(text)
    )
    return LexicalCandidate(chunk=chunk, doc_length=doc_length, term_frequencies=tfs)


STATS = CorpusStats(n_docs=100, avg_doc_length=10.0, doc_frequencies={"wing": 5, "body": 40})


def test_equal_scores_are_ordered_by_chunk_id_ascending() -> None:
    twins = [candidate(f"twin {i}", {"wing": 1}, 10) for i in range(6)]
    ranked = rank_chunks(["wing"], LexicalCandidates(stats=STATS, candidates=twins), k=10)
    assert len({r.score for r in ranked}) == 1
    assert [r.chunk.id for r in ranked] == sorted(c.chunk.id for c in twins)


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(1, 30)), max_size=25))
def test_the_ranking_does_not_depend_on_the_order_candidates_arrive_in(
    rows: list[tuple[int, int, int]],
) -> None:
    cands = [
        candidate(f"passage {i}", {"wing": w, "body": b}, w + b + pad)
        for i, (w, b, pad) in enumerate(rows)
    ]
    shuffled = list(cands)
    random.Random(len(rows)).shuffle(shuffled)
    a = rank_chunks(["body", "wing"], LexicalCandidates(stats=STATS, candidates=cands), k=7)
    b = rank_chunks(["wing", "body"], LexicalCandidates(stats=STATS, candidates=shuffled), k=7)
    assert [(r.chunk.id, r.score) for r in a] == [(r.chunk.id, r.score) for r in b]
    assert all(x.score >= y.score for x, y in itertools.pairwise(a))


def test_passages_that_match_no_term_are_dropped() -> None:
    cands = [candidate("match", {"wing": 1}, 5), candidate("nothing", {}, 5)]
    ranked = rank_chunks(["wing"], LexicalCandidates(stats=STATS, candidates=cands), k=10)
    assert [r.chunk.text for r in ranked] == ["match"]


def test_k_keeps_the_best_and_zero_keeps_none() -> None:
    cands = [candidate(f"p{tf}", {"wing": tf}, 10) for tf in range(1, 6)]
    pool = LexicalCandidates(stats=STATS, candidates=cands)
    assert [r.chunk.text for r in rank_chunks(["wing"], pool, k=2)] == ["p5", "p4"]
    assert rank_chunks(["wing"], pool, k=0) == []


def test_a_negative_k_is_refused() -> None:
    with pytest.raises(ValueError, match="k must be >= 0"):
        rank_chunks(["wing"], LexicalCandidates(stats=STATS), k=-1)


def test_every_ranked_passage_carries_the_explanation_of_its_exact_score() -> None:
    cands = [candidate("a", {"wing": 2, "body": 1}, 12), candidate("b", {"body": 3}, 4)]
    ranked = rank_chunks(["wing", "body"], LexicalCandidates(stats=STATS, candidates=cands), k=5)
    for r, c in zip(ranked, cands, strict=True):
        assert r.score == r.explanation.score
        assert r.score == bm25_score(["wing", "body"], c.term_frequencies, c.doc_length, STATS)


def test_no_terms_rank_nothing() -> None:
    cands = [candidate("a", {"wing": 2}, 12)]
    assert rank_chunks([], LexicalCandidates(stats=STATS, candidates=cands), k=5) == []


@given(
    rows=st.lists(
        st.tuples(st.integers(0, 400), st.integers(0, 30), st.integers(0, 30), st.integers(0, 9)),
        min_size=1,
        max_size=40,
    ),
    # Small corpora often: there the classic IDF of every term is 0 or below.
    n_docs=st.one_of(st.integers(0, 80), st.integers(0, 10_000)),
    avg=st.sampled_from([0.0, 0.5, 7.3, 10.0, 123.456]),
    k1=st.sampled_from([0.0, 0.9, 1.2, 2.0]),
    b=st.sampled_from([0.0, 0.4, 0.75, 1.0]),
    idf_form=st.sampled_from(list(IdfForm)),
    other_column=st.booleans(),
    query=st.sets(st.sampled_from(["wing", "tail", "body", "absent"]), min_size=1),
)
# A query of one common term, classic IDF (below 0), a passage without it: -0.0 unmasked.
@example([(5, 0, 0, 0)], 10, 7.3, 1.2, 0.75, IdfForm.CLASSIC, False, {"wing"})
def test_the_column_scorer_gives_every_passage_the_bits_of_the_scalar_scorer(
    rows: list[tuple[int, int, int, int]],
    n_docs: int,
    avg: float,
    k1: float,
    b: float,
    idf_form: IdfForm,
    other_column: bool,
    query: set[str],
) -> None:
    stats = CorpusStats(
        n_docs=n_docs,
        avg_doc_length=avg,
        doc_frequencies={"body": min(3, n_docs), "wing": min(40, n_docs), "tail": min(7, n_docs)},
    )
    # Up to three terms present: float addition is not associative, so a changed order shows. The
    # classic IDF is 0 or below for a common term: an absent term's cell is then -0.0 or NaN
    # unmasked (a sum of such cells alone stays -0.0). A column the query lacks is read past.
    scorer = QueryScorer(query, stats, k1=k1, b=b, idf_form=idf_form)
    columns = ("absent", "body", "other", "tail", "wing") if other_column else (
        "absent", "body", "tail", "wing")  # fmt: skip
    tfs = np.array(
        [[0, body, *([1] if other_column else []), tail, wing] for _, body, wing, tail in rows],
        dtype=np.int64,
    )
    lengths = np.array([row[0] for row in rows], dtype=np.int64)
    vectorised = scorer.score_columns(columns, tfs, lengths)
    for (length, body, wing, tail), got in zip(rows, vectorised, strict=True):
        want = scorer.score({"body": body, "wing": wing, "tail": tail}, length)
        # Bits, not ==: -0.0 == 0.0.
        assert got.item().hex() == want.hex() or (math.isnan(want) and math.isnan(got))


def test_columns_built_from_rows_rank_as_the_rows_do_and_hand_back_copies() -> None:
    cands = [candidate(f"t{i}", {"wing": 1 + i % 3}, 5 + i) for i in range(12)]
    pool = LexicalCandidates(stats=STATS, candidates=cands)
    assert list(pool.ids) == [c.chunk.id for c in cands]
    assert pool.head(4).candidates == pool.candidates[:4]
    first = pool.chunks([0])[0]
    first.entity_ids.append(TENANT)
    assert pool.chunks([0])[0].entity_ids == []
    with pytest.raises(ValueError, match="read-only"):
        pool.tfs[0, 0] = 99


def test_sources_come_from_the_column_when_filled_and_from_the_passages_when_not() -> None:
    cands = [
        LexicalCandidate(
            chunk=StoredChunk(
                tenant_id=TENANT, source_id=f"s{i % 3}", text=f"t{i}", chunk_index=0,
                start_char=0, end_char=2,
            ),
            doc_length=5,
            term_frequencies={"wing": 1},
        )
        for i in range(6)
    ]  # fmt: skip
    pool = LexicalCandidates(stats=STATS, candidates=cands)
    assert pool.sources_at([5, 0, 4]).tolist() == ["s2", "s0", "s1"]
    assert pool.head(2).sources_at([1]).tolist() == ["s1"]
    bare = pool.model_copy(update={"source_pool": np.empty(0, dtype=object)})
    assert bare.sources_at([5, 0, 4]).tolist() == ["s2", "s0", "s1"]  # read off the copies
    assert bare.sources_at([]).tolist() == []
    pooled = LexicalCandidates(
        stats=STATS,
        id_pool=np.array(["a", "b", "c"], dtype=object),
        id_rows=np.array([2, 0], dtype=np.int64),
        source_pool=np.array(["sa", "sb", "sc"], dtype=object),
        id_order=np.array([1, 0], dtype=np.int64),
        doc_lengths=np.array([1, 1], dtype=np.int64),
        tfs=np.zeros((2, 0), dtype=np.int64),
    )
    assert pooled.sources_at([0, 1]).tolist() == ["sc", "sa"]
    with pytest.raises(ValueError, match="source_pool"):
        LexicalCandidates(
            stats=STATS,
            ids=np.array(["a"], dtype=object),
            source_pool=np.array(["x", "y"], dtype=object),
            id_order=np.array([0], dtype=np.int64),
            doc_lengths=np.array([1], dtype=np.int64),
            tfs=np.zeros((1, 0), dtype=np.int64),
        )


def test_candidates_scored_twice_for_one_query_are_scored_once() -> None:
    """A PostgreSQL read scores every candidate to choose its prefetch; the analysis it
    hands them to reuses those scores instead of scoring a million rows again."""
    cands = [candidate(f"p{tf}", {"wing": tf, "body": 1}, 10) for tf in range(1, 6)]
    pool = LexicalCandidates(stats=STATS, candidates=cands)
    first = candidate_scores(["body", "wing"], pool)
    assert candidate_scores(["body", "wing"], pool) is first
    assert candidate_scores(["wing"], pool) is not first  # another query, scored afresh
    assert not first.flags.writeable


def test_a_copy_with_other_rows_or_statistics_is_scored_afresh() -> None:
    cands = [candidate(f"p{tf}", {"wing": tf}, 10 + tf) for tf in range(1, 6)]
    pool = LexicalCandidates(stats=STATS, candidates=cands)
    whole = candidate_scores(["wing"], pool)
    head = pool.head(2)
    assert candidate_scores(["wing"], head).tolist() == whole[:2].tolist()
    other = CorpusStats(n_docs=1_000, avg_doc_length=10.0, doc_frequencies={"wing": 5})
    restated = pool.model_copy(update={"stats": other})
    fresh = LexicalCandidates(stats=other, candidates=cands)
    assert candidate_scores(["wing"], restated).tolist() == (
        candidate_scores(["wing"], fresh).tolist()
    )
    assert candidate_scores(["wing"], restated).tolist() != whole.tolist()


def test_results_explained_on_first_read_are_the_eager_ones_bit_for_bit_in_every_form(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``rank_chunks`` leaves each explanation until it is read; read, dumped, compared,
    printed, copied or pickled, a result is what the stepped ranking builds at once."""
    import copy
    import pickle

    from core.domain.ranking import rank_steps
    from core.domain.steps import finish

    rng = random.Random(7)
    cands = [
        candidate(
            f"p{i}", {"wing": rng.randint(0, 3), "body": rng.randint(0, 3)}, rng.randint(1, 30)
        )
        for i in range(40)
    ]
    pool = LexicalCandidates(stats=STATS, candidates=cands)
    terms = ["wing", "body", "tail"]
    eager = finish(rank_steps(terms, pool, 12))
    built = 0
    explain = QueryScorer.explain_columns

    def counted(*args: object, **kwargs: object) -> object:
        nonlocal built
        built += 1
        return explain(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(QueryScorer, "explain_columns", counted)
    later = rank_chunks(terms, pool, 12)
    assert built == 0 and [(r.chunk, r.score) for r in later] == [(r.chunk, r.score) for r in eager]
    assert [r.explanation for r in later] == [r.explanation for r in eager] and built == 1
    for a, b in zip(later, eager, strict=True):
        assert a.explanation.score.hex() == b.score.hex() == b.explanation.score.hex()
        assert [t.contribution.hex() for t in a.explanation.terms] == [
            t.contribution.hex() for t in b.explanation.terms
        ]
    forms: list[Callable[[RankedChunk], object]] = [
        lambda r: r.model_dump(),
        lambda r: r.model_dump_json(),
        repr,
        lambda r: pickle.loads(pickle.dumps(r)),
        lambda r: copy.deepcopy(r).explanation,
        lambda r: r.model_copy().explanation,
    ]
    for form in forms:
        fresh = rank_chunks(terms, pool, 12)
        assert [form(r) for r in fresh] == [form(r) for r in eager]
    assert rank_chunks(terms, pool, 12) == eager
