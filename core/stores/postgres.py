"""The PostgreSQL chunk store: passages plus posting blocks, on an asyncpg pool.

Why our own postings and not PostgreSQL's full-text search: BM25 needs tf, df, N and
avgdl exactly as the in-memory reference computes them, from the one shared tokenizer;
``tsvector`` has its own parser and stemming and ``ts_rank`` is not BM25, so rankings
would differ (and it measured slower, see docs/scaling.md).

Why blocks and not a row per posting: the term table (tenant, term, chunk, tf) made a
query aggregate every posting of its terms row by row (GROUP BY chunk over ~2M rows for
a Zipf query at 1M passages: ~1.5 s at best), and made a load insert ~80 index entries
per passage. Now every passage gets an ordinal (per tenant, never reused) and each batch
written becomes a segment: per (tenant, term, segment) one row holding the ordinals and
tf of that term as big-endian int32 arrays (Lucene-style). A query reads a few rows per
term and does counts, truncation order and tf columns with numpy, on the same rows and
by the same rule as the in-memory store, so the two hand identical columns to ranking.
Segments of one size tier are merged when ``MERGE_FACTOR`` accumulate. A deleted passage
is a tombstone by absence: its ordinals stay in the blocks until nothing reads them,
because readers map ordinals through an image of the live passages (``_Image``, read
again only when the tenant's generation moved). df and counters stay maintained tables,
written in the same transaction as every write. Only the likely shown passages' text
crosses the wire (``PREFETCH_ROWS``, in the read's snapshot); any other is looked up on
a side connection (``_SideReader``).
Writes stage passage rows with COPY and move them with INSERT ... SELECT inside the
transaction; blocks are COPYed straight into their table. ``replace_sources`` writes many
documents in one such transaction, which is how ``load`` reaches COPY speed.

Each tenant is tokenised with its workspace's profile (``workspaces.profile``).
A write stages its rows under the profile it read, then, inside its transaction,
takes the workspace row FOR SHARE and checks the profile is still that one (else
stages again); ``reindex`` takes the row FOR UPDATE and rewrites the posting
blocks, lengths, df and counters in one transaction, so writes wait for it and readers
see the old index (MVCC) until it commits. Building the new index in shadow
tables and renaming them would keep writes going during a re-index, at the cost
of a second schema per tenant; one transaction is simpler and exactly as atomic.

Reads of one query happen in one REPEATABLE READ read-only transaction, so the
statistics, the document frequencies, the blocks, the image and the prefetched
passages come from one snapshot.
Calls are retried on a lost connection (a server restart, a killed backend):
reads trivially, writes because they are one transaction, idempotent by key. Every call
is bounded (see ``_attempt``); after the retries a write fails with ``ConnectionLost``
saying in plain words that nothing of it was stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, Final, NamedTuple, TypeVar
from uuid import UUID

import asyncpg
import numpy as np
import numpy.typing as npt

from core.checkpoint import checkpoint
from core.domain.bm25 import CorpusStats
from core.domain.chunks import StoredChunk
from core.domain.entities import Entity
from core.domain.postings import EMPTY_POSTING, Posting, RowChunks, postings_candidates
from core.domain.ranking import LexicalCandidates, candidate_scores, top_rows
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.stores.port import (
    ConnectionLost,
    CorpusSummary,
    EntitySummary,
    ReindexProgress,
    SourceSummary,
    TermFrequency,
    Workspace,
    check_name,
    checked_for_write,
    checked_sources,
    distinct_terms,
    is_storable,
    member_email,
    passage_terms,
)

T = TypeVar("T")

#: A schema name we are willing to interpolate into DDL (it cannot be a parameter).
_IDENTIFIER: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: Advisory lock key that serialises schema creation across processes.
_SCHEMA_LOCK: Final = 0x6C6578706C61696E
#: Attempts after the first when the connection is lost or a write deadlocks.
DEFAULT_RETRIES: Final = 2
#: New passages in one write (and at least a tenth of the tenant) that trigger ANALYZE after it.
_BULK_PASSAGES: Final = 500
#: Seconds to open one connection (a server that accepts TCP but never answers).
CONNECT_TIMEOUT_S: Final = 10.0
#: Seconds to wait for a free pooled connection.
ACQUIRE_TIMEOUT_S: Final = 30.0
#: Seconds any one statement may run (asyncpg's command_timeout); a bulk batch's largest
#: statement takes a few seconds at 20,000 passages.
STATEMENT_TIMEOUT_S: Final = 300.0
#: Seconds one attempt of a store call may take in all, whatever it waits on.
CALL_TIMEOUT_S: Final = 600.0
#: First pause before a retry, doubled per attempt (the server may still be starting).
_RETRY_PAUSE_S: Final = 0.1

#: Errors after which the same call on a fresh connection can succeed.
_CONNECTION_LOST: Final[tuple[type[BaseException], ...]] = (
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,
    asyncpg.exceptions.CannotConnectNowError,
    ConnectionError,
    OSError,
)
#: Words of the driver's InterfaceError when its connection is unusable (not a caller's mistake).
_BROKEN_SIGNS: Final = ("another operation is in progress", "connection is closed")
#: Errors of a write that lost a race with another write; the transaction rolled back.
_WRITE_CONFLICT: Final[tuple[type[BaseException], ...]] = (
    asyncpg.exceptions.DeadlockDetectedError,
    asyncpg.exceptions.SerializationError,
)

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS passages (
    tenant_id uuid NOT NULL,
    id text COLLATE "C" NOT NULL,
    source_id text COLLATE "C" NOT NULL,
    chunk_index bigint NOT NULL CHECK (chunk_index >= 0),
    start_char bigint NOT NULL CHECK (start_char >= 0),
    end_char bigint NOT NULL CHECK (end_char >= start_char),
    text text NOT NULL,
    entity_ids uuid[] NOT NULL DEFAULT '{}',
    metadata jsonb NOT NULL DEFAULT '{}',
    doc_length integer NOT NULL CHECK (doc_length >= 0),
    ordinal bigint NOT NULL CHECK (ordinal >= 0),
    PRIMARY KEY (tenant_id, id)
);
ALTER TABLE passages ADD COLUMN IF NOT EXISTS ordinal bigint CHECK (ordinal >= 0);
CREATE INDEX IF NOT EXISTS passages_by_source
    ON passages (tenant_id, source_id, chunk_index, id);
CREATE INDEX IF NOT EXISTS passages_by_entity ON passages USING gin (entity_ids);
CREATE TABLE IF NOT EXISTS postings (
    tenant_id uuid NOT NULL,
    term text COLLATE "C" NOT NULL,
    segment bigint NOT NULL,
    ordinals bytea NOT NULL,
    tfs bytea NOT NULL,
    PRIMARY KEY (tenant_id, term, segment)
);
CREATE TABLE IF NOT EXISTS segments (
    tenant_id uuid NOT NULL,
    segment bigint NOT NULL,
    passages bigint NOT NULL CHECK (passages >= 0),
    PRIMARY KEY (tenant_id, segment)
);
CREATE TABLE IF NOT EXISTS tenant_counters (
    tenant_id uuid PRIMARY KEY,
    passages bigint NOT NULL CHECK (passages >= 0),
    tokens bigint NOT NULL CHECK (tokens >= 0)
);
ALTER TABLE tenant_counters
    ADD COLUMN IF NOT EXISTS next_ordinal bigint NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS generation bigint NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS term_df (
    tenant_id uuid NOT NULL,
    term text COLLATE "C" NOT NULL,
    df integer NOT NULL CHECK (df > 0),
    PRIMARY KEY (tenant_id, term)
) WITH (fillfactor = 60);
CREATE TABLE IF NOT EXISTS entities (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    name text COLLATE "C" NOT NULL,
    kind text NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE TABLE IF NOT EXISTS workspaces (
    tenant_id uuid PRIMARY KEY,
    name text COLLATE "C" NOT NULL
);
ALTER TABLE workspaces ADD COLUMN IF NOT EXISTS profile text NOT NULL DEFAULT 'plain';
-- Who may open a workspace (sign-in): added at connect, so a database from before keeps
-- working; its workspaces have no owner, as the single-user local tool made them.
ALTER TABLE workspaces ADD COLUMN IF NOT EXISTS owner text COLLATE "C";
CREATE TABLE IF NOT EXISTS workspace_members (
    tenant_id uuid NOT NULL REFERENCES workspaces (tenant_id) ON DELETE CASCADE,
    email text COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant_id, email)
);
"""

#: Databases created before posting blocks (2026-11 and 2026-12-01) kept a row per posting in
#: passage_terms (tenant_id, chunk_id, term, tf): 81.5M rows and a 3.9 GB key at a million
#: passages, and a query aggregated every posting of its terms row by row. An old database
#: is migrated once, at connect, under the schema lock: each tenant's passages get ordinals in
#: chunk-id order, each term's rows become one block (big-endian int32 ordinals and tf, built by
#: int4send in SQL), and passage_terms is dropped. A NOTICE says so; about a minute per 10M rows.
_MIGRATE: Final = """
DO $$
BEGIN
    IF to_regclass('passage_terms') IS NOT NULL THEN
        RAISE NOTICE 'lexplain: turning the term table into posting blocks (once)';
        UPDATE passages p SET ordinal = r.n
        FROM (SELECT tenant_id, id, row_number() OVER (PARTITION BY tenant_id ORDER BY id) - 1 AS n
              FROM passages) r
        WHERE p.tenant_id = r.tenant_id AND p.id = r.id;
        INSERT INTO tenant_counters (tenant_id, passages, tokens)
        SELECT tenant_id, count(*), sum(doc_length) FROM passages GROUP BY tenant_id
        ON CONFLICT (tenant_id) DO NOTHING;
        UPDATE tenant_counters c SET next_ordinal = r.n, generation = txid_current()
        FROM (SELECT tenant_id, count(*) AS n FROM passages GROUP BY tenant_id) r
        WHERE c.tenant_id = r.tenant_id;
        INSERT INTO postings (tenant_id, term, segment, ordinals, tfs)
        SELECT t.tenant_id, t.term, 0,
               string_agg(int4send(p.ordinal::integer), ''::bytea ORDER BY p.ordinal),
               string_agg(int4send(t.tf), ''::bytea ORDER BY p.ordinal)
        FROM passage_terms t JOIN passages p ON p.tenant_id = t.tenant_id AND p.id = t.chunk_id
        GROUP BY t.tenant_id, t.term;
        INSERT INTO segments (tenant_id, segment, passages)
        SELECT tenant_id, 0, count(*) FROM passages GROUP BY tenant_id;
        DROP TABLE passage_terms;
    END IF;
    IF NOT (SELECT attnotnull FROM pg_attribute
            WHERE attrelid = 'passages'::regclass AND attname = 'ordinal') THEN
        ALTER TABLE passages ALTER COLUMN ordinal SET NOT NULL;
    END IF;
    -- Room on each page, so a df changed by a write is updated in place (HOT, no new key
    -- entry): EXPLAIN of a 5,000-passage batch's upsert, 0.92 s at 100 -> 0.54 s at 60.
    IF NOT coalesce((SELECT reloptions FROM pg_class WHERE oid = 'term_df'::regclass)
                    @> ARRAY['fillfactor=60'], false) THEN
        ALTER TABLE term_df SET (fillfactor = 60);
    END IF;
    -- Blocks are read whole and do not compress (ordinals are dense): stored as they are.
    IF (SELECT attstorage FROM pg_attribute
        WHERE attrelid = 'postings'::regclass AND attname = 'ordinals') <> 'e' THEN
        ALTER TABLE postings ALTER COLUMN ordinals SET STORAGE EXTERNAL,
            ALTER COLUMN tfs SET STORAGE EXTERNAL;
    END IF;
END $$;
"""
#: Sorts of a bulk batch stay in memory instead of spilling to disk.
_WRITE_WORK_MEM: Final = "SET LOCAL work_mem = '256MB'"

_STAGE: Final = """
CREATE TEMP TABLE stage_passages (
    tenant_id uuid, id text COLLATE "C", source_id text, chunk_index bigint,
    start_char bigint, end_char bigint, text text, entity_ids uuid[], metadata text,
    doc_length integer, ordinal bigint
) ON COMMIT DROP;
"""
_STAGE_PASSAGE_COLUMNS: Final = (
    "tenant_id",
    "id",
    "source_id",
    "chunk_index",
    "start_char",
    "end_char",
    "text",
    "entity_ids",
    "metadata",
    "doc_length",
    "ordinal",
)
_INSERT_NEW: Final = """
INSERT INTO passages (tenant_id, id, source_id, chunk_index, start_char, end_char, text,
                      entity_ids, metadata, doc_length, ordinal)
SELECT tenant_id, id, source_id, chunk_index, start_char, end_char, text,
       entity_ids, metadata::jsonb, doc_length, ordinal
FROM stage_passages
ON CONFLICT (tenant_id, id) DO NOTHING
RETURNING tenant_id, ordinal
"""
#: Passages already stored keep their ordinal and terms (same key, same text); only where
#: they sit in their source, their entities and metadata can change.
_UPDATE_EXISTING: Final = """
UPDATE passages p
SET chunk_index = s.chunk_index, start_char = s.start_char, end_char = s.end_char,
    entity_ids = s.entity_ids, metadata = s.metadata::jsonb
FROM stage_passages s
WHERE p.tenant_id = s.tenant_id AND p.id = s.id AND p.ordinal <> s.ordinal
  AND (p.chunk_index, p.start_char, p.end_char, p.entity_ids, p.metadata)
      IS DISTINCT FROM (s.chunk_index, s.start_char, s.end_char, s.entity_ids, s.metadata::jsonb)
"""
#: The df of a batch's terms, one statement (terms distinct: ON CONFLICT touches a row once).
_ADD_DF: Final = """
INSERT INTO term_df (tenant_id, term, df)
SELECT $1, u.term, u.n FROM unnest($2::text[], $3::integer[]) AS u(term, n)
ON CONFLICT (tenant_id, term) DO UPDATE SET df = term_df.df + EXCLUDED.df
"""
#: Ordinals for a batch; the counters row stays locked until commit.
_RESERVE: Final = """
UPDATE tenant_counters SET next_ordinal = next_ordinal + $2 WHERE tenant_id = $1
RETURNING next_ordinal - $2 AS ordinal
"""
#: Two statements, not one upsert: the CHECKs would reject a negative delta's proposed row.
_ENSURE_COUNTERS: Final = """
INSERT INTO tenant_counters (tenant_id, passages, tokens) VALUES ($1, 0, 0)
ON CONFLICT (tenant_id) DO NOTHING
"""
#: Every change of the passage set or of a length gets a new generation (the writing
#: transaction's id: never reused, also not after a tenant is emptied and filled again), so
#: a reader's cached ordinal image (``_Image``) is known stale from its own snapshot.
_ADD_COUNTERS: Final = """
UPDATE tenant_counters SET passages = passages + $2, tokens = tokens + $3,
    generation = txid_current()
WHERE tenant_id = $1
RETURNING passages
"""
#: The batch's entities in one statement (ids are distinct: ON CONFLICT touches a row once).
_UPSERT_ENTITIES: Final = """
INSERT INTO entities (tenant_id, id, name, kind)
SELECT $1, u.id, u.name, u.kind FROM unnest($2::uuid[], $3::text[], $4::text[]) AS u(id, name, kind)
ON CONFLICT (tenant_id, id) DO UPDATE SET name = EXCLUDED.name, kind = EXCLUDED.kind
"""
_DOOMED: Final = """
SELECT id, text, doc_length FROM passages WHERE tenant_id = $1 AND id = ANY($2::text[])
"""
_DROP_DF: Final = """
DELETE FROM term_df d USING unnest($2::text[], $3::integer[]) AS g(term, n)
WHERE d.tenant_id = $1 AND d.term = g.term AND d.df <= g.n
"""
_LOWER_DF: Final = """
UPDATE term_df d SET df = d.df - g.n FROM unnest($2::text[], $3::integer[]) AS g(term, n)
WHERE d.tenant_id = $1 AND d.term = g.term
"""
_DELETE_PASSAGES: Final = """
DELETE FROM passages WHERE tenant_id = $1 AND id = ANY($2::text[]) RETURNING doc_length
"""
#: Adjacent segments merged as one, Lucene-style (log merge), when this many in a row are of
#: one size tier (tier = decimal digits of their passage count): a term has at most ~9 rows
#: per tier to read, and each posting is rewritten about once per tier over a workspace's life.
MERGE_FACTOR: Final = 10
#: More segments than this (a mix of tiers that never lines up) merges the smallest run anyway.
MAX_SEGMENTS: Final = 64
#: A segment is numbered by its first ordinal and holds a contiguous range of them, so blocks
#: read in segment order concatenate to ascending ordinals. The merged segment takes the first
#: one's number: the rows it replaces are deleted in the same statement (a key deleted by the
#: own transaction does not conflict).
_MERGE: Final = """
WITH gone AS (
    DELETE FROM postings WHERE tenant_id = $1 AND segment = ANY($2::bigint[])
    RETURNING term, segment, ordinals, tfs
)
INSERT INTO postings (tenant_id, term, segment, ordinals, tfs)
SELECT $1, term, $3, string_agg(ordinals, ''::bytea ORDER BY segment),
       string_agg(tfs, ''::bytea ORDER BY segment)
FROM gone GROUP BY term
"""
_CHUNK_COLUMNS: Final = (
    "p.id, p.tenant_id, p.source_id, p.chunk_index, p.start_char, p.end_char, p.text, "
    "p.entity_ids, p.metadata::text AS metadata"
)
#: The read of one query: its terms' posting blocks, a few rows per term (one per segment).
_BLOCKS: Final = """
SELECT term, ordinals, tfs FROM postings
WHERE tenant_id = $1 AND term = ANY($2::text[]) ORDER BY term, segment
"""
#: The tenant's live passages in chunk-id order (the key's order: no sort).
_IMAGE: Final = """
SELECT ordinal, id, doc_length FROM passages WHERE tenant_id = $1 ORDER BY id
"""
#: The image's sort of the tenant's ids stays in memory (set inside the read's transaction).
_READ_WORK_MEM: Final = "SET LOCAL work_mem = '256MB'"
#: The k shown, by id (the lookup's only read of passage text).
_SHOWN: Final = f"""
SELECT {_CHUNK_COLUMNS} FROM passages p WHERE p.tenant_id = $1 AND p.id = ANY($2::text[])
"""  # noqa: S608 - only the fixed column list is interpolated


def _chunk(row: asyncpg.Record) -> StoredChunk:
    """A stored row back to the model; it was validated on the way in, so skip re-hashing."""
    return StoredChunk.model_construct(
        tenant_id=row["tenant_id"],
        source_id=row["source_id"],
        text=row["text"],
        chunk_index=row["chunk_index"],
        start_char=row["start_char"],
        end_char=row["end_char"],
        entity_ids=list(row["entity_ids"]),
        metadata=json.loads(row["metadata"]),
        id=row["id"],
    )


def _retryable(exc: BaseException) -> bool:
    """A lost connection or a lost write race, also when it surfaces as the InterfaceError
    of a transaction block that can no longer roll back on the closed connection."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None or isinstance(seen, TimeoutError):  # an OSError, but not a lost socket
            return False
        if isinstance(seen, (*_CONNECTION_LOST, *_WRITE_CONFLICT)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class _Terminated(ConnectionError):
    """The connection closed under a running call (its termination listener fired)."""


def _closed(conn: asyncpg.Connection) -> bool:
    """Closed, or already taken back by the pool because it closed."""
    try:
        return bool(conn.is_closed())
    except asyncpg.InterfaceError:
        return True


def _broken(exc: BaseException) -> bool:
    """The driver's own state went wrong (a COPY cut short by the server's FATAL message
    leaves the protocol mid-operation before the socket's end is seen): the connection is
    unusable, exactly as if it were closed."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, asyncpg.exceptions.InternalClientError):
            return True
        if isinstance(seen, asyncpg.InterfaceError) and any(
            sign in str(seen) for sign in _BROKEN_SIGNS
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _write_conflict(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, _WRITE_CONFLICT):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _lost(writing: str | None, attempts: int) -> ConnectionLost:
    tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
    if writing is None:
        return ConnectionLost(f"the connection to the database was lost ({tries}); try again")
    return ConnectionLost(
        f"the connection was lost while writing {writing} ({tries}); nothing of it was "
        "stored; the previous version is kept"
    )


def _passages(count: int) -> str:
    return f"{count} passage{'s' if count != 1 else ''}"


def _timed_out(writing: str | None, seconds: float) -> ConnectionLost:
    what = "reading" if writing is None else f"writing {writing}"
    kept = "" if writing is None else "; nothing of it was stored; the previous version is kept"
    return ConnectionLost(
        f"the database did not answer in time while {what} (limit {seconds:g} s per call, "
        f"{STATEMENT_TIMEOUT_S:g} s per statement){kept}"
    )


def _source_lock_key(tenant_id: UUID, source_id: str) -> int:
    """A signed 64-bit advisory lock key for one (tenant, source)."""
    digest = hashlib.sha256(tenant_id.bytes + source_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _check_limit(limit: int) -> None:
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")


def _prefix_upper_bound(prefix: str) -> str | None:
    """The least string greater than every string starting with ``prefix`` (code point order)."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop()) + 1
        if last == 0xD800:
            last = 0xE000
        if last <= 0x10FFFF:
            return "".join(chars) + chr(last)
    return None


@dataclass(frozen=True)
class _Image:
    """A tenant's live passages as of one generation, indexed by ordinal.

    Blocks hold ordinals (assigned at insert, never reused), but the truncation order and
    the score tie-break are by chunk id; this image gives each ordinal its rank in chunk-id
    order (-1 for an ordinal whose passage is gone: the tombstone), its id and its length.
    It is read in the query's own snapshot whenever the tenant's generation moved (any
    insert, delete or re-index) and kept per store, like the in-memory store's columnar
    image: one read of (ordinal, id, length) per passage, in key order, after a write; none
    per query. The rejected alternative, fetching the ids of the matching passages per
    query, costs a row per candidate again (hundreds of thousands for an unlimited read).
    """

    generation: int
    #: Rank in chunk-id order per ordinal; -1 where no live passage has it.
    id_rank: npt.NDArray[np.int64]
    #: Chunk id per ordinal (None where dead).
    ids: npt.NDArray[np.object_]
    #: doc_length per ordinal (0 where dead).
    lengths: npt.NDArray[np.int64]

    @classmethod
    async def load(
        cls, conn: asyncpg.Connection, tenant_id: UUID, totals: asyncpg.Record
    ) -> _Image:
        # Sorting a million ids by key spills past the default work_mem (4 MB) to disk.
        await conn.execute(_READ_WORK_MEM)
        records = await conn.fetch(_IMAGE, tenant_id)
        n = len(records)
        size = int(totals["next_ordinal"])
        ordinals = np.fromiter((r[0] for r in records), np.int64, n)
        id_rank = np.full(size, -1, dtype=np.int64)
        id_rank[ordinals] = np.arange(n, dtype=np.int64)
        ids = np.empty(size, dtype=object)
        ids[ordinals] = [r[1] for r in records]
        lengths = np.zeros(size, dtype=np.int64)
        lengths[ordinals] = np.fromiter((r[2] for r in records), np.int64, n)
        return cls(int(totals["generation"]), id_rank, ids, lengths)


def _postings(wanted: list[str], blocks: Sequence[asyncpg.Record], image: _Image) -> list[Posting]:
    """Each wanted term's blocks decoded and concatenated (ascending ordinals), live only."""
    parts: dict[str, tuple[list[bytes], list[bytes]]] = {}
    for block in blocks:
        ordinals, tfs = parts.setdefault(block["term"], ([], []))
        ordinals.append(block["ordinals"])
        tfs.append(block["tfs"])
    postings: list[Posting] = []
    for term in wanted:
        if term not in parts:
            postings.append(EMPTY_POSTING)
            continue
        ordinals, tfs = parts[term]
        rows = np.frombuffer(b"".join(ordinals), dtype=">i4").astype(np.int32)
        values = np.frombuffer(b"".join(tfs), dtype=">i4").astype(np.int32)
        live = image.id_rank[rows] >= 0
        if not live.all():
            rows, values = rows[live], values[live]
        postings.append((rows, values))
    return postings


#: Candidates whose text the read fetches in its own snapshot: all of them up to this many,
#: else the best this many by the workspace's BM25 (what a search or a top-k list shows).
PREFETCH_ROWS: Final = 100


def _likely_shown(terms: Sequence[str], columns: LexicalCandidates) -> npt.NDArray[np.int64]:
    """Rows whose passages a caller will most likely look up."""
    if len(columns) <= PREFETCH_ROWS:
        return np.arange(len(columns), dtype=np.int64)
    return top_rows(candidate_scores(terms, columns), columns.id_order, PREFETCH_ROWS)


class _Texts:
    """Passages of one read: those prefetched in its snapshot, the rest from the side reader."""

    def __init__(self, side: _SideReader, tenant_id: UUID) -> None:
        self._side = side
        self._tenant_id = tenant_id
        self._known: dict[str, asyncpg.Record] = {}

    async def prefetch(self, conn: asyncpg.Connection, ids: list[str]) -> None:
        self._known = {r["id"]: r for r in await conn.fetch(_SHOWN, self._tenant_id, ids)}

    def rows(self, ids: npt.NDArray[np.object_]) -> RowChunks:
        """Ordinals -> passages, for ``postings_candidates``."""
        return lambda ordinals: self.chunks([str(i) for i in ids[ordinals]])

    def chunks(self, ids: list[str]) -> list[StoredChunk]:
        missing = [i for i in ids if i not in self._known]
        fetched = {c.id: c for c in self._side.fetch(self._tenant_id, missing)}
        return [fetched[i] if i in fetched else _chunk(self._known[i]) for i in ids]


class _SideReader:
    """Passage text for ``LexicalCandidates.lookup``, which is synchronous.

    Ranking calls the lookup for the k it shows, after the read returned, often on the very
    event loop the pool lives on (the service runs ranking inside its coroutine), where no
    pooled call can be awaited. So the lookup reads on its own connection, on its own thread
    and loop, and waits for that. It serves only rows the read did not prefetch (an
    analysis's scatter, a what-if ranker's other top rows). The rejected alternative,
    fetching the text of every candidate up front, costs a row of text per candidate (at
    limit 1000 most of the read; at no limit, every matching passage). A passage is looked
    up by id, so its text (part of the id) is the snapshot's; one deleted since the read is
    reported as such (LookupError: search again).
    """

    def __init__(self, dsn: str | None, settings: dict[str, str]) -> None:
        self._dsn = dsn
        self._settings = dict(settings)
        self._guard = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._conn: asyncpg.Connection | None = None
        self._busy: asyncio.Lock | None = None

    def fetch(self, tenant_id: UUID, ids: list[str]) -> list[StoredChunk]:
        if not ids:
            return []
        if self._dsn is None:
            raise RuntimeError("this store was opened without a DSN: it cannot look passages up")
        with self._guard:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="lexplain-passage-lookup", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            loop = self._loop
        future = asyncio.run_coroutine_threadsafe(self._fetch(tenant_id, ids), loop)
        try:
            rows = future.result(timeout=CALL_TIMEOUT_S)
        except TimeoutError as exc:
            future.cancel()
            raise _timed_out(None, CALL_TIMEOUT_S) from exc
        by_id = {row["id"]: row for row in rows}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise LookupError(
                f"passage {missing[0]!r} was deleted after this search read it; search again"
            )
        return [_chunk(by_id[i]) for i in ids]

    async def _fetch(self, tenant_id: UUID, ids: list[str]) -> list[asyncpg.Record]:
        if self._busy is None:
            self._busy = asyncio.Lock()
        async with self._busy:
            for attempt in range(DEFAULT_RETRIES + 1):
                try:
                    if self._conn is None or _closed(self._conn):
                        self._conn = await asyncpg.connect(
                            self._dsn,
                            server_settings={"application_name": "lexplain", **self._settings},
                            timeout=CONNECT_TIMEOUT_S,
                            command_timeout=STATEMENT_TIMEOUT_S,
                        )
                    return list(await self._conn.fetch(_SHOWN, tenant_id, ids))
                except Exception as exc:
                    if not (_retryable(exc) or _broken(exc)) or attempt == DEFAULT_RETRIES:
                        if _retryable(exc) or _broken(exc):
                            raise _lost(None, attempt + 1) from exc
                        raise
                    if self._conn is not None:
                        with contextlib.suppress(Exception):
                            self._conn.terminate()
                    self._conn = None
                    await asyncio.sleep(_RETRY_PAUSE_S * 2**attempt)
            raise AssertionError("unreachable")

    def close(self) -> None:
        with self._guard:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return

        async def shut() -> None:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._conn.close(), CONNECT_TIMEOUT_S)
                self._conn = None

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shut(), loop).result(timeout=2 * CONNECT_TIMEOUT_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=CONNECT_TIMEOUT_S)
        loop.close()


class PostgresChunkStore:
    """``ChunkStore`` on PostgreSQL; create with ``await PostgresChunkStore.connect(dsn)``."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        retries: int = DEFAULT_RETRIES,
        call_timeout: float = CALL_TIMEOUT_S,
        dsn: str | None = None,
        settings: dict[str, str] | None = None,
    ) -> None:
        self._pool = pool
        self._retries = retries
        self._call_timeout = call_timeout
        #: tenant -> its live passages by ordinal, as of one generation (see ``_Image``).
        self._images: dict[UUID, _Image] = {}
        self._side = _SideReader(dsn, settings or {})

    @classmethod
    async def connect(
        cls,
        dsn: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 8,
        retries: int = DEFAULT_RETRIES,
        call_timeout: float = CALL_TIMEOUT_S,
    ) -> PostgresChunkStore:
        """Open a pool (owned by the store; ``close()`` closes it) and create the schema."""
        settings = {"application_name": "lexplain"}
        if schema is not None:
            if _IDENTIFIER.fullmatch(schema) is None:
                raise ValueError(f"schema must match {_IDENTIFIER.pattern}, got {schema!r}")
            settings["search_path"] = schema
        pool = await asyncpg.create_pool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            server_settings=settings,
            timeout=CONNECT_TIMEOUT_S,
            command_timeout=STATEMENT_TIMEOUT_S,
        )
        store = cls(pool, retries=retries, call_timeout=call_timeout, dsn=dsn, settings=settings)
        try:
            await store._run(lambda conn: _create_schema(conn, schema))
        except BaseException:
            await pool.close()
            raise
        return store

    async def close(self) -> None:
        try:
            self._side.close()
        finally:
            await self._pool.close()

    async def _run(
        self,
        operation: Callable[[asyncpg.Connection], Awaitable[T]],
        *,
        writing: str | None = None,
    ) -> T:
        """Run ``operation`` on a pooled connection, retrying on a lost connection or deadlock.

        ``writing`` names what a write stores ("source 'x'"): when the connection is lost on
        every attempt, the error says so in plain words instead of the driver's.
        """
        attempt = 0
        while True:
            try:
                return await self._attempt(operation)
            except TimeoutError as exc:
                raise _timed_out(writing, self._call_timeout) from exc
            except Exception as exc:
                if not _retryable(exc):
                    raise
                if attempt >= self._retries:
                    if _write_conflict(exc):
                        raise
                    raise _lost(writing, attempt + 1) from exc
                await asyncio.sleep(_RETRY_PAUSE_S * 2**attempt)
                attempt += 1

    async def _attempt(self, operation: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """One try, bounded: a deadline for the whole call, and an end as soon as the
        connection closes.

        asyncpg's ``copy_records_to_table`` waits for the socket to drain with no timeout of
        its own; when the server side dies while the socket is full, that wait never ends
        (measured: 3 of 4 runs of 20 killed writes hung). The connection's termination
        listener fires on the lost socket, so the call is cancelled there and then, and the
        retry (or the plain-words error) follows within the retry pauses.
        """
        task = asyncio.current_task()
        state = {"inside": True, "lost": False}

        def on_terminated(_: object) -> None:
            if state["inside"] and not state["lost"] and task is not None:
                state["lost"] = True
                task.cancel()

        async with asyncio.timeout(self._call_timeout):
            async with self._pool.acquire(timeout=ACQUIRE_TIMEOUT_S) as conn:
                conn.add_termination_listener(on_terminated)
                try:
                    return await operation(conn)
                except (Exception, asyncio.CancelledError) as exc:
                    if not state["lost"] and not _closed(conn) and not _broken(exc):
                        raise
                    # Never back into the pool half-way through a protocol step (the pool may
                    # have taken the dead connection back already).
                    with contextlib.suppress(asyncpg.InterfaceError):
                        conn.terminate()
                    if state["lost"] and task is not None:
                        task.uncancel()
                    # Whatever the driver raised while unwinding (the InterfaceError of a
                    # transaction that can no longer roll back, an InternalClientError of a
                    # COPY cut short), a closed connection is the cause.
                    raise _Terminated("the connection closed during the call") from exc
                finally:
                    state["inside"] = False
                    with contextlib.suppress(asyncpg.InterfaceError):
                        conn.remove_termination_listener(on_terminated)

    # -- writes ---------------------------------------------------------------

    async def upsert_many(self, chunks: Sequence[StoredChunk]) -> int:
        batch = checked_for_write(chunks)
        if not batch:
            return 0
        tenants = sorted({chunk.tenant_id for chunk in batch})
        profiles = await self._profiles(tenants)
        staging = _stage(batch, profiles)

        async def write(conn: asyncpg.Connection) -> bool:
            nonlocal profiles, staging
            async with conn.transaction():
                now = await _locked_profiles(conn, tenants)
                if now != profiles:  # a re-index committed since we staged: stage again
                    profiles, staging = now, _stage(batch, now)
                return await _write_new(conn, staging, {})

        if await self._run(write, writing=_passages(len(batch))):
            await self._refresh_statistics()
        return len(batch)

    async def _profiles(self, tenants: Sequence[UUID]) -> dict[UUID, Profile]:
        async def read(conn: asyncpg.Connection) -> dict[UUID, Profile]:
            return await _read_profiles(conn, tenants, lock=False)

        return await self._run(read)

    async def replace_source(
        self, source_id: str, tenant_id: UUID, chunks: Sequence[StoredChunk]
    ) -> int:
        removed = await self._replace(tenant_id, [(source_id, chunks)], (), f"source {source_id!r}")
        return removed[0]

    async def replace_sources(
        self,
        tenant_id: UUID,
        sources: Sequence[tuple[str, Sequence[StoredChunk]]],
        entities: Sequence[Entity] = (),
    ) -> list[int]:
        what = f"{len(sources)} source{'s' if len(sources) != 1 else ''}"
        return await self._replace(tenant_id, sources, entities, what)

    async def _replace(
        self,
        tenant_id: UUID,
        sources: Sequence[tuple[str, Sequence[StoredChunk]]],
        entities: Sequence[Entity],
        what: str,
    ) -> list[int]:
        """One transaction: lock the sources, upsert the entities, delete the orphans, then
        stage every passage and term row with COPY and move them in set-based statements."""
        checked = checked_sources(tenant_id, sources)
        for entity in entities:
            check_name(entity.name, "entity")
        latest = list({entity.entity_id: entity for entity in entities}.values())
        batch = [chunk for _, chunks in checked for chunk in chunks]
        keep = {chunk.id for chunk in batch}
        source_ids = [source_id for source_id, _ in checked]
        locks = sorted({_source_lock_key(tenant_id, source_id) for source_id in source_ids})
        profiles = await self._profiles([tenant_id])
        # Not in a thread (asyncio.to_thread): measured slower, 20k passages 5.5 s -> 7.3 s,
        # the loop and the tokenising thread passing the GIL back and forth.
        staging = _stage(batch, profiles)

        async def write(conn: asyncpg.Connection) -> tuple[list[int], bool]:
            nonlocal profiles, staging
            async with conn.transaction():
                now = await _locked_profiles(conn, [tenant_id])
                if now != profiles:  # a re-index committed since we staged: stage again
                    profiles, staging = now, _stage(batch, now)
                # Sorted keys: two batches sharing sources cannot deadlock on their locks.
                await conn.execute(
                    "SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k ORDER BY k",
                    locks,
                )
                if latest:
                    await conn.execute(
                        _UPSERT_ENTITIES,
                        tenant_id,
                        [e.entity_id for e in latest],
                        [e.name for e in latest],
                        [e.kind for e in latest],
                    )
                existing = await conn.fetch(
                    "SELECT id, source_id FROM passages WHERE tenant_id = $1 "
                    "AND source_id = ANY($2::text[])",
                    tenant_id,
                    source_ids,
                )
                orphans = sorted(r["id"] for r in existing if r["id"] not in keep)
                per_source = dict.fromkeys(source_ids, 0)
                for r in existing:
                    if r["id"] not in keep:
                        per_source[r["source_id"]] += 1
                profile = profiles.get(tenant_id, DEFAULT_PROFILE)
                removed_tokens = await _delete_ids(conn, tenant_id, orphans, profile)
                delta = {tenant_id: (-len(orphans), -removed_tokens)}
                return [per_source[s] for s in source_ids], await _write_new(conn, staging, delta)

        removed, bulk = await self._run(write, writing=what)
        if bulk:
            await self._refresh_statistics()
        return removed

    async def _refresh_statistics(self) -> None:
        """ANALYZE after a bulk load, so the next query is not planned for the empty table.

        Autovacuum would get there within a minute or so; until then the candidate query
        measured 2-5x slower on a freshly loaded Cranfield. Sampling costs ~0.1-0.3 s. It is
        an optimisation after a committed write, so its failure is not the write's failure.
        """

        async def analyze(conn: asyncpg.Connection) -> None:
            await conn.execute("ANALYZE passages")
            await conn.execute("ANALYZE postings")

        with contextlib.suppress(asyncpg.PostgresError, ConnectionLost, *_CONNECTION_LOST):
            await self._run(analyze)

    async def delete_by_source(self, source_id: str, tenant_id: UUID) -> int:
        if not is_storable(source_id):
            return 0

        async def write(conn: asyncpg.Connection) -> int:
            async with conn.transaction():
                await conn.execute(
                    "SELECT pg_advisory_xact_lock($1)", _source_lock_key(tenant_id, source_id)
                )
                rows = await conn.fetch(
                    "SELECT id FROM passages WHERE tenant_id = $1 AND source_id = $2",
                    tenant_id,
                    source_id,
                )
                ids = sorted(r["id"] for r in rows)
                profiles = await _locked_profiles(conn, [tenant_id])
                profile = profiles.get(tenant_id, DEFAULT_PROFILE)
                tokens = await _delete_ids(conn, tenant_id, ids, profile)
                if ids:
                    await _add_counters(conn, tenant_id, -len(ids), -tokens)
                return len(ids)

        return await self._run(write, writing=f"the deletion of source {source_id!r}")

    async def delete_by_tenant(self, tenant_id: UUID) -> int:
        async def write(conn: asyncpg.Connection) -> int:
            async with conn.transaction():
                return await _delete_tenant_rows(conn, tenant_id)

        return await self._run(write, writing="the deletion of the workspace's passages")

    async def delete_workspace(self, tenant_id: UUID) -> int:
        async def write(conn: asyncpg.Connection) -> int:
            async with conn.transaction():
                deleted = await _delete_tenant_rows(conn, tenant_id)
                await conn.execute("DELETE FROM workspaces WHERE tenant_id = $1", tenant_id)
                return deleted

        return await self._run(write, writing="the deletion of the workspace")

    async def upsert_entities(self, entities: Sequence[Entity], tenant_id: UUID) -> int:
        for entity in entities:
            check_name(entity.name, "entity")
        latest = {entity.entity_id: entity for entity in entities}
        if not latest:
            return 0

        async def write(conn: asyncpg.Connection) -> None:
            async with conn.transaction():
                await conn.executemany(
                    "INSERT INTO entities (tenant_id, id, name, kind) VALUES ($1, $2, $3, $4) "
                    "ON CONFLICT (tenant_id, id) DO UPDATE "
                    "SET name = EXCLUDED.name, kind = EXCLUDED.kind",
                    [(tenant_id, e.entity_id, e.name, e.kind) for e in latest.values()],
                )

        await self._run(write, writing=f"{len(latest)} entities")
        return len(latest)

    async def upsert_workspace(self, workspace: Workspace) -> None:
        check_name(workspace.name, "workspace")

        async def write(conn: asyncpg.Connection) -> bool:
            # Created as plain: passages written before the workspace existed were tokenised
            # so; a new workspace of another profile is then re-indexed to it, below.
            async with conn.transaction():
                inserted = await conn.fetchval(
                    "INSERT INTO workspaces (tenant_id, name, profile, owner) "
                    "VALUES ($1, $2, $3, $4) "
                    "ON CONFLICT (tenant_id) DO UPDATE SET name = EXCLUDED.name "
                    "RETURNING (xmax = 0)",
                    workspace.tenant_id,
                    workspace.name,
                    DEFAULT_PROFILE.value,
                    workspace.owner,
                )
                if inserted and workspace.members:
                    await conn.executemany(
                        "INSERT INTO workspace_members (tenant_id, email) VALUES ($1, $2)",
                        [(workspace.tenant_id, m) for m in workspace.members],
                    )
            return bool(inserted)

        if (
            await self._run(write, writing=f"workspace {workspace.name!r}")
            and workspace.profile is not DEFAULT_PROFILE
        ):
            await self.reindex(workspace.tenant_id, workspace.profile)

    async def reindex(
        self, tenant_id: UUID, profile: Profile, on_progress: ReindexProgress | None = None
    ) -> int:
        profile = Profile(profile)

        async def write(conn: asyncpg.Connection) -> int:
            async with conn.transaction():
                found = await conn.fetchval(
                    "SELECT 1 FROM workspaces WHERE tenant_id = $1 FOR UPDATE", tenant_id
                )
                if found is None:
                    raise KeyError(f"no workspace with tenant id {tenant_id}")
                count = await _reindex(conn, tenant_id, profile, on_progress)
                await conn.execute(
                    "UPDATE workspaces SET profile = $2 WHERE tenant_id = $1",
                    tenant_id,
                    profile.value,
                )
                return count

        count = await self._run(write, writing="the re-indexed workspace")
        await self._refresh_statistics()
        return count

    # -- reads ----------------------------------------------------------------

    async def get(self, chunk_id: str, tenant_id: UUID) -> StoredChunk | None:
        if not is_storable(chunk_id):
            return None

        async def read(conn: asyncpg.Connection) -> StoredChunk | None:
            row = await conn.fetchrow(
                f"SELECT {_CHUNK_COLUMNS} FROM passages p WHERE p.tenant_id = $1 AND p.id = $2",  # noqa: S608
                tenant_id,
                chunk_id,
            )
            return None if row is None else _chunk(row)

        return await self._run(read)

    async def get_by_source(self, source_id: str, tenant_id: UUID) -> list[StoredChunk]:
        if not is_storable(source_id):
            return []
        return await self._chunks(
            f"SELECT {_CHUNK_COLUMNS} FROM passages p "  # noqa: S608
            "WHERE p.tenant_id = $1 AND p.source_id = $2 ORDER BY p.chunk_index, p.id",
            tenant_id,
            source_id,
        )

    async def get_by_entity(self, entity_id: UUID, tenant_id: UUID) -> list[StoredChunk]:
        return await self._chunks(
            f"SELECT {_CHUNK_COLUMNS} FROM passages p "  # noqa: S608
            "WHERE p.tenant_id = $1 AND p.entity_ids @> ARRAY[$2::uuid] "
            "ORDER BY p.source_id, p.chunk_index, p.id",
            tenant_id,
            entity_id,
        )

    async def _chunks(self, query: str, *args: Any) -> list[StoredChunk]:
        async def read(conn: asyncpg.Connection) -> list[StoredChunk]:
            return [_chunk(row) for row in await conn.fetch(query, *args)]

        return await self._run(read)

    async def lexical_candidates(
        self, terms: Sequence[str], tenant_id: UUID, limit: int
    ) -> LexicalCandidates:
        _check_limit(limit)
        wanted = distinct_terms(terms)
        if not wanted:
            return LexicalCandidates(stats=CorpusStats(n_docs=0, avg_doc_length=0.0))
        # A term no store can hold (NUL, lone surrogate) is in no passage: df 0, no query.
        askable = [term for term in wanted if is_storable(term)]

        async def read(conn: asyncpg.Connection) -> LexicalCandidates:
            async with conn.transaction(isolation="repeatable_read", readonly=True):
                totals = await conn.fetchrow(
                    "SELECT passages, tokens, next_ordinal, generation FROM tenant_counters "
                    "WHERE tenant_id = $1",
                    tenant_id,
                )
                found = await conn.fetch(
                    "SELECT term, df FROM term_df WHERE tenant_id = $1 AND term = ANY($2::text[])",
                    tenant_id,
                    askable,
                )
                present = [str(r["term"]) for r in found]
                blocks = await conn.fetch(_BLOCKS, tenant_id, present) if present else []
                image = None
                if totals is not None and present:
                    image = self._images.get(tenant_id)
                    if image is None or image.generation != totals["generation"]:
                        image = await _Image.load(conn, tenant_id, totals)
                        self._images[tenant_id] = image
                n_docs = 0 if totals is None else int(totals["passages"])
                tokens = 0 if totals is None else int(totals["tokens"])
                frequencies = dict.fromkeys(wanted, 0)
                frequencies.update((str(r["term"]), int(r["df"])) for r in found)
                stats = CorpusStats(
                    n_docs=n_docs,
                    avg_doc_length=tokens / n_docs if n_docs else 0.0,
                    doc_frequencies=frequencies,
                )
                if image is None:
                    return LexicalCandidates(stats=stats, terms=tuple(wanted))
                texts = _Texts(self._side, tenant_id)
                columns = postings_candidates(
                    stats,
                    wanted,
                    _postings(wanted, blocks, image),
                    image.lengths,
                    image.ids,
                    limit,
                    texts.rows(image.ids),
                    image.id_rank,
                )
                shown = _likely_shown(terms, columns)
                if len(shown):
                    await texts.prefetch(conn, [str(i) for i in columns.ids[shown]])
                return columns

        return await self._run(read)

    async def list_sources(self, tenant_id: UUID) -> list[SourceSummary]:
        async def read(conn: asyncpg.Connection) -> list[SourceSummary]:
            rows = await conn.fetch(
                "SELECT source_id, count(*) AS n FROM passages WHERE tenant_id = $1 "
                "GROUP BY source_id ORDER BY source_id",
                tenant_id,
            )
            return [SourceSummary(source_id=r["source_id"], passages=r["n"]) for r in rows]

        return await self._run(read)

    async def list_entities(self, tenant_id: UUID) -> list[EntitySummary]:
        async def read(conn: asyncpg.Connection) -> list[EntitySummary]:
            rows = await conn.fetch(
                """
                SELECT e.id, e.name, e.kind, m.n
                FROM (
                    SELECT u.entity_id, count(DISTINCT p.id) AS n
                    FROM passages p CROSS JOIN LATERAL unnest(p.entity_ids) AS u(entity_id)
                    WHERE p.tenant_id = $1
                    GROUP BY u.entity_id
                ) m
                JOIN entities e ON e.tenant_id = $1 AND e.id = m.entity_id
                ORDER BY m.n DESC, e.name, e.id
                """,
                tenant_id,
            )
            return [
                EntitySummary(
                    entity=Entity(id=r["id"], name=r["name"], kind=r["kind"]), passages=r["n"]
                )
                for r in rows
            ]

        return await self._run(read)

    async def corpus_summary(self, tenant_id: UUID) -> CorpusSummary:
        async def read(conn: asyncpg.Connection) -> CorpusSummary:
            async with conn.transaction(isolation="repeatable_read", readonly=True):
                totals = await conn.fetchrow(
                    "SELECT passages, tokens FROM tenant_counters WHERE tenant_id = $1", tenant_id
                )
                sources = await conn.fetchval(
                    "SELECT count(DISTINCT source_id) FROM passages WHERE tenant_id = $1", tenant_id
                )
                vocabulary = await conn.fetchval(
                    "SELECT count(*) FROM term_df WHERE tenant_id = $1", tenant_id
                )
            passages = 0 if totals is None else int(totals["passages"])
            tokens = 0 if totals is None else int(totals["tokens"])
            return CorpusSummary(
                sources=int(sources),
                passages=passages,
                tokens=tokens,
                avg_doc_length=tokens / passages if passages else 0.0,
                vocabulary=int(vocabulary),
            )

        return await self._run(read)

    async def passage_count(self, tenant_id: UUID) -> int:
        async def read(conn: asyncpg.Connection) -> int:
            count = await conn.fetchval(
                "SELECT passages FROM tenant_counters WHERE tenant_id = $1", tenant_id
            )
            return 0 if count is None else int(count)

        return await self._run(read)

    async def doc_lengths(self, tenant_id: UUID) -> list[int]:
        async def read(conn: asyncpg.Connection) -> list[int]:
            rows = await conn.fetch(
                "SELECT doc_length FROM passages WHERE tenant_id = $1 ORDER BY doc_length",
                tenant_id,
            )
            return [int(r["doc_length"]) for r in rows]

        return await self._run(read)

    async def terms_with_prefix(
        self, prefix: str, tenant_id: UUID, limit: int
    ) -> list[TermFrequency]:
        _check_limit(limit)
        if limit == 0 or not is_storable(prefix):
            return []
        upper = _prefix_upper_bound(prefix)

        async def read(conn: asyncpg.Connection) -> list[TermFrequency]:
            rows = await conn.fetch(
                "SELECT term, df FROM term_df WHERE tenant_id = $1 AND term >= $2 "
                "AND ($3::text IS NULL OR term < $3::text) "
                "ORDER BY df DESC, term LIMIT $4",
                tenant_id,
                prefix,
                upper,
                limit,
            )
            return [TermFrequency(term=r["term"], df=r["df"]) for r in rows]

        return await self._run(read)

    async def get_entities(self, entity_ids: Sequence[UUID], tenant_id: UUID) -> list[Entity]:
        asked = list(dict.fromkeys(entity_ids))
        if not asked:
            return []

        async def read(conn: asyncpg.Connection) -> list[Entity]:
            rows = await conn.fetch(
                "SELECT id, name, kind FROM entities WHERE tenant_id = $1 AND id = ANY($2::uuid[])",
                tenant_id,
                asked,
            )
            known = {r["id"]: Entity(id=r["id"], name=r["name"], kind=r["kind"]) for r in rows}
            return [known[e] for e in asked if e in known]

        return await self._run(read)

    async def list_workspaces(self) -> list[Workspace]:
        async def read(conn: asyncpg.Connection) -> list[Workspace]:
            rows = await conn.fetch(_WORKSPACES + " ORDER BY w.name, w.tenant_id")
            return [_workspace(r) for r in rows]

        return await self._run(read)

    async def get_workspace(self, tenant_id: UUID) -> Workspace | None:
        async def read(conn: asyncpg.Connection) -> Workspace | None:
            row = await conn.fetchrow(_WORKSPACES + " WHERE w.tenant_id = $1", tenant_id)
            return None if row is None else _workspace(row)

        return await self._run(read)

    async def add_member(self, tenant_id: UUID, email: str) -> bool:
        email = member_email(email)

        async def write(conn: asyncpg.Connection) -> bool:
            async with conn.transaction():
                owner = await _locked_owner(conn, tenant_id)
                if email == owner:
                    return False
                status = await conn.execute(
                    "INSERT INTO workspace_members (tenant_id, email) VALUES ($1, $2) "
                    "ON CONFLICT DO NOTHING",
                    tenant_id,
                    email,
                )
                return bool(str(status).endswith(" 1"))

        return await self._run(write, writing=f"the member {email!r}")

    async def set_owner(self, tenant_id: UUID, email: str) -> None:
        email = member_email(email)

        async def write(conn: asyncpg.Connection) -> None:
            async with conn.transaction():
                await _locked_owner(conn, tenant_id)
                await conn.execute(
                    "UPDATE workspaces SET owner = $2 WHERE tenant_id = $1", tenant_id, email
                )
                await conn.execute(
                    "DELETE FROM workspace_members WHERE tenant_id = $1 AND email = $2",
                    tenant_id,
                    email,
                )

        await self._run(write, writing=f"the owner {email!r}")

    async def remove_member(self, tenant_id: UUID, email: str) -> bool:
        email = member_email(email)

        async def write(conn: asyncpg.Connection) -> bool:
            async with conn.transaction():
                if email == await _locked_owner(conn, tenant_id):
                    raise ValueError("the owner of a workspace cannot be removed from it")
                status = await conn.execute(
                    "DELETE FROM workspace_members WHERE tenant_id = $1 AND email = $2",
                    tenant_id,
                    email,
                )
                return bool(str(status).endswith(" 1"))

        return await self._run(write, writing=f"the removal of the member {email!r}")


#: A workspace row with its members (sorted), for ``_workspace``; callers add WHERE/ORDER BY.
_WORKSPACES: Final = """
SELECT w.tenant_id, w.name, w.profile, w.owner,
       ARRAY(SELECT m.email FROM workspace_members m
             WHERE m.tenant_id = w.tenant_id ORDER BY m.email) AS members
FROM workspaces w
"""


def _workspace(row: asyncpg.Record) -> Workspace:
    return Workspace(
        tenant_id=row["tenant_id"],
        name=row["name"],
        profile=row["profile"],
        owner=row["owner"],
        members=tuple(row["members"]),
    )


async def _locked_owner(conn: asyncpg.Connection, tenant_id: UUID) -> str | None:
    """The workspace's owner, its row held until commit; KeyError for an unknown workspace."""
    row = await conn.fetchrow(
        "SELECT owner FROM workspaces WHERE tenant_id = $1 FOR KEY SHARE", tenant_id
    )
    if row is None:
        raise KeyError(f"no workspace with tenant id {tenant_id}")
    owner: str | None = row["owner"]
    return owner


async def _create_schema(conn: asyncpg.Connection, schema: str | None) -> None:
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _SCHEMA_LOCK)
        if schema is not None:
            # Validated against _IDENTIFIER by the caller; DDL cannot take parameters.
            await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        await conn.execute(_SCHEMA)
        await conn.execute(_MIGRATE)


#: One passage staged for COPY: its row (without ordinal) and its tf per term.
_Staged = tuple[tuple[Any, ...], Counter[str]]
#: Largest ordinal a block can hold (int32).
_MAX_ORDINAL: Final = 2**31 - 1


class _Staging(NamedTuple):
    """A batch made ready outside the transaction: its rows, and for a one-tenant batch its
    posting blocks with ordinals counted from 0 (moved to the reserved ones at COPY)."""

    rows: list[_Staged]
    blocks: _Blocks | None


def _stage(batch: Sequence[StoredChunk], profiles: dict[UUID, Profile]) -> _Staging:
    """Tokenise and build the blocks: the batch's Python work, done before its transaction so
    the transaction holds the tenant's counters row only for database work (a batch's
    transactions queue on that row; blocks built inside it kept the next batch waiting)."""
    rows = _stage_rows(batch, profiles)
    tenants = {row[0] for row, _ in rows}
    blocks = _Blocks(enumerate(tfs for _, tfs in rows)) if len(tenants) == 1 else None
    return _Staging(rows, blocks)


def _stage_rows(batch: Iterable[StoredChunk], profiles: dict[UUID, Profile]) -> list[_Staged]:
    """Tokenise each passage once, with its tenant's profile, outside any transaction."""
    staged: list[_Staged] = []
    for chunk in batch:
        length, tfs = passage_terms(chunk.text, profiles.get(chunk.tenant_id, DEFAULT_PROFILE))
        row = (
            chunk.tenant_id,
            chunk.id,
            chunk.source_id,
            chunk.chunk_index,
            chunk.start_char,
            chunk.end_char,
            chunk.text,
            list(chunk.entity_ids),
            json.dumps(chunk.metadata, ensure_ascii=False, allow_nan=False)
            if chunk.metadata
            else "{}",
            length,
        )
        staged.append((row, tfs))
    return staged


class _Blocks:
    """A batch's postings grouped by term: one block (ordinals, tf as big-endian int32) each.

    Built in Python from the tf counters tokenising already produced, so a batch sends one
    row per distinct term instead of one per posting (at 100k Zipf passages ~60 postings per
    passage but ~0.3 new terms): the row-per-posting COPY and its index were the write's
    cost centre (docs/scaling.md).
    """

    def __init__(self, passages: Iterable[tuple[int, Counter[str]]]) -> None:
        numbers: list[int] = []
        counters: list[Counter[str]] = []
        for ordinal, counts in passages:
            if ordinal > _MAX_ORDINAL:
                raise ValueError(f"a workspace holds at most {_MAX_ORDINAL} passage ordinals")
            numbers.append(ordinal)
            counters.append(counts)
        # Every loop below runs in C (map, chain, dict.fromkeys): a Python loop per posting
        # was the load's largest Python cost after tokenising (cProfile, 50k passages).
        words = list(chain.from_iterable(counters))
        #: Distinct terms, sorted.
        self.terms = sorted(dict.fromkeys(words))
        rank = {term: i for i, term in enumerate(self.terms)}
        keys = np.fromiter(map(rank.__getitem__, words), np.int64, len(words))
        sizes = np.fromiter(map(len, counters), np.int64, len(counters))
        ordinals = np.repeat(np.asarray(numbers, dtype=np.int64), sizes)
        tfs = np.fromiter(chain.from_iterable(c.values() for c in counters), np.int64, len(words))
        # Stable: within a term the ordinals stay in the (ascending) order they came in.
        order = np.argsort(keys, kind="stable")
        #: df of each term within the batch.
        self.df = np.bincount(keys, minlength=len(self.terms)).astype(np.int64)
        self._ordinals = ordinals[order]
        self._last = int(ordinals.max()) if len(ordinals) else 0
        self._tfs = tfs[order].astype(">i4").tobytes()
        ends = np.cumsum(self.df) * 4
        self._starts = (ends - self.df * 4).tolist()
        self._ends = ends.tolist()

    def records(
        self, tenant_id: UUID, segment: int, offset: int = 0
    ) -> list[tuple[UUID, str, int, bytes, bytes]]:
        """The COPY rows, every ordinal moved by ``offset`` (blocks built before the batch's
        ordinals were reserved count from 0)."""
        if self._last + offset > _MAX_ORDINAL:
            raise ValueError(f"a workspace holds at most {_MAX_ORDINAL} passage ordinals")
        ordinals, tfs = (self._ordinals + offset).astype(">i4").tobytes(), self._tfs
        return [
            (tenant_id, term, segment, ordinals[start:end], tfs[start:end])
            for term, start, end in zip(self.terms, self._starts, self._ends, strict=True)
        ]


async def _write_blocks(
    conn: asyncpg.Connection,
    tenant_id: UUID,
    blocks: _Blocks,
    segment: int,
    passages: int,
    offset: int = 0,
) -> None:
    """One new segment: its blocks by COPY, its df added, then merges if a tier filled up."""
    if not blocks.terms:
        return
    await conn.copy_records_to_table(
        "postings",
        records=blocks.records(tenant_id, segment, offset),
        columns=("tenant_id", "term", "segment", "ordinals", "tfs"),
    )
    await conn.execute(
        "INSERT INTO segments (tenant_id, segment, passages) VALUES ($1, $2, $3)",
        tenant_id,
        segment,
        passages,
    )
    await conn.execute(_ADD_DF, tenant_id, blocks.terms, blocks.df.tolist())
    await _merge_segments(conn, tenant_id)


def _tier(passages: int) -> int:
    return len(str(max(passages, 1)))


def _mergeable(segments: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A run of adjacent segments to merge, or none: ``MERGE_FACTOR`` of one tier in a row,
    else (past ``MAX_SEGMENTS``) the run with the fewest passages."""
    for start in range(len(segments) - MERGE_FACTOR + 1):
        run = segments[start : start + MERGE_FACTOR]
        if len({_tier(passages) for _, passages in run}) == 1:
            return run
    if len(segments) <= MAX_SEGMENTS:
        return []
    runs = [segments[i : i + MERGE_FACTOR] for i in range(len(segments) - MERGE_FACTOR + 1)]
    return min(runs, key=lambda run: sum(passages for _, passages in run))


async def _merge_segments(conn: asyncpg.Connection, tenant_id: UUID) -> None:
    """Merge runs of adjacent segments until none is due (see ``_mergeable``)."""
    while True:
        rows = await conn.fetch(
            "SELECT segment, passages FROM segments WHERE tenant_id = $1 ORDER BY segment",
            tenant_id,
        )
        run = _mergeable([(int(r["segment"]), int(r["passages"])) for r in rows])
        if not run:
            return
        merged = [segment for segment, _ in run]
        await conn.execute(_MERGE, tenant_id, merged, merged[0])
        await conn.execute(
            "DELETE FROM segments WHERE tenant_id = $1 AND segment = ANY($2::bigint[])",
            tenant_id,
            merged,
        )
        await conn.execute(
            "INSERT INTO segments (tenant_id, segment, passages) VALUES ($1, $2, $3)",
            tenant_id,
            merged[0],
            sum(passages for _, passages in run),
        )


async def _reserve(conn: asyncpg.Connection, tenant_id: UUID, passages: int) -> int:
    """The first of ``passages`` fresh ordinals (also the number of the batch's segment)."""
    await conn.execute(_ENSURE_COUNTERS, tenant_id)
    return int(await conn.fetchval(_RESERVE, tenant_id, passages))


async def _write_new(
    conn: asyncpg.Connection,
    staging: _Staging,
    deltas: dict[UUID, tuple[int, int]],
) -> bool:
    """Insert new passages with their posting blocks, update known ones, then the counters.

    Each tenant's new passages get fresh ordinals and make one new segment. The counters row
    is updated last, once per tenant, with ``deltas`` (passages, tokens removed earlier in the
    same transaction) folded in. Returns whether a tenant grew by a bulk load (then the
    planner's statistics are stale; see ``_refresh_statistics``).
    """
    staged = staging.rows
    totals = dict(deltas)
    changed = {tenant for tenant, (passages, _) in deltas.items() if passages}
    bulk = False
    if staged:
        by_tenant: dict[UUID, list[_Staged]] = {}
        for item in staged:
            by_tenant.setdefault(item[0][0], []).append(item)
        ordinals: dict[UUID, int] = {}
        records: list[tuple[Any, ...]] = []
        for tenant_id in sorted(by_tenant):
            first = ordinals[tenant_id] = await _reserve(conn, tenant_id, len(by_tenant[tenant_id]))
            records.extend((*row, first + i) for i, (row, _) in enumerate(by_tenant[tenant_id]))
        await conn.execute(_STAGE)
        await conn.copy_records_to_table(
            "stage_passages", records=records, columns=_STAGE_PASSAGE_COLUMNS
        )
        await conn.execute(_WRITE_WORK_MEM)
        inserted = await conn.fetch(_INSERT_NEW)
        if len(inserted) < len(staged):
            await conn.execute(_UPDATE_EXISTING)
        fresh: dict[UUID, set[int]] = {}
        for row in inserted:
            fresh.setdefault(row["tenant_id"], set()).add(int(row["ordinal"]))
        for tenant_id in sorted(fresh):
            first = ordinals[tenant_id]
            new = fresh[tenant_id]
            kept = [
                (first + i, row[9], tfs)
                for i, (row, tfs) in enumerate(by_tenant[tenant_id])
                if first + i in new
            ]
            if staging.blocks is not None and len(kept) == len(staged):
                # Every passage is new: the blocks staged before the transaction hold them
                # all, counted from 0.
                await _write_blocks(conn, tenant_id, staging.blocks, first, len(kept), first)
            else:
                blocks = _Blocks((ordinal, tfs) for ordinal, _, tfs in kept)
                await _write_blocks(conn, tenant_id, blocks, kept[0][0], len(kept))
            passages, tokens = totals.get(tenant_id, (0, 0))
            added = sum(length for _, length, _ in kept)
            totals[tenant_id] = (passages + len(new), tokens + added)
            changed.add(tenant_id)
    for tenant_id in sorted(totals):
        passages, tokens = totals[tenant_id]
        if tenant_id in changed:
            after = await _add_counters(conn, tenant_id, passages, tokens)
            bulk = bulk or (passages >= _BULK_PASSAGES and passages * 2 >= after)
    return bulk


async def _add_counters(
    conn: asyncpg.Connection, tenant_id: UUID, passages: int, tokens: int
) -> int:
    """Apply a delta to the tenant's counters row (a new generation); returns its passages."""
    await conn.execute(_ENSURE_COUNTERS, tenant_id)
    return int(await conn.fetchval(_ADD_COUNTERS, tenant_id, passages, tokens))


async def _delete_ids(
    conn: asyncpg.Connection, tenant_id: UUID, ids: list[str], profile: Profile
) -> int:
    """Delete passages and lower the df table; returns tokens removed.

    Their postings stay in the blocks as dead ordinals (the tombstone is the passage row's
    absence): a reader keeps only ordinals its image of live passages knows. The df to lower
    comes from the passages' own text, tokenised as when they were written (the workspace
    row is locked, so no re-index runs meanwhile).
    """
    if not ids:
        return 0
    found = await conn.fetch(_DOOMED, tenant_id, ids)
    removed: Counter[str] = Counter()
    for row in found:
        removed.update(passage_terms(row["text"], profile)[1].keys())
    tokens = sum(int(row["doc_length"]) for row in found)
    terms = sorted(removed)
    counts = [removed[t] for t in terms]
    await conn.execute(_DROP_DF, tenant_id, terms, counts)
    await conn.execute(_LOWER_DF, tenant_id, terms, counts)
    await conn.execute(_DELETE_PASSAGES, tenant_id, ids)
    return tokens


async def _read_profiles(
    conn: asyncpg.Connection, tenants: Sequence[UUID], *, lock: bool
) -> dict[UUID, Profile]:
    """Each tenant's profile (plain without a workspace); ``lock`` holds the rows FOR SHARE."""
    rows = await conn.fetch(_PROFILES_LOCKED if lock else _PROFILES, list(tenants))
    found = {r["tenant_id"]: Profile(r["profile"]) for r in rows}
    return {tenant: found.get(tenant, DEFAULT_PROFILE) for tenant in tenants}


async def _locked_profiles(
    conn: asyncpg.Connection, tenants: Sequence[UUID]
) -> dict[UUID, Profile]:
    """The profiles, with the workspace rows held until commit so no re-index runs meanwhile."""
    return await _read_profiles(conn, tenants, lock=True)


#: The tenants' workspace profiles, and the same holding the rows until commit.
_PROFILES: Final = (
    "SELECT tenant_id, profile FROM workspaces WHERE tenant_id = ANY($1::uuid[]) ORDER BY tenant_id"
)
_PROFILES_LOCKED: Final = _PROFILES + " FOR SHARE"

#: Passages re-tokenised per COPY in a re-index (and between two progress reports).
_REINDEX_BATCH: Final = 2_000


async def _reindex(
    conn: asyncpg.Connection,
    tenant_id: UUID,
    profile: Profile,
    on_progress: ReindexProgress | None,
) -> int:
    """Rewrite the tenant's posting blocks, lengths, df and token count under ``profile``.

    Runs inside the caller's transaction: nothing of it is visible until that commits.
    Ordinals stay; each batch of passages becomes one segment.
    """
    ids = [
        r["id"]
        for r in await conn.fetch(
            "SELECT id FROM passages WHERE tenant_id = $1 ORDER BY ordinal", tenant_id
        )
    ]
    for table in ("postings", "segments", "term_df"):
        await conn.execute(f"DELETE FROM {table} WHERE tenant_id = $1", tenant_id)  # noqa: S608
    await conn.execute(
        'CREATE TEMP TABLE reindex_lengths (id text COLLATE "C", doc_length integer) ON COMMIT DROP'
    )
    await conn.execute(_ENSURE_COUNTERS, tenant_id)
    for start in range(0, len(ids), _REINDEX_BATCH):
        rows = await conn.fetch(
            "SELECT id, text, ordinal FROM passages WHERE tenant_id = $1 "
            "AND id = ANY($2::text[]) ORDER BY ordinal",
            tenant_id,
            ids[start : start + _REINDEX_BATCH],
        )
        lengths: list[tuple[str, int]] = []
        written: list[tuple[int, Counter[str]]] = []
        for row in rows:
            await checkpoint()  # other sessions' searches go first (core.checkpoint)
            length, tfs = passage_terms(row["text"], profile)
            lengths.append((row["id"], length))
            written.append((int(row["ordinal"]), tfs))
        await conn.copy_records_to_table("reindex_lengths", records=lengths)
        if written:
            await _write_blocks(conn, tenant_id, _Blocks(written), written[0][0], len(written))
        if on_progress is not None:
            on_progress(min(start + _REINDEX_BATCH, len(ids)), len(ids))
    await conn.execute(
        "UPDATE passages p SET doc_length = r.doc_length FROM reindex_lengths r "
        "WHERE p.tenant_id = $1 AND p.id = r.id AND p.doc_length <> r.doc_length",
        tenant_id,
    )
    await conn.execute(
        "UPDATE tenant_counters SET tokens = "
        "(SELECT coalesce(sum(doc_length), 0) FROM passages WHERE tenant_id = $1), "
        "generation = txid_current() WHERE tenant_id = $1",
        tenant_id,
    )
    if on_progress is not None and not ids:
        on_progress(0, 0)
    return len(ids)


async def _delete_tenant_rows(conn: asyncpg.Connection, tenant_id: UUID) -> int:
    """Every passage, term row, statistic and entity of a tenant (not its workspace record)."""
    await conn.execute("DELETE FROM postings WHERE tenant_id = $1", tenant_id)
    await conn.execute("DELETE FROM segments WHERE tenant_id = $1", tenant_id)
    status = await conn.execute("DELETE FROM passages WHERE tenant_id = $1", tenant_id)
    await conn.execute("DELETE FROM term_df WHERE tenant_id = $1", tenant_id)
    await conn.execute("DELETE FROM tenant_counters WHERE tenant_id = $1", tenant_id)
    await conn.execute("DELETE FROM entities WHERE tenant_id = $1", tenant_id)
    return int(str(status).rsplit(" ", 1)[-1])
