"""The PostgreSQL adapter under the compliance suite, against a real server."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from core.stores.compliance import ChunkStoreCompliance, corpus_chunks, snapshot
from core.stores.port import ChunkStore, Workspace
from core.stores.postgres import PostgresChunkStore
from core.tokenize import Profile


@pytest.fixture(scope="module")
def database_url(both_database_urls: str) -> str:
    """This module runs on the CI's PostgreSQL 15 and on the embedded PostgreSQL 18."""
    return both_database_urls


class TestPostgresChunkStore(ChunkStoreCompliance):
    @pytest.fixture
    async def store(self, pg_store: PostgresChunkStore) -> ChunkStore:
        return pg_store


async def test_the_postgres_store_satisfies_the_port(pg_store: PostgresChunkStore) -> None:
    assert isinstance(pg_store, ChunkStore)


async def test_a_schema_name_that_is_not_an_identifier_is_refused(database_url: str) -> None:
    with pytest.raises(ValueError, match="schema"):
        await PostgresChunkStore.connect(database_url, schema='x"; DROP TABLE passages; --')


async def test_connecting_twice_to_one_schema_keeps_its_data(
    database_url: str, pg_schema: str, pg_store: PostgresChunkStore
) -> None:
    tenant = uuid.uuid4()
    await pg_store.upsert_many(corpus_chunks(tenant))
    again = await PostgresChunkStore.connect(database_url, schema=pg_schema)
    try:
        assert (await again.corpus_summary(tenant)).passages == len(corpus_chunks(tenant))
    finally:
        await again.close()


async def test_every_key_and_unique_index_leads_with_tenant_id_so_citus_can_distribute_by_it(
    database_url: str, pg_schema: str, pg_store: PostgresChunkStore
) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        constraints = await conn.fetch(
            """
            SELECT c.conrelid::regclass::text AS tab, c.conname, c.contype::text AS contype,
                   (SELECT array_agg(a.attname ORDER BY k.ord)
                    FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
                    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
                   ) AS columns
            FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
            WHERE n.nspname = $1 AND c.contype IN ('p', 'u', 'f')
            """,
            pg_schema,
        )
        unique_indexes = await conn.fetch(
            """
            SELECT i.indexrelid::regclass::text AS name, a.attname AS first
            FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
            WHERE n.nspname = $1 AND i.indisunique
            """,
            pg_schema,
        )
        tables = await conn.fetch(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = $1 AND c.relkind = 'r'",
            pg_schema,
        )
        without_tenant = await conn.fetch(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = $1 AND c.relkind = 'r' AND NOT EXISTS (SELECT 1 FROM "
            "pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id')",
            pg_schema,
        )
    finally:
        await conn.close()
    assert len(tables) >= 6
    assert [r["relname"] for r in without_tenant] == []
    assert {r["contype"] for r in constraints} >= {"p"}
    leading = [(r["tab"], r["conname"], r["columns"][0]) for r in constraints]
    assert [c for c in leading if c[2] != "tenant_id"] == []
    assert unique_indexes
    assert [(r["name"], r["first"]) for r in unique_indexes if r["first"] != "tenant_id"] == []


#: passage_terms as databases created before bulk loading have it (two indexes, a foreign key).
OLD_PASSAGE_TERMS = """
CREATE TABLE passage_terms (
    tenant_id uuid NOT NULL,
    chunk_id text COLLATE "C" NOT NULL,
    term text COLLATE "C" NOT NULL,
    tf integer NOT NULL CHECK (tf > 0),
    PRIMARY KEY (tenant_id, chunk_id, term),
    FOREIGN KEY (tenant_id, chunk_id) REFERENCES passages (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX passage_terms_by_term ON passage_terms (tenant_id, term) INCLUDE (chunk_id, tf);
"""


async def test_a_database_from_before_bulk_loading_is_migrated_and_keeps_its_passages(
    database_url: str,
) -> None:
    schema = f"t_{uuid.uuid4().hex}"
    tenant = uuid.uuid4()
    chunks = corpus_chunks(tenant)
    store = await PostgresChunkStore.connect(database_url, schema=schema)
    conn = await asyncpg.connect(database_url, server_settings={"search_path": schema})
    try:
        await store.upsert_many(chunks)
        expected = await snapshot(store, tenant)
        await conn.execute("ALTER TABLE passage_terms RENAME TO new_terms")
        await conn.execute(OLD_PASSAGE_TERMS)
        await conn.execute("INSERT INTO passage_terms SELECT * FROM new_terms")
        await conn.execute("DROP TABLE new_terms")
        await store.close()
        store = await PostgresChunkStore.connect(database_url, schema=schema)
        indexes = await conn.fetch(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'passage_terms'",
            schema,
        )
        assert [r["indexdef"].split(" USING ")[1] for r in indexes] == [
            "btree (tenant_id, term, chunk_id) INCLUDE (tf)"
        ]
        assert (
            await conn.fetchval(
                "SELECT count(*) FROM pg_constraint WHERE conrelid = 'passage_terms'::regclass "
                "AND contype = 'f'"
            )
            == 0
        )
        assert await snapshot(store, tenant) == expected
        assert await store.delete_by_source("doc-a", tenant) == 2
        assert (
            await conn.fetchval(
                "SELECT count(*) FROM passage_terms p WHERE NOT EXISTS (SELECT 1 FROM passages q "
                "WHERE q.tenant_id = p.tenant_id AND q.id = p.chunk_id)"
            )
            == 0
        )
    finally:
        await store.close()
        await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await conn.close()


async def test_a_database_from_before_sign_in_opens_with_ownerless_workspaces_that_take_members(
    database_url: str,
) -> None:
    schema = f"t_{uuid.uuid4().hex}"
    tenant = uuid.uuid4()
    conn = await asyncpg.connect(database_url)
    try:
        # The workspaces table as the schema of 2026-11 had it: no owner, no members table.
        await conn.execute(f'CREATE SCHEMA "{schema}"')
        await conn.execute(
            f'CREATE TABLE "{schema}".workspaces (tenant_id uuid PRIMARY KEY, '
            "name text COLLATE \"C\" NOT NULL, profile text NOT NULL DEFAULT 'plain')"
        )
        await conn.execute(
            f"INSERT INTO \"{schema}\".workspaces VALUES ($1, 'old', 'english')",  # noqa: S608
            tenant,
        )
        store = await PostgresChunkStore.connect(database_url, schema=schema)
        try:
            assert await store.list_workspaces() == [
                Workspace(tenant_id=tenant, name="old", profile=Profile.ENGLISH)
            ]
            assert await store.add_member(tenant, "ada@example.org") is True
            found = await store.get_workspace(tenant)
            assert found is not None and (found.owner, found.members) == (
                None,
                ("ada@example.org",),
            )
        finally:
            await store.close()
    finally:
        await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await conn.close()
