"""Compare rankings, and the tokenizer profile of a workspace.

Compare reads a query's candidates ONCE and hands that one read to
``core.analysis.rankers.compare_rankers``: both rankings share the statistics, tf and
lengths, so a difference between them is a difference of formula, never of
snapshot, and a what-if needs no re-index. The rejected alternative, one read
per ranker, costs a round trip each and lets a concurrent write make two
rankers differ for no reason of their own. (Evaluate across rankers reads the
same way, per workspace: ``analysis.evaluate_runs``.)
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ConfigDict

from core.analysis.rankers import (
    Ranker,
    RankingComparison,
    compare_ranker_steps,
    explain_under,
)
from core.checkpoint import checkpoint, stepped
from core.domain.bm25 import ScoreExplanation
from core.domain.filters import PassageFilter
from core.domain.tokenize import Profile
from core.service.common import (
    QueryView,
    bounded_candidates,
    check_k_limit,
    empty_reason,
    query_view,
    workspace_profile,
)
from core.service.runner import ProgressCallback, StoreRunner
from core.stores.port import tenant_of


class CompareView(QueryView):
    """One query under two rankers, from one candidate read."""

    model_config = ConfigDict(frozen=True)

    comparison: RankingComparison
    n_docs: int
    avg_doc_length: float
    matching_passages: int
    candidates_returned: int
    #: The passage whose per-term contributions are shown under both rankers, if one is chosen.
    chosen: str | None = None
    explanation_a: ScoreExplanation | None = None
    explanation_b: ScoreExplanation | None = None
    #: The filter the read was narrowed to (None: the whole workspace), and what it excluded.
    within: PassageFilter | None = None
    filtered_out: int = 0


class RankingsActions(StoreRunner):
    """The Compare screen, Evaluate across rankers/workspaces, and workspace profiles."""

    def workspace_profile(self, workspace: str) -> Profile:
        """The tokenizer profile of ``workspace`` (plain for one that does not exist yet)."""
        return self._call(workspace_profile(self._store, workspace))

    def change_profile(
        self,
        workspace: str,
        profile: Profile | str,
        *,
        on_progress: ProgressCallback | None = None,
    ) -> int:
        """Re-index ``workspace`` under ``profile``; searches see the old index until it is done."""
        chosen = Profile(profile)
        tenant = self._tenant(workspace)

        async def run(report: Callable[[int, int, str], None]) -> int:
            return await self._store.reindex(
                tenant, chosen, lambda done, total: report(done, total, "passages re-indexed")
            )

        return self._call_with_progress(run, on_progress)

    def compare(
        self,
        query: str,
        a: Ranker,
        b: Ranker,
        k: int = 10,
        limit: int = 1000,
        *,
        workspace: str,
        chosen: str | None = None,
        within: PassageFilter | None = None,
    ) -> CompareView:
        """Rank one candidate read under ``a`` and ``b``; explain ``chosen`` under both
        (``within``: the read narrowed to the passages a filter admits)."""
        check_k_limit(k, limit)
        if within is not None and within.empty:
            within = None
        return self._call_query(
            query, self._compare(query, a, b, k, limit, workspace, chosen, within)
        )

    async def _compare(
        self,
        query: str,
        a: Ranker,
        b: Ranker,
        k: int,
        limit: int,
        workspace: str,
        chosen: str | None,
        within: PassageFilter | None = None,
    ) -> CompareView:
        tenant = await tenant_of(self._store, workspace)
        profile = await workspace_profile(self._store, workspace)
        view = query_view(query, k, limit, workspace, profile)
        terms = view["terms"]
        await checkpoint()  # tokenising 1,000 distinct words was ~2 ms
        handed = await bounded_candidates(self._store, terms, tenant, limit, within)
        await checkpoint()
        comparison = await stepped(compare_ranker_steps(terms, handed, k, a, b))
        if chosen is None and comparison.a:
            chosen = comparison.a[0].chunk.id
        explanation_a = explanation_b = None
        if chosen is not None:
            # Each a step: with the view's models, one step was ~10 ms for 1,000 terms.
            await checkpoint()
            explanation_a = explain_under(a, terms, handed, chosen)
            await checkpoint()
            explanation_b = explain_under(b, terms, handed, chosen)
            await checkpoint()
            if explanation_a is None:
                chosen = None
        return CompareView(
            **view,
            empty_reason=empty_reason(
                terms, handed.matching, len(comparison.a), handed.filtered_out, view["query"]
            ),
            comparison=comparison,
            n_docs=handed.stats.n_docs,
            avg_doc_length=handed.stats.avg_doc_length,
            matching_passages=handed.matching,
            candidates_returned=len(handed),
            chosen=chosen,
            explanation_a=explanation_a,
            explanation_b=explanation_b,
            within=within,
            filtered_out=handed.filtered_out,
        )
