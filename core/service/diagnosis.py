"""After an evaluation: why each relevant passage was lost, and which k1 and b would do better.

Both read each graded query of a set once, as ``evaluate_judged`` does (the set's queries that
have a grade, the grades combined over raters), and hand the columns to ``core.analysis``:
``diagnosis`` (one cause per lost relevant passage) and ``tuning`` (a k1 x b grid scored from
the same columns). What needs the store beyond that read is done here, once per run: the text
of the passages no query term reaches (their own highest tf x idf terms, one df read for all of
them) and whether a graded passage still exists. Rejected: a method per screen that re-read
per lost passage (Search's "why not?"), a round trip per passage.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Final
from uuid import UUID

from core.analysis.diagnosis import (
    LostCause,
    LostPassage,
    QueryDiagnosis,
    RunDiagnosis,
    diagnose_query,
    own_terms,
    summarise,
)
from core.analysis.judgment_files import JudgmentError
from core.analysis.rankers import Ranker, RankerKind
from core.analysis.tuning import GridSpec, TuningGrid, TuningQuery, tuning_steps
from core.checkpoint import checkpoint, stepped
from core.domain.bm25 import CorpusStats
from core.domain.judging import QuerySet
from core.domain.tokenize import Profile, tokenize
from core.service.common import (
    MAX_QUERY_TERMS,
    UNLIMITED,
    bounded_candidates,
    check_k_limit,
    combine_judgments,
    workspace_profile,
)
from core.service.runner import ProgressCallback, StoreRunner
from core.stores.port import tenant_of

#: Distinct terms of the lost passages' texts read per df lookup (the query bound).
_DF_TERMS: Final = MAX_QUERY_TERMS


class DiagnosisActions(StoreRunner):
    """Runs and Evaluate's diagnosis and the k1/b grid."""

    def _graded(
        self, query_set: str, workspace: str, by_document: bool
    ) -> tuple[QuerySet, dict[str, dict[str, int]]]:
        tenant = self._tenant(workspace)
        found = self._call(self._store.get_query_set(tenant, query_set))
        if found is None:
            raise KeyError(f"no query set “{query_set}” in “{workspace}”")
        texts = [q.text for q in found.queries]
        grades = combine_judgments(
            self._call(self._store.list_judgments(tenant, texts)), by_document=by_document
        )
        if not any(q.text in grades for q in found.queries):
            raise JudgmentError(f"no query of the set “{query_set}” has a grade yet")
        return found, grades

    def diagnose(
        self,
        query_set: str,
        k: int,
        limit: int,
        *,
        workspace: str,
        ranker: Ranker | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> RunDiagnosis:
        """Every graded query's lost relevant passages (by passage: grades judge passages),
        each with its one cause, under ``ranker`` (the workspace's BM25 by default) at
        ``limit``; the queries by nDCG@k lost, most first."""
        check_k_limit(k, limit)
        used = ranker or Ranker.of(RankerKind.WORKSPACE)
        found, grades = self._graded(query_set, workspace, False)
        return self._call_with_progress(
            lambda report: self._diagnose(found, grades, k, limit, used, workspace, report),
            on_progress,
        )

    async def _diagnose(
        self,
        found: QuerySet,
        grades: dict[str, dict[str, int]],
        k: int,
        limit: int,
        ranker: Ranker,
        workspace: str,
        report: Callable[[int, int, str], None],
    ) -> RunDiagnosis:
        tenant = await tenant_of(self._store, workspace)
        profile = await workspace_profile(self._store, workspace)
        judged = [q for q in found.queries if q.text in grades]
        diagnosed: list[QueryDiagnosis] = []
        for done, query in enumerate(judged, 1):
            terms = tokenize(query.text, profile)
            try:
                full = await bounded_candidates(self._store, terms, tenant, UNLIMITED)
            except ValueError as exc:
                raise ValueError(f"query {query.query_id}: {exc}") from None
            diagnosed.append(
                diagnose_query(
                    query.query_id, query.text, terms, full, grades[query.text], k, limit, ranker
                )
            )
            report(done, len(judged), query.query_id)
            await checkpoint()
        return summarise(k, limit, await self._explained(diagnosed, tenant, profile))

    async def _explained(
        self, queries: list[QueryDiagnosis], tenant: UUID, profile: Profile
    ) -> list[QueryDiagnosis]:
        """The vocabulary mismatches with their own terms, and the deleted ones marked."""
        unreached = {p.chunk_id for q in queries for p in q.lost if p.cause is LostCause.VOCABULARY}
        counts: dict[str, Counter[str]] = {}
        for chunk_id in sorted(unreached):
            chunk = await self._store.get(chunk_id, tenant)
            if chunk is not None:
                counts[chunk_id] = Counter(tokenize(chunk.text, profile))
            await checkpoint()
        words = sorted({t for c in counts.values() for t in c})
        frequencies: dict[str, int] = {}
        stats = CorpusStats(n_docs=0, avg_doc_length=0.0)
        for start in range(0, len(words), _DF_TERMS):
            read = await self._store.lexical_candidates(words[start : start + _DF_TERMS], tenant, 0)
            frequencies.update(read.stats.doc_frequencies)
            stats = read.stats
        if words:
            stats = CorpusStats(
                n_docs=stats.n_docs,
                avg_doc_length=stats.avg_doc_length,
                doc_frequencies=frequencies,
            )

        def explained(passage: LostPassage) -> LostPassage:
            if passage.cause is not LostCause.VOCABULARY:
                return passage
            if passage.chunk_id not in counts:
                return passage.model_copy(update={"cause": LostCause.GONE})
            return passage.model_copy(
                update={"own_terms": own_terms(counts[passage.chunk_id], stats)}
            )

        return [q.model_copy(update={"lost": [explained(p) for p in q.lost]}) for q in queries]

    def tune(
        self,
        query_set: str,
        k: int,
        limit: int,
        *,
        workspace: str,
        grid: GridSpec | None = None,
        by_document: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> TuningGrid:
        """The mean metric of every (k1, b) of ``grid`` over the set's graded queries, each
        query's candidates read once at ``limit``; the best point tested against the
        workspace's setting."""
        check_k_limit(k, limit)
        spec = grid or GridSpec()
        found, grades = self._graded(query_set, workspace, by_document)
        return self._call_with_progress(
            lambda report: self._tune(
                found, grades, k, limit, spec, by_document, workspace, report
            ),
            on_progress,
        )

    async def _tune(
        self,
        found: QuerySet,
        grades: dict[str, dict[str, int]],
        k: int,
        limit: int,
        spec: GridSpec,
        by_document: bool,
        workspace: str,
        report: Callable[[int, int, str], None],
    ) -> TuningGrid:
        tenant = await tenant_of(self._store, workspace)
        profile = await workspace_profile(self._store, workspace)
        judged = [q for q in found.queries if q.text in grades]
        queries: list[TuningQuery] = []
        for done, query in enumerate(judged, 1):
            terms = tokenize(query.text, profile)
            try:
                handed = await bounded_candidates(self._store, terms, tenant, limit)
            except ValueError as exc:
                raise ValueError(f"query {query.query_id}: {exc}") from None
            queries.append(
                TuningQuery(
                    query_id=query.query_id,
                    terms=terms,
                    candidates=handed,
                    grades=grades[query.text],
                )
            )
            report(done, len(judged), query.query_id)
            await checkpoint()
        return await stepped(tuning_steps(queries, spec, k, limit, by_document))
