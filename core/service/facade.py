"""The facade the screens call: every screen family's actions on one store.

``LexplainService`` is the combination of the families (``search``, ``analysis``,
``library``, ``corpus``), each a ``StoreRunner`` subclass in its own module, so a new
screen adds a module and a base class here instead of growing one file. One class
per family composed by attribute (``service.search.run(...)``) was rejected: every
page and test would change its calls, and the families would still share one runner.
This module also chooses and opens the store the settings name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from uuid import UUID

from pydantic import ValidationError

from core.analysis.evaluation import Metric
from core.analysis.expansion import ExpansionLedger, ExpansionSpec, expansion_ledger
from core.analysis.residual import ResidualEvaluation, residual_evaluation
from core.domain.tokenize import tokenize
from core.service.access import AccessActions
from core.service.analysis import AnalysisActions
from core.service.common import (
    DEFAULT_WORKSPACE,
    check_expanded,
    check_k_limit,
    check_ledger,
    check_query_terms,
    workspace_profile,
)
from core.service.corpus import CorpusActions
from core.service.diagnosis import DiagnosisActions
from core.service.entities import EntityActions
from core.service.grading import GradingActions
from core.service.judging import JudgingActions
from core.service.library import LibraryActions
from core.service.parity import ParityActions
from core.service.rankings import RankingsActions
from core.service.run_ranking import RunSpec, residual_rankings
from core.service.runner import ProgressCallback
from core.service.search import SearchActions
from core.settings import Settings, describe_store
from core.stores.port import ChunkStore, open_workspace, tenant_of
from core.stores.postgres.embedded import EmbeddedServerError
from core.stores.select import open_store


class StoreUnreachable(RuntimeError):
    """The configured store cannot be opened; the message says why and what to do.

    Not the port's ``StoreUnavailable`` (a store that is open and could not do one call):
    this one is raised before any store exists, so nothing can work until it is fixed."""


class LexplainService(
    SearchActions,
    AnalysisActions,
    LibraryActions,
    EntityActions,
    CorpusActions,
    ParityActions,
    RankingsActions,
    JudgingActions,
    GradingActions,
    DiagnosisActions,
    AccessActions,
):
    """One store on one background event loop; synchronous methods for the pages.

    ``for_user(email)`` (``core.service.access``) gives a signed-in person's view of it.
    """

    def expansion_ledger(
        self,
        query_set: str,
        k: int,
        limit: int,
        *,
        workspace: str,
        expand: ExpansionSpec,
        metric: Metric = "ndcg",
    ) -> ExpansionLedger:
        """Helped and hurt by ``expand``, query by query, on a query set's in-app grades (by
        passage): the typed and the expanded run of the workspace's BM25 at ``limit``
        (``evaluate_judged``), and the typed run's diagnosis for the vocabulary mismatches
        the expansion recovered. Here, not in a screen family: it combines two of them."""
        check_k_limit(k, limit)  # before a run is specified, so the refusal is the bound's
        found, grades = self._graded(query_set, workspace, False)
        check_ledger(len({q.query_id for q in found.queries if q.text in grades}))
        typed, expanded = self.evaluate_judged(
            query_set,
            k,
            [
                RunSpec(workspace=workspace, limit=limit),
                RunSpec(workspace=workspace, limit=limit, expand=expand),
            ],
            workspace=workspace,
        )
        diagnosis = self.diagnose(query_set, k, limit, workspace=workspace)
        return expansion_ledger(typed, expanded, diagnosis, expand.label, metric)

    def evaluate_residual(
        self,
        query_set: str,
        k: int,
        limit: int,
        *,
        workspace: str,
        expand: ExpansionSpec | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ResidualEvaluation:
        """Feedback from the grades (Rocchio, ``expand``; its defaults when None) measured
        honestly on a query set's in-app grades, by passage (``core.analysis.residual``): the
        graded passages in each query's typed top ``fb_docs`` are fed back, then left out of
        the typed and the expanded ranking (the workspace's BM25 at ``limit``) and of the
        judged set. Here, beside the ledger: it combines the grades and two rankings."""
        check_k_limit(k, limit)
        spec = expand or ExpansionSpec.rocchio()
        if spec.method != "rocchio":
            raise ValueError(
                "residual ranking measures feedback from the grades (Rocchio); RM3 learns from "
                "no grade, so its Evaluate run is honest as it is"
            )
        found, grades = self._graded(query_set, workspace, False)
        queries = {q.query_id: q.text for q in found.queries if q.text in grades}
        check_expanded(len(queries))
        judged = {query_id: grades[text] for query_id, text in queries.items()}
        return self._call_with_progress(
            lambda report: self._residual(queries, judged, k, limit, workspace, spec, report),
            on_progress,
        )

    async def _residual(
        self,
        queries: dict[str, str],
        judged: dict[str, dict[str, int]],
        k: int,
        limit: int,
        workspace: str,
        spec: ExpansionSpec,
        report: Callable[[int, int, str], None],
    ) -> ResidualEvaluation:
        tenant = await tenant_of(self._store, workspace)
        profile = await workspace_profile(self._store, workspace)
        tokens = {query_id: tokenize(text, profile) for query_id, text in queries.items()}
        for query_id, terms in tokens.items():  # every query checked before the first runs
            check_query_terms(terms, f"query {query_id}")
        typed: dict[str, list[str]] = {}
        expanded: dict[str, list[str]] = {}
        fed: dict[str, list[str]] = {}
        for done, (query_id, terms) in enumerate(tokens.items(), 1):
            typed[query_id], expanded[query_id], fed[query_id] = await residual_rankings(
                self._store, terms, tenant, profile, limit, k, judged[query_id], spec
            )
            report(done, len(tokens), query_id)
        plain = RunSpec(workspace=workspace, limit=limit)
        labels = (f"{plain.label} · residual", f"{plain.label} · {spec.label} · residual")
        return residual_evaluation(
            queries, judged, typed, expanded, fed, k, limit, labels, spec.label, spec.fb_docs,
            workspace,
        )  # fmt: skip

    async def _open(self, factory: Callable[[], Awaitable[ChunkStore]]) -> ChunkStore:
        store = await factory()
        try:
            await open_workspace(store, DEFAULT_WORKSPACE)
        except BaseException:
            await store.close()
            raise
        return store

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> LexplainService:
        """The store the settings name (``core.stores.select.open_store``).

        Raises ``StoreUnreachable`` with plain words when the settings are wrong or the store
        cannot be opened (the embedded server cannot start, a server is unreachable).
        """
        try:
            settings = settings or Settings()
        except ValidationError as exc:
            problems = "; ".join(str(error["msg"]) for error in exc.errors())
            raise StoreUnreachable(f"The LEXPLAIN_* settings are wrong: {problems}.") from exc
        chosen = settings
        label = describe_store(chosen)

        async def factory() -> ChunkStore:
            return await open_store(chosen)

        try:
            return cls(factory, store_label=label, settings=chosen)
        except EmbeddedServerError as exc:
            raise StoreUnreachable(str(exc)) from exc
        except Exception as exc:  # asyncpg/OS errors: the message is what the user needs
            raise StoreUnreachable(
                f"Cannot open the store ({label}): {exc}. Check LEXPLAIN_DATABASE_URL and that "
                "the server is running; nothing was changed."
            ) from exc

    def tenant(self, workspace: str) -> UUID:
        """The id of the workspace called ``workspace`` now (looked up, never derived)."""
        return self._tenant(workspace)
