"""The Citus cluster the store tests run on is a real one: workers registered and active,
a table distributed over them, and a query naming one tenant routed to one shard.

What the later Citus tests prove (routing of every store statement, parity, a shard move)
means nothing on a cluster that quietly runs everything on the coordinator, so this module
checks the cluster itself first, with Citus' own catalog and EXPLAIN.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

pytestmark = pytest.mark.citus

#: Workers scripts/citus.sh registers at start (a move test may add one more later).
STARTED_WORKERS = 2


@pytest.fixture
async def coordinator(citus_database_url: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection to the coordinator with a fresh schema, dropped (on every node) after."""
    schema = f"citus_{uuid.uuid4().hex}"
    conn = await asyncpg.connect(citus_database_url)
    await conn.execute(f'CREATE SCHEMA "{schema}"')
    await conn.execute(f'SET search_path = "{schema}"')
    try:
        yield conn
    finally:
        await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        await conn.close()


def task_count(plan: list[asyncpg.Record]) -> int:
    """The ``Task Count`` of a Citus EXPLAIN: how many shards the statement runs on."""
    text = "\n".join(row[0] for row in plan)
    match = re.search(r"Task Count: (\d+)", text)
    assert match, f"not a distributed plan:\n{text}"
    return int(match.group(1))


async def test_the_cluster_has_its_workers_registered_and_active(
    coordinator: asyncpg.Connection,
) -> None:
    workers = await coordinator.fetch("SELECT * FROM citus_get_active_worker_nodes()")
    assert len(workers) >= STARTED_WORKERS
    version = await coordinator.fetchval(
        "SELECT extversion FROM pg_extension WHERE extname='citus'"
    )
    assert version.startswith("13.")


async def test_a_distributed_table_spreads_over_the_workers_and_one_tenant_is_one_shard(
    coordinator: asyncpg.Connection,
) -> None:
    await coordinator.execute(
        "CREATE TABLE passages (tenant_id uuid, id text, body text, PRIMARY KEY (tenant_id, id))"
    )
    await coordinator.execute("SELECT create_distributed_table('passages', 'tenant_id')")
    tenants = [uuid.uuid4() for _ in range(20)]
    await coordinator.executemany(
        "INSERT INTO passages VALUES ($1, 'p1', 'some words')", [(t,) for t in tenants]
    )
    nodes = await coordinator.fetchval(
        "SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'passages'::regclass"
    )
    assert nodes >= STARTED_WORKERS
    one = await coordinator.fetch(
        "EXPLAIN SELECT body FROM passages WHERE tenant_id = $1", tenants[0]
    )
    assert task_count(one) == 1
    every = await coordinator.fetch("EXPLAIN SELECT body FROM passages")
    shards = await coordinator.fetchval(
        "SELECT count(*) FROM citus_shards WHERE table_name = 'passages'::regclass"
    )
    assert task_count(every) == shards > 1
    assert await coordinator.fetchval("SELECT count(*) FROM passages") == len(tenants)
