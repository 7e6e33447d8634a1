"""k1 and b tuned on the analyst's own judgments: a grid, its best point, and whether it is noise.

Each query's candidates are read once (at the run's limit, as Evaluate reads them) and every
grid point is scored from those same tf and length columns with ``core.domain.bm25.QueryScorer``
(numpy, the one formula), so a grid of 42 points costs 42 scorings per query and no reads. The
best point is tested against the workspace's own setting (k1 1.2, b 0.75) with the paired
randomisation test of ``core.domain.comparison``, the one Runs uses for saved runs, so "best"
is never claimed on a difference the queries cannot show. Rejected: re-running Evaluate per
point (a candidate read per query and point: 42 times the reads for the same numbers), and a
search method smarter than a grid (it hides the landscape the heatmap shows).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import isfinite
from typing import Final

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, model_validator

from core.analysis.evaluation import (
    METRICS,
    Metric,
    documents_in_rank_order,
    mean_of,
    metric_value,
)
from core.domain.bm25 import BM25_B, BM25_K1, QueryScorer
from core.domain.comparison import SignificanceResult, randomisation_test
from core.domain.ranking import LexicalCandidates, top_rows
from core.domain.steps import Steps

#: The grid the issue names: k1 0.0-3.0 in 0.5 steps, b 0.0-1.0 in 0.2 steps (42 points).
DEFAULT_K1S: Final = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
DEFAULT_BS: Final = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
#: Most points one grid may hold (each is a scoring of every query's candidates).
MAX_POINTS: Final = 400


class TuningQuery(BaseModel):
    """One judged query as the grid scores it: its terms, its candidates, its grades."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    query_id: str
    terms: list[str]
    candidates: LexicalCandidates
    #: Passage id (or, by document, source id) -> grade.
    grades: dict[str, int]


class GridPoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    k1: float
    b: float
    mean: float


class TuningGrid(BaseModel):
    """The mean metric at every (k1, b), the best point, and the test against the workspace's."""

    model_config = ConfigDict(frozen=True)

    k1s: list[float]
    bs: list[float]
    metric: Metric
    k: int
    limit: int
    by_document: bool
    #: ``means[i][j]``: the mean metric at b = bs[i], k1 = k1s[j].
    means: list[list[float]]
    best: GridPoint
    #: The workspace's own setting (k1 1.2, b 0.75), on the grid or not.
    workspace: GridPoint
    query_ids: list[str]
    #: Per query (``query_ids`` order): the metric at the best point and at the workspace's.
    best_scores: list[float]
    workspace_scores: list[float]
    #: The paired randomisation test of best against the workspace's setting.
    significance: SignificanceResult

    @property
    def metric_label(self) -> str:
        return METRICS[self.metric].replace("@k", f"@{self.k}")

    @property
    def edge_note(self) -> str | None:
        """Where the best point lies on an edge of the grid that could be widened, the
        sentence saying so (the best may lie outside the range tried); None inside it."""
        edges = []
        for name, value, values, low, high in (
            ("k1", self.best.k1, self.k1s, 0.0, 100.0),
            ("b", self.best.b, self.bs, 0.0, 1.0),
        ):
            if len(values) < 2:
                continue
            if value == max(values) and value < high:
                edges.append(f"the largest {name} tried ({value:g}): a larger {name}")
            elif value == min(values) and value > low:
                edges.append(f"the smallest {name} tried ({value:g}): a smaller {name}")
        if not edges:
            return None
        return (
            "The best point lies on the grid's edge, at "
            + "; and at ".join(edges)
            + " may do better. Widen the range and tune again."
        )

    def widened(
        self, k1_bounds: tuple[float, float], b_bounds: tuple[float, float]
    ) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """The (k1, b) ranges to tune next when the best point lies on an edge: that edge moved
        out by half the range tried (a step at least), kept within ``*_bounds`` (what the
        screen allows); None when the best is inside, or the edge is already a bound."""
        ranges = []
        moved = False
        for value, values, (low, high) in (
            (self.best.k1, self.k1s, k1_bounds),
            (self.best.b, self.bs, b_bounds),
        ):
            first, last = min(values), max(values)
            reach = max((last - first) / 2, min(np.diff(sorted(values)), default=0.0))
            new = (first, last)
            if len(values) >= 2 and value == last and last < high:
                new = (first, round(min(high, last + reach), 2))
            elif len(values) >= 2 and value == first and first > low:
                new = (round(max(low, first - reach), 2), last)
            moved |= new != (first, last)
            ranges.append(new)
        return (ranges[0], ranges[1]) if moved else None

    @property
    def verdict(self) -> str:
        """The best point in plain words, never claimed on noise."""
        gain = self.best.mean - self.workspace.mean
        p = self.significance.p_value
        head = (
            f"Best: k1 {self.best.k1:g}, b {self.best.b:g} with mean {self.metric_label} "
            f"{self.best.mean:.4f}, against {self.workspace.mean:.4f} at the workspace's "
            f"k1 {self.workspace.k1:g}, b {self.workspace.b:g} ({gain:+.4f})"
        )
        if p is None or gain <= 0:
            return head + ": no setting of the grid does better on these queries."
        if p < 0.05:
            return head + f": the randomisation test gives p = {p:.4f}, below 0.05."
        return head + (
            f": p = {p:.4f} (randomisation test), so this difference could be noise; grade "
            "more queries before relying on it."
        )


class GridSpec(BaseModel):
    """The grid an analyst asks for: the k1 and b values and the metric."""

    model_config = ConfigDict(frozen=True)

    k1s: tuple[float, ...] = DEFAULT_K1S
    bs: tuple[float, ...] = DEFAULT_BS
    metric: Metric = "ndcg"

    @model_validator(mode="after")
    def _bounded(self) -> GridSpec:
        if not self.k1s or not self.bs:
            raise ValueError("the grid needs at least one k1 and one b")
        if any(not 0.0 <= k1 <= 100.0 for k1 in self.k1s):
            raise ValueError("every k1 must be between 0 and 100")
        if any(not 0.0 <= b <= 1.0 for b in self.bs):
            raise ValueError("every b must be between 0 and 1")
        if len(self.k1s) * len(self.bs) > MAX_POINTS:
            raise ValueError(
                f"a grid holds at most {MAX_POINTS} points, this one "
                f"{len(self.k1s) * len(self.bs):,} ({len(self.k1s)} values of k1 × "
                f"{len(self.bs)} of b): take a larger step or a narrower range"
            )
        return self


def grid_values(low: float, high: float, step: float) -> tuple[float, ...]:
    """``low`` to ``high`` (inclusive) in ``step``s, rounded to the step's decimals.

    Refused in one sentence: a bound or step that is not a finite number (NaN, inf), a step
    that is not positive, ``high < low``, and more than ``MAX_POINTS`` values, counted before
    any is made (``(0, inf, 1)`` and ``(0, 1, 5e-324)`` overflowed ``round``)."""
    given = {"low": low, "high": high, "step": step}
    for name, value in given.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not isfinite(value):
            raise ValueError(f"a range's {name} must be a finite number, got {value!r}")
    if step <= 0 or high < low:
        raise ValueError(
            f"a range needs a positive step and low <= high, got {low!r} to {high!r} in "
            f"steps of {step!r}"
        )
    spans = (high - low) / step
    if not isfinite(spans) or round(spans) + 1 > MAX_POINTS:
        raise ValueError(
            f"a range holds at most {MAX_POINTS} values; {low!r} to {high!r} in steps of "
            f"{step!r} holds more"
        )
    count = round(spans) + 1
    return tuple(round(low + i * step, 6) for i in range(count))


def _ranked_steps(
    query: TuningQuery, scores: npt.NDArray[np.float64], k: int, sources: dict[int, str] | None
) -> Steps[list[str]]:
    """The top ``k`` passage ids under ``scores`` (or, with ``sources``, source ids: each
    document at its best passage, rows looked up ahead as ``top_document_steps`` does, kept for
    the next point)."""
    candidates = query.candidates
    if sources is None:
        rows = top_rows(scores, candidates.id_order, k)
        return [str(i) for i in candidates.ids_at(rows)]
    matched = np.flatnonzero(scores > 0.0)
    order = matched[np.lexsort((candidates.id_order[matched], -scores[matched]))]
    want = 4 * k + 16
    while True:
        rows = order[:want].tolist()
        missing = [r for r in rows if r not in sources]
        if missing:
            yield candidates.chunks_ahead(missing)
            for row, chunk in zip(missing, candidates.chunks(missing), strict=True):
                sources[row] = chunk.source_id
        documents = documents_in_rank_order(sources[r] for r in rows)
        if len(documents) >= k or len(rows) < want:
            return documents[:k]
        want *= 4


def grid_points(spec: GridSpec) -> list[tuple[float, float]]:
    """Every (k1, b) of ``spec`` (b-major), then the workspace's setting if the grid lacks it."""
    points = [(k1, b) for b in spec.bs for k1 in spec.k1s]
    if (BM25_K1, BM25_B) not in points:
        points.append((BM25_K1, BM25_B))
    return points


def query_grid_steps(
    query: TuningQuery,
    points: Sequence[tuple[float, float]],
    metric: Metric,
    k: int,
    by_document: bool,
) -> Steps[list[float]]:
    """One query's metric at every point of ``points`` (its candidates scored once per point in
    one pass: ``QueryScorer.score_grid``); the candidates are not needed afterwards."""
    candidates = query.candidates
    scorer = QueryScorer(query.terms, candidates.stats)  # the IDF: the same at every point
    grid = scorer.score_grid(candidates.terms, candidates.tfs, candidates.doc_lengths, points)
    sources: dict[int, str] | None = {} if by_document else None
    values = []
    for scores in grid:
        ranked = yield from _ranked_steps(query, scores, k, sources)
        values.append(metric_value(metric, ranked, query.grades, k))
    return values


def grid_result(
    query_ids: Sequence[str],
    per_query: Sequence[Sequence[float]],
    spec: GridSpec,
    k: int,
    limit: int,
    by_document: bool,
) -> Steps[TuningGrid]:
    """The grid from each query's values at ``grid_points(spec)`` (``query_grid_steps``, in
    ``query_ids`` order): the means, the best point and its test against the workspace's."""
    if not query_ids:
        raise ValueError("no judged query to tune on")
    points = grid_points(spec)
    on_grid = (BM25_K1, BM25_B) in [(k1, b) for b in spec.bs for k1 in spec.k1s]
    per_point: dict[tuple[float, float], list[float]] = {
        point: [values[i] for values in per_query] for i, point in enumerate(points)
    }
    own = per_point[BM25_K1, BM25_B] if on_grid else per_point.pop((BM25_K1, BM25_B))
    means = {point: mean_of(scores) for point, scores in per_point.items()}
    # The best mean; ties go to the point nearest the workspace's setting, then the smaller k1.
    best_point = min(means, key=lambda p: (-means[p], abs(p[0] - BM25_K1) + abs(p[1] - BM25_B), p))
    yield
    significance = randomisation_test(per_point[best_point], own)
    return TuningGrid(
        k1s=list(spec.k1s),
        bs=list(spec.bs),
        metric=spec.metric,
        k=k,
        limit=limit,
        by_document=by_document,
        means=[[means[k1, b] for k1 in spec.k1s] for b in spec.bs],
        best=GridPoint(k1=best_point[0], b=best_point[1], mean=means[best_point]),
        workspace=GridPoint(k1=BM25_K1, b=BM25_B, mean=mean_of(own)),
        query_ids=list(query_ids),
        best_scores=per_point[best_point],
        workspace_scores=own,
        significance=significance,
    )


def tuning_steps(
    queries: Sequence[TuningQuery],
    spec: GridSpec,
    k: int,
    limit: int,
    by_document: bool,
) -> Steps[TuningGrid]:
    """The grid over ``queries`` held together (tests, small sets), a step per query, then the
    test. The service streams instead: ``query_grid_steps`` as each query is read, then
    ``grid_result``, so only the values stay, never every query's candidates."""
    if not queries:
        raise ValueError("no judged query to tune on")
    points = grid_points(spec)
    per_query = []
    for query in queries:
        per_query.append((yield from query_grid_steps(query, points, spec.metric, k, by_document)))
        yield
    ids = [q.query_id for q in queries]
    return (yield from grid_result(ids, per_query, spec, k, limit, by_document))


__all__ = [
    "DEFAULT_BS",
    "DEFAULT_K1S",
    "METRICS",
    "GridPoint",
    "GridSpec",
    "Metric",
    "TuningGrid",
    "TuningQuery",
    "grid_points",
    "grid_result",
    "grid_values",
    "query_grid_steps",
    "tuning_steps",
]
