"""The PostgreSQL adapter under the compliance suite, against a real server."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from core.domain.entities import EntityCorrection
from core.domain.tokenize import Profile
from core.stores.memory import InMemoryChunkStore
from core.stores.port import (
    ChunkStore,
    NameTaken,
    StoreInconsistent,
    Workspace,
    open_workspace,
    passage_terms,
)
from core.stores.postgres import MERGE_FACTOR, PREFETCH_ROWS, PostgresChunkStore, citus
from core.stores.postgres.schema import set_schema_version
from core.stores.postgres.staging import WORKER_PASSAGES
from tests.stores.compliance import ChunkStoreCompliance, corpus_chunks, make_chunk, snapshot
from tests.stores.compliance_analysis import AnalysisCompliance
from tests.stores.compliance_filters import FilterCompliance
from tests.stores.compliance_judging import JudgingCompliance
from tests.stores.test_postgres_failures import assert_derived_tables_agree


@pytest.fixture(scope="module")
def database_url(both_database_urls: str) -> str:
    """This module runs on the CI's PostgreSQL 15 and on the embedded PostgreSQL 18."""
    return both_database_urls


class TestPostgresChunkStore(
    ChunkStoreCompliance, JudgingCompliance, FilterCompliance, AnalysisCompliance
):
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


#: passage_terms as databases created before bulk loading have it (two indexes, a foreign key);
#: databases from bulk loading until posting blocks had one row per posting too.
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
#: What a previous version's schema did not have: ordinals, blocks, segments, generations.
TO_PREVIOUS_LAYOUT = """
DROP TABLE postings, segments;
ALTER TABLE passages DROP COLUMN ordinal;
ALTER TABLE tenant_counters DROP COLUMN next_ordinal, DROP COLUMN generation;
"""


async def never_distributed(conn: asyncpg.Connection) -> None:
    """The schema as a previous version left it: never distributed (on a Citus coordinator,
    the tables back to local ones with their rows) and never stamped with a version."""
    if await citus.is_coordinator(conn):
        for table in await citus.store_tables(conn):
            if await conn.fetchval(
                "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = to_regclass($1)",
                table,
            ):
                await conn.execute(
                    "SELECT undistribute_table($1::text::regclass, "
                    "cascade_via_foreign_keys => true)",
                    table,
                )
    await conn.execute(f"COMMENT ON TABLE {citus.ANCHOR} IS NULL")


async def test_a_database_from_a_previous_version_is_migrated_and_keeps_its_passages(
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
        await store.close()
        await never_distributed(conn)
        await conn.execute(TO_PREVIOUS_LAYOUT)
        await conn.execute(OLD_PASSAGE_TERMS)
        await conn.copy_records_to_table(
            "passage_terms",
            records=[
                (tenant, chunk.id, term, tf)
                for chunk in chunks
                for term, tf in passage_terms(chunk.text)[1].items()
            ],
        )
        store = await PostgresChunkStore.connect(database_url, schema=schema)
        assert await conn.fetchval("SELECT to_regclass('passage_terms')") is None
        if await citus.is_coordinator(conn):
            # Distributed in place, with the rows the snapshot below compares.
            distributed = await conn.fetchval(
                "SELECT count(*) FROM pg_dist_partition "
                "WHERE logicalrelid = ANY(SELECT to_regclass(t) FROM unnest($1::text[]) t)",
                tables := await citus.store_tables(conn),
            )
            assert distributed == len(tables)
        assert await snapshot(store, tenant) == expected
        assert await store.delete_by_source("doc-a", tenant) == 2
        await store.upsert_many([make_chunk(tenant, "doc-z", "a new ocean passage", 0)])
        await assert_derived_tables_agree(conn, tenant)
        assert len(await store.lexical_candidates(["ocean"], tenant, 10)) > 0
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


async def test_a_database_from_before_the_name_table_finds_its_workspaces_by_name(
    database_url: str,
) -> None:
    schema = f"t_{uuid.uuid4().hex}"
    kept, gone = uuid.uuid4(), uuid.uuid4()
    store = await PostgresChunkStore.connect(database_url, schema=schema)
    conn = await asyncpg.connect(database_url, server_settings={"search_path": schema})
    try:
        await store.upsert_workspace(Workspace(tenant_id=kept, name="Research"))
        await store.upsert_workspace(Workspace(tenant_id=gone, name="Archive"))
        await store.delete_workspace(gone)
        await store.close()
        # As the previous version left it: no name table (on Citus, distributed as before).
        await conn.execute("DROP TABLE workspace_names")
        await conn.execute(f"COMMENT ON TABLE {citus.ANCHOR} IS NULL")
        store = await PostgresChunkStore.connect(database_url, schema=schema)
        found = await store.find_workspace("research")
        assert found is not None and found.tenant_id == kept
        assert await store.find_workspace("Archive") is None
        with pytest.raises(NameTaken):
            await store.upsert_workspace(Workspace(tenant_id=uuid.uuid4(), name="RESEARCH"))
        # The next version's connect: on Citus the coordinator now holds the name table's
        # shard, which the schema's catalogue read must not take for a table of its own.
        await store.close()
        await conn.execute(f"COMMENT ON TABLE {citus.ANCHOR} IS NULL")
        store = await PostgresChunkStore.connect(database_url, schema=schema)
        assert await store.find_workspace("Research") == found
    finally:
        await store.close()
        await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await conn.close()


async def test_a_connect_to_a_current_database_takes_no_lock_that_waits_for_open_reads(
    pg_store: PostgresChunkStore, database_url: str, pg_schema: str
) -> None:
    """Another process opening the store (a ``load``, an app starting) runs no DDL on a schema
    stamped current: ``ADD COLUMN IF NOT EXISTS`` took an ACCESS EXCLUSIVE lock even for a
    column that exists, waited behind every open read, and every later read waited behind it
    (searches froze 0.1-1 s at each connect)."""
    reader = await asyncpg.connect(database_url, server_settings={"search_path": pg_schema})
    try:
        async with reader.transaction():  # a read left open: its locks held till it ends
            await reader.fetchval("SELECT count(*) FROM passages")
            await reader.fetchval("SELECT count(*) FROM workspaces")
            again = await asyncio.wait_for(
                PostgresChunkStore.connect(database_url, schema=pg_schema), 20
            )
            await again.close()
    finally:
        await reader.close()


async def test_rows_beyond_the_prefetched_ones_are_looked_up_by_id_with_the_same_text(
    pg_store: PostgresChunkStore,
) -> None:
    tenant = uuid.uuid4()
    chunks = [make_chunk(tenant, f"s{i}", f"ocean passage number {i}", 0) for i in range(250)]
    memory = InMemoryChunkStore()
    for store in (pg_store, memory):
        await store.replace_sources(tenant, [(c.source_id, [c]) for c in chunks])
    found = await pg_store.lexical_candidates(["ocean", "number"], tenant, 1_000)
    assert len(found) == 250 > PREFETCH_ROWS
    assert found == await memory.lexical_candidates(["ocean", "number"], tenant, 1_000)


async def test_a_read_of_many_candidates_names_only_the_passages_it_prefetches(
    pg_store: PostgresChunkStore,
) -> None:
    """The prefetch names its ~100 passages without building every candidate's id: over the
    image's id pool that column is a million references (~150 ms in one loop step at 1M)."""
    tenant = uuid.uuid4()
    chunks = [make_chunk(tenant, f"s{i}", f"ocean passage number {i}", 0) for i in range(250)]
    await pg_store.replace_sources(tenant, [(c.source_id, [c]) for c in chunks])
    found = await pg_store.lexical_candidates(["ocean"], tenant, 1_000)
    assert len(found) > PREFETCH_ROWS
    assert found.id_rows is not None
    assert "ids" not in vars(found)
    picked = found.ids_at([0, 7, 249]).tolist()
    assert picked == [found.ids[0], found.ids[7], found.ids[249]]


async def test_a_passage_deleted_after_the_read_is_reported_not_invented(
    pg_store: PostgresChunkStore,
) -> None:
    tenant = uuid.uuid4()
    chunks = [make_chunk(tenant, f"s{i}", f"ocean passage number {i}", 0) for i in range(250)]
    await pg_store.replace_sources(tenant, [(c.source_id, [c]) for c in chunks])
    found = await pg_store.lexical_candidates(["ocean"], tenant, 1_000)
    await pg_store.delete_by_source(found.chunks([249])[0].source_id, tenant)
    with pytest.raises(LookupError, match="deleted after this search read it; search again"):
        found.chunks([249])


async def test_merged_segments_and_deleted_passages_read_exactly_as_the_memory_store(
    pg_store: PostgresChunkStore, database_url: str, pg_schema: str
) -> None:
    tenant = uuid.uuid4()
    memory = InMemoryChunkStore()
    terms = ["ocean", "tides", "moon", "river", "w3"]
    for round_ in range(3 * MERGE_FACTOR):
        batch = [
            make_chunk(tenant, f"doc{round_ % 7}", f"{terms[(round_ + i) % 5]} w{i} v{round_}", i)
            for i in range(1 + round_ % 4)
        ]
        for store in (pg_store, memory):
            await store.replace_source(f"doc{round_ % 7}", tenant, batch)
        if round_ % 5 == 4:
            for store in (pg_store, memory):
                await store.delete_by_source(f"doc{round_ % 3}", tenant)
        for limit in (0, 2, 1_000):
            assert await pg_store.lexical_candidates(
                terms, tenant, limit
            ) == await memory.lexical_candidates(terms, tenant, limit)
    conn = await asyncpg.connect(database_url, server_settings={"search_path": pg_schema})
    try:
        tiers = await conn.fetch(
            "SELECT length(passages::text) AS tier, count(*) AS n FROM segments "
            "WHERE tenant_id = $1 GROUP BY 1",
            tenant,
        )
        assert tiers and all(r["n"] < MERGE_FACTOR for r in tiers)
        await assert_derived_tables_agree(conn, tenant)
    finally:
        await conn.close()


async def test_a_merge_drops_the_postings_of_deleted_passages(
    pg_store: PostgresChunkStore, database_url: str, pg_schema: str
) -> None:
    """Issue 20 item 6: a deleted passage's postings stay in its blocks only until a merge
    takes in its segment; the merge writes the blocks without them and stops counting them
    dead (a term left with none loses its block), and every read stays the memory store's."""
    tenant = uuid.uuid4()
    memory = InMemoryChunkStore()
    terms = ["ocean", "tides", "gone"]
    for i in range(MERGE_FACTOR):
        text = f"ocean tides w{i}" + (" gone" if i == 2 else "")
        for store in (pg_store, memory):
            await store.replace_source(f"s{i}", tenant, [make_chunk(tenant, f"s{i}", text)])
        if i == MERGE_FACTOR - 2:  # before the last segment fills the tier: then it merges
            for store in (pg_store, memory):
                await store.delete_by_source("s2", tenant)
                await store.delete_by_source("s5", tenant)
    conn = await asyncpg.connect(database_url, server_settings={"search_path": pg_schema})
    try:
        segments = await conn.fetch("SELECT passages FROM segments WHERE tenant_id = $1", tenant)
        assert [r["passages"] for r in segments] == [MERGE_FACTOR - 2]
        held = await conn.fetchval(
            "SELECT sum(octet_length(ordinals)) / 4 FROM postings WHERE tenant_id = $1", tenant
        )
        assert held == 3 * (MERGE_FACTOR - 2)  # ocean, tides and one w-term each; no "gone"
        assert (
            await conn.fetchval("SELECT count(*) FROM term_dead WHERE tenant_id = $1", tenant) == 0
        )
        await assert_derived_tables_agree(conn, tenant)
    finally:
        await conn.close()
    for limit in (0, 2, 1_000):
        assert await pg_store.lexical_candidates(
            [*terms, "w2", "w5", "w7"], tenant, limit
        ) == await memory.lexical_candidates([*terms, "w2", "w5", "w7"], tenant, limit)
    assert await pg_store.corpus_summary(tenant) == await memory.corpus_summary(tenant)
    assert await pg_store.terms_with_prefix("", tenant, 50) == await memory.terms_with_prefix(
        "", tenant, 50
    )


async def test_a_big_batch_partly_stored_before_adds_only_its_new_passages_postings(
    pg_store: PostgresChunkStore, database_url: str, pg_schema: str
) -> None:
    """A batch staged in the worker carries its blocks, not a tf per passage: when some of its
    passages are stored already, the new ones' postings are cut out of those blocks."""
    tenant = uuid.uuid4()
    memory = InMemoryChunkStore()
    size = WORKER_PASSAGES
    first = [make_chunk(tenant, f"s{i}", f"ocean w{i % 97} v{i}") for i in range(size)]
    more = [make_chunk(tenant, f"s{i}", f"tides w{i % 89} v{i}") for i in range(size, size + 300)]
    for store in (pg_store, memory):
        await store.upsert_many(first)
        await store.upsert_many(first[::2] + more)
    terms = ["ocean", "tides", "w3", "v2", "v1001"]
    for limit in (0, 10, 2_000):
        assert await pg_store.lexical_candidates(
            terms, tenant, limit
        ) == await memory.lexical_candidates(terms, tenant, limit)
    conn = await asyncpg.connect(database_url, server_settings={"search_path": pg_schema})
    try:
        await assert_derived_tables_agree(conn, tenant)
    finally:
        await conn.close()


async def test_counters_that_disagree_with_the_passages_are_said_plainly_and_repaired(
    pg_store: PostgresChunkStore, database_url: str, pg_schema: str
) -> None:
    """The IndexError of issue 21 (counters 535, passages 5,537): never expected, since each
    write keeps them in one transaction, but if it happens a read says so and repair fixes it."""
    tenant = (await open_workspace(pg_store, "drifted")).tenant_id
    await pg_store.replace_sources(
        tenant, [(f"d{i}", [make_chunk(tenant, f"d{i}", f"wing drag {i}")]) for i in range(6)]
    )
    conn = await asyncpg.connect(database_url, server_settings={"search_path": pg_schema})
    try:
        await conn.execute(
            "UPDATE tenant_counters SET passages = 2, next_ordinal = 3, generation = 0 "
            "WHERE tenant_id = $1",
            tenant,
        )
        await conn.execute("DELETE FROM postings WHERE tenant_id = $1 AND term = 'drag'", tenant)
        with pytest.raises(StoreInconsistent, match="python -m core db repair"):
            await pg_store.lexical_candidates(["wing"], tenant, 10)
        fixed = await pg_store.repair()
        assert len(fixed) == 1 and str(tenant) in fixed[0]
        found = await pg_store.lexical_candidates(["wing", "drag"], tenant, 10)
        assert found.stats.n_docs == 6 and found.stats.doc_frequencies == {"wing": 6, "drag": 6}
        await assert_derived_tables_agree(conn, tenant)
        assert await pg_store.repair() == []  # nothing left to fix
    finally:
        await conn.close()


async def test_repair_removes_what_a_deleted_workspace_left_behind(
    pg_store: PostgresChunkStore, database_url: str, pg_schema: str
) -> None:
    tenant = (await open_workspace(pg_store, "left behind")).tenant_id
    await pg_store.delete_workspace(tenant)
    conn = await asyncpg.connect(database_url, server_settings={"search_path": pg_schema})
    try:  # rows written under the deleted id by a version without the workspace lock
        await conn.execute(
            "INSERT INTO tenant_counters (tenant_id, passages, tokens) VALUES ($1, 1, 2)", tenant
        )
        assert len(await pg_store.repair()) == 1
        assert (
            await conn.fetchval("SELECT count(*) FROM tenant_counters WHERE tenant_id = $1", tenant)
            == 0
        )
    finally:
        await conn.close()


async def test_a_database_that_kept_df_in_a_table_reads_the_same_df_from_its_blocks(
    pg_store: PostgresChunkStore, database_url: str, pg_schema: str
) -> None:
    """Before df was derived from the blocks every write upserted it into term_df; at connect
    what an old database's blocks hold beyond it becomes dead, term_df goes, and every df,
    the vocabulary and the ranking read as before (a term whose only passage went included)."""
    tenant = (await open_workspace(pg_store, "old df")).tenant_id
    await pg_store.replace_sources(
        tenant, [(f"d{i}", [make_chunk(tenant, f"d{i}", f"wing drag n{i}")]) for i in range(6)]
    )
    await pg_store.delete_by_source("d0", tenant)
    before = await pg_store.terms_with_prefix("", tenant, 100)
    summary = await pg_store.corpus_summary(tenant)
    ranked = await pg_store.lexical_candidates(["wing", "n0", "n1"], tenant, 10)
    assert {t.term for t in before} == {"wing", "drag", "n1", "n2", "n3", "n4", "n5"}
    conn = await asyncpg.connect(database_url, server_settings={"search_path": pg_schema})
    try:  # as the old version left it: each live term's df in term_df, nothing counted dead
        await conn.execute(
            'CREATE TABLE term_df (tenant_id uuid NOT NULL, term text COLLATE "C" NOT NULL, '
            "df integer NOT NULL CHECK (df > 0), PRIMARY KEY (tenant_id, term))"
        )
        if await citus.is_coordinator(conn):  # an old cluster: term_df distributed
            await citus.distribute(conn)
        await set_schema_version(conn, "old")  # and the old version's stamp
        await conn.executemany(
            "INSERT INTO term_df VALUES ($1, $2, $3)", [(tenant, t.term, t.df) for t in before]
        )
        await conn.execute("TRUNCATE term_dead")
        again = await PostgresChunkStore.connect(database_url, schema=pg_schema)
        try:
            assert await again.terms_with_prefix("", tenant, 100) == before
            assert await again.corpus_summary(tenant) == summary
            found = await again.lexical_candidates(["wing", "n0", "n1"], tenant, 10)
            assert found.stats == ranked.stats
        finally:
            await again.close()
        assert await conn.fetchval("SELECT to_regclass('term_df')") is None
        await assert_derived_tables_agree(conn, tenant)
    finally:
        await conn.close()


async def test_a_database_from_before_entity_corrections_gains_their_table_at_connect(
    pg_store: PostgresChunkStore, database_url: str, pg_schema: str
) -> None:
    """A database stamped by a version without ``entity_corrections`` gets the table when the
    store connects, and its workspaces take corrections at once."""
    tenant = (await open_workspace(pg_store, "before corrections")).tenant_id
    conn = await asyncpg.connect(database_url, server_settings={"search_path": pg_schema})
    try:  # as the old version left it: no table, the old version's stamp
        await conn.execute("DROP TABLE entity_corrections")
        await set_schema_version(conn, "old")
        again = await PostgresChunkStore.connect(database_url, schema=pg_schema)
        try:
            correction = EntityCorrection(entity_id=uuid.uuid4(), merged_into=uuid.uuid4())
            await again.correct_entity(correction, tenant)
            assert await again.entity_corrections(tenant) == [correction]
        finally:
            await again.close()
        assert await conn.fetchval("SELECT to_regclass('entity_corrections')") is not None
    finally:
        await conn.close()


async def test_the_servers_processes_serving_a_store_run_at_the_niceness_it_asks_for(
    pg_store: PostgresChunkStore,
) -> None:
    """``load`` asks it of the embedded server (on this machine, ours): every connection the
    store uses from then on is served by a process at that niceness; earlier ones too."""
    import os

    tenant = uuid.uuid4()
    await pg_store.upsert_many(corpus_chunks(tenant))
    pg_store.lower_backend_priority(7)
    served: set[int] = set()

    async def call() -> None:
        async with pg_store._pool.acquire() as conn:
            served.add(conn.get_server_pid())
            await pg_store.passage_count(tenant)

    await asyncio.gather(*(call() for _ in range(3)))
    assert served
    assert {os.getpriority(os.PRIO_PROCESS, pid) for pid in served} == {7}


async def test_a_write_brings_the_cached_image_up_to_date_without_reading_it_again(
    database_url: str, pg_schema: str, pg_store: PostgresChunkStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 20 item 6: after a write (insert, replace, delete) the next search reads no whole
    image again; what it ranks with equals an image read afresh, and the ranking a store with
    no cache gives."""
    from core.domain.ranking import rank_chunks
    from core.stores.postgres import query_read as image_module

    reads: list[int] = []
    real = image_module.Image.load.__func__  # type: ignore[attr-defined]

    async def counted(cls: type, conn: asyncpg.Connection, *args: object) -> object:
        reads.append(1)
        return await real(cls, conn, *args)

    monkeypatch.setattr(image_module.Image, "load", classmethod(counted))
    tenant = uuid.uuid4()
    terms = ["ocean", "coast", "tides", "rivers", "glaciers", "wing"]
    fresh = await PostgresChunkStore.connect(database_url, schema=pg_schema, image_cache_passages=0)

    async def same_as_fresh() -> None:
        ours = rank_chunks(terms, await pg_store.lexical_candidates(terms, tenant, 1000), 50)
        assert ours
        reads_before = len(reads)
        theirs = rank_chunks(terms, await fresh.lexical_candidates(terms, tenant, 1000), 50)
        assert [(r.chunk.id, r.score) for r in ours] == [(r.chunk.id, r.score) for r in theirs]
        del reads[reads_before:]  # the fresh store's own read is not ours
        cached = pg_store._images.get(tenant)
        assert cached is not None
        async with pg_store._pool.acquire() as conn, conn.transaction():
            totals = await conn.fetchrow(
                "SELECT passages, tokens, next_ordinal, generation FROM tenant_counters "
                "WHERE tenant_id = $1",
                tenant,
            )
            whole = await real(image_module.Image, conn, tenant, totals)
        assert cached.same_as(whole)  # generation, ranks, id order, live ids and lengths

    try:
        await pg_store.upsert_many(corpus_chunks(tenant))
        await same_as_fresh()
        assert len(reads) == 1  # the first search reads the image whole, once
        more = [make_chunk(tenant, f"new-{i}", f"wing ocean {'coast ' * i}") for i in range(30)]
        await pg_store.replace_sources(tenant, [(f"new-{i}", [more[i]]) for i in range(30)])
        await same_as_fresh()
        await pg_store.replace_source("doc-a", tenant, [make_chunk(tenant, "doc-a", "tides")])
        await same_as_fresh()
        assert await pg_store.delete_by_source("doc-c", tenant) == 2
        await same_as_fresh()
        found = rank_chunks(
            ["rivers"], await pg_store.lexical_candidates(["rivers"], tenant, 99), 9
        )
        assert found and "doc-c" not in {r.chunk.source_id for r in found}
        assert len(reads) == 1  # four writes, no whole image read again
        await fresh.upsert_many([make_chunk(tenant, "elsewhere", "ocean wing")])  # another writer
        await same_as_fresh()
        assert len(reads) == 2  # not this store's write: its image is read again, whole
    finally:
        await fresh.close()
