"""Two to five saved runs compared: means with intervals, wins, significance, list overlap.

Saved runs, not live ones: each carries its per-query metrics and ranked lists as they were
(``core.domain.judging.RunRecord``), so a comparison made after a re-index or after more
grading still compares what was measured. The first run is the baseline every other is
paired with. Only queries every run measured are paired (a query graded after the first run
was saved is not in it); how many were left out is reported, never hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict

from core.domain.comparison import (
    MeanInterval,
    SignificanceResult,
    WinTieLoss,
    jaccard_at_k,
    mean_interval,
    paired_t_test,
    randomisation_test,
    rank_biased_overlap,
    win_tie_loss,
)
from core.domain.judging import SavedRun

#: How many saved runs one comparison takes.
MIN_RUNS, MAX_RUNS = 2, 5
#: The per-query metrics a saved run keeps (the fields of an evaluated query's scores).
METRICS: Final = ("ndcg", "precision", "recall", "mrr", "average_precision", "judged_share")


class Versus(BaseModel):
    """One run against the baseline over the paired queries."""

    model_config = ConfigDict(frozen=True)

    name: str
    outcome: WinTieLoss
    t_test: SignificanceResult
    randomisation: SignificanceResult
    #: Mean over queries of the rank-biased overlap of the two ranked lists.
    rbo: float
    #: Mean over queries of Jaccard at the runs' k.
    jaccard: float


class RunsComparison(BaseModel):
    model_config = ConfigDict(frozen=True)

    metric: str
    #: The queries every run measured, in the baseline's order.
    queries: list[str]
    #: Queries some run measured and another did not: left out of every number here.
    unpaired: int
    names: list[str]
    means: list[MeanInterval]
    #: Every run after the first against the first.
    versus: list[Versus]
    #: query -> the metric per run, in run order (the table and chart per query).
    per_query: dict[str, list[float]]


def compare_saved(runs: Sequence[SavedRun], metric: str = "ndcg") -> RunsComparison:
    """Compare 2-5 saved runs on ``metric`` (one of ``METRICS``); the first is the baseline."""
    if not MIN_RUNS <= len(runs) <= MAX_RUNS:
        raise ValueError(f"compare {MIN_RUNS} to {MAX_RUNS} saved runs, not {len(runs)}")
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; one of {', '.join(METRICS)}")
    measured = [run.record.metrics for run in runs]
    every = set().union(*(m.keys() for m in measured))
    queries = [q for q in measured[0] if all(q in m for m in measured)]
    per_query = {q: [m[q].get(metric, 0.0) for m in measured] for q in queries}
    columns = [[per_query[q][i] for q in queries] for i in range(len(runs))]
    baseline = runs[0].record
    versus = []
    for i, run in enumerate(runs[1:], start=1):
        lists = [(baseline.ranked.get(q, []), run.record.ranked.get(q, [])) for q in queries]
        k = min(baseline.k, run.record.k)
        count = len(lists) or 1
        versus.append(
            Versus(
                name=run.name,
                outcome=win_tie_loss(columns[i], columns[0]),
                t_test=paired_t_test(columns[i], columns[0]),
                randomisation=randomisation_test(columns[i], columns[0]),
                rbo=sum(rank_biased_overlap(a, b) for a, b in lists) / count,
                jaccard=sum(jaccard_at_k(a, b, k) for a, b in lists) / count,
            )
        )
    return RunsComparison(
        metric=metric,
        queries=queries,
        unpaired=len(every) - len(queries),
        names=[run.name for run in runs],
        means=[mean_interval(column) for column in columns],
        versus=versus,
        per_query=per_query,
    )
