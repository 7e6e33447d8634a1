"""The tables, and the migrations that bring an older database to them, run at connect.

Why at connect and not a migration tool: the store must open any database a previous
version left (a user's embedded data folder), with no step for them to run; every change
is idempotent DDL (IF NOT EXISTS, a DO block that checks the catalogue) under one advisory
lock, so two processes connecting at once do it once.

The DDL runs only when the schema's version stamp (the comment of ``workspaces``) is not this
code's. It ran at every connect until session 15, and ``ALTER TABLE ... ADD COLUMN IF NOT
EXISTS`` takes an ACCESS EXCLUSIVE lock even when the column exists: it queues behind every
open read of the table, and every later read queues behind it. Another process connecting (a
``load``, an app starting, a test) froze the searches of everyone on the server: 108-162 ms
each connect beside a searching session (20x its p50), and a 1,007 ms search in a
bench_stall ``load`` row (a held read snapshot in the queue). A Citus coordinator skipped it
already (there each DDL statement also goes to every shard). Rejected: checking each piece of
the catalogue before each statement (the stamp is one read, and covers what comes later).
"""

from __future__ import annotations

import hashlib
import re
from typing import Final
from uuid import UUID

import asyncpg

from core.domain.names import name_key
from core.stores.postgres import citus
from core.stores.postgres.workspaces import FILL_NAMES

#: A schema name we are willing to interpolate into DDL (it cannot be a parameter).
IDENTIFIER: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: Advisory lock key that serialises schema creation across processes.
_SCHEMA_LOCK: Final = 0x6C6578706C61696E

#: Every table, created if missing; columns added since are ADD COLUMN IF NOT EXISTS.
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
-- Without its CHECK here: Citus refuses a constraint in ADD COLUMN (it wants names); _MIGRATE
-- adds it by name.
ALTER TABLE passages ADD COLUMN IF NOT EXISTS ordinal bigint;
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
-- Postings of deleted passages still in the blocks, per term: a df is the blocks' ordinals
-- less these (core.stores.postgres.frequencies); only deletes write here, loads never.
CREATE TABLE IF NOT EXISTS term_dead (
    tenant_id uuid NOT NULL,
    term text COLLATE "C" NOT NULL,
    dead integer NOT NULL CHECK (dead > 0),
    PRIMARY KEY (tenant_id, term)
);
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
-- A workspace is an identity: a deleted one stays as a tombstone row (deleted, no name_key),
-- so its id is never used again and a write still aimed at it finds it gone. name_key is
-- core.domain.names.name_key(name), unique among live workspaces (workspaces.upsert).
ALTER TABLE workspaces ADD COLUMN IF NOT EXISTS deleted boolean NOT NULL DEFAULT false;
ALTER TABLE workspaces ADD COLUMN IF NOT EXISTS name_key text COLLATE "C";
-- The names of live workspaces, for finding one by name without reading every workspace
-- (on Citus a reference table; core.stores.postgres.workspaces says why).
CREATE TABLE IF NOT EXISTS workspace_names (
    tenant_id uuid PRIMARY KEY,
    name text COLLATE "C" NOT NULL,
    name_key text COLLATE "C"
);
CREATE INDEX IF NOT EXISTS workspace_names_by_name ON workspace_names (name);
CREATE INDEX IF NOT EXISTS workspace_names_by_key ON workspace_names (name_key);
CREATE TABLE IF NOT EXISTS workspace_members (
    tenant_id uuid NOT NULL REFERENCES workspaces (tenant_id) ON DELETE CASCADE,
    email text COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant_id, email)
);
-- Judging (query sets, judgments, saved runs; core.stores.postgres.judging): created at
-- connect, so a database from before gains them; each goes with its workspace.
CREATE TABLE IF NOT EXISTS query_sets (
    tenant_id uuid NOT NULL REFERENCES workspaces (tenant_id) ON DELETE CASCADE,
    name text COLLATE "C" NOT NULL,
    queries jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, name)
);
CREATE TABLE IF NOT EXISTS judgments (
    tenant_id uuid NOT NULL REFERENCES workspaces (tenant_id) ON DELETE CASCADE,
    query text COLLATE "C" NOT NULL,
    chunk_id text COLLATE "C" NOT NULL,
    rater text COLLATE "C" NOT NULL,
    source_id text COLLATE "C" NOT NULL,
    grade smallint NOT NULL CHECK (grade BETWEEN 0 AND 3),
    judged_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, query, chunk_id, rater)
);
-- An analyst's entity corrections (core.stores.postgres.corrections): created at connect, so a
-- database from before gains the table; they go with their workspace.
CREATE TABLE IF NOT EXISTS entity_corrections (
    tenant_id uuid NOT NULL REFERENCES workspaces (tenant_id) ON DELETE CASCADE,
    entity_id uuid NOT NULL,
    merged_into uuid,
    hidden boolean NOT NULL DEFAULT false,
    PRIMARY KEY (tenant_id, entity_id)
);
CREATE TABLE IF NOT EXISTS saved_runs (
    tenant_id uuid NOT NULL REFERENCES workspaces (tenant_id) ON DELETE CASCADE,
    run_id uuid NOT NULL,
    name text NOT NULL,
    saved_at timestamptz NOT NULL,
    query_set text NOT NULL,
    record jsonb NOT NULL,
    PRIMARY KEY (tenant_id, run_id)
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
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'passages'::regclass
                   AND conname = 'passages_ordinal_check') THEN
        ALTER TABLE passages ADD CONSTRAINT passages_ordinal_check CHECK (ordinal >= 0);
    END IF;
    -- Databases from before df was derived from the blocks kept it in term_df (every write
    -- upserted each of its terms' rows): what the blocks hold beyond it is dead.
    IF to_regclass('term_df') IS NOT NULL THEN
        INSERT INTO term_dead (tenant_id, term, dead)
        SELECT b.tenant_id, b.term, b.n - coalesce(d.df, 0)
        FROM (SELECT tenant_id, term, sum(octet_length(ordinals)) / 4 AS n FROM postings
              GROUP BY tenant_id, term) b
        LEFT JOIN term_df d ON d.tenant_id = b.tenant_id AND d.term = b.term
        WHERE b.n > coalesce(d.df, 0)
        ON CONFLICT (tenant_id, term) DO NOTHING;
        DROP TABLE term_df;
    END IF;
    -- Blocks are read whole and do not compress (ordinals are dense): stored as they are.
    IF (SELECT attstorage FROM pg_attribute
        WHERE attrelid = 'postings'::regclass AND attname = 'ordinals') <> 'e' THEN
        ALTER TABLE postings ALTER COLUMN ordinals SET STORAGE EXTERNAL,
            ALTER COLUMN tfs SET STORAGE EXTERNAL;
    END IF;
END $$;
"""


async def connection_settings(dsn: str, settings: dict[str, str], timeout: float) -> dict[str, str]:
    """``settings`` plus what a coordinator's connections need, found with one connection.

    asyncpg introspects each type a connection has not seen (a COPY's columns, an array) with
    one catalogue query. On a Citus coordinator that query took 3-5 s per new connection and
    type (31 ms on one server): Citus hides shards from catalogue reads by adding
    ``relation_is_a_known_shard(oid)`` to every scan of ``pg_class``, and asyncpg's query
    scans it once per row of ``pg_type`` (699 x 508 calls, EXPLAIN ANALYZE). With
    ``citus.override_table_visibility`` off the filter is gone: 0.1 s (the pg_class scans
    may then list the shards a coordinator holds, the reference table's copy; only the
    schema's transaction reads pg_class, and it hides them again). Before this, JIT compiled
    the same query (13-16 s with it on, 3.5 s off); JIT stays off: the store's statements are
    key lookups and short scans it does not pay back. Both only on a coordinator.
    """
    conn = await asyncpg.connect(dsn, server_settings=settings, timeout=timeout)
    try:
        coordinator = await citus.is_coordinator(conn)
    finally:
        await conn.close()
    if not coordinator:
        return settings
    return {**settings, "jit": "off", "citus.override_table_visibility": "off"}


#: The schema's version: a database stamped with it runs no DDL at connect.
_SCHEMA_VERSION: Final = hashlib.sha256((_SCHEMA + _MIGRATE).encode()).hexdigest()[:16]
#: Where the schema's version is kept: the comment of ``workspaces`` (``citus.ANCHOR``; no
#: table of its own, which on Citus would be a table without ``tenant_id``).
_VERSION_PREFIX: Final = "lexplain schema "


async def schema_version(conn: asyncpg.Connection) -> str | None:
    """The schema version the last DDL at connect left (None before stamps, or no schema)."""
    comment = await conn.fetchval(
        "SELECT obj_description(to_regclass($1), 'pg_class')", citus.ANCHOR
    )
    if comment is None or not comment.startswith(_VERSION_PREFIX):
        return None
    return str(comment.removeprefix(_VERSION_PREFIX))


async def set_schema_version(conn: asyncpg.Connection, version: str) -> None:
    # COMMENT takes no parameters; the version is our own hex digest (or a test's word).
    await conn.execute(f"COMMENT ON TABLE {citus.ANCHOR} IS '{_VERSION_PREFIX}{version}'")


async def create_schema(conn: asyncpg.Connection, schema: str | None) -> None:
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _SCHEMA_LOCK)
        # Only when missing: on Citus even CREATE SCHEMA IF NOT EXISTS is sent to every node.
        if schema is not None and await conn.fetchval("SELECT to_regnamespace($1) IS NULL", schema):
            # Validated against IDENTIFIER by the caller; DDL cannot take parameters.
            await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        if await schema_version(conn) == _SCHEMA_VERSION:
            return
        on_citus = await citus.is_coordinator(conn)
        if on_citus:
            # The store's tables as the catalogue lists them, without the shards of
            # reference tables a coordinator holds (see connection_settings).
            await conn.execute("SET LOCAL citus.override_table_visibility = on")
        names_missing = await conn.fetchval("SELECT to_regclass('workspace_names') IS NULL")
        # One statement at a time (PL/pgSQL runs them so): Citus cannot pass a string of
        # several DDL statements on to its shards.
        await conn.execute(f"DO $schema$ BEGIN {_SCHEMA} END $schema$")
        await conn.execute(_MIGRATE)
        await _key_names(conn)
        if names_missing:
            # A database from before the name table: once, from the workspaces' own rows.
            await conn.execute(FILL_NAMES)
        if on_citus:
            await citus.distribute(conn)
        await set_schema_version(conn, _SCHEMA_VERSION)


#: Workspaces found by what a person sees (unique by ``workspaces.upsert``'s lock, not this
#: index: a unique index must lead with tenant_id for Citus).
_NAME_KEY_INDEX: Final = (
    "CREATE INDEX IF NOT EXISTS workspaces_by_name_key ON workspaces (name_key)"
)


async def _key_names(conn: asyncpg.Connection) -> None:
    """Fill in ``name_key`` for workspaces from before it, then index it.

    Two old workspaces whose names a person cannot tell apart ("Research", "research") both
    stay: the first by name keeps the key, the others none (still reached by their exact
    name, see ``workspaces.FIND``), so no data moves and nothing is refused at connect.
    """
    rows = await conn.fetch(
        "SELECT tenant_id, name FROM workspaces WHERE name_key IS NULL AND NOT deleted "
        "ORDER BY name, tenant_id"
    )
    if rows:
        taken = {
            r["name_key"]
            for r in await conn.fetch("SELECT name_key FROM workspaces WHERE name_key IS NOT NULL")
        }
        keyed: list[tuple[UUID, str]] = []
        for row in rows:
            key = name_key(row["name"])
            if key not in taken:
                taken.add(key)
                keyed.append((row["tenant_id"], key))
        await conn.executemany("UPDATE workspaces SET name_key = $2 WHERE tenant_id = $1", keyed)
    await conn.execute(_NAME_KEY_INDEX)
