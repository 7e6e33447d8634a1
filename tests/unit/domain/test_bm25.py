"""The formula: IDF, saturation, length normalisation, and exact explanations."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from core.domain.bm25 import (
    BM25_B,
    BM25_K1,
    CorpusStats,
    QueryScorer,
    ScoreExplanation,
    bm25_score,
    corpus_stats,
    explain_score,
    inverse_document_frequency,
)

TERMS = st.text(alphabet="abcdefgh", min_size=1, max_size=3)


@st.composite
def scoring_inputs(draw: st.DrawFn) -> tuple[list[str], dict[str, int], int, CorpusStats]:
    n_docs = draw(st.integers(min_value=0, max_value=10_000))
    query = draw(st.lists(TERMS, min_size=0, max_size=8))
    dfs = {t: draw(st.integers(min_value=0, max_value=n_docs)) for t in set(query)}
    tfs = {t: draw(st.integers(min_value=0, max_value=50)) for t in set(query)}
    doc_length = sum(tfs.values()) + draw(st.integers(min_value=0, max_value=500))
    avgdl = draw(st.floats(min_value=0.0, max_value=1e4, allow_nan=False)) if n_docs else 0.0
    stats = CorpusStats(n_docs=n_docs, avg_doc_length=avgdl, doc_frequencies=dfs)
    return query, tfs, doc_length, stats


def test_the_constants_are_lucenes_defaults() -> None:
    assert (BM25_K1, BM25_B) == (1.2, 0.75)


@given(st.integers(min_value=0, max_value=10**9), st.data())
def test_idf_is_positive_for_every_document_frequency_up_to_n(n: int, data: st.DataObject) -> None:
    df = data.draw(st.integers(min_value=0, max_value=n))
    stats = CorpusStats(n_docs=n, avg_doc_length=1.0, doc_frequencies={"t": df})
    assert inverse_document_frequency("t", stats) > 0.0


def test_idf_is_lucenes_formula_and_a_missing_term_has_df_zero() -> None:
    stats = CorpusStats(n_docs=1400, avg_doc_length=111.0, doc_frequencies={"wing": 300})
    assert inverse_document_frequency("wing", stats) == math.log(1 + (1400 - 300 + 0.5) / 300.5)
    assert inverse_document_frequency("absent", stats) == math.log(1 + 1400.5 / 0.5)


@given(scoring_inputs())
def test_the_explanation_adds_up_to_the_score_exactly(
    inputs: tuple[list[str], dict[str, int], int, CorpusStats],
) -> None:
    query, tfs, doc_length, stats = inputs
    explanation = explain_score(query, tfs, doc_length, stats)
    total = 0.0
    for part in explanation.terms:
        total += part.contribution
    assert total == explanation.score
    assert explanation.score == bm25_score(query, tfs, doc_length, stats)
    assert [p.term for p in explanation.every_term()] == sorted(set(query))
    matched = sorted(t for t in set(query) if tfs.get(t, 0) > 0 and stats.n_docs > 0)
    assert [p.term for p in explanation.terms] == matched
    assert explanation.unmatched == sorted(set(query) - set(matched))
    for part in explanation.every_term():
        assert part.contribution == part.idf * part.tf_part


@given(scoring_inputs(), st.randoms(use_true_random=False))
def test_the_order_of_query_terms_never_changes_a_score(
    inputs: tuple[list[str], dict[str, int], int, CorpusStats], rnd: object
) -> None:
    query, tfs, doc_length, stats = inputs
    shuffled = list(query)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    a = bm25_score(query, tfs, doc_length, stats)
    b = bm25_score(shuffled, tfs, doc_length, stats)
    assert a.hex() == b.hex()


def test_a_repeated_query_term_counts_once() -> None:
    stats = CorpusStats(n_docs=10, avg_doc_length=5.0, doc_frequencies={"wing": 2})
    once = bm25_score(["wing"], {"wing": 1}, 5, stats)
    assert bm25_score(["wing", "wing", "wing"], {"wing": 1}, 5, stats) == once


def test_a_rare_term_outweighs_a_common_one() -> None:
    stats = CorpusStats(
        n_docs=1000, avg_doc_length=100.0, doc_frequencies={"rare": 3, "common": 600}
    )
    rare = bm25_score(["rare"], {"rare": 2}, 100, stats)
    common = bm25_score(["common"], {"common": 2}, 100, stats)
    assert rare > common > 0.0


def test_more_occurrences_score_higher_but_saturate() -> None:
    stats = CorpusStats(n_docs=100, avg_doc_length=50.0, doc_frequencies={"flutter": 10})
    scores = [bm25_score(["flutter"], {"flutter": tf}, 50, stats) for tf in range(1, 11)]
    assert all(a < b for a, b in itertools.pairwise(scores))
    assert scores[9] < 10 * scores[0]
    ceiling = inverse_document_frequency("flutter", stats) * (BM25_K1 + 1)
    assert scores[9] < ceiling


def test_a_shorter_passage_beats_a_longer_one_at_equal_tf() -> None:
    stats = CorpusStats(n_docs=100, avg_doc_length=50.0, doc_frequencies={"nozzle": 10})
    short = bm25_score(["nozzle"], {"nozzle": 2}, 20, stats)
    long = bm25_score(["nozzle"], {"nozzle": 2}, 200, stats)
    assert short > long


def test_a_term_the_passage_lacks_contributes_nothing_but_is_still_explained() -> None:
    stats = CorpusStats(n_docs=10, avg_doc_length=5.0, doc_frequencies={"wing": 2})
    explanation = explain_score(["wing", "obeyed"], {"wing": 1}, 5, stats)
    assert [p.term for p in explanation.terms] == ["wing"]  # named, not built: no model each
    assert explanation.unmatched == ["obeyed"]
    obeyed = next(p for p in explanation.every_term() if p.term == "obeyed")
    assert (obeyed.tf, obeyed.df, obeyed.tf_part, obeyed.contribution) == (0, 0, 0.0, 0.0)
    assert obeyed.idf > 0.0


def test_an_empty_corpus_scores_zero_everywhere() -> None:
    stats = CorpusStats(n_docs=0, avg_doc_length=0.0, doc_frequencies={})
    assert bm25_score(["wing"], {"wing": 3}, 7, stats) == 0.0


def test_a_corpus_of_empty_documents_needs_no_division_by_zero() -> None:
    stats = CorpusStats(n_docs=3, avg_doc_length=0.0, doc_frequencies={"wing": 1})
    explanation = explain_score(["wing"], {"wing": 1}, 0, stats)
    assert explanation.terms[0].length_norm == BM25_K1 * (1 - BM25_B)
    assert explanation.score > 0.0


def test_columns_where_absent_terms_divide_zero_by_zero_score_as_each_passage_does_silently() -> (
    None
):
    """k1 = 0 makes every length norm 0, so an absent term's cell is 0 / 0: it is masked to 0.0
    under numpy's error state set to ignore it (only there: unmasked cells never divide by 0)."""
    stats = CorpusStats(n_docs=3, avg_doc_length=5.0, doc_frequencies={"a": 2, "b": 1})
    scorer = QueryScorer(["a", "b"], stats, k1=0.0)
    tfs = np.array([[2, 0], [0, 1], [1, 3]], dtype=np.int64)
    lengths = np.array([4, 6, 5], dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = scorer.score_columns(["a", "b"], tfs, lengths)
    expected = [
        scorer.score({"a": 2}, 4),
        scorer.score({"b": 1}, 6),
        scorer.score({"a": 1, "b": 3}, 5),
    ]
    assert got.tolist() == expected


@pytest.mark.parametrize(
    ("n_docs", "avgdl", "dfs"),
    [(-1, 1.0, {}), (3, -0.5, {}), (3, 1.0, {"x": 4}), (3, 1.0, {"x": -1}), (3, math.inf, {})],
)
def test_impossible_statistics_are_rejected(n_docs: int, avgdl: float, dfs: dict[str, int]) -> None:
    with pytest.raises(ValidationError):
        CorpusStats(n_docs=n_docs, avg_doc_length=avgdl, doc_frequencies=dfs)


def test_corpus_stats_reports_zero_for_requested_terms_the_corpus_lacks() -> None:
    stats = corpus_stats([["wing", "wing", "body"], ["body"]], terms=["wing", "nozzle"])
    assert stats.n_docs == 2
    assert stats.avg_doc_length == 2.0
    assert stats.doc_frequencies == {"wing": 1, "nozzle": 0}


def test_an_explanation_built_without_validation_is_the_model_validation_would_build() -> None:
    stats = CorpusStats(n_docs=10, avg_doc_length=5.0, doc_frequencies={"a": 2, "b": 9})
    explanation = QueryScorer(["b", "a", "c"], stats).explain({"a": 2, "b": 1}, 6)
    again = ScoreExplanation.model_validate(explanation.model_dump())
    assert explanation == again
    assert explanation.model_dump() == again.model_dump()
    assert explanation.model_fields_set == again.model_fields_set
    assert repr(explanation) == repr(again)
    with pytest.raises(ValidationError):
        explanation.terms[0].tf = 5  # frozen, as a validated one is


@pytest.mark.parametrize("avgdl", [0.0, 7.3])
def test_a_grid_of_k1_and_b_scores_each_point_to_the_bits_of_its_own_scorer(avgdl: float) -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    terms = [f"t{j}" for j in range(9)]
    stats = CorpusStats(
        n_docs=500,
        avg_doc_length=avgdl,
        doc_frequencies={t: int(rng.integers(1, 400)) for t in terms},
    )
    tfs = rng.integers(0, 4, size=(300, len(terms))) * (rng.random((300, len(terms))) < 0.4)
    lengths = rng.integers(0 if avgdl == 0 else 1, 40, size=300)
    settings = [(k1, b) for k1 in (0.0, 0.5, 1.2, 3.0) for b in (0.0, 0.35, 0.75, 1.0)]
    asked = [*terms[1:], "absent"]
    grid = QueryScorer(asked, stats).score_grid(terms, tfs, lengths, settings)
    for (k1, b), row in zip(settings, grid, strict=True):
        alone = QueryScorer(asked, stats, k1=k1, b=b).score_columns(terms, tfs, lengths)
        assert row.tobytes() == alone.tobytes(), (k1, b)


def _bits(explanation: ScoreExplanation) -> list[object]:
    """Every number of an explanation as exact bits (floats by ``hex``), in order."""
    floats = (explanation.score, explanation.length_norm, explanation.avg_doc_length)
    rows = [
        (t.term, t.tf, t.df, t.n_docs, t.doc_length, t.idf.hex(), t.tf_part.hex(),
         t.contribution.hex(), t.length_norm.hex(), t.avg_doc_length.hex())
        for t in explanation.terms
    ]  # fmt: skip
    return [[f.hex() for f in floats], rows, explanation.unmatched, explanation.unmatched_df,
            explanation.n_docs, explanation.doc_length, explanation.model_fields_set]  # fmt: skip


@given(
    n_docs=st.integers(min_value=0, max_value=10_000),
    avgdl=st.sampled_from([0.0, 0.5, 7.3, 151.25]),
    k1=st.sampled_from([0.0, 1.2, 3.0]),
    b=st.sampled_from([0.0, 0.75, 1.0]),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_explaining_many_rows_at_once_gives_each_the_bits_of_its_own_explanation(
    n_docs: int, avgdl: float, k1: float, b: float, seed: int
) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    columns = [f"t{j}" for j in range(6)]
    stats = CorpusStats(
        n_docs=n_docs,
        avg_doc_length=avgdl if n_docs else 0.0,
        doc_frequencies={t: int(rng.integers(0, n_docs + 1)) for t in columns},
    )
    tfs = rng.integers(0, 5, size=(12, len(columns))) * (rng.random((12, len(columns))) < 0.5)
    lengths = tfs.sum(axis=1) + rng.integers(0, 60, size=12)
    # A query term outside the columns, and a column the query does not ask for.
    asked = [*columns[1:], "absent", "t3"]
    scorer = QueryScorer(asked, stats, k1=k1, b=b)
    many = scorer.explain_columns(columns, tfs, lengths)
    assert len(many) == len(lengths)
    for i, explanation in enumerate(many):
        mapping = {t: int(tf) for t, tf in zip(columns, tfs[i], strict=True) if tf}
        alone = scorer.explain(mapping, int(lengths[i]))
        assert explanation == alone
        assert _bits(explanation) == _bits(alone)
        assert explanation.score == scorer.score(mapping, int(lengths[i]))
