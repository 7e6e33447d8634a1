"""Query performance predictors: hand-worked cases, the rule's plain line, and the facade.

The expected IDFs are worked out here from Lucene's formula written out by hand, so a change
to what the predictors take their IDF from shows; the facade cases check that Search and
Judge hand the predictors the numbers of their one read (matching, not candidates).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from core.analysis.predictors import (
    HARD_CUT_SHARE,
    HARD_MAX_IDF,
    HARD_NQC,
    HARD_SCOPE,
    QueryDifficulty,
    hardest_first,
    query_difficulty,
)
from core.domain.bm25 import CorpusStats
from core.service import LexplainService
from core.settings import Settings

#: A workspace of 100 passages: two rare terms, two common ones.
STATS = CorpusStats(
    n_docs=100,
    avg_doc_length=10.0,
    doc_frequencies={"zeppelin": 1, "dirigible": 2, "flow": 60, "wing": 40},
)


def lucene_idf(df: int, n: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def test_a_query_of_rare_terms_scores_as_easy() -> None:
    d = query_difficulty(["zeppelin", "dirigible"], STATS, 3, 0, [9.0, 6.0, 2.0])
    rare, less_rare = lucene_idf(1, 100), lucene_idf(2, 100)
    assert d.mean_idf == pytest.approx((rare + less_rare) / 2)
    assert d.max_idf == pytest.approx(rare)
    assert d.scq == pytest.approx(1.0 * rare + (1 + math.log(2)) * less_rare)
    assert d.scq is not None and d.mean_scq == pytest.approx(d.scq / 2)
    assert d.scope == pytest.approx(0.03)
    assert d.rarest_share == pytest.approx(0.01)
    assert not d.likely_hard
    assert d.line is None


def test_a_query_of_common_terms_scores_as_hard_and_says_so_in_plain_words() -> None:
    d = query_difficulty(["flow", "wing", "flow"], STATS, 70, 0)
    assert d.mean_idf == pytest.approx((lucene_idf(60, 100) + lucene_idf(40, 100)) / 2)
    assert d.max_idf == pytest.approx(lucene_idf(40, 100))
    assert d.max_idf is not None and d.max_idf < HARD_MAX_IDF and d.scope >= HARD_SCOPE
    assert d.scope == pytest.approx(0.7)
    assert d.likely_hard
    assert d.line == (
        "Likely hard: its terms are common: 70% of passages match, "
        "and even the rarest term is in 40% of them."
    )


def test_one_rare_term_keeps_a_broad_query_off_the_hard_list() -> None:
    d = query_difficulty(["flow", "wing", "zeppelin"], STATS, 70, 0)
    assert d.scope >= HARD_SCOPE
    assert d.max_idf == pytest.approx(lucene_idf(1, 100))
    assert not d.likely_hard


def test_terms_the_workspace_does_not_hold_count_for_nothing() -> None:
    d = query_difficulty(["zeppelin", "unheard"], STATS, 1, 0)
    assert d.terms_present == 1
    assert d.mean_idf == pytest.approx(lucene_idf(1, 100))
    nothing = query_difficulty(["unheard"], STATS, 0, 0)
    assert nothing.mean_idf is None and nothing.scq is None and nothing.scope == 0.0
    assert not nothing.likely_hard  # the empty result says why; "hard" would add nothing


def test_nqc_of_identical_scores_is_zero_and_they_read_as_level() -> None:
    d = query_difficulty(["zeppelin", "dirigible"], STATS, 3, 0, [4.0, 4.0, 4.0])
    assert d.nqc == 0.0
    assert d.score_gap == 0.0
    assert d.scored == 3
    assert d.likely_hard
    assert d.line == (
        "Likely hard: the top 3 scores are nearly level (their spread is 0% of their mean)."
    )


def test_nqc_is_the_spread_of_the_top_scores_over_their_mean_and_the_gap_is_relative() -> None:
    d = query_difficulty(["zeppelin"], STATS, 3, 0, [6.0, 4.0, 2.0])
    assert d.nqc == pytest.approx(math.sqrt(8 / 3) / 4)  # population sd 1.633, mean 4
    assert d.score_gap == pytest.approx(4 / 6)
    assert d.nqc is not None and d.nqc > HARD_NQC and not d.likely_hard


def test_one_score_or_none_gives_no_post_retrieval_predictor() -> None:
    assert query_difficulty(["zeppelin"], STATS, 1, 0, [5.0]).nqc is None
    before = query_difficulty(["zeppelin"], STATS, 1, 0)
    assert before.nqc is None and before.score_gap is None and before.scored == 0


def test_the_limit_share_is_of_the_matching_passages_and_says_so() -> None:
    d = query_difficulty(["zeppelin", "dirigible"], STATS, 50, 20, [9.0, 6.0, 2.0])
    assert d.limit_cut_share == pytest.approx(0.4)
    assert d.limit_cut_share >= HARD_CUT_SHARE
    assert d.line == "Likely hard: the limit cut 40% of the matches before scoring."


def test_a_filter_narrows_the_cut_share_but_not_the_scope() -> None:
    d = query_difficulty(["flow", "wing"], STATS, 10, 5, filtered_out=60)
    assert d.scope == pytest.approx(0.7)  # every matching passage of the workspace
    assert d.limit_cut_share == pytest.approx(0.5)  # of the 10 the limit saw
    assert d.line == (
        "Likely hard: its terms are common: 70% of passages match, and even the rarest term "
        "is in 40% of them; the limit cut 50% of the matches before scoring."
    )


def test_a_tiny_share_is_never_rounded_down_to_zero() -> None:
    from core.analysis.predictors import percent

    assert percent(0.001) == "under 1%"
    assert percent(0.0) == "0%"
    assert percent(0.62) == "62%"


def _difficulty(mean_scq: float | None, hard: bool) -> QueryDifficulty:
    return QueryDifficulty(
        terms_present=0 if mean_scq is None else 1,
        mean_idf=None,
        max_idf=None,
        scq=mean_scq,
        mean_scq=mean_scq,
        rarest_share=None,
        scope=0.0,
        limit_cut_share=0.0,
        likely_hard=hard,
        reasons=("x",) if hard else (),
    )


def test_hardest_first_puts_flagged_queries_first_then_the_lowest_mean_scq() -> None:
    given = [
        _difficulty(9.0, False),
        _difficulty(None, False),
        _difficulty(12.0, True),
        _difficulty(3.0, False),
        None,
        _difficulty(9.0, False),
    ]
    assert hardest_first(given) == [2, 3, 0, 5, 1, 4]


DOCS = {
    "a.txt": "wing flutter at high speed",
    "b.txt": "wing models and flutter tests",
    "c.txt": "wing loads on a zeppelin",
    "d.txt": "heated panels in the tunnel",
}


@pytest.fixture(scope="module")
def service() -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(Settings(store="memory"))
    svc.upload_files([(n, t.encode()) for n, t in DOCS.items()], workspace="qpp")
    yield svc
    svc.close()


def test_search_carries_the_predictors_of_its_own_numbers(service: LexplainService) -> None:
    result = service.search("wing flutter zeppelin", k=10, limit=1, workspace="qpp")
    d = result.difficulty
    assert d is not None
    assert result.candidates_returned == 1 and result.matching_passages == 3
    assert d.scope == pytest.approx(3 / 4)  # matching over N, not the one candidate
    assert d.limit_cut_share == pytest.approx(2 / 3)
    assert d.max_idf == pytest.approx(lucene_idf(1, 4))
    assert d.scored == 0  # one ranked score has no spread
    assert d == query_difficulty(
        result.terms,
        CorpusStats(
            n_docs=result.n_docs,
            avg_doc_length=result.avg_doc_length,
            doc_frequencies=result.doc_frequencies,
        ),
        result.matching_passages,
        result.cut_by_limit,
        [p.score for p in result.passages],
    )


def test_a_query_without_terms_has_no_predictors(service: LexplainService) -> None:
    assert service.search("the of and", workspace="qpp").difficulty is None


def test_judge_orders_a_set_by_the_numbers_search_would_show(service: LexplainService) -> None:
    service.save_query_set(
        "qpp", "zeppelin loads\nwing\nheated tunnel\nnothing here\n", "lines", workspace="qpp"
    )
    ordered = service.queries_hardest_first("qpp", workspace="qpp", limit=1)
    assert sorted(q.position for q in ordered) == [0, 1, 2, 3]
    assert ordered[-1].text == "nothing here"  # no term held: nothing to grade, last
    for q in ordered[:-1]:
        shown = service.search(q.text, k=10, limit=1, workspace="qpp").difficulty
        assert shown is not None and q.difficulty is not None
        for name in ("mean_idf", "max_idf", "mean_scq", "scope", "limit_cut_share"):
            assert getattr(q.difficulty, name) == getattr(shown, name), (q.text, name)
    assert [q.difficulty.likely_hard for q in ordered[:-1] if q.difficulty] == [True, False, False]
    assert ordered[0].text == "wing"  # 3 of 4 passages match it, and the limit cut 2 of 3
