"""The synchronous facade the screens call: one method per user action.

Streamlit reruns page scripts in worker threads, while the stores are async and
an asyncpg pool is bound to the event loop that created it. So the service owns
ONE background thread running ONE event loop, creates the store on it, and every
public method submits a coroutine there and waits (``run_coroutine_threadsafe``).
The rejected alternative, ``asyncio.run`` per call, makes a new loop each time:
a pool created on the first loop breaks on the second, and a new pool per click
costs a connection handshake per action.

The service composes core (tokenizer, store port, ``rank_chunks``, indexing) and
returns pydantic models the pages render; it never formats and never imports
streamlit, so it is tested without a browser (tests/unit/test_service.py).
Progress callbacks run in the CALLER's thread (Streamlit can only draw from the
script thread): the loop thread queues progress events, the caller drains them.
"""

from __future__ import annotations

import asyncio
import atexit
import csv
import io
import queue
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, Literal, TypeVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.bm25 import CorpusStats, ScoreExplanation, explain_score, inverse_document_frequency
from core.chunks import ChunkingOptions, StoredChunk, workspace_tenant_id
from core.embedded import EmbeddedServerError
from core.entities import EXTRACTOR_LIMITS as EXTRACTOR_LIMITS  # re-exported for the pages
from core.entities import Entity
from core.evaluation import EvaluationRun as EvaluationRun  # re-exported for the pages
from core.evaluation import JudgmentError as JudgmentError  # re-exported for the pages
from core.evaluation import (
    QueryScore,
    documents_in_rank_order,
    evaluate_run,
    parse_qrels,
    parse_queries,
)
from core.indexing import DocumentRow, IndexReport, UploadResult, index_uploads, read_upload
from core.ranking import LexicalCandidates, rank_chunks
from core.settings import Settings, describe_store
from core.stores.port import (
    ChunkStore,
    CorpusSummary,
    EntitySummary,
    SourceSummary,
    Workspace,
)
from core.stores.select import open_store
from core.tokenize import STOPWORDS, raw_terms, tokenize
from core.truncation import TruncationReport, WhyNot, analyse_truncation, why_not

T = TypeVar("T")

#: The workspace every fresh store starts with.
DEFAULT_WORKSPACE = "default"
#: The sample collection shipped with the repository (BEIR layout).
SAMPLE_CORPUS = Path(__file__).resolve().parents[1] / "data" / "cranfield" / "corpus.jsonl"
#: How the sample is named on screen.
SAMPLE_LABEL = "Cranfield, 1,400 abstracts"
#: The sample's queries (BEIR jsonl) and graded judgments (BEIR qrels TSV).
SAMPLE_QUERIES = SAMPLE_CORPUS.with_name("queries.jsonl")
SAMPLE_QRELS = SAMPLE_CORPUS.with_name("qrels.tsv")
#: Large enough to mean "every matching passage" when counting what a limit cuts.
_UNLIMITED = 2**62
#: Most terms the corpus term browser lists for one prefix.
TERM_BROWSER_LIMIT = 200

#: Why a search returned nothing, in the words the page shows.
EmptyReason = Literal[
    "no terms left after stopwords",
    "no passage contains any term",
    "every match cut by the limit",
]

ProgressCallback = Callable[[int, int, str], None]


class PassageView(BaseModel):
    """A passage with the names of the entities it mentions."""

    model_config = ConfigDict(frozen=True)

    chunk: StoredChunk
    entities: list[Entity] = Field(default_factory=list)


class RankedPassage(BaseModel):
    """One ranked result: rank (1-based), score, the arithmetic, and entity names."""

    model_config = ConfigDict(frozen=True)

    rank: int
    chunk: StoredChunk
    score: float
    explanation: ScoreExplanation
    entities: list[Entity] = Field(default_factory=list)
    #: 1-based position in the store's candidate order (matched-term count desc, id asc).
    candidate_position: int


class QueryView(BaseModel):
    """What every query screen shows first: the query, k, limit and how it was tokenised."""

    model_config = ConfigDict(frozen=True)

    workspace: str
    query: str
    k: int
    limit: int
    #: The query's terms as tokenised (stopwords dropped), in order, repeats kept.
    terms: list[str]
    #: The distinct terms BM25 sums over, sorted (the explanation's order).
    distinct_terms: list[str]
    #: Query words dropped as stopwords, in query order.
    stopwords_dropped: list[str]
    #: Why nothing is listed, when nothing is.
    empty_reason: EmptyReason | None = None


def _query_view(query: str, k: int, limit: int, workspace: str) -> dict[str, Any]:
    """The QueryView fields of one query: one tokenisation for every screen."""
    terms = tokenize(query)
    return {
        "workspace": workspace,
        "query": query,
        "k": k,
        "limit": limit,
        "terms": terms,
        "distinct_terms": sorted(set(terms)),
        "stopwords_dropped": [t for t in raw_terms(query) if t in STOPWORDS],
    }


def _empty_reason(terms: Sequence[str], matching: int, shown: int) -> EmptyReason | None:
    """Nothing silently disappears: the first reason a result list is empty."""
    if not terms:
        return "no terms left after stopwords"
    if matching == 0:
        return "no passage contains any term"
    if shown == 0:
        return "every match cut by the limit"
    return None


class SearchResult(QueryView):
    """Everything the search page shows for one query, all numbers from core."""

    n_docs: int
    avg_doc_length: float
    doc_frequencies: dict[str, int]
    #: Passages containing at least one query term (in the whole corpus).
    matching_passages: int
    #: Candidates the store handed to BM25 (at most ``limit``).
    candidates_returned: int
    #: Matching passages the limit cut before scoring.
    cut_by_limit: int
    passages: list[RankedPassage]

    def to_json(self) -> str:
        """The result list with every explanation, as JSON."""
        return self.model_dump_json(indent=2)

    def to_csv(self) -> str:
        """One row per (passage, query term): the explanation table of every result."""
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(
            [
                "rank",
                "score",
                "source_id",
                "chunk_index",
                "start_char",
                "end_char",
                "chunk_id",
                "term",
                "tf",
                "df",
                "N",
                "idf",
                "dl",
                "avgdl",
                "tf_part",
                "contribution",
            ]
        )
        for passage in self.passages:
            chunk = passage.chunk
            for part in passage.explanation.terms:
                writer.writerow(
                    [
                        passage.rank,
                        repr(passage.score),
                        chunk.source_id,
                        chunk.chunk_index,
                        chunk.start_char,
                        chunk.end_char,
                        chunk.id,
                        part.term,
                        part.tf,
                        part.df,
                        part.n_docs,
                        repr(part.idf),
                        part.doc_length,
                        repr(part.avg_doc_length),
                        repr(part.tf_part),
                        repr(part.contribution),
                    ]
                )
        return out.getvalue()


class Mention(BaseModel):
    """An entity mention inside one passage (offsets into the passage text)."""

    model_config = ConfigDict(frozen=True)

    start: int
    end: int
    entity_id: UUID


class EntityPassage(BaseModel):
    """A passage of an entity, with where that entity is mentioned in it."""

    model_config = ConfigDict(frozen=True)

    chunk: StoredChunk
    entities: list[Entity]
    mentions: list[Mention]


class CorpusView(BaseModel):
    """Counts over a workspace and every passage length (for the histogram)."""

    model_config = ConfigDict(frozen=True)

    summary: CorpusSummary
    doc_lengths: list[int]


class TermInfo(BaseModel):
    """A term of the corpus with its df and Lucene idf."""

    model_config = ConfigDict(frozen=True)

    term: str
    df: int
    idf: float


class TermPassage(BaseModel):
    """A passage containing a term, with the term's tf and the passage length."""

    model_config = ConfigDict(frozen=True)

    chunk: StoredChunk
    tf: int
    doc_length: int


class FileReport(BaseModel):
    """What happened to one uploaded file."""

    model_config = ConfigDict(frozen=True)

    file_name: str
    documents: int = 0
    passages_written: int = 0
    entities_found: int = 0
    passages_replaced: int = 0
    error: str | None = None
    #: Recoveries, skipped records and rejected documents, in plain words.
    notes: list[str] = Field(default_factory=list)


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


class TruncationView(QueryView):
    """One query's limited and unlimited top-k side by side, with core's report."""

    report: TruncationReport
    unlimited: list[UnlimitedEntry]
    limited: list[LimitedEntry]
    #: Upper end of a limit slider: every matching passage (or the current limit, if larger).
    limit_max: int


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

    def to_csv(self) -> str:
        """One row per judged query: every metric at A (and B, and B − A)."""
        out = io.StringIO()
        writer = csv.writer(out)
        runs = [("A", self.a)] + ([("B", self.b)] if self.b is not None else [])
        header = ["query_id", "query", "judged"]
        for name, run in runs:
            header += [f"{m}@{run.k} limit {run.limit} ({name})" for m in ("ndcg", "recall", "mrr")]
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
    )


def _top_documents(terms: Sequence[str], handed: LexicalCandidates, k: int) -> list[str]:
    """The first ``k`` source ids in rank order: more passages are ranked while documents repeat.

    ``rank_chunks`` builds an explanation per returned passage, so ranking every candidate to
    find k documents would explain hundreds of passages nobody sees; doubling stops early.
    """
    want = k
    while True:
        ranked = rank_chunks(terms, handed, want)
        documents = documents_in_rank_order(r.chunk.source_id for r in ranked)
        if len(documents) >= k or len(ranked) < want:
            return documents[:k]
        want *= 2


def _decoded(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise JudgmentError(f"the {what} file is not UTF-8 text") from None


def _mentions_of(chunk: StoredChunk) -> list[Mention]:
    raw = chunk.metadata.get("mentions")
    mentions: list[Mention] = []
    if not isinstance(raw, list):
        return mentions
    for item in raw:
        try:
            mention = Mention.model_validate(item)
        except ValueError:
            continue
        if 0 <= mention.start < mention.end <= len(chunk.text):
            mentions.append(mention)
    return mentions


class StoreUnavailable(RuntimeError):
    """The configured store cannot be opened; the message says why and what to do."""


class LexplainService:
    """One store on one background event loop; synchronous methods for the pages."""

    def __init__(
        self,
        store_factory: Callable[[], Awaitable[ChunkStore]],
        *,
        store_label: str = "in-memory (lost on restart)",
        settings: Settings | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.store_label = store_label
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="lexplain-store-loop", daemon=True
        )
        self._thread.start()
        self._closed = False
        try:
            self._store: ChunkStore = self._call(self._open(store_factory))
        except BaseException:
            self._stop_loop()
            raise
        # Close the store before the interpreter's own exit hooks stop the embedded server,
        # so a pool never watches its server shut down under it (atexit runs last-in first).
        atexit.register(self.close)

    async def _open(self, factory: Callable[[], Awaitable[ChunkStore]]) -> ChunkStore:
        store = await factory()
        try:
            await store.upsert_workspace(
                Workspace(tenant_id=workspace_tenant_id(DEFAULT_WORKSPACE), name=DEFAULT_WORKSPACE)
            )
        except BaseException:
            await store.close()
            raise
        return store

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> LexplainService:
        """The store the settings name (``core.stores.select.open_store``).

        Raises ``StoreUnavailable`` with plain words when the settings are wrong or the store
        cannot be opened (the embedded server cannot start, a server is unreachable).
        """
        try:
            settings = settings or Settings()
        except ValidationError as exc:
            problems = "; ".join(str(error["msg"]) for error in exc.errors())
            raise StoreUnavailable(f"The LEXPLAIN_* settings are wrong: {problems}.") from exc
        chosen = settings
        label = describe_store(chosen)

        async def factory() -> ChunkStore:
            return await open_store(chosen)

        try:
            return cls(factory, store_label=label, settings=chosen)
        except EmbeddedServerError as exc:
            raise StoreUnavailable(str(exc)) from exc
        except Exception as exc:  # asyncpg/OS errors: the message is what the user needs
            raise StoreUnavailable(
                f"Cannot open the store ({label}): {exc}. Check LEXPLAIN_DATABASE_URL and that "
                "the server is running; nothing was changed."
            ) from exc

    # -- plumbing ---------------------------------------------------------------------------

    def _submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        if self._closed:
            coro.close()
            raise RuntimeError("the service is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        future = self._submit(coro)
        try:
            return future.result(timeout=self.settings.call_timeout_s)
        except FutureTimeout:
            future.cancel()
            raise TimeoutError(
                f"the store did not answer within {self.settings.call_timeout_s:g} s"
            ) from None

    def _call_with_progress(
        self,
        make: Callable[[Callable[[int, int, str], None]], Coroutine[Any, Any, T]],
        on_progress: ProgressCallback | None,
    ) -> T:
        """Run ``make(report)`` on the loop; ``report`` events reach ``on_progress`` here."""
        events: queue.SimpleQueue[tuple[int, int, str]] = queue.SimpleQueue()
        future = self._submit(make(lambda done, total, label: events.put((done, total, label))))

        def drain() -> None:
            while True:
                try:
                    event = events.get_nowait()
                except queue.Empty:
                    return
                if on_progress is not None:
                    on_progress(*event)

        while True:
            try:
                result = future.result(timeout=0.05)
            except FutureTimeout:
                drain()
                continue
            drain()
            return result

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def close(self) -> None:
        """Close the store and stop the loop thread (idempotent)."""
        if self._closed:
            return
        atexit.unregister(self.close)
        try:
            self._call(self._store.close())
        finally:
            self._closed = True
            self._stop_loop()

    # -- workspaces ---------------------------------------------------------------------------

    def list_workspaces(self) -> list[str]:
        """Workspace names, sorted."""
        return [w.name for w in self._call(self._store.list_workspaces())]

    def create_workspace(self, name: str) -> str:
        """Create (or keep) the workspace ``name``; returns its cleaned name."""
        cleaned = name.strip()
        workspace = Workspace(tenant_id=workspace_tenant_id(cleaned), name=cleaned)
        self._call(self._store.upsert_workspace(workspace))
        return cleaned

    @staticmethod
    def tenant(workspace: str) -> UUID:
        return workspace_tenant_id(workspace)

    # -- search -------------------------------------------------------------------------------

    def search(self, query: str, k: int = 10, limit: int = 1000, *, workspace: str) -> SearchResult:
        """Rank the workspace's passages for ``query``; says why when nothing is found."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        return self._call(self._search(query, k, limit, workspace))

    async def _search(self, query: str, k: int, limit: int, workspace: str) -> SearchResult:
        tenant = workspace_tenant_id(workspace)
        view = _query_view(query, k, limit, workspace)
        terms = view["terms"]
        # One read, one snapshot: the store counts what matched and hands over ``limit``.
        handed = await self._store.lexical_candidates(terms, tenant, limit)
        matching = handed.matching
        ranked = rank_chunks(terms, handed, k)
        position = {c.chunk.id: i + 1 for i, c in enumerate(handed.candidates)}
        names = await self._entity_names([r.chunk for r in ranked], tenant)
        passages = [
            RankedPassage(
                rank=i + 1,
                chunk=r.chunk,
                score=r.score,
                explanation=r.explanation,
                entities=[names[e] for e in r.chunk.entity_ids if e in names],
                candidate_position=position[r.chunk.id],
            )
            for i, r in enumerate(ranked)
        ]
        stats = handed.stats
        return SearchResult(
            **view,
            empty_reason=_empty_reason(terms, matching, len(passages)),
            n_docs=stats.n_docs,
            avg_doc_length=stats.avg_doc_length,
            doc_frequencies=dict(stats.doc_frequencies),
            matching_passages=matching,
            candidates_returned=len(handed.candidates),
            cut_by_limit=handed.cut_by_limit,
            passages=passages,
        )

    def explain(self, query: str, chunk_id: str, *, workspace: str) -> ScoreExplanation:
        """The explanation of one passage for ``query``, whether or not it was ranked."""
        return self._call(self._explain(query, chunk_id, workspace))

    async def _explain(self, query: str, chunk_id: str, workspace: str) -> ScoreExplanation:
        tenant = workspace_tenant_id(workspace)
        terms = tokenize(query)
        found = await self._store.lexical_candidates(terms, tenant, _UNLIMITED)
        for candidate in found.candidates:
            if candidate.chunk.id == chunk_id:
                return explain_score(
                    terms, candidate.term_frequencies, candidate.doc_length, found.stats
                )
        chunk = await self._store.get(chunk_id, tenant)
        if chunk is None:
            raise KeyError(f"no passage {chunk_id} in workspace {workspace!r}")
        # It contains no query term: every tf is 0, and so is every contribution.
        return explain_score(terms, {}, len(tokenize(chunk.text)), found.stats)

    async def _entity_names(
        self, chunks: Sequence[StoredChunk], tenant: UUID
    ) -> dict[UUID, Entity]:
        wanted = list(dict.fromkeys(e for c in chunks for e in c.entity_ids))
        if not wanted:
            return {}
        return {e.entity_id: e for e in await self._store.get_entities(wanted, tenant)}

    # -- truncation and evaluation ------------------------------------------------------------

    def truncation(
        self, query: str, k: int = 10, limit: int = 1000, *, workspace: str
    ) -> TruncationView:
        """What ``limit`` costs this query: limited and unlimited top-k from one candidate read."""
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        return self._call(self._truncation(query, k, limit, workspace))

    async def _truncation(self, query: str, k: int, limit: int, workspace: str) -> TruncationView:
        view = _query_view(query, k, limit, workspace)
        terms = view["terms"]
        full = await self._store.lexical_candidates(
            terms, workspace_tenant_id(workspace), _UNLIMITED
        )
        report = analyse_truncation(terms, full, k, limit)
        rows = {row.chunk_id: row for row in report.candidates}
        unlimited = [
            UnlimitedEntry(
                rank=rank,
                chunk=r.chunk,
                score=r.score,
                candidate_position=rows[r.chunk.id].position + 1,
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
                    candidate_position=row.position + 1,
                    matched_terms=row.matched_terms,
                    unlimited_rank=unlimited_rank,
                    movement=unlimited_rank - rank,
                )
            )
        return TruncationView(
            **view,
            empty_reason=_empty_reason(terms, report.matching, len(limited)),
            report=report,
            unlimited=unlimited,
            limited=limited,
            limit_max=max(report.matching, limit, 1),
        )

    def why_not(
        self, query: str, passage: str, k: int = 10, limit: int = 1000, *, workspace: str
    ) -> WhyNot:
        """Where one passage stands for ``query``: by chunk id, or a source id's first passage.

        Raises ``KeyError`` when the workspace has neither a passage nor a source of that id.
        """
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        return self._call(self._why_not(query, passage.strip(), k, limit, workspace))

    async def _why_not(
        self, query: str, passage: str, k: int, limit: int, workspace: str
    ) -> WhyNot:
        tenant = workspace_tenant_id(workspace)
        chunk = await self._store.get(passage, tenant) if passage else None
        if chunk is None and passage:
            chunks = await self._store.get_by_source(passage, tenant)
            chunk = chunks[0] if chunks else None
        if chunk is None:
            raise KeyError(f"no passage or source {passage!r} in workspace {workspace!r}")
        terms = tokenize(query)
        full = await self._store.lexical_candidates(terms, tenant, _UNLIMITED)
        return why_not(terms, full, chunk.id, k, limit)

    def passage(self, chunk_id: str, *, workspace: str) -> StoredChunk | None:
        """One passage by id (None if the workspace has none of that id)."""
        return self._call(self._store.get(chunk_id, workspace_tenant_id(workspace)))

    @staticmethod
    def sample_judgments() -> tuple[bytes, bytes]:
        """The sample's queries (BEIR jsonl) and qrels (BEIR TSV), as uploaded files would be."""
        return SAMPLE_QUERIES.read_bytes(), SAMPLE_QRELS.read_bytes()

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

        Raises ``JudgmentError`` (its message names the file and line) for unreadable judgments.
        Each query's candidates are read once, unlimited, and sliced per limit: the store's
        truncation order is contract, so a slice is exactly a limited read.
        """
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        if not limits:
            raise ValueError("at least one limit is needed")
        if any(limit < 0 for limit in limits):
            raise ValueError(f"every limit must be >= 0, got {list(limits)}")
        try:
            queries = parse_queries(_decoded(queries_data, "queries"))
        except JudgmentError as exc:
            raise JudgmentError(f"queries file: {exc}") from None
        try:
            qrels = parse_qrels(_decoded(qrels_data, "qrels"))
        except JudgmentError as exc:
            raise JudgmentError(f"qrels file: {exc}") from None
        judged = {query_id: text for query_id, text in queries.items() if query_id in qrels}
        if not judged:
            raise JudgmentError(
                "no query of the queries file has a judgment in the qrels file "
                "(the query ids differ)"
            )
        return self._call_with_progress(
            lambda progress: self._evaluate(judged, qrels, k, list(limits), workspace, progress),
            on_progress,
        )

    async def _evaluate(
        self,
        queries: dict[str, str],
        qrels: dict[str, dict[str, int]],
        k: int,
        limits: list[int],
        workspace: str,
        report: Callable[[int, int, str], None],
    ) -> list[EvaluationRun]:
        tenant = workspace_tenant_id(workspace)
        ranked: list[dict[str, list[str]]] = [{} for _ in limits]
        for done, (query_id, text) in enumerate(queries.items(), start=1):
            terms = tokenize(text)
            full = await self._store.lexical_candidates(terms, tenant, _UNLIMITED)
            for documents, limit in zip(ranked, limits, strict=True):
                handed = full.model_copy(update={"candidates": full.candidates[:limit]})
                documents[query_id] = _top_documents(terms, handed, k)
            report(done, len(queries), query_id)
        return [
            evaluate_run(queries, qrels, documents, k, limit)
            for documents, limit in zip(ranked, limits, strict=True)
        ]

    # -- sources and entities -----------------------------------------------------------------

    def list_sources(self, *, workspace: str) -> list[SourceSummary]:
        return self._call(self._store.list_sources(workspace_tenant_id(workspace)))

    def delete_source(self, source_id: str, *, workspace: str) -> int:
        """Delete a source's passages; returns how many were deleted."""
        return self._call(self._store.delete_by_source(source_id, workspace_tenant_id(workspace)))

    def list_entities(self, *, workspace: str) -> list[EntitySummary]:
        return self._call(self._store.list_entities(workspace_tenant_id(workspace)))

    def entity_passages(self, entity_id: UUID, *, workspace: str) -> list[EntityPassage]:
        """The passages mentioning an entity, in the store's order, with its mentions."""
        return self._call(self._entity_passages(entity_id, workspace))

    async def _entity_passages(self, entity_id: UUID, workspace: str) -> list[EntityPassage]:
        tenant = workspace_tenant_id(workspace)
        chunks = await self._store.get_by_entity(entity_id, tenant)
        names = await self._entity_names(chunks, tenant)
        return [
            EntityPassage(
                chunk=chunk,
                entities=[names[e] for e in chunk.entity_ids if e in names],
                mentions=[m for m in _mentions_of(chunk) if m.entity_id == entity_id],
            )
            for chunk in chunks
        ]

    # -- corpus -------------------------------------------------------------------------------

    def corpus(self, *, workspace: str) -> CorpusView:
        """Counts and every passage length of the workspace."""
        return self._call(self._corpus(workspace))

    async def _corpus(self, workspace: str) -> CorpusView:
        tenant = workspace_tenant_id(workspace)
        summary = await self._store.corpus_summary(tenant)
        lengths = await self._store.doc_lengths(tenant)
        return CorpusView(summary=summary, doc_lengths=lengths)

    def terms_with_prefix(
        self, prefix: str, *, workspace: str, limit: int = TERM_BROWSER_LIMIT
    ) -> list[TermInfo]:
        """Terms starting with ``prefix`` (normalised like the tokenizer), with df and idf."""
        return self._call(self._terms_with_prefix(prefix, workspace, limit))

    async def _terms_with_prefix(self, prefix: str, workspace: str, limit: int) -> list[TermInfo]:
        tenant = workspace_tenant_id(workspace)
        normalised = "".join(raw_terms(prefix))
        if not normalised:
            return []
        summary = await self._store.corpus_summary(tenant)
        found = await self._store.terms_with_prefix(normalised, tenant, limit)
        return [
            TermInfo(
                term=t.term,
                df=t.df,
                idf=inverse_document_frequency(
                    t.term,
                    CorpusStats(
                        n_docs=summary.passages,
                        avg_doc_length=summary.avg_doc_length,
                        doc_frequencies={t.term: t.df},
                    ),
                ),
            )
            for t in found
        ]

    def term_passages(
        self, term: str, *, workspace: str, limit: int = _UNLIMITED
    ) -> list[TermPassage]:
        """The passages containing ``term``, by tf descending, then source and position."""
        found = self._call(
            self._store.lexical_candidates([term], workspace_tenant_id(workspace), limit)
        )
        rows = [
            TermPassage(chunk=c.chunk, tf=c.term_frequencies.get(term, 0), doc_length=c.doc_length)
            for c in found.candidates
        ]
        rows.sort(key=lambda r: (-r.tf, r.chunk.source_id, r.chunk.chunk_index, r.chunk.id))
        return rows

    # -- ingestion ----------------------------------------------------------------------------

    def chunking(
        self, size: int | None = None, overlap: int | None = None, whole_documents: bool = False
    ) -> ChunkingOptions:
        """Chunking options, defaulting to the settings."""
        return ChunkingOptions(
            size=size if size is not None else self.settings.chunk_size,
            overlap=overlap if overlap is not None else self.settings.chunk_overlap,
            whole_documents=whole_documents,
        )

    def upload_files(
        self,
        files: Sequence[tuple[str, bytes]],
        *,
        workspace: str,
        chunking: ChunkingOptions | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> list[FileReport]:
        """Read, cut, extract and store each file; one report per file, errors in plain words.

        A bad file or document never stops the others; re-uploading a file replaces its
        passages (``core.indexing``: one ``replace_source`` per document).
        """
        uploads = [
            read_upload(name, data, max_bytes=self.settings.max_upload_bytes)
            for name, data in files
        ]
        report = self._call_with_progress(
            lambda progress: self._index_uploads(uploads, workspace, chunking, progress),
            on_progress,
        )
        return _file_reports([name for name, _ in files], report)

    def load_sample(
        self, *, workspace: str, on_progress: ProgressCallback | None = None
    ) -> FileReport:
        """Load the Cranfield sample: whole-document passages, source id = the doc's _id."""
        upload = read_upload(SAMPLE_CORPUS.name, SAMPLE_CORPUS.read_bytes())
        report = self._call_with_progress(
            lambda progress: self._index_uploads(
                [upload], workspace, ChunkingOptions(whole_documents=True), progress
            ),
            on_progress,
        )
        (summary,) = _file_reports([SAMPLE_CORPUS.name], report)
        return summary.model_copy(update={"file_name": SAMPLE_LABEL})

    async def _index_uploads(
        self,
        uploads: Sequence[UploadResult],
        workspace: str,
        chunking: ChunkingOptions | None,
        report: Callable[[int, int, str], None],
    ) -> IndexReport:
        tenant = workspace_tenant_id(workspace)
        await self._store.upsert_workspace(Workspace(tenant_id=tenant, name=workspace))
        return await index_uploads(
            uploads,
            self._store,
            tenant,
            chunking=chunking or self.chunking(),
            on_progress=lambda done, total, row: report(done, total, row.source_id or row.file),
        )


def _file_reports(names: Sequence[str], report: IndexReport) -> list[FileReport]:
    """One report per file name, in the order given, from the per-document rows."""
    rows: dict[str, list[DocumentRow]] = {}
    for row in report.rows:
        rows.setdefault(row.file, []).append(row)
    out: list[FileReport] = []
    for name in dict.fromkeys(names):
        mine = rows.get(name, [])
        indexed = [r for r in mine if r.status == "indexed"]
        rejected = [r.reason or "rejected" for r in mine if r.status == "rejected"]
        notes = [note for r in mine for note in r.notes]
        error = None
        if not indexed:
            error = "; ".join(dict.fromkeys(rejected)) or "nothing in the file — nothing stored"
        elif rejected:
            notes = [f"{len(rejected)} document(s) rejected: " + "; ".join(rejected[:5]), *notes]
        out.append(
            FileReport(
                file_name=name,
                documents=len(indexed),
                passages_written=sum(r.passages_written for r in indexed),
                entities_found=sum(r.entities_found for r in indexed),
                passages_replaced=sum(r.orphans_removed for r in indexed),
                error=error,
                notes=notes,
            )
        )
    return out
