"""Truncation, why-not and evaluation: what the candidate limit costs, on real data.

Each action reads a query's candidates once, unlimited, and lets ``core.analysis.truncation``
or ``core.analysis.evaluation`` slice them per limit: the store's truncation order is
contract, so a slice is exactly a limited read. Reading once per limit was rejected
(a round trip per limit, and two reads may see two snapshots).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from contextlib import aclosing
from functools import partial
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from core.analysis.evaluation import (
    EvaluationRun,
    QueryScore,
    evaluate_run_steps,
    parse_qrels,
)
from core.analysis.judgment_files import JudgmentError
from core.analysis.rankers import RankerKind, rank_with
from core.analysis.truncation import (
    TruncationReport,
    WhyNot,
    top_document_steps,
    truncation_steps,
    why_not_steps,
)
from core.checkpoint import checkpoint, stepped
from core.domain.chunks import StoredChunk
from core.domain.filters import PassageFilter
from core.domain.ranking import LexicalCandidates
from core.domain.tokenize import Profile
from core.service.common import (
    READ_AHEAD,
    READ_AHEAD_CELLS,
    SAMPLE_QRELS,
    SAMPLE_QUERIES,
    UNLIMITED,
    QueryView,
    bounded_candidates,
    check_evaluated,
    check_expanded,
    check_k_limit,
    check_runs,
    checked_terms,
    combine_judgments,
    decoded_file,
    empty_reason,
    filter_words,
    judged_files,
    query_view,
    read_ahead,
    workspace_profile,
)
from core.service.run_ranking import RunSpec, expanded_top, top_documents
from core.service.runner import ProgressCallback, StoreRunner
from core.stores.port import tenant_of

#: Separates a source id from a passage number (1-based) where a passage is named in words.
PASSAGE_MARK = "#"
#: The sample's queries (BEIR jsonl) and graded judgments (BEIR qrels TSV).


class JudgedCoverage(BaseModel):
    """How much of what the judgments name is in the workspace: with none, every metric is 0."""

    model_config = ConfigDict(frozen=True)

    #: Distinct documents the qrels judge (any grade).
    judged_documents: int
    #: Of those, documents the workspace holds (a source id equal to the judged id).
    present: int


class UnlimitedEntry(BaseModel):
    """A passage of the unlimited top-k, and whether the limit cut it before scoring."""

    model_config = ConfigDict(frozen=True)

    rank: int
    chunk: StoredChunk
    score: float
    #: 1-based position in the store's candidate order.
    candidate_position: int
    matched_terms: int
    cut: bool


class LimitedEntry(BaseModel):
    """A passage of the limited top-k, with its rank in the unlimited ranking."""

    model_config = ConfigDict(frozen=True)

    rank: int
    chunk: StoredChunk
    score: float
    candidate_position: int
    matched_terms: int
    #: Rank among every scoring candidate when nothing is cut.
    unlimited_rank: int
    #: Places gained through the cut (unlimited rank − limited rank; never negative).
    movement: int
    #: Not in the unlimited top-k: it took the place of a passage the limit cut (Compare's
    #: "(new)").
    new: bool = False


class TruncationView(QueryView):
    """One query's limited and unlimited top-k side by side, with core's report."""

    report: TruncationReport
    unlimited: list[UnlimitedEntry]
    limited: list[LimitedEntry]
    #: Upper end of a limit slider: every matching passage (or the current limit, if larger).
    limit_max: int
    #: Matched-term count of the last candidate the limit keeps, when the limit cuts any:
    #: a cut passage matching as many terms lost on the passage-id tie-break alone.
    last_kept_terms: int | None = None
    #: The filter both sides were read under (None: the whole workspace), and the passages
    #: holding a query term it excluded (apart from what the limit cut).
    within: PassageFilter | None = None
    #: That filter in words, its entities by name ("" without a filter).
    within_words: str = ""
    filtered_out: int = 0


class QueryComparison(BaseModel):
    """One judged query under limit A and (optionally) limit B."""

    model_config = ConfigDict(frozen=True)

    query_id: str
    query: str
    judged: int
    a: QueryScore
    b: QueryScore | None = None
    #: B − A per metric; None without a second run.
    ndcg_difference: float | None = None
    recall_difference: float | None = None
    mrr_difference: float | None = None

    def difference(self, metric: str) -> float | None:
        """B − A of any ``QueryScore`` metric (e.g. ``judged_share``); None without B."""
        if self.b is None:
            return None
        return float(getattr(self.b, metric)) - float(getattr(self.a, metric))


class EvaluationComparison(BaseModel):
    """Runs A and B (same queries, same k) row by row, with the differences of the means."""

    model_config = ConfigDict(frozen=True)

    a: EvaluationRun
    b: EvaluationRun | None = None
    rows: list[QueryComparison]
    #: B − A of each mean; None without a second run.
    ndcg_delta: float | None = None
    recall_delta: float | None = None
    mrr_delta: float | None = None
    judged_delta: float | None = None

    def to_csv(self) -> str:
        """One row per judged query: every metric at A (and B, and B − A)."""
        out = io.StringIO()
        writer = csv.writer(out)
        runs = [("A", self.a)] + ([("B", self.b)] if self.b is not None else [])
        header = ["query_id", "query", "judged"]
        for name, run in runs:
            what = run.label or f"limit {run.limit}"
            header += [f"{m}@{run.k} {what} ({name})" for m in ("ndcg", "recall", "mrr")]
        if self.b is not None:
            header += ["ndcg B-A", "recall B-A", "mrr B-A"]
        writer.writerow(header)
        for row in self.rows:
            line: list[object] = [row.query_id, row.query, row.judged]
            for score in (row.a, row.b):
                if score is not None:
                    line += [repr(score.ndcg), repr(score.recall), repr(score.mrr)]
            if self.b is not None:
                line += [
                    repr(row.ndcg_difference),
                    repr(row.recall_difference),
                    repr(row.mrr_difference),
                ]
            writer.writerow(line)
        return out.getvalue()


def compare_runs(a: EvaluationRun, b: EvaluationRun | None = None) -> EvaluationComparison:
    """Pair the per-query rows of two runs of the same judgments; differences are B − A."""
    by_id = {row.query_id: row for row in b.rows} if b is not None else {}
    rows = []
    for score in a.rows:
        other = by_id.get(score.query_id)
        rows.append(
            QueryComparison(
                query_id=score.query_id,
                query=score.query,
                judged=score.judged,
                a=score,
                b=other,
                ndcg_difference=None if other is None else other.ndcg - score.ndcg,
                recall_difference=None if other is None else other.recall - score.recall,
                mrr_difference=None if other is None else other.mrr - score.mrr,
            )
        )
    return EvaluationComparison(
        a=a,
        b=b,
        rows=rows,
        ndcg_delta=None if b is None else b.mean_ndcg - a.mean_ndcg,
        recall_delta=None if b is None else b.mean_recall - a.mean_recall,
        mrr_delta=None if b is None else b.mean_mrr - a.mean_mrr,
        judged_delta=None if b is None else b.mean_judged_share - a.mean_judged_share,
    )


class AnalysisActions(StoreRunner):
    """The Truncation and Evaluate screens' actions, and Search's "why not?"."""

    def truncation(
        self,
        query: str,
        k: int = 10,
        limit: int = 1000,
        *,
        workspace: str,
        within: PassageFilter | None = None,
    ) -> TruncationView:
        """What ``limit`` costs this query: limited and unlimited top-k from one candidate read
        (of the passages ``within`` admits, when given: both sides are then filtered, and the
        filter's exclusions are counted apart, ``filtered_out``)."""
        check_k_limit(k, limit)
        if within is not None and within.empty:
            within = None
        return self._call_query(query, self._truncation(query, k, limit, workspace, within))

    async def _truncation(
        self, query: str, k: int, limit: int, workspace: str, within: PassageFilter | None
    ) -> TruncationView:
        view = query_view(
            query, k, limit, workspace, await workspace_profile(self._store, workspace)
        )
        terms = view["terms"]
        await checkpoint()  # tokenising 1,000 distinct words was ~2 ms
        tenant = await tenant_of(self._store, workspace)
        full = await bounded_candidates(self._store, terms, tenant, UNLIMITED, within)
        await checkpoint()
        report = await stepped(truncation_steps(terms, full, k, limit))
        await checkpoint()  # the report's last piece, then the view of it: ~2 ms each
        rows = {row.chunk_id: row for row in report.candidates}
        unlimited = [
            UnlimitedEntry(
                rank=rank,
                chunk=r.chunk,
                score=r.score,
                candidate_position=rows[r.chunk.id].position,
                matched_terms=rows[r.chunk.id].matched_terms,
                cut=rows[r.chunk.id].cut,
            )
            for rank, r in enumerate(report.unlimited, start=1)
        ]
        limited = []
        for rank, r in enumerate(report.limited, start=1):
            row = rows[r.chunk.id]
            # A limited result scores > 0, so it has an unlimited rank.
            unlimited_rank = row.unlimited_rank or rank
            limited.append(
                LimitedEntry(
                    rank=rank,
                    chunk=r.chunk,
                    score=r.score,
                    candidate_position=row.position,
                    matched_terms=row.matched_terms,
                    unlimited_rank=unlimited_rank,
                    movement=unlimited_rank - rank,
                    new=unlimited_rank > k,
                )
            )
        return TruncationView(
            **view,
            empty_reason=empty_reason(
                terms, report.matching, len(limited), full.filtered_out, view["query"]
            ),
            within=within,
            within_words=await filter_words(self._store, within, tenant),
            filtered_out=full.filtered_out,
            report=report,
            unlimited=unlimited,
            limited=limited,
            limit_max=max(report.matching, limit, 1),
            last_kept_terms=next(
                (r.matched_terms for r in report.candidates if r.position == limit), None
            )
            if 0 < limit < report.matching
            else None,
        )

    def why_not(
        self, query: str, passage: str, k: int = 10, limit: int = 1000, *, workspace: str
    ) -> WhyNot:
        """Where one passage stands for ``query``: by passage id, a source id (its first
        passage), or ``<source id>#<n>`` (its n-th passage, as the screens number them).

        Raises ``KeyError`` when the workspace has neither a passage nor a source of that id.
        """
        check_k_limit(k, limit)
        return self._call_query(query, self._why_not(query, passage.strip(), k, limit, workspace))

    async def _why_not(
        self, query: str, passage: str, k: int, limit: int, workspace: str
    ) -> WhyNot:
        tenant = await tenant_of(self._store, workspace)
        chunk = await self._store.get(passage, tenant) if passage else None
        if chunk is None and passage:
            chunks = await self._store.get_by_source(passage, tenant)
            chunk = chunks[0] if chunks else None
        source, _, number = passage.rpartition(PASSAGE_MARK)
        if chunk is None and source and number.isdigit():
            chunks = await self._store.get_by_source(source, tenant)
            index = int(number) - 1
            chunk = chunks[index] if 0 <= index < len(chunks) else None
        if chunk is None:
            raise KeyError(f"no passage or source {passage!r} in workspace {workspace!r}")
        terms = checked_terms(query, await workspace_profile(self._store, workspace))
        await checkpoint()  # tokenising 1,000 distinct words was ~2 ms
        full = await bounded_candidates(self._store, terms, tenant, UNLIMITED)
        await checkpoint()
        return await stepped(why_not_steps(terms, full, chunk.id, k, limit))

    def passage(self, chunk_id: str, *, workspace: str) -> StoredChunk | None:
        """One passage by id (None if the workspace has none of that id)."""
        return self._call(self._store.get(chunk_id, self._tenant(workspace)))

    @staticmethod
    def sample_judgments() -> tuple[bytes, bytes]:
        """The sample's queries (BEIR jsonl) and qrels (BEIR TSV), as uploaded files would be."""
        return SAMPLE_QUERIES.read_bytes(), SAMPLE_QRELS.read_bytes()

    def judged_coverage(self, qrels_data: bytes, *, workspace: str) -> JudgedCoverage:
        """How many of the documents the judgments name the workspace holds (by source id).

        Raises ``JudgmentError`` for unreadable judgments, like ``evaluate``.
        """
        try:
            qrels = parse_qrels(decoded_file(qrels_data, "qrels"))
        except JudgmentError as exc:
            raise JudgmentError(f"qrels file: {exc}") from None
        judged = {doc for docs in qrels.values() for doc in docs}
        sources = {
            s.source_id for s in self._call(self._store.list_sources(self._tenant(workspace)))
        }
        return JudgedCoverage(judged_documents=len(judged), present=len(judged & sources))

    def evaluate(
        self,
        queries_data: bytes,
        qrels_data: bytes,
        k: int,
        limits: Sequence[int],
        *,
        workspace: str,
        on_progress: ProgressCallback | None = None,
    ) -> list[EvaluationRun]:
        """One judged run per limit, in the order given; documents judged at their best passage.

        The workspace's own ranker at each limit: ``evaluate_runs`` with one spec per limit.
        """
        for limit in check_runs(limits, "limits"):
            check_k_limit(k, limit)
        specs = [RunSpec(workspace=workspace, limit=limit) for limit in limits]
        return self._evaluate_specs(queries_data, qrels_data, k, specs, on_progress, False)

    def evaluate_runs(
        self,
        queries_data: bytes,
        qrels_data: bytes,
        k: int,
        runs: Sequence[RunSpec],
        *,
        on_progress: ProgressCallback | None = None,
    ) -> list[EvaluationRun]:
        """One judged run per spec (workspace, limit, ranker), in the order given.

        Raises ``JudgmentError`` (its message names the file and line) for unreadable judgments.
        Each query's candidates are read once per workspace, unlimited, tokenised with that
        workspace's profile, then sliced per limit and ranked per ranker: the store's
        truncation order is contract, so a slice is exactly a limited read, and rankers of
        one workspace see one snapshot. Each run carries its spec's label.
        """
        return self._evaluate_specs(queries_data, qrels_data, k, list(runs), on_progress, True)

    def evaluate_judged(
        self,
        query_set: str,
        k: int,
        runs: Sequence[RunSpec],
        *,
        workspace: str,
        by_document: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> list[EvaluationRun]:
        """One run per spec over a query set of ``workspace``, judged by its in-app grades.

        Passage-level (the grades themselves) or, ``by_document``, document-level (a
        document's best passage, as for qrels). Queries nobody graded are left out; each run
        reports Judged@k, the share of its top k that has a grade. ``KeyError`` for an unknown
        set, ``JudgmentError`` when no query of it has a grade yet.
        """
        check_runs(runs, "runs")
        for spec in runs:  # a limit of 0 is refused as Search refuses it
            check_k_limit(k, spec.limit)
        tenant = self._tenant(workspace)
        found = self._call(self._store.get_query_set(tenant, query_set))
        if found is None:
            raise KeyError(f"no query set “{query_set}” in “{workspace}”")
        texts = [q.text for q in found.queries]
        grades = combine_judgments(
            self._call(self._store.list_judgments(tenant, texts)), by_document=by_document
        )
        queries = {q.query_id: q.text for q in found.queries if q.text in grades}
        if not queries:
            raise JudgmentError(f"no query of the set “{query_set}” has a grade yet")
        qrels = {query_id: grades[text] for query_id, text in queries.items()}
        specs = list(runs)
        check_evaluated(len(queries), [spec.limit for spec in specs])
        if any(spec.expand is not None for spec in specs):
            check_expanded(len(queries))
        return self._call_with_progress(
            lambda progress: self._evaluate(
                queries, qrels, k, specs, True, progress, passages=not by_document
            ),
            on_progress,
        )

    def _evaluate_specs(
        self,
        queries_data: bytes,
        qrels_data: bytes,
        k: int,
        runs: Sequence[RunSpec],
        on_progress: ProgressCallback | None,
        labelled: bool,
    ) -> list[EvaluationRun]:
        check_runs(runs, "runs")
        for spec in runs:  # a limit of 0 is refused as Search refuses it
            check_k_limit(k, spec.limit)
        judged, qrels = judged_files(queries_data, qrels_data)
        specs = list(runs)
        check_evaluated(len(judged), [spec.limit for spec in specs])
        if any(spec.expand is not None for spec in specs):
            check_expanded(len(judged))
        return self._call_with_progress(
            lambda progress: self._evaluate(judged, qrels, k, specs, labelled, progress),
            on_progress,
        )

    async def _evaluate(
        self,
        queries: dict[str, str],
        qrels: dict[str, dict[str, int]],
        k: int,
        specs: list[RunSpec],
        labelled: bool,
        report: Callable[[int, int, str], None],
        *,
        passages: bool = False,
    ) -> list[EvaluationRun]:
        workspaces = list(dict.fromkeys(spec.workspace for spec in specs))
        profiles = {w: await workspace_profile(self._store, w) for w in workspaces}
        # Every query checked before the first is run: a refusal, not a run that dies half-way.
        tokens = {
            (w, q): checked_terms(text, profiles[w], f"query {q}")
            for w in workspaces
            for q, text in queries.items()
        }
        ranked: list[dict[str, list[str]]] = [{} for _ in specs]
        total = len(queries) * len(workspaces)
        done = 0
        for workspace in workspaces:
            tenant = await tenant_of(self._store, workspace)
            mine = [i for i, spec in enumerate(specs) if spec.workspace == workspace]
            # Every run of this workspace ranks a prefix of the candidate order (``head``), so
            # one read at the largest limit serves them all: an unlimited read built every
            # matching passage's columns (300 queries at 100k: most of the time).
            widest = max(specs[i].limit for i in mine)
            filters = {specs[i].within for i in mine}

            read = partial(self._evaluate_read, tokens, workspace, tenant, widest, filters)
            # The next queries are read while this one is ranked (PostgreSQL: its round trips),
            # when their candidates are small (at most READ_AHEAD_CELLS each).
            largest = max((len(set(tokens[workspace, q])) for q in queries), default=0)
            depth = READ_AHEAD if largest * widest * len(filters) <= READ_AHEAD_CELLS else 0
            async with aclosing(read_ahead(read, queries, depth)) as reading:
                async for query_id, reads in reading:
                    terms = tokens[workspace, query_id]
                    for within, full in reads.items():
                        runs_of = [i for i in mine if specs[i].within == within]
                        await self._rank_evaluated(
                            specs, runs_of, ranked, query_id, terms, full, tenant,
                            profiles[workspace], k, passages,
                        )  # fmt: skip
                    done += 1
                    report(done, total, query_id)
                    await checkpoint()
        runs = []
        for by_query, spec in zip(ranked, specs, strict=True):
            await checkpoint()  # a run's metrics over 225 queries: 5-17 ms in one piece
            label = spec.label if labelled else ""
            steps = evaluate_run_steps(
                queries, qrels, by_query, k, spec.limit, label, spec.workspace
            )
            runs.append(await stepped(steps))
        return runs

    async def _evaluate_read(
        self,
        tokens: dict[tuple[str, str], list[str]],
        workspace: str,
        tenant: UUID,
        widest: int,
        filters: set[PassageFilter | None],
        query_id: str,
    ) -> dict[PassageFilter | None, LexicalCandidates]:
        """One query's candidates for an Evaluate: one read at the widest limit per filter."""
        try:
            return {
                within: await bounded_candidates(
                    self._store, tokens[workspace, query_id], tenant, widest, within
                )
                for within in filters
            }
        except ValueError as exc:
            raise ValueError(f"query {query_id}: {exc}") from None

    async def _rank_evaluated(
        self,
        specs: list[RunSpec],
        runs_of: list[int],
        ranked: list[dict[str, list[str]]],
        query_id: str,
        terms: list[str],
        full: LexicalCandidates,
        tenant: UUID,
        profile: Profile,
        k: int,
        passages: bool,
    ) -> None:
        """``full`` ranked by each run of ``runs_of`` into ``ranked`` (its top k ids)."""
        for i in [i for i in runs_of if specs[i].expand is not None]:
            ranked[i][query_id] = await expanded_top(
                self._store, specs[i], terms, full, tenant, profile, k, passages
            )
        runs_of = [i for i in runs_of if specs[i].expand is None]
        if passages:  # judged passage by passage: the top k passages, not documents
            for i in runs_of:
                top = rank_with(specs[i].ranker, terms, full.head(specs[i].limit), k)
                ranked[i][query_id] = [r.chunk.id for r in top]
            return
        # The workspace's own runs share one scoring of the query (top_document_steps).
        own = [i for i in runs_of if specs[i].ranker.kind is RankerKind.WORKSPACE]
        limits = [specs[i].limit for i in own]
        bulk = await stepped(top_document_steps(terms, full, k, limits))
        for i, documents in zip(own, bulk, strict=True):
            ranked[i][query_id] = documents
        for i in runs_of:
            if i not in own:
                handed = full.head(specs[i].limit)
                ranked[i][query_id] = top_documents(specs[i].ranker, terms, handed, k)
