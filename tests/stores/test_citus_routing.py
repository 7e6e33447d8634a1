"""On a Citus cluster, every store call that names one workspace touches one shard group.

Measured with Citus' own instrument: ``citus.log_remote_commands`` makes the coordinator
report, as a NOTICE, every command it sends to a worker and to which server. The store's
pool is opened with that setting and a listener on each connection; each call's commands
name the shards they touch (``passages_102008``), and Citus' catalogue gives each shard its
shard group. A call routed to one node sends commands for shards of the workspace's group
only; a fan-out names shards of several groups. EXPLAIN's task count would show the same per
statement, but cannot see inside a write's transaction (staging tables, locks); this sees
every command of the call.

The calls are those of the port (every method, checked against ``ChunkStore``), so a new
store operation must be added here and routed before it passes. Names are found through the
reference table ``workspace_names`` (a copy on every node, the coordinator's read locally):
``find_workspace`` and the name check inside ``upsert_workspace`` touch the workspace's own
group and no other, and looking up a name nobody has sends nothing to a worker. Only a
creation, rename or deletion writes the name table (its one shard, on every node). What fans
out by nature is ``list_workspaces`` (asserted, so the test also shows the instrument sees
fan-outs); docs/scaling.md says what it costs.
"""

from __future__ import annotations

import inspect
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg
import pytest

from core.domain.entities import Entity, EntityCorrection
from core.domain.judging import SavedRun
from core.domain.tokenize import Profile
from core.stores.port import ChunkStore, Workspace
from core.stores.postgres import PostgresChunkStore, citus
from core.stores.postgres.schema import connection_settings
from tests.stores.compliance import make_chunk
from tests.stores.compliance_judging import judgment, query_set, saved_run

pytestmark = [
    pytest.mark.citus,
    # The pool warns that a connection goes back with its listener; it is meant to keep it.
    pytest.mark.filterwarnings("ignore:.*active log listener"),
]

#: A shard in a command the coordinator sends (a table's name and the shard id; also the
#: intermediate results of an INSERT ... SELECT, named after their target shard); the ids
#: are checked against the catalogue, so a transaction's name never passes for a shard.
_SHARD = re.compile(r"\b[a-z][a-z_]*_(\d{6,})\b")
#: The worker a command went to, from the NOTICE's detail.
_SERVER = re.compile(r"on server \S+@([\d.]+:\d+)")
#: Port methods that name no workspace (or are not a call to the database).
_NOT_PER_WORKSPACE = {"list_workspaces", "close"}
#: The calls that change a workspace's name, so write the name table on every node.
_NAMING = {"upsert_workspace", "delete_workspace"}


@pytest.fixture(scope="module")
def database_url(citus_database_url: str) -> str:
    return citus_database_url


@dataclass
class Trace:
    """Every command the coordinator sent to a worker, with its server, as reported."""

    commands: list[tuple[str, str]] = field(default_factory=list)

    def listen(self, _conn: Any, message: Any) -> None:
        if str(message.message).startswith("issuing "):
            self.commands.append((str(message.message), str(message.detail or "")))


async def traced_connect(
    database_url: str, schema: str, trace: Trace, monkeypatch: pytest.MonkeyPatch
) -> PostgresChunkStore:
    """A store on the cluster whose every pooled connection reports its remote commands."""
    real_create_pool = asyncpg.create_pool

    async def setup(conn: asyncpg.Connection) -> None:
        # Per acquire: the pool's reset on release runs RESET ALL and drops listeners.
        await conn.execute("SET citus.log_remote_commands = on")
        conn.add_log_listener(trace.listen)

    def create_pool(*args: Any, **kwargs: Any) -> Any:
        own = kwargs.pop("setup", None)  # the store's own (it renices a load's backends)

        async def both(conn: asyncpg.Connection) -> None:
            if own is not None:
                await own(conn)
            await setup(conn)

        return real_create_pool(*args, setup=both, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(asyncpg, "create_pool", create_pool)
        return await PostgresChunkStore.connect(database_url, schema=schema)


@pytest.fixture
async def traced(
    database_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[PostgresChunkStore, Trace]]:
    trace = Trace()
    store = await traced_connect(database_url, pg_schema, trace, monkeypatch)
    yield store, trace
    await store.close()


@dataclass(frozen=True)
class Shards:
    """The schema's shards: distributed ones by shard group, and the reference tables' ones."""

    groups: dict[int, int]
    reference: frozenset[int]


async def shard_groups(database_url: str, schema: str) -> Shards:
    """Shard id -> the index of its shard group (co-located shards share one), and the ids
    of the reference tables' shards."""
    conn = await asyncpg.connect(database_url, server_settings={"search_path": schema})
    try:
        rows = await conn.fetch(
            "SELECT s.shardid, s.shardminvalue::bigint AS lo FROM pg_dist_shard s "
            "JOIN pg_dist_partition p USING (logicalrelid) "
            "WHERE p.colocationid = (SELECT colocationid FROM pg_dist_partition "
            "WHERE logicalrelid = 'workspaces'::regclass)"
        )
        reference = await conn.fetch(
            "SELECT shardid FROM pg_dist_shard "
            "WHERE logicalrelid = ANY(SELECT to_regclass(t) FROM unnest($1::text[]) t)",
            list(citus.REFERENCE),
        )
    finally:
        await conn.close()
    return Shards(
        {row["shardid"]: row["lo"] for row in rows}, frozenset(r["shardid"] for r in reference)
    )


async def group_of(database_url: str, schema: str, tenant: UUID) -> int:
    conn = await asyncpg.connect(database_url, server_settings={"search_path": schema})
    try:
        return int(
            await conn.fetchval(
                "SELECT shardminvalue::bigint FROM pg_dist_shard WHERE shardid = "
                "get_shard_id_for_distribution_column('workspaces', $1::uuid)",
                tenant,
            )
        )
    finally:
        await conn.close()


@dataclass(frozen=True)
class Touched:
    groups: frozenset[int]
    servers: frozenset[str]
    #: Whether a command went to a reference table's shard (the names, on every node).
    names_written: bool
    #: How many commands went to a worker at all.
    sent: int


async def touched(trace: Trace, shards: Shards, call: Callable[[], Awaitable[Any]]) -> Touched:
    """The shard groups and workers one call sent commands to."""
    start = len(trace.commands)
    await call()
    # ANALYZE after a bulk write is table-wide on one server too: it samples every shard.
    sent = [c for c in trace.commands[start:] if not c[0].startswith("issuing ANALYZE ")]
    shard_ids = {
        int(m)
        for command, _ in sent
        if not command.startswith(("issuing PREPARE TRANSACTION", "issuing COMMIT PREPARED"))
        for m in _SHARD.findall(command)
    }
    unknown = shard_ids - shards.groups.keys() - shards.reference
    assert not unknown, f"shards not of the store's tables: {unknown}"

    def distributed(command: str) -> bool:
        return any(int(m) in shards.groups for m in _SHARD.findall(command))

    # Workers of the commands on distributed shards (a transaction's BEGIN and PREPARE name
    # none; a reference table's copies are on every worker by design).
    servers = {
        m for command, detail in sent if distributed(command) for m in _SERVER.findall(detail)
    }
    return Touched(
        frozenset(shards.groups[s] for s in shard_ids if s in shards.groups),
        frozenset(servers),
        bool(shard_ids & shards.reference),
        len(sent),
    )


def calls(store: ChunkStore, tenant: UUID, other: UUID) -> dict[str, Callable[[], Awaitable[Any]]]:
    """One call of every per-workspace port method, in an order where each has data to touch."""
    entity = Entity(name="Ocean Institute", kind="organisation")
    a = [
        make_chunk(tenant, "a", f"ocean tides passage {i}", i, entity_ids=[entity.entity_id])
        for i in range(3)
    ]
    b = [make_chunk(tenant, "b", "rivers meet the ocean", 0)]
    run: SavedRun = saved_run(tenant)
    return {
        "upsert_workspace": lambda: store.upsert_workspace(
            Workspace(tenant_id=tenant, name=f"w{tenant.hex[:8]}")
        ),
        "find_workspace": lambda: store.find_workspace(f"W{tenant.hex[:8]}"),
        "retired": lambda: store.retired(tenant),
        "upsert_many": lambda: store.upsert_many(a),
        "upsert_entities": lambda: store.upsert_entities([entity], tenant),
        "replace_source": lambda: store.replace_source("b", tenant, b),
        "replace_sources": lambda: store.replace_sources(
            tenant, [("a", a[:2]), ("c", [make_chunk(tenant, "c", "glaciers", 0)])], [entity]
        ),
        "get": lambda: store.get(a[0].id, tenant),
        "get_by_source": lambda: store.get_by_source("a", tenant),
        "get_by_entity": lambda: store.get_by_entity(entity.entity_id, tenant),
        "get_by_sources": lambda: store.get_by_sources(["a", "b"], tenant),
        "source_ids": lambda: store.source_ids([c.id for c in a], tenant),
        "passage_ids_by_source": lambda: store.passage_ids_by_source(["a", "b"], tenant),
        "lexical_candidates": lambda: store.lexical_candidates(["ocean", "tides"], tenant, 10),
        "list_sources": lambda: store.list_sources(tenant),
        "source_passage_counts": lambda: store.source_passage_counts(tenant),
        "list_entities": lambda: store.list_entities(tenant),
        "corpus_summary": lambda: store.corpus_summary(tenant),
        "passage_count": lambda: store.passage_count(tenant),
        "doc_lengths": lambda: store.doc_lengths(tenant),
        "terms_with_prefix": lambda: store.terms_with_prefix("oc", tenant, 10),
        "get_entities": lambda: store.get_entities([entity.entity_id], tenant),
        "correct_entity": lambda: store.correct_entity(
            EntityCorrection(entity_id=entity.entity_id, hidden=True), tenant
        ),
        "entity_corrections": lambda: store.entity_corrections(tenant),
        "get_workspace": lambda: store.get_workspace(tenant),
        "add_member": lambda: store.add_member(tenant, "ada@example.org"),
        "set_owner": lambda: store.set_owner(tenant, "bob@example.org"),
        "remove_member": lambda: store.remove_member(tenant, "ada@example.org"),
        "reindex": lambda: store.reindex(tenant, Profile.ENGLISH),
        "generation": lambda: store.generation(tenant),
        "save_query_set": lambda: store.save_query_set(query_set(tenant)),
        "list_query_sets": lambda: store.list_query_sets(tenant),
        "get_query_set": lambda: store.get_query_set(tenant, "core"),
        "put_judgments": lambda: store.put_judgments(tenant, [judgment(tenant, chunk=a[0].id)]),
        "list_judgments": lambda: store.list_judgments(tenant, ["wing"]),
        "delete_judgment": lambda: store.delete_judgment(tenant, "wing", a[0].id, "local"),
        "save_run": lambda: store.save_run(run),
        "list_runs": lambda: store.list_runs(tenant),
        "get_run": lambda: store.get_run(tenant, run.run_id),
        "delete_run": lambda: store.delete_run(tenant, run.run_id),
        "delete_query_set": lambda: store.delete_query_set(tenant, "core"),
        "delete_by_source": lambda: store.delete_by_source("c", tenant),
        "delete_by_tenant": lambda: store.delete_by_tenant(tenant),
        "delete_workspace": lambda: store.delete_workspace(tenant),
    }


def test_the_routing_test_calls_every_per_workspace_method_of_the_port() -> None:
    port = {
        name
        for name, _ in inspect.getmembers(ChunkStore, inspect.isfunction)
        if not name.startswith("_")
    }
    store: Any = object()
    assert set(calls(store, uuid.uuid4(), uuid.uuid4())) == port - _NOT_PER_WORKSPACE


async def test_every_call_naming_one_workspace_touches_only_that_workspaces_shard_group(
    traced: tuple[PostgresChunkStore, Trace], database_url: str, pg_schema: str
) -> None:
    store, trace = traced
    # Two workspaces in different shard groups, so a statement that reached the other's
    # shards (or every shard) is seen as a second group.
    tenant, other = uuid.uuid4(), uuid.uuid4()
    while await group_of(database_url, pg_schema, other) == await group_of(
        database_url, pg_schema, tenant
    ):
        other = uuid.uuid4()
    await store.upsert_workspace(Workspace(tenant_id=other, name=f"o{other.hex[:8]}"))
    await store.upsert_many([make_chunk(other, "a", "ocean tides elsewhere", 0)])
    shards = await shard_groups(database_url, pg_schema)
    mine = await group_of(database_url, pg_schema, tenant)
    routed = {}
    for name, call in calls(store, tenant, other).items():
        routed[name] = await touched(trace, shards, call)
    wrong = {
        name: f"{len(t.groups)} shard groups on {len(t.servers)} workers"
        for name, t in routed.items()
        if not t.groups <= {mine} or len(t.servers) > 1
    }
    assert wrong == {}
    # Each call reached the workspace's shards at all (the instrument is on).
    assert all(t.groups == {mine} for t in routed.values())
    # The names are written by what changes a name, and read where they are (no command).
    assert {n for n, t in routed.items() if t.names_written} == _NAMING


async def test_looking_up_a_name_nobody_has_sends_nothing_to_any_worker(
    traced: tuple[PostgresChunkStore, Trace], database_url: str, pg_schema: str
) -> None:
    store, trace = traced
    await store.upsert_workspace(Workspace(tenant_id=uuid.uuid4(), name="somebody's"))
    shards = await shard_groups(database_url, pg_schema)
    looked_up = await touched(trace, shards, lambda: store.find_workspace("nobody's"))
    assert (looked_up.sent, looked_up.groups) == (0, frozenset())


async def test_the_names_are_a_reference_table_on_every_node(
    traced: tuple[PostgresChunkStore, Trace], database_url: str, pg_schema: str
) -> None:
    conn = await asyncpg.connect(database_url, server_settings={"search_path": pg_schema})
    try:
        nodes = await conn.fetchval("SELECT count(*) FROM pg_dist_node WHERE isactive")
        rows = await conn.fetch(
            "SELECT p.partmethod::text AS method, count(pl.*) AS copies "
            "FROM pg_dist_partition p JOIN pg_dist_shard s USING (logicalrelid) "
            "JOIN pg_dist_placement pl USING (shardid) "
            "WHERE p.logicalrelid = ANY(SELECT to_regclass(t) FROM unnest($1::text[]) t) "
            "GROUP BY p.partmethod",
            list(citus.REFERENCE),
        )
    finally:
        await conn.close()
    # 'n': no distribution column; a copy on the coordinator and on each worker.
    assert [(r["method"], r["copies"]) for r in rows] == [("n", nodes)]


async def test_listing_every_workspace_is_the_fan_out_and_the_instrument_sees_it(
    traced: tuple[PostgresChunkStore, Trace], database_url: str, pg_schema: str
) -> None:
    store, trace = traced
    shards = await shard_groups(database_url, pg_schema)
    listed = await touched(trace, shards, store.list_workspaces)
    shards_per_table = len(set(shards.groups.values()))
    assert len(listed.groups) == shards_per_table > 1
    assert len(listed.servers) >= 2


async def test_a_second_connect_sends_nothing_to_the_workers(
    traced: tuple[PostgresChunkStore, Trace],
    database_url: str,
    pg_schema: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # DDL on a distributed table goes to every shard and locks it, even ADD COLUMN IF NOT
    # EXISTS of a column that exists: an app start must not lock every workspace's shards.
    again = Trace()
    store = await traced_connect(database_url, pg_schema, again, monkeypatch)
    await store.close()
    assert again.commands == []


async def test_every_table_but_the_names_is_distributed_by_tenant_and_co_located(
    traced: tuple[PostgresChunkStore, Trace], database_url: str, pg_schema: str
) -> None:
    conn = await asyncpg.connect(database_url, server_settings={"search_path": pg_schema})
    try:
        tables = await conn.fetch(
            "SELECT c.relname, p.colocationid, column_to_column_name(p.logicalrelid, p.partkey) "
            "AS col FROM pg_class c LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid "
            "WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'r'",
            pg_schema,
        )
    finally:
        await conn.close()
    assert len(tables) >= 8
    distributed = [r for r in tables if r["relname"] not in citus.REFERENCE]
    assert [r["relname"] for r in distributed if r["col"] != citus.COLUMN] == []
    assert len({r["colocationid"] for r in distributed}) == 1


async def test_the_stores_connections_to_a_coordinator_scan_the_catalogue_unfiltered(
    database_url: str,
) -> None:
    # asyncpg reads pg_type and pg_class for each new type on each new connection; with
    # Citus' shard-hiding filter on every pg_class scan that was 3-5 s per connection.
    conn = await asyncpg.connect(
        database_url, server_settings=await connection_settings(database_url, {}, 30)
    )
    try:
        plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN SELECT relname FROM pg_class"))
        assert (await conn.fetchval("SHOW jit"), "relation_is_a_known_shard" in plan) == (
            "off",
            False,
        )
    finally:
        await conn.close()
    plain = await asyncpg.connect(database_url)
    try:
        # The instrument: a connection without the store's settings has the filter.
        plan = "\n".join(r[0] for r in await plain.fetch("EXPLAIN SELECT relname FROM pg_class"))
        assert "relation_is_a_known_shard" in plan
    finally:
        await plain.close()
