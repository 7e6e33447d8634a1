"""What several screen families share: the query view, the empty-result rule, entity names.

One tokenisation of a query for every screen (Search and Truncation show the same
terms and the same reason for an empty list); defining it per screen was how the
two screens came to disagree before.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, TypeVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from core.analysis.evaluation import TooManyJudged, parse_qrels, parse_queries
from core.analysis.judgment_files import JudgmentError, QueryFormat, RefusedQuery, read_queries
from core.analysis.truncation import UNLIMITED as UNLIMITED
from core.domain.agreement import combined_grade
from core.domain.chunks import StoredChunk, workspace_tenant_id
from core.domain.entities import Entity, EntityCorrections
from core.domain.filters import PassageFilter
from core.domain.judging import Judgment, QuerySet
from core.domain.names import name_key
from core.domain.tokenize import (
    DEFAULT_PROFILE,
    STOPWORDS,
    Profile,
    dropped_characters,
    raw_terms,
    surface_terms,
)

# The query bounds, for every screen family (which import only the runner and this module).
from core.service.bounds import MAX_EVALUATE_QUERIES as MAX_EVALUATE_QUERIES
from core.service.bounds import MAX_PARITY_QUERIES as MAX_PARITY_QUERIES
from core.service.bounds import MAX_QUERY_TERMS as MAX_QUERY_TERMS
from core.service.bounds import bounded_candidates as bounded_candidates
from core.service.bounds import check_diagnosed as check_diagnosed
from core.service.bounds import check_evaluated as check_evaluated
from core.service.bounds import check_expanded as check_expanded
from core.service.bounds import check_grid as check_grid
from core.service.bounds import check_k as check_k
from core.service.bounds import check_k_limit as check_k_limit
from core.service.bounds import check_ledger as check_ledger
from core.service.bounds import check_limit as check_limit
from core.service.bounds import check_limits as check_limits
from core.service.bounds import check_query_terms as check_query_terms
from core.service.bounds import check_runs as check_runs
from core.service.bounds import checked_terms as checked_terms
from core.service.bounds import whole as whole
from core.stores.port import ChunkStore, EntitySummary, Workspace

#: The workspace every fresh store starts with.
DEFAULT_WORKSPACE = "default"
#: k and limit of a query before anyone chose them (Search, Truncation, Compare, Evaluate, links).
DEFAULT_K, DEFAULT_LIMIT = 10, 1000
#: The largest k and limit a screen offers or takes from a link.
K_MAX, LIMIT_MAX = 100, 10_000_000
#: The sample's queries (BEIR jsonl): Evaluate's file, and the query set the sample arrives as.
SAMPLE_QUERIES = Path(__file__).resolve().parents[2] / "data" / "cranfield" / "queries.jsonl"
#: The sample's judgments (BEIR qrels, Cranfield's grades 1-4).
SAMPLE_QRELS = SAMPLE_QUERIES.with_name("qrels.tsv")
#: The name of the set the sample collection's queries arrive as.
SAMPLE_QUERY_SET: Final = "Cranfield queries"
#: What a person is told about a workspace they may not open, or that does not exist.
NOT_FOUND_OR_NO_ACCESS: Final = "not found or no access"


class NoAccess(LookupError):
    """The workspace does not exist or the signed-in person may not open it (never says which).

    Raised by the signed-in view's store (``core.service.access``); here so every screen
    family can name it without depending on that module.
    """


#: Why a search returned nothing, in the words the page shows.
EmptyReason = Literal[
    "no letters or digits to search for",
    "no terms left after stopwords",
    "no passage contains any term",
    "the filter excludes every passage that contains a term",
    "every match cut by the limit",
]


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
    #: Characters of the query no term holds (punctuation, emoji), distinct, in query order.
    characters_dropped: list[str] = []
    #: The workspace's tokenizer profile, which made ``terms``.
    profile: Profile = DEFAULT_PROFILE
    #: Each distinct query word and the term it is indexed as ("models" → "model").
    surface_terms: list[tuple[str, str]] = []
    #: Why nothing is listed, when nothing is.
    empty_reason: EmptyReason | None = None


def query_view(
    query: str, k: int, limit: int, workspace: str, profile: Profile = DEFAULT_PROFILE
) -> dict[str, Any]:
    """The QueryView fields of one query: one tokenisation for every screen."""
    terms = checked_terms(query, profile)
    return {
        "workspace": workspace,
        "query": query,
        "k": k,
        "limit": limit,
        "terms": terms,
        "distinct_terms": sorted(set(terms)),
        "stopwords_dropped": [t for t in raw_terms(query) if t in STOPWORDS],
        "characters_dropped": dropped_characters(query),
        "profile": profile,
        "surface_terms": surface_terms(query, profile),
    }


async def workspace_profile(store: ChunkStore, workspace: str) -> Profile:
    """The tokenizer profile of ``workspace``: every query of it is tokenised so.

    A workspace not created yet has the default; its first write creates it so. One
    ``get_workspace``, not a listing of every workspace on every query.
    """
    known = await store.find_workspace(workspace)
    return DEFAULT_PROFILE if known is None else known.profile


async def workspace_entry(store: ChunkStore, workspace: str) -> tuple[UUID, Profile]:
    """``tenant_of`` and ``workspace_profile`` of ``workspace`` from one ``find_workspace``: an
    uncached search asked the store for the same workspace three times (issue 50)."""
    known = await store.find_workspace(workspace)
    if known is None:
        return workspace_tenant_id(workspace), DEFAULT_PROFILE
    return known.tenant_id, known.profile


def lookalike(name: str, tenant_id: UUID, known: Iterable[Workspace]) -> Workspace | None:
    """Another workspace whose name a person cannot tell from ``name`` (same ``name_key``).

    A look-alike of an existing name is taken, like the name itself: otherwise Bob creates a
    "Ѕecret" (Cyrillic Ѕ) beside Alice's "Secret" and invites her to his.
    """
    key = name_key(name)
    return next((w for w in known if w.tenant_id != tenant_id and name_key(w.name) == key), None)


def empty_reason(
    terms: Sequence[str], matching: int, shown: int, filtered_out: int = 0, query: str = ""
) -> EmptyReason | None:
    """Nothing silently disappears: the first reason a result list is empty. ``query`` tells
    a query of no words at all (emoji, punctuation) from one of stopwords only."""
    if not terms and not raw_terms(query):
        return "no letters or digits to search for"
    if not terms:
        return "no terms left after stopwords"
    if matching == 0 and filtered_out:
        return "the filter excludes every passage that contains a term"
    if matching == 0:
        return "no passage contains any term"
    if shown == 0:
        return "every match cut by the limit"
    return None


async def corrections_of(store: ChunkStore, tenant: UUID) -> EntityCorrections:
    """The workspace's corrections, applied (one read)."""
    return EntityCorrections(await store.entity_corrections(tenant))


async def corrected_summaries(
    store: ChunkStore, tenant: UUID, *, hidden: bool = False
) -> list[EntitySummary]:
    """The store's entity list as corrected: an entity with the names merged into it as one
    (its passages those mentioning any of them, counted once), its kind corrected; hidden
    ones only when ``hidden``. Ordered as the store's: passages, then name, then id."""
    listed = await store.list_entities(tenant)
    fixes = await corrections_of(store, tenant)
    if not fixes:
        return listed
    groups: dict[UUID, list[EntitySummary]] = {}
    for summary in listed:
        groups.setdefault(fixes.canonical(summary.entity.entity_id), []).append(summary)
    known = {s.entity.entity_id: s.entity for s in listed}
    missing = [target for target in groups if target not in known]
    if missing:  # merged into an entity no passage names now: its name from the store
        known.update({e.entity_id: e for e in await store.get_entities(missing, tenant)})
    corrected = []
    for target, members in groups.items():
        if fixes.hidden(target) and not hidden:
            continue
        entity = fixes.entity(target, known) or members[0].entity
        if len(members) == 1:
            passages = members[0].passages
        else:
            ids = [s.entity.entity_id for s in members]
            passages = len({c.id for e in ids for c in await store.get_by_entity(e, tenant)})
        corrected.append(EntitySummary(entity=entity, passages=passages))
    return sorted(corrected, key=lambda s: (-s.passages, s.entity.name, s.entity.entity_id))


async def entity_names(
    store: ChunkStore, chunks: Sequence[StoredChunk], tenant: UUID
) -> dict[UUID, Entity]:
    """The entities the given passages mention, by the id a passage holds, as the analyst
    corrected them (two reads): a merged id (or one whose kind was changed) gives the entity
    it stands for, a hidden entity is left out."""
    wanted = list(dict.fromkeys(e for c in chunks for e in c.entity_ids))
    if not wanted:
        return {}
    fixes = EntityCorrections(await store.entity_corrections(tenant))
    asked = list(dict.fromkeys([*wanted, *(m for e in wanted for m in fixes.members(e))]))
    known = {e.entity_id: e for e in await store.get_entities(asked, tenant)}
    named: dict[UUID, Entity] = {}
    for e in wanted:
        entity = fixes.entity(e, known) if e in known else None
        if entity is not None and not fixes.hidden(e):
            named[e] = entity
    return named


def chips(chunk: StoredChunk, names: dict[UUID, Entity]) -> list[Entity]:
    """The entities a passage mentions, each once (two merged names are one), in its order."""
    shown = (names[e] for e in chunk.entity_ids if e in names)
    return list({entity.entity_id: entity for entity in shown}.values())


async def filter_words(store: ChunkStore, within: PassageFilter | None, tenant: UUID) -> str:
    """``within`` in words, its entities by name (one read; "" without a filter)."""
    if within is None:
        return ""
    named = await store.get_entities(list(within.entities), tenant) if within.entities else []
    return within.describe({e.entity_id: e.name for e in named})


def read_query_set(
    tenant_id: UUID, name: str, data: bytes | str, fmt: QueryFormat, profile: Profile
) -> tuple[QuerySet, list[RefusedQuery]]:
    """A query set of the workspace ``tenant_id`` read from a file or pasted text, stamped now,
    and the lines left out for what their queries cost under the workspace's ``profile``.

    ``JudgmentError`` names the first unreadable line; ``ValueError`` for a name that cannot
    be one.
    """
    read = read_queries(data, fmt, profile)
    query_set = QuerySet(
        tenant_id=tenant_id,
        name=name,
        queries=tuple(read.queries),
        created_at=datetime.now(UTC),
    )
    return query_set, read.refused


def combine_judgments(
    judgments: Iterable[Judgment], *, by_document: bool = False
) -> dict[str, dict[str, int]]:
    """query text -> passage id (or source id) -> the one grade its raters' grades become.

    Several raters of a pair: ``combined_grade`` (their lower median). By document, a
    document's grade is its best passage's, as qrels judge documents.
    """
    grades: dict[tuple[str, str], list[int]] = {}
    sources: dict[tuple[str, str], str] = {}
    for j in judgments:
        grades.setdefault((j.query, j.chunk_id), []).append(j.grade)
        sources[(j.query, j.chunk_id)] = j.source_id
    combined: dict[str, dict[str, int]] = {}
    for (query, chunk_id), given in grades.items():
        grade = combined_grade(given)
        key = sources[(query, chunk_id)] if by_document else chunk_id
        per_query = combined.setdefault(query, {})
        per_query[key] = max(grade, per_query.get(key, grade))
    return combined


def decoded_file(data: bytes, what: str) -> str:
    """An uploaded judgments or queries file as text; ``JudgmentError`` naming it if not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise JudgmentError(f"the {what} file is not UTF-8 text") from None


def judged_files(
    queries_data: bytes, qrels_data: bytes
) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """The judged queries (id -> text) of a queries file and a qrels file, and their judgments,
    as Evaluate reads them: only the queries' judgments, no more queries than one run scores;
    ``JudgmentError`` naming the file and line, ``ValueError`` past the bound."""
    try:
        queries = parse_queries(decoded_file(queries_data, "queries"))
    except JudgmentError as exc:
        raise JudgmentError(f"queries file: {exc}") from None
    try:  # only the queries' judgments, and no more of them than one run scores
        qrels = parse_qrels(
            decoded_file(qrels_data, "qrels"), only=queries, most=MAX_EVALUATE_QUERIES
        )
    except JudgmentError as exc:
        raise JudgmentError(f"qrels file: {exc}") from None
    except TooManyJudged as exc:
        raise ValueError(
            f"{exc}; one Evaluate run scores at most {MAX_EVALUATE_QUERIES:,}: split the "
            "queries file"
        ) from None
    judged = {query_id: text for query_id, text in queries.items() if query_id in qrels}
    if not judged:
        raise JudgmentError(
            "no query of the queries file has a judgment in the qrels file (the query ids differ)"
        )
    return judged, qrels


K = TypeVar("K")
V = TypeVar("V")
#: Reads a run keeps under way ahead of the query it ranks (``read_ahead``): each holds a
#: pooled connection (8 a store) while under way.
READ_AHEAD: Final = 2
#: Most candidate cells (rows x distinct terms) a read may hold to be read ahead: 8 MiB of tf
#: each, so reads ahead never hold more than a few tens of MiB (an unlimited read, up to
#: ``MAX_CANDIDATE_CELLS``, is read when its query is reached).
READ_AHEAD_CELLS: Final = 2**20


async def read_ahead(
    read: Callable[[K], Awaitable[V]], keys: Iterable[K], depth: int = READ_AHEAD
) -> AsyncGenerator[tuple[K, V]]:
    """Each key with its read, in the keys' order, the next ``depth`` reads already started:
    on PostgreSQL an Evaluate's query waited for its read's round trips (about seven, ~40% of
    its time) while nothing else ran; now the server reads the next query while this one is
    ranked. What each read returns, and the order the caller sees them in, are as if read one
    at a time; a read's error is raised when its key is reached, and the reads still under way
    are cancelled when the caller stops. Rejected for now: one read of many queries (a new
    method of every store), which would save the round trips rather than overlap them."""
    pending: deque[tuple[K, asyncio.Task[V]]] = deque()
    try:
        for key in keys:
            pending.append((key, asyncio.ensure_future(read(key))))
            if len(pending) > depth:
                first, task = pending.popleft()
                yield first, await task
        while pending:
            first, task = pending.popleft()
            yield first, await task
    finally:
        for _, task in pending:
            task.cancel()
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: no "exception was never retrieved" at exit
