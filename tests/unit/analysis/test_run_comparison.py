"""Saved runs compared: pairing by query, the baseline first, every number from the domain."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from core.analysis.run_comparison import compare_saved
from core.domain.comparison import mean_interval, paired_t_test, randomisation_test
from core.domain.judging import RunRecord, SavedRun


def _run(
    name: str, scores: dict[str, float], ranked: dict[str, list[str]] | None = None
) -> SavedRun:
    record = RunRecord(
        ranker="bm25",
        profile="plain",
        limit=1000,
        k=3,
        query_set="core",
        metrics={q: {"ndcg": v, "precision": v / 2} for q, v in scores.items()},
        ranked=ranked or {q: ["a", "b", "c"] for q in scores},
    )
    return SavedRun(
        tenant_id=uuid.uuid4(),
        run_id=uuid.uuid4(),
        name=name,
        saved_at=datetime(2026, 1, 1, tzinfo=UTC),
        record=record,
    )


def test_every_run_is_paired_with_the_first_over_the_queries_all_of_them_measured() -> None:
    base = _run("base", {"q1": 0.5, "q2": 0.2, "q3": 0.9, "q4": 0.1})
    better = _run("better", {"q1": 0.7, "q2": 0.2, "q3": 0.8, "q5": 1.0})
    result = compare_saved([base, better])
    assert result.queries == ["q1", "q2", "q3"]
    assert result.unpaired == 2
    (versus,) = result.versus
    assert (versus.outcome.wins, versus.outcome.ties, versus.outcome.losses) == (1, 1, 1)
    assert versus.t_test == paired_t_test([0.7, 0.2, 0.8], [0.5, 0.2, 0.9])
    assert versus.randomisation == randomisation_test([0.7, 0.2, 0.8], [0.5, 0.2, 0.9])
    assert "Only 3 queries" in versus.t_test.warning
    assert result.means[0] == mean_interval([0.5, 0.2, 0.9])
    assert result.per_query["q1"] == [0.5, 0.7]


def test_identical_lists_overlap_fully_and_disjoint_ones_not_at_all() -> None:
    base = _run("base", {"q1": 0.5})
    same = _run("same", {"q1": 0.5})
    other = _run("other", {"q1": 0.5}, {"q1": ["x", "y", "z"]})
    result = compare_saved([base, same, other])
    assert [(v.rbo, v.jaccard) for v in result.versus] == [(pytest.approx(1.0), 1.0), (0.0, 0.0)]


def test_another_metric_is_compared_when_asked() -> None:
    result = compare_saved([_run("a", {"q": 0.4}), _run("b", {"q": 0.8})], "precision")
    assert result.per_query["q"] == [0.2, 0.4]


@pytest.mark.parametrize("count", [1, 6])
def test_two_to_five_runs_are_compared(count: int) -> None:
    with pytest.raises(ValueError, match="compare 2 to 5"):
        compare_saved([_run(str(i), {"q": 0.1}) for i in range(count)])


def test_an_unknown_metric_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="ndcg"):
        compare_saved([_run("a", {"q": 0.1}), _run("b", {"q": 0.1})], "f1")
