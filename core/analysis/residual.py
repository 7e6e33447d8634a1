"""Residual ranking: feedback from the grades, measured without the passages it learned from.

Relevance feedback (Rocchio, ``core.analysis.expansion``) learns from graded passages; judging
the expanded run by the same grades flatters it, since the passages fed back rise because they
were fed back. The residual-collection measurement of the relevance-feedback literature is the
honest one: the feedback is what the analyst saw, the grades of the graded passages among the
typed ranking's first ``fb_docs``; both runs, typed and expanded, are then ranked with those
passages left out and judged by the remaining grades only, so neither is credited for a passage
the feedback saw. A query with no relevant grade left is not measured (nothing is left to find)
and is named. Rejected: feedback from every grade (nothing would be left to judge), and feedback
from one rater judged by another (it needs two raters on every query; not built).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from core.analysis.evaluation import EvaluationRun, evaluate_run
from core.domain.comparison import SignificanceResult, randomisation_test

#: The grade from which a passage counts as relevant (as Rocchio and the metrics take it).
RELEVANT = 1


def learned_from_judged(fb_docs: int) -> str:
    """Why feedback from the grades is not judged as a run, and what is measured instead: said
    above the residual measurement on Runs."""
    return (
        "Feedback from the grades (Rocchio, Search's 'from my grades') learns from graded "
        "passages, and the passages it learned from are in the judged set: judged by the same "
        "grades, its ranking would be credited for passages it was fed. So it is measured by "
        f"residual ranking: the graded passages in each query's typed top {fb_docs} are fed "
        "back, then left out of both rankings (as typed and with feedback) and of the judged "
        "set."
    )


def fed_back(typed_ranked: Sequence[str], grades: Mapping[str, int], fb_docs: int) -> list[str]:
    """The passages whose grades are fed back: the graded ones among the typed ranking's first
    ``fb_docs`` (what a rater saw), in rank order."""
    return [unit for unit in typed_ranked[:fb_docs] if unit in grades]


def left_out(ranked: Sequence[str], fed: Collection[str], k: int) -> list[str]:
    """``ranked`` without the fed-back passages, its first ``k``."""
    gone = set(fed)
    return [unit for unit in ranked if unit not in gone][:k]


class ResidualEvaluation(BaseModel):
    """The typed and the expanded run, both judged on the residual collection."""

    model_config = ConfigDict(frozen=True)

    #: Each run over the measured queries, the fed-back passages out of its ranking and grades.
    typed: EvaluationRun
    expanded: EvaluationRun
    #: The expansion's label, and how deep in the typed ranking the feedback was read.
    expansion: str
    fb_docs: int
    #: Query id -> the passages fed back (rank order), for every graded query.
    fed_back: dict[str, list[str]]
    #: Graded queries with no relevant grade left once the fed-back ones are out: not measured.
    unmeasured: list[str]
    #: nDCG@k, expanded minus typed, over the measured queries (paired randomisation test).
    significance: SignificanceResult

    @property
    def note(self) -> str:
        """What was left out and why, as the terminal and the screens say it first."""
        fed = sum(len(units) for units in self.fed_back.values())
        p = self.significance.p_value
        tested = "not tested" if p is None else f"p = {p:.4f}, paired randomisation test"
        return (
            f"Residual ranking: {self.expansion} learned from the {fed} graded passages in the "
            f"typed top {self.fb_docs} of each query; they are left out of both rankings and of "
            "the judged set, so neither run is credited for a passage the feedback saw. "
            f"{len(self.typed.rows)} queries measured, {len(self.unmeasured)} with no relevant "
            f"grade left not measured. nDCG@{self.typed.k}: {self.typed.mean_ndcg:.4f} typed, "
            f"{self.expanded.mean_ndcg:.4f} with feedback ({tested})."
        )


def residual_evaluation(
    queries: Mapping[str, str],
    grades: Mapping[str, Mapping[str, int]],
    typed_ranked: Mapping[str, Sequence[str]],
    expanded_ranked: Mapping[str, Sequence[str]],
    fed: Mapping[str, Sequence[str]],
    k: int,
    limit: int,
    labels: tuple[str, str],
    expansion: str,
    fb_docs: int,
    workspace: str = "",
) -> ResidualEvaluation:
    """Both runs judged on the residual collection: each query's rankings (deep enough that
    ``k`` remain) and grades without its ``fed`` passages; a query with no relevant grade left
    is named in ``unmeasured`` and left out of both runs and of the test."""
    residual: dict[str, dict[str, int]] = {}
    unmeasured: list[str] = []
    for query_id in queries:
        if query_id not in grades:
            continue
        gone = set(fed.get(query_id, ()))
        rest = {u: g for u, g in grades[query_id].items() if u not in gone}
        if any(g >= RELEVANT for g in rest.values()):
            residual[query_id] = rest
        else:
            unmeasured.append(query_id)
    runs = [
        evaluate_run(
            queries,
            residual,
            {q: left_out(ranked.get(q, []), fed.get(q, ()), k) for q in residual},
            k,
            limit,
            label,
            workspace,
        )
        for ranked, label in zip((typed_ranked, expanded_ranked), labels, strict=True)
    ]
    typed, expanded = runs
    return ResidualEvaluation(
        typed=typed,
        expanded=expanded,
        expansion=expansion,
        fb_docs=fb_docs,
        fed_back={q: list(units) for q, units in fed.items()},
        unmeasured=unmeasured,
        significance=randomisation_test(
            [r.ndcg for r in expanded.rows], [r.ndcg for r in typed.rows]
        ),
    )
