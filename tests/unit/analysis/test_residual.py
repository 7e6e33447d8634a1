"""Residual ranking (issue 47 item 3): the fed-back passages leave both rankings and the judged
set, and a query with no relevant grade left is named, not measured."""

from __future__ import annotations

from core.analysis.residual import fed_back, left_out, residual_evaluation
from core.domain.metrics import ndcg_at_k

GRADES = {"q1": {"p1": 2, "p2": 0, "p3": 1, "p4": 3}, "q2": {"x1": 1}}
TYPED = {"q1": ["p1", "p2", "p5", "p3", "p4"], "q2": ["x1", "y"]}
EXPANDED = {"q1": ["p1", "p3", "p4", "p2", "p5"], "q2": ["x1", "y"]}


def test_the_feedback_is_the_graded_passages_of_the_typed_top_fb_docs_in_rank_order() -> None:
    assert fed_back(TYPED["q1"], GRADES["q1"], 2) == ["p1", "p2"]
    assert fed_back(TYPED["q1"], GRADES["q1"], 4) == ["p1", "p2", "p3"]
    assert fed_back(["p5"], GRADES["q1"], 10) == []
    assert left_out(EXPANDED["q1"], ["p1", "p2"], 2) == ["p3", "p4"]


def test_both_runs_are_judged_without_the_fed_back_passages_and_a_query_left_empty_is_named() -> (
    None
):
    fed = {q: fed_back(TYPED[q], GRADES[q], 2) for q in TYPED}
    result = residual_evaluation(
        {"q1": "a", "q2": "b"}, GRADES, TYPED, EXPANDED, fed, 3, 100, ("typed", "rocchio"),
        "Rocchio", 2,
    )  # fmt: skip
    assert result.unmeasured == ["q2"] and result.fed_back == {"q1": ["p1", "p2"], "q2": ["x1"]}
    assert result.typed.ranked == {"q1": ["p5", "p3", "p4"]}
    assert result.expanded.ranked == {"q1": ["p3", "p4", "p5"]}
    rest = {"p3": 1, "p4": 3}
    assert result.typed.rows[0].ndcg == ndcg_at_k(["p5", "p3", "p4"], rest, 3)
    assert result.expanded.rows[0].ndcg == ndcg_at_k(["p3", "p4", "p5"], rest, 3)
    assert result.expanded.rows[0].judged == result.typed.rows[0].judged == 2
    assert result.significance.queries == 1
    assert "left out of both rankings and of the judged set" in result.note
    assert "1 queries measured, 1 with no relevant grade left" in result.note
