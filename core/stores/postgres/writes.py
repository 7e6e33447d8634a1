"""Write SQL: staged passages moved in set-based statements, blocks COPYed, segments merged.

Every write is one transaction that keeps passages, posting blocks, df and the counters in
step (the counters row last, with a new generation, so readers know their image is stale).
Rows are staged with COPY and moved with INSERT ... SELECT: ``load`` reaches COPY speed; the
rejected alternative, an executemany of INSERTs, pays a round trip per passage.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Final
from uuid import UUID

import asyncpg
import numpy as np

from core.checkpoint import giving_way
from core.domain.entities import Entity
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.stores.port import ReindexProgress, WorkspaceGone, passage_terms
from core.stores.postgres.blocks import Blocks, Staged, Staging
from core.stores.postgres.frequencies import add_dead
from core.stores.postgres.merges import merge_segments
from core.stores.postgres.passage_copy import passages_copy
from core.stores.postgres.pieces import copy_data_in_pieces, copy_in_pieces, piece_rows
from core.stores.postgres.query_read import ImageChanges
from core.stores.postgres.staging import terms_and_blocks_aside

#: New passages in one write (and at least a tenth of the tenant) that trigger ANALYZE after it.
_BULK_PASSAGES: Final = 500
#: Sorts of a bulk batch stay in memory instead of spilling to disk.
_WRITE_WORK_MEM: Final = "SET LOCAL work_mem = '256MB'"

#: The batch's passage rows, COPYed here first, dropped at commit.
_STAGE: Final = """
CREATE TEMP TABLE stage_passages (
    tenant_id uuid, id text COLLATE "C", source_id text, chunk_index bigint,
    start_char bigint, end_char bigint, text text, entity_ids uuid[], metadata text,
    doc_length integer, ordinal bigint
) ON COMMIT DROP;
"""
#: The COPY's column order (the staged row, then the reserved ordinal), into the staging table
#: or, when none of a batch is stored, into ``passages`` itself.
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
#: New passages moved in; returns which were new (an existing key keeps its row).
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
WHERE p.tenant_id = $1 AND s.tenant_id = $1 AND p.id = s.id AND p.ordinal <> s.ordinal
  AND (p.chunk_index, p.start_char, p.end_char, p.entity_ids, p.metadata)
      IS DISTINCT FROM (s.chunk_index, s.start_char, s.end_char, s.entity_ids, s.metadata::jsonb)
"""
#: Ordinals for a batch; the counters row stays locked until commit.
_RESERVE: Final = """
UPDATE tenant_counters SET next_ordinal = next_ordinal + $2 WHERE tenant_id = $1
RETURNING next_ordinal - $2 AS ordinal
"""
#: Two statements, not one upsert: the CHECKs would reject a negative delta's proposed row.
ENSURE_COUNTERS: Final = """
INSERT INTO tenant_counters (tenant_id, passages, tokens) VALUES ($1, 0, 0)
ON CONFLICT (tenant_id) DO NOTHING
"""
#: Every change of the passage set or of a length gets a new generation (the writing
#: transaction's id: never reused, also not after a tenant is emptied and filled again), so
#: a reader's cached ordinal image (``Image``) is known stale from its own snapshot.
_ADD_COUNTERS: Final = """
UPDATE tenant_counters SET passages = passages + $2, tokens = tokens + $3,
    generation = txid_current()
WHERE tenant_id = $1
RETURNING passages, generation, next_ordinal
"""
#: The generation this write follows (the row locked: every generation is set under its lock,
#: so this is the last committed writer's).
_GENERATION_BEFORE: Final = """
SELECT generation FROM tenant_counters WHERE tenant_id = $1 FOR UPDATE
"""
#: The batch's entities in one statement (ids are distinct: ON CONFLICT touches a row once).
_UPSERT_ENTITIES: Final = """
INSERT INTO entities (tenant_id, id, name, kind)
SELECT $1, u.id, u.name, u.kind FROM unnest($2::uuid[], $3::text[], $4::text[]) AS u(id, name, kind)
ON CONFLICT (tenant_id, id) DO UPDATE SET name = EXCLUDED.name, kind = EXCLUDED.kind
"""
#: Passages about to be deleted, with what lowering their df and tokens needs.
_DOOMED: Final = """
SELECT id, text, doc_length FROM passages WHERE tenant_id = $1 AND id = ANY($2::text[])
"""
#: The passage rows themselves (their ordinals stay in the blocks as tombstones).
_DELETE_PASSAGES: Final = """
DELETE FROM passages WHERE tenant_id = $1 AND id = ANY($2::text[]) RETURNING ordinal
"""


#: A source's advisory lock is one of this many per workspace (its id hashed), so a write of any
#: size takes at most this many: one lock per source took 5,000 per batch, and a stock server
#: (64 lock slots per connection, shared) ran out of shared memory (issue 20). Two writes of
#: one workspace wait for each other only when their sources share a bucket; their database
#: work queues on the workspace's counters row anyway.
SOURCE_LOCK_BUCKETS: Final = 16


def source_bucket(source_id: str) -> int:
    """The lock bucket of a source: the first four bytes of its id's SHA-256, big-endian,
    modulo ``SOURCE_LOCK_BUCKETS``. Every writer of a database must agree on it (two that do
    not would not wait for each other)."""
    return int.from_bytes(hashlib.sha256(source_id.encode("utf-8")).digest()[:4], "big") % (
        SOURCE_LOCK_BUCKETS
    )


def source_lock_keys(tenant_id: UUID, source_ids: Sequence[str]) -> list[int]:
    """The signed 64-bit advisory lock keys of the sources' buckets, sorted (two writes taking
    theirs in one order cannot deadlock), at most ``SOURCE_LOCK_BUCKETS``."""
    buckets: set[int] = set()
    for source_id in source_ids:  # a big batch names every bucket within its first ~50
        buckets.add(source_bucket(source_id))
        if len(buckets) == SOURCE_LOCK_BUCKETS:
            break
    keys = {
        int.from_bytes(
            hashlib.sha256(tenant_id.bytes + bucket.to_bytes(2, "big")).digest()[:8],
            "big",
            signed=True,
        )
        for bucket in buckets
    }
    return sorted(keys)


async def _write_blocks(
    conn: asyncpg.Connection,
    tenant_id: UUID,
    blocks: Blocks,
    segment: int,
    passages: int,
    offset: int = 0,
) -> None:
    """One new segment: its blocks by COPY (they are its df), then merges if a tier filled up."""
    if not blocks.terms:
        return
    await copy_data_in_pieces(  # a row per term: other sessions' searches go between pieces
        conn,
        "postings",
        blocks.copy_data(tenant_id, segment, offset, piece_rows(bulk=None)),
        ("tenant_id", "term", "segment", "ordinals", "tfs"),
    )
    await conn.execute(
        "INSERT INTO segments (tenant_id, segment, passages) VALUES ($1, $2, $3)",
        tenant_id,
        segment,
        passages,
    )
    await merge_segments(conn, tenant_id)


async def _reserve(conn: asyncpg.Connection, tenant_id: UUID, passages: int) -> int:
    """The first of ``passages`` fresh ordinals (also the number of the batch's segment)."""
    await conn.execute(ENSURE_COUNTERS, tenant_id)
    return int(await conn.fetchval(_RESERVE, tenant_id, passages))


async def replace_rows(
    conn: asyncpg.Connection,
    tenant_id: UUID,
    source_ids: list[str],
    keep: set[str],
    entities: Sequence[Entity],
    staging: Staging,
    profile: Profile,
    changes: ImageChanges | None = None,
) -> tuple[list[int], bool]:
    """Inside the caller's transaction: lock the sources, upsert the entities, delete the
    sources' passages not in ``keep``, then write the staged ones. Returns the passages
    removed per source and whether it was a bulk load (see ``write_new``); what changed in
    the live passages goes into ``changes`` (for the store's cached images)."""
    await conn.execute(
        "SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k ORDER BY k",
        source_lock_keys(tenant_id, source_ids),
    )
    if entities:
        await conn.execute(
            _UPSERT_ENTITIES,
            tenant_id,
            [e.entity_id for e in entities],
            [e.name for e in entities],
            [e.kind for e in entities],
        )
    existing = await conn.fetch(
        "SELECT id, source_id FROM passages WHERE tenant_id = $1 AND source_id = ANY($2::text[])",
        tenant_id,
        source_ids,
    )
    orphans = sorted(r["id"] for r in existing if r["id"] not in keep)
    per_source = dict.fromkeys(source_ids, 0)
    for r in existing:
        if r["id"] not in keep:
            per_source[r["source_id"]] += 1
    removed_tokens = await delete_ids(conn, tenant_id, orphans, profile, changes)
    delta = {tenant_id: (-len(orphans), -removed_tokens)}
    # No passage of these sources stored (seen under their locks): none of the batch is, since
    # a passage's id derives from its source.
    written = await write_new(conn, staging, delta, changes, stored=bool(existing))
    return [per_source[s] for s in source_ids], written


async def delete_source_rows(
    conn: asyncpg.Connection,
    tenant_id: UUID,
    source_id: str,
    changes: ImageChanges | None = None,
) -> int:
    """Inside the caller's transaction: a source's passages, their df and counters."""
    # The workspace row first, then the source's lock: every write's order.
    profiles = await locked_profiles(conn, [tenant_id])
    (key,) = source_lock_keys(tenant_id, [source_id])
    await conn.execute("SELECT pg_advisory_xact_lock($1)", key)
    rows = await conn.fetch(
        "SELECT id FROM passages WHERE tenant_id = $1 AND source_id = $2", tenant_id, source_id
    )
    ids = sorted(r["id"] for r in rows)
    profile = profiles.get(tenant_id, DEFAULT_PROFILE)
    tokens = await delete_ids(conn, tenant_id, ids, profile, changes)
    if ids:
        await add_counters(conn, tenant_id, -len(ids), -tokens, changes)
    return len(ids)


async def upsert_entity_rows(
    conn: asyncpg.Connection, tenant_id: UUID, entities: Sequence[Entity]
) -> None:
    """Inside the caller's transaction, the workspace row first (not a deleted one)."""
    await locked_profiles(conn, [tenant_id])
    await conn.executemany(
        "INSERT INTO entities (tenant_id, id, name, kind) VALUES ($1, $2, $3, $4) "
        "ON CONFLICT (tenant_id, id) DO UPDATE SET name = EXCLUDED.name, kind = EXCLUDED.kind",
        [(tenant_id, e.entity_id, e.name, e.kind) for e in entities],
    )


async def write_new(
    conn: asyncpg.Connection,
    staging: Staging,
    deltas: dict[UUID, tuple[int, int]],
    changes: ImageChanges | None = None,
    *,
    stored: bool = True,
) -> bool:
    """Insert new passages with their posting blocks, update known ones, then the counters.

    Each tenant's new passages get fresh ordinals and make one new segment. The counters row
    is updated last, once per tenant, with ``deltas`` (passages, tokens removed earlier in the
    same transaction) folded in. Returns whether a tenant grew by a bulk load (then the
    planner's statistics are stale; see ``PostgresChunkStore._refresh_statistics``).

    ``stored=False``: the caller knows none of the staged passages is stored, and they are
    COPYed straight into ``passages``. Else they are staged in a temporary table and moved
    with INSERT ... ON CONFLICT, which finds the known ones: at 100k new passages that
    staging, the move and its conflict checks were ~1.5 s of the server's ~10 s.
    """
    staged = staging.rows
    totals = dict(deltas)
    changed = {tenant for tenant, (passages, _) in deltas.items() if passages}
    bulk = False
    if staged:
        by_tenant: dict[UUID, list[Staged]] = {}
        for item in staged:
            by_tenant.setdefault(item[0][0], []).append(item)
        ordinals: dict[UUID, int] = {}
        for tenant_id in sorted(by_tenant):
            ordinals[tenant_id] = await _reserve(conn, tenant_id, len(by_tenant[tenant_id]))
        fresh: dict[UUID, set[int]] = {}
        if not stored:
            await _copy_passages(conn, "passages", by_tenant, ordinals)
            for tenant_id, first in ordinals.items():
                fresh[tenant_id] = set(range(first, first + len(by_tenant[tenant_id])))
        else:
            await conn.execute(_STAGE)
            await _copy_passages(conn, "stage_passages", by_tenant, ordinals)
            await conn.execute(_WRITE_WORK_MEM)
            inserted = await conn.fetch(_INSERT_NEW)
            if len(inserted) < len(staged):
                for tenant_id in sorted(by_tenant):
                    await conn.execute(_UPDATE_EXISTING, tenant_id)
            for row in inserted:
                fresh.setdefault(row["tenant_id"], set()).add(int(row["ordinal"]))
        for tenant_id in sorted(fresh):
            first = ordinals[tenant_id]
            new = fresh[tenant_id]
            every = len(new) == len(by_tenant[tenant_id])  # most writes: none was stored
            kept = [
                (first + i, row[9], tfs)
                for i, (row, tfs) in enumerate(by_tenant[tenant_id])
                if every or first + i in new
            ]
            if staging.blocks is not None and len(kept) == len(staged):
                # Every passage is new: the blocks staged before the transaction hold them
                # all, counted from 0.
                await _write_blocks(conn, tenant_id, staging.blocks, first, len(kept), first)
            elif staging.blocks is not None:  # the new ones' postings out of the staged blocks
                only = staging.blocks.only([ordinal - first for ordinal, _, _ in kept])
                await _write_blocks(conn, tenant_id, only, kept[0][0], len(kept), first)
            else:
                blocks = Blocks((ordinal, _counted(tfs)) for ordinal, _, tfs in kept)
                await _write_blocks(conn, tenant_id, blocks, kept[0][0], len(kept))
            if changes is not None:
                changes.added.setdefault(tenant_id, []).extend(
                    (first + i, row[1], row[9], row[2])
                    for i, (row, _) in enumerate(by_tenant[tenant_id])
                    if every or first + i in new
                )
            passages, tokens = totals.get(tenant_id, (0, 0))
            added = sum(length for _, length, _ in kept)
            totals[tenant_id] = (passages + len(new), tokens + added)
            changed.add(tenant_id)
    for tenant_id in sorted(totals):
        passages, tokens = totals[tenant_id]
        if tenant_id in changed:
            after = await add_counters(conn, tenant_id, passages, tokens, changes)
            bulk = bulk or (passages >= _BULK_PASSAGES and passages * 2 >= after)
    return bulk


async def _copy_passages(
    conn: asyncpg.Connection,
    table: str,
    by_tenant: dict[UUID, list[Staged]],
    ordinals: dict[UUID, int],
) -> None:
    """The staged rows into ``table`` (``passages`` or ``stage_passages``), each with its
    ordinal: one COPY built in numpy where nobody waits on the loop (``load``) and the rows
    allow it (``passage_copy``), else in pieces asyncpg encodes."""
    if not giving_way() and len(by_tenant) == 1:
        ((tenant_id, staged),) = by_tenant.items()
        numbered = np.arange(len(staged), dtype=np.int64) + ordinals[tenant_id]
        data = passages_copy([row for row, _ in staged], numbered, jsonb=table == "passages")
        if data is not None:
            await copy_data_in_pieces(conn, table, [data], _STAGE_PASSAGE_COLUMNS)
            return
    rows = (
        (*row, ordinals[tenant_id] + i)
        for tenant_id in sorted(by_tenant)
        for i, (row, _) in enumerate(by_tenant[tenant_id])
    )
    await copy_in_pieces(conn, table, rows, _STAGE_PASSAGE_COLUMNS)


def _counted(tfs: Counter[str] | None) -> Counter[str]:
    """A staged passage's tf (present whenever its batch has no staged blocks)."""
    if tfs is None:
        raise AssertionError("a passage staged without tf in a batch without blocks")
    return tfs


async def add_counters(
    conn: asyncpg.Connection,
    tenant_id: UUID,
    passages: int,
    tokens: int,
    changes: ImageChanges | None = None,
) -> int:
    """Apply a delta to the tenant's counters row (a new generation, noted in ``changes``
    with the one it follows); returns its passages."""
    await conn.execute(ENSURE_COUNTERS, tenant_id)
    before = await conn.fetchval(_GENERATION_BEFORE, tenant_id)
    row = await conn.fetchrow(_ADD_COUNTERS, tenant_id, passages, tokens)
    if changes is not None:
        changes.generations[tenant_id] = (
            int(before),
            int(row["generation"]),
            int(row["next_ordinal"]),
        )
    return int(row["passages"])


async def delete_ids(
    conn: asyncpg.Connection,
    tenant_id: UUID,
    ids: list[str],
    profile: Profile,
    changes: ImageChanges | None = None,
) -> int:
    """Delete passages and count their postings as dead; returns tokens removed.

    Their postings stay in the blocks as dead ordinals (the tombstone is the passage row's
    absence): a reader keeps only ordinals its image of live passages knows, and a df is the
    blocks' ordinals less the dead ones (core.stores.postgres.frequencies). The terms come
    from the passages' own text, tokenised as when they were written (the workspace row is
    locked, so no re-index runs meanwhile).
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
    await add_dead(conn, tenant_id, terms, counts)
    gone = await conn.fetch(_DELETE_PASSAGES, tenant_id, ids)
    if changes is not None:
        changes.removed.setdefault(tenant_id, []).extend(int(row[0]) for row in gone)
    return tokens


async def read_profiles(
    conn: asyncpg.Connection, tenants: Sequence[UUID], *, lock: bool
) -> dict[UUID, Profile]:
    """Each tenant's profile (plain without a workspace); ``lock`` holds the rows FOR SHARE.

    ``WorkspaceGone`` for a deleted workspace: a write locks these rows first, so a deletion
    either waits for it to commit (and deletes what it wrote) or went first (and it stops
    here, before writing anything).
    """
    if lock:
        # One statement per tenant, in one order: Citus locks rows only in a statement routed
        # to one shard, and a fixed order keeps two multi-tenant writes from deadlocking.
        rows = [
            row
            for tenant in sorted(set(tenants))
            for row in await conn.fetch(_PROFILE_LOCKED, tenant)
        ]
    else:
        rows = await conn.fetch(_PROFILES, list(tenants))
    gone = next((r["tenant_id"] for r in rows if r["deleted"]), None)
    if gone is not None:
        raise WorkspaceGone(gone)
    found = {r["tenant_id"]: Profile(r["profile"]) for r in rows}
    return {tenant: found.get(tenant, DEFAULT_PROFILE) for tenant in tenants}


async def locked_profiles(conn: asyncpg.Connection, tenants: Sequence[UUID]) -> dict[UUID, Profile]:
    """The profiles, with the workspace rows held until commit so no re-index runs meanwhile."""
    return await read_profiles(conn, tenants, lock=True)


#: The tenants' workspace profiles, and the same holding the rows until commit.
_PROFILES: Final = (
    "SELECT tenant_id, profile, deleted FROM workspaces WHERE tenant_id = ANY($1::uuid[]) "
    "ORDER BY tenant_id"
)
_PROFILE_LOCKED: Final = (
    "SELECT tenant_id, profile, deleted FROM workspaces WHERE tenant_id = $1 FOR SHARE"
)

#: Passages re-tokenised per COPY in a re-index (and between two progress reports).
_REINDEX_BATCH: Final = 2_000


async def reindex_rows(
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
    for table in ("postings", "segments", "term_dead"):
        await conn.execute(f"DELETE FROM {table} WHERE tenant_id = $1", tenant_id)  # noqa: S608
    await conn.execute(
        'CREATE TEMP TABLE reindex_lengths (id text COLLATE "C", doc_length integer) ON COMMIT DROP'
    )
    await conn.execute(ENSURE_COUNTERS, tenant_id)
    for start in range(0, len(ids), _REINDEX_BATCH):
        rows = await conn.fetch(
            "SELECT id, text, ordinal FROM passages WHERE tenant_id = $1 "
            "AND id = ANY($2::text[]) ORDER BY ordinal",
            tenant_id,
            ids[start : start + _REINDEX_BATCH],
        )
        # Tokenised in the staging worker, off the loop other sessions' searches share.
        counts, blocks = await terms_and_blocks_aside([row["text"] for row in rows], profile)
        await copy_in_pieces(
            conn,
            "reindex_lengths",
            ((row["id"], length) for row, length in zip(rows, counts, strict=True)),
        )
        if rows:
            ordinals = [int(row["ordinal"]) for row in rows]
            await _write_blocks(
                conn, tenant_id, blocks.renumbered(ordinals), ordinals[0], len(ordinals)
            )
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


async def delete_tenant_rows(conn: asyncpg.Connection, tenant_id: UUID) -> int:
    """Every passage, term row, statistic and entity of a tenant (not its workspace record)."""
    await conn.execute("DELETE FROM postings WHERE tenant_id = $1", tenant_id)
    await conn.execute("DELETE FROM segments WHERE tenant_id = $1", tenant_id)
    status = await conn.execute("DELETE FROM passages WHERE tenant_id = $1", tenant_id)
    await conn.execute("DELETE FROM term_dead WHERE tenant_id = $1", tenant_id)
    await conn.execute("DELETE FROM tenant_counters WHERE tenant_id = $1", tenant_id)
    await conn.execute("DELETE FROM entities WHERE tenant_id = $1", tenant_id)
    return int(str(status).rsplit(" ", 1)[-1])
