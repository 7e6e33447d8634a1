"""Query sets and judgments of a workspace: what the Judge and Evaluate screens call.

The files are read and written by ``core.analysis.judgment_files`` and kept by the store;
this family adds what needs both: who is rating (the signed-in e-mail, or "local"), the
passage's source document looked up from the store (so a grade cannot name a passage the
workspace does not hold), TREC/BEIR query ids mapped through a set, and the one grade
several raters' grades become (``core.domain.agreement.combined_grade``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final, Literal
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict, Field

from core.analysis.evaluation import EvaluationRun
from core.analysis.expansion import ExpansionSpec
from core.analysis.judgment_files import (
    GradedPair,
    JudgmentError,
    JudgmentFormat,
    QueryFormat,
    RefusedQuery,
    read_judgments,
    write_judgments,
    write_queries,
)
from core.analysis.pooling import (
    JudgingPool,
    PoolPassage,
    PoolSpec,
    SetProgress,
    pool_order,
    pooled_rows,
)
from core.analysis.predictors import QueryDifficulty, hardest_first, query_difficulty
from core.analysis.rankers import Ranker
from core.analysis.run_comparison import METRICS, RunsComparison, compare_saved
from core.analysis.truncation import UNLIMITED
from core.checkpoint import checkpoint
from core.domain.agreement import COMBINING_RULE, cohen_kappa, fleiss_kappa
from core.domain.chunks import StoredChunk
from core.domain.judging import (
    LOCAL_RATER,
    TOP_GRADE,
    Judgment,
    QuerySet,
    QuerySetSummary,
    RunRecord,
    SavedRun,
    SavedRunSummary,
    SetQuery,
    graded_query_refusal,
)
from core.service.common import (
    DEFAULT_LIMIT,
    SAMPLE_QRELS,
    SAMPLE_QUERY_SET,
    bounded_candidates,
    check_limit,
    checked_terms,
    combine_judgments,
    empty_reason,
    read_query_set,
    workspace_profile,
)
from core.service.runner import StoreRunner
from core.stores.port import tenant_of

#: The pool a rater starts from: the workspace's BM25 at Search's limit and unlimited, and
#: the textbook BM25, each to depth 10.
DEFAULT_POOL: Final = PoolSpec(limit=DEFAULT_LIMIT)
#: How a rater's name is marked on grades imported from a file (a person, beside the file).
IMPORTED: Final = "(imported)"


class Agreement(BaseModel):
    """The raters of a query set and how far they agree (kappa; None when undefined)."""

    model_config = ConfigDict(frozen=True)

    raters: list[str]
    #: Pairs (query, passage) graded by two raters or more.
    shared_pairs: int
    kappa: float | None
    method: Literal["Cohen", "Fleiss"] | None
    #: The rule that turns several grades into one, as the screens state it.
    rule: str = COMBINING_RULE


class SavedQuerySet(QuerySetSummary):
    """A query set as saved, and the lines of its file left out for what their queries cost
    (``core.domain.query_cost``), each "line N: " and one sentence, in file order."""

    refused: list[RefusedQuery] = Field(default_factory=list)


class JudgmentImport(BaseModel):
    """What a judgments file added: grades stored, and what it named that is not here."""

    model_config = ConfigDict(frozen=True)

    stored: int
    unknown_queries: list[str]
    unknown_ids: list[str]


class QueryHardness(BaseModel):
    """One query of a set with its pre-retrieval predictors (``core.analysis.predictors``)."""

    model_config = ConfigDict(frozen=True)

    #: 0-based position in the set as saved (what ``pool`` takes).
    position: int
    query_id: str
    text: str
    #: None for a query that cannot be searched (more terms than a query may have).
    difficulty: QueryDifficulty | None


class JudgingActions(StoreRunner):
    """Query sets (import, list, export), grades (give, list, combine, export), the pool of a
    set's query and a rater's progress through the set."""

    #: The signed-in person's e-mail in a ``for_user`` view; None without sign-in.
    user: str | None = None

    @property
    def rater(self) -> str:
        """Who the grades given now are kept under."""
        return self.user or LOCAL_RATER

    def save_query_set(
        self, name: str, data: bytes | str, fmt: QueryFormat | str, *, workspace: str
    ) -> SavedQuerySet:
        """Read a query set from a file or pasted text and keep it under ``name``.

        A line whose query costs more than a query may under the workspace's profile (the rule
        every search applies) is left out and listed in ``refused``; the rest are kept.
        ``JudgmentError`` names the first unreadable line (or says no query could be kept) and
        nothing is stored; a set of the same name is replaced. ``ValueError`` for a name that
        cannot be one.
        """
        tenant = self._tenant(workspace)
        profile = self._call(workspace_profile(self._store, workspace))
        query_set, refused = read_query_set(tenant, name, data, QueryFormat(fmt), profile)
        self._call(self._store.save_query_set(query_set))
        return SavedQuerySet(
            name=query_set.name,
            queries=len(query_set.queries),
            created_at=query_set.created_at,
            refused=refused,
        )

    def query_sets(self, *, workspace: str) -> list[QuerySetSummary]:
        return self._call(self._store.list_query_sets(self._tenant(workspace)))

    def query_set(self, name: str, *, workspace: str) -> QuerySet:
        """The set ``name``; ``KeyError`` naming it when the workspace has none such."""
        return self._set(name, workspace)

    def export_query_set(self, name: str, fmt: QueryFormat | str, *, workspace: str) -> str:
        return write_queries(self.query_set(name, workspace=workspace).queries, QueryFormat(fmt))

    def delete_query_set(self, name: str, *, workspace: str) -> bool:
        return self._call(self._store.delete_query_set(self._tenant(workspace), name))

    def grade(self, query: str, chunk_id: str, grade: int, *, workspace: str) -> Judgment:
        """Keep this rater's grade (0-3) of a passage for a query; a second grade replaces it.

        ``KeyError`` when the workspace holds no such passage; ``ValueError`` for a query too
        long to keep a grade under (``graded_query_refusal``) or (pydantic's) a grade outside
        0-3.
        """
        refusal = graded_query_refusal(" ".join(query.split()))
        if refusal:
            raise ValueError(refusal)
        tenant = self._tenant(workspace)
        passage = self._call(self._store.get(chunk_id, tenant))
        if passage is None:
            raise KeyError(f"the workspace “{workspace}” holds no passage {chunk_id}")
        judgment = Judgment(
            tenant_id=tenant,
            query=" ".join(query.split()),
            chunk_id=chunk_id,
            source_id=passage.source_id,
            grade=grade,
            rater=self.rater,
            judged_at=datetime.now(UTC),
        )
        self._call(self._store.put_judgments(tenant, [judgment]))
        return judgment

    def judgments(self, *, workspace: str, queries: Sequence[str] | None = None) -> list[Judgment]:
        return self._call(self._store.list_judgments(self._tenant(workspace), queries))

    def combined_judgments(
        self, *, workspace: str, queries: Sequence[str] | None = None, by_document: bool = False
    ) -> dict[str, dict[str, int]]:
        """query text -> passage id (or source id) -> the one grade its raters' grades become.

        By document, a document's grade is its best passage's (as qrels judge documents).
        """
        found = self.judgments(workspace=workspace, queries=queries)
        return combine_judgments(found, by_document=by_document)

    def export_judgments(
        self, query_set: str, fmt: JudgmentFormat | str, *, workspace: str, by_document: bool
    ) -> str:
        """The set's combined judgments as a file: TREC and BEIR name queries by the set's ids,
        CSV by their text. ``JudgmentError`` when an id cannot go into the format."""
        fmt = JudgmentFormat(fmt)
        queries = self.query_set(query_set, workspace=workspace).queries
        combined = self.combined_judgments(
            workspace=workspace, queries=[q.text for q in queries], by_document=by_document
        )
        pairs = [
            GradedPair(
                query=q.text if fmt is JudgmentFormat.CSV else q.query_id, doc_id=doc, grade=g
            )
            for q in queries
            for doc, g in sorted(combined.get(q.text, {}).items())
        ]
        if not pairs:
            raise JudgmentError(f"the query set “{query_set}” has no judgments yet")
        return write_judgments(pairs, fmt)

    def save_run(
        self,
        name: str,
        run: EvaluationRun,
        ranker: Ranker,
        query_set: str,
        *,
        workspace: str,
        by_document: bool = False,
        expand: ExpansionSpec | None = None,
    ) -> SavedRunSummary:
        """Keep an evaluated run under ``name`` with everything needed to read it later.

        Its ranker, k1/b, the workspace's profile, limit and k, the query set, the grades as
        they stand now (combined), and per query (by text) its metrics and ranked ids.
        """
        tenant = self._tenant(workspace)
        texts = [row.query for row in run.rows]
        record = RunRecord(
            ranker=ranker.label,
            k1=ranker.k1,
            b=ranker.b,
            profile=self._call(workspace_profile(self._store, workspace)).value,
            limit=run.limit,
            k=run.k,
            query_set=query_set,
            level="document" if by_document else "passage",
            judgments=self.combined_judgments(
                workspace=workspace, queries=texts, by_document=by_document
            ),
            metrics={row.query: {m: float(getattr(row, m)) for m in METRICS} for row in run.rows},
            ranked={row.query: list(run.ranked.get(row.query_id, [])) for row in run.rows},
            expansion=None if expand is None else expand.label,
        )
        saved = SavedRun(
            tenant_id=tenant, run_id=uuid4(), name=name, saved_at=datetime.now(UTC), record=record
        )
        self._call(self._store.save_run(saved))
        return SavedRunSummary(
            run_id=saved.run_id, name=saved.name, saved_at=saved.saved_at, query_set=query_set
        )

    def saved_runs(self, *, workspace: str) -> list[SavedRunSummary]:
        return self._call(self._store.list_runs(self._tenant(workspace)))

    def saved_run(self, run_id: UUID, *, workspace: str) -> SavedRun:
        """The saved run; ``KeyError`` when the workspace has none with that id."""
        found = self._call(self._store.get_run(self._tenant(workspace), run_id))
        if found is None:
            raise KeyError(f"no saved run {run_id} in “{workspace}”")
        return found

    def delete_saved_run(self, run_id: UUID, *, workspace: str) -> bool:
        return self._call(self._store.delete_run(self._tenant(workspace), run_id))

    def compare_saved_runs(
        self, run_ids: Sequence[UUID], metric: str = "ndcg", *, workspace: str
    ) -> RunsComparison:
        """Compare 2-5 saved runs (the first is the baseline): ``run_comparison.compare_saved``."""
        runs = [self.saved_run(run_id, workspace=workspace) for run_id in run_ids]
        return compare_saved(runs, metric)

    def agreement(self, query_set: str, *, workspace: str) -> Agreement:
        """How far the raters of a set's queries agree, and the rule that combines them.

        Cohen's kappa when exactly two people rated, over the pairs both graded; Fleiss'
        kappa from three raters on, over the pairs two or more graded.
        """
        texts = [q.text for q in self.query_set(query_set, workspace=workspace).queries]
        by_pair: dict[tuple[str, str], dict[str, int]] = {}
        for j in self.judgments(workspace=workspace, queries=texts):
            by_pair.setdefault((j.query, j.chunk_id), {})[j.rater] = j.grade
        raters = sorted({rater for grades in by_pair.values() for rater in grades})
        shared = sum(1 for grades in by_pair.values() if len(grades) >= 2)
        kappa: float | None = None
        method: Literal["Cohen", "Fleiss"] | None = None
        if len(raters) == 2:
            first, second = ({p: g[r] for p, g in by_pair.items() if r in g} for r in raters)
            kappa, method = cohen_kappa(first, second), "Cohen"
        elif len(raters) > 2:
            kappa, method = (
                fleiss_kappa({p: list(g.values()) for p, g in by_pair.items()}),
                "Fleiss",
            )
        return Agreement(raters=raters, shared_pairs=shared, kappa=kappa, method=method)

    def import_judgments(
        self, data: bytes | str, fmt: JudgmentFormat | str, query_set: str, *, workspace: str
    ) -> JudgmentImport:
        """Grades from a file into the workspace, under this rater's name marked "(imported)".

        TREC and BEIR name queries by the set's ids, CSV by their text. A document id may be
        a passage id or a source document: a document's grade goes to each of its passages
        (so by document it is the document's grade). Queries outside the set and ids the
        workspace does not hold are counted and listed, never silently dropped; a bad line
        refuses the whole file (``JudgmentError``) and stores nothing.
        """
        fmt = JudgmentFormat(fmt)
        pairs = read_judgments(data, fmt)
        queries = self.query_set(query_set, workspace=workspace).queries
        named = {pair.query for pair in pairs}
        for q in queries:  # refused before anything is stored, naming the query
            refusal = graded_query_refusal(q.text)
            if refusal and (q.query_id in named or q.text in named):
                raise JudgmentError(f"query {q.query_id}: {refusal}")
        by_key = {(q.text if fmt is JudgmentFormat.CSV else q.query_id): q.text for q in queries}
        return self._call(self._import(pairs, by_key, workspace))

    def import_sample_grades(self, *, workspace: str) -> JudgmentImport:
        """The sample's qrels as grades of its query set (``SAMPLE_QUERY_SET``), so Runs can be
        tried on the sample before anyone grades: Cranfield's scores 1-4 on the app's 0-3
        scale (4 "complete answer" and 3 "high degree of relevance" both become 3 "perfect";
        2 and 1 stay), under this rater's name marked "(imported)"."""
        lines = SAMPLE_QRELS.read_text(encoding="utf-8").splitlines()
        scaled = [lines[0]]
        for line in lines[1:]:
            query, doc, score = line.split("\t")
            scaled.append(f"{query}\t{doc}\t{min(int(score), TOP_GRADE)}")
        data = "\n".join(scaled) + "\n"
        return self.import_judgments(
            data, JudgmentFormat.BEIR, SAMPLE_QUERY_SET, workspace=workspace
        )

    async def _import(
        self, pairs: Sequence[GradedPair], by_key: dict[str, str], workspace: str
    ) -> JudgmentImport:
        tenant = await tenant_of(self._store, workspace)
        rater, now = f"{self.rater} {IMPORTED}", datetime.now(UTC)
        passages: dict[str, list[StoredChunk]] = {}
        unknown_queries: set[str] = set()
        unknown_ids: set[str] = set()
        judgments = []
        for pair in pairs:
            text = by_key.get(pair.query)
            if text is None:
                unknown_queries.add(pair.query)
                continue
            if pair.doc_id not in passages:
                one = await self._store.get(pair.doc_id, tenant)
                passages[pair.doc_id] = (
                    [one]
                    if one is not None
                    else await self._store.get_by_source(pair.doc_id, tenant)
                )
            if not passages[pair.doc_id]:
                unknown_ids.add(pair.doc_id)
            judgments += [
                Judgment(
                    tenant_id=tenant,
                    query=text,
                    chunk_id=chunk.id,
                    source_id=chunk.source_id,
                    grade=pair.grade,
                    rater=rater,
                    judged_at=now,
                )
                for chunk in passages[pair.doc_id]
            ]
        stored = await self._store.put_judgments(tenant, judgments) if judgments else 0
        return JudgmentImport(
            stored=stored,
            unknown_queries=sorted(unknown_queries),
            unknown_ids=sorted(unknown_ids),
        )

    def _set(self, name: str, workspace: str) -> QuerySet:
        found = self._call(self._store.get_query_set(self._tenant(workspace), name))
        if found is None:
            raise KeyError(f"no query set “{name}” in “{workspace}”")
        return found

    def pool(
        self,
        query_set: str,
        position: int,
        *,
        workspace: str,
        spec: PoolSpec | None = None,
        depth: int | None = None,
        limit: int | None = None,
    ) -> JudgingPool:
        """What to grade for the set's query at ``position`` (0-based): the pool of rankers.

        The union of the top ``depth`` of ``spec``'s rankers (by default the workspace's
        BM25 at ``limit``, the same without a limit, so the passages the limit cut are graded
        too, and the textbook BM25), ordered by ``pool_order``. Each passage carries this
        rater's grade, if any. ``IndexError`` for a position outside the set; ``depth`` and
        ``limit`` override the spec's.
        """
        spec = spec or DEFAULT_POOL
        if depth is not None or limit is not None:
            spec = spec.model_copy(
                update={"depth": depth or spec.depth, "limit": limit or spec.limit}
            )
        queries = self._set(query_set, workspace).queries
        if not 0 <= position < len(queries):
            raise IndexError(f"the set “{query_set}” has {len(queries)} queries")
        return self._call(self._pool(queries, position, workspace, spec))

    async def _pool(
        self, queries: Sequence[SetQuery], position: int, workspace: str, spec: PoolSpec
    ) -> JudgingPool:
        tenant = await tenant_of(self._store, workspace)
        query = queries[position].text
        terms = checked_terms(query, await workspace_profile(self._store, workspace))
        full = await bounded_candidates(self._store, terms, tenant, UNLIMITED)
        found = pooled_rows(terms, full, spec)
        mine = {
            j.chunk_id: j.grade
            for j in await self._store.list_judgments(tenant, [query])
            if j.rater == self.rater
        }
        return JudgingPool(
            query=query,
            terms=terms,
            position=position,
            queries=len(queries),
            empty_reason=empty_reason(terms, len(found), len(found), query=query),
            passages=[
                PoolPassage(
                    chunk_id=i, source_id=found[i].source_id, text=found[i].text, grade=mine.get(i)
                )
                for i in pool_order(query, list(found))
            ],
        )

    def queries_hardest_first(
        self, query_set: str, *, workspace: str, limit: int = DEFAULT_LIMIT
    ) -> list[QueryHardness]:
        """The set's queries, hardest first (``core.analysis.predictors.hardest_first``).

        Pre-retrieval predictors only: one ``lexical_candidates(terms, tenant, 0)`` read per
        query (df and the matching count, no candidates), and the cut a search at ``limit``
        (Search's default) would make, ``matching - min(limit, matching)``. Pooling each query
        to get its scores was rejected: a set of 225 queries would cost 225 unlimited reads
        before the first passage is shown. Kept per workspace generation, like a search.
        """
        check_limit(limit)
        queries = self._set(query_set, workspace).queries
        return self._call(self._hardest_first(queries, workspace, limit))

    async def _hardest_first(
        self, queries: Sequence[SetQuery], workspace: str, limit: int
    ) -> list[QueryHardness]:
        tenant = await tenant_of(self._store, workspace)
        profile = await workspace_profile(self._store, workspace)
        generation = await self._store.generation(tenant)
        key = ("hardest", tenant, profile, generation, tuple(queries), limit)
        cached = self._results.get(key)
        if isinstance(cached, tuple):
            return list(cached)
        rated = []
        for position, query in enumerate(queries):
            difficulty = None
            try:
                terms = checked_terms(query.text, profile)
                read = await bounded_candidates(self._store, terms, tenant, 0)
            except ValueError:  # more than a query may cost: no predictors
                pass
            else:
                cut = read.matching - min(limit, read.matching)
                difficulty = query_difficulty(terms, read.stats, read.matching, cut)
            rated.append(
                QueryHardness(
                    position=position,
                    query_id=query.query_id,
                    text=query.text,
                    difficulty=difficulty,
                )
            )
            await checkpoint()
        ordered = [rated[i] for i in hardest_first([r.difficulty for r in rated])]
        self._results.put(key, tuple(ordered))
        return ordered

    def set_progress(
        self, query_set: str, *, workspace: str, spec: PoolSpec | None = None
    ) -> SetProgress:
        """This rater's progress through the set: queries started and finished, where to resume.

        Only the queries the rater has graded in are pooled (a query nobody started cannot be
        finished), so the cost grows with the rater's work, not the set's size. Resuming goes
        to the query of the rater's latest grade if its pool is unfinished, else to the next
        unfinished query after it (wrapping round); a rater who graded nothing starts at 0.
        """
        spec = spec or DEFAULT_POOL
        queries = self._set(query_set, workspace).queries
        return self._call(self._progress(queries, workspace, spec))

    async def _progress(
        self, queries: Sequence[SetQuery], workspace: str, spec: PoolSpec
    ) -> SetProgress:
        tenant = await tenant_of(self._store, workspace)
        profile = await workspace_profile(self._store, workspace)
        texts = [q.text for q in queries]
        mine = [j for j in await self._store.list_judgments(tenant, texts) if j.rater == self.rater]
        graded: dict[str, set[str]] = {}
        for j in mine:
            graded.setdefault(j.query, set()).add(j.chunk_id)
        finished = set()
        for text, ids in graded.items():
            terms = checked_terms(text, profile)
            pooled = pooled_rows(
                terms, await bounded_candidates(self._store, terms, tenant, UNLIMITED), spec
            )
            if pooled and set(pooled) <= ids:
                finished.add(text)
        resume = 0
        if mine:
            last = texts.index(max(mine, key=lambda j: j.judged_at).query)
            order = [*range(last, len(texts)), *range(last)]
            resume = next((i for i in order if texts[i] not in finished), last)
        return SetProgress(
            queries=len(queries),
            started=frozenset(graded),
            finished=frozenset(finished),
            resume_at=resume,
        )
