"""A workspace moves to a new worker while one loop searches it and another rewrites it.

The operator's way to grow a cluster: add a worker, then move shard groups to it with
``citus_move_shard_placement`` (by logical replication, ``transfer_mode => 'auto'``: the group
stays readable and writable while its rows are copied; writes wait only for the final
catch-up). The test holds the store to what a user must see meanwhile: no error in either
loop, every search answering with one whole version of the workspace (before or after a
write, never a mix), and afterwards the same workspace, passage for passage, with counters
that agree with the posting blocks, now served from the new worker.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from uuid import UUID

import asyncpg
import pytest

from core.domain.chunks import StoredChunk
from core.stores.port import Workspace
from core.stores.postgres import PostgresChunkStore
from tests.stores.compliance import make_chunk, snapshot
from tests.stores.test_postgres_failures import assert_derived_tables_agree

pytestmark = pytest.mark.citus

#: Sources of the workspace that stay as they are during the move.
STABLE_SOURCES = 20
#: Passages per source.
PASSAGES = 15
#: The query the search loop repeats.
QUERY = ["ocean", "tides", "glacier"]
#: A limit no workspace here reaches.
UNLIMITED = 1_000_000
#: The project root, where scripts/citus.sh lives.
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def database_url(citus_database_url: str) -> str:
    return citus_database_url


def add_worker() -> int:
    """One more worker from scripts/citus.sh, registered with the coordinator; its port."""
    if not os.environ.get("CITUS_TMP"):
        pytest.fail(
            "the Citus cluster was not started by scripts/citus.sh (CITUS_TMP is not set), "
            "so no worker can be added",
            pytrace=False,
        )
    done = subprocess.run(
        ["bash", "-c", "source scripts/citus.sh && citus_add_worker"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.strip().splitlines()[-1])


def churn(tenant: UUID, version: int) -> list[StoredChunk]:
    """The source the writer replaces, in one of two versions."""
    words = "ocean tides" if version == 0 else "glacier tides tides"
    return [
        make_chunk(tenant, "churn", f"{words} churn passage {i} v{version}", i) for i in range(8)
    ]


@pytest.fixture
async def store(database_url: str, pg_schema: str) -> AsyncIterator[PostgresChunkStore]:
    store = await PostgresChunkStore.connect(database_url, schema=pg_schema)
    yield store
    await store.close()


async def test_a_busy_workspace_moves_to_a_new_worker_without_an_error_or_a_lost_passage(
    store: PostgresChunkStore, database_url: str, pg_schema: str
) -> None:
    tenant = uuid.uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name=f"move-{tenant.hex[:8]}"))
    words = ["ocean", "tides", "glacier", "rivers", "delta", "current", "salt"]
    for s in range(STABLE_SOURCES):
        await store.replace_source(
            f"doc-{s}",
            tenant,
            [
                make_chunk(
                    tenant, f"doc-{s}", f"{words[(s + i) % 7]} {words[i % 7]} passage {i}", i
                )
                for i in range(PASSAGES)
            ],
        )
    versions: list[tuple[list[str], object]] = []
    for v in (1, 0):
        await store.replace_source("churn", tenant, churn(tenant, v))
        found = await store.lexical_candidates(QUERY, tenant, UNLIMITED)
        versions.append((found.ids.tolist(), found.stats))
    before = await snapshot(store, tenant)
    # Two connections open and warm before the clock starts: asyncpg's first statement on a
    # new connection introspects types, which takes seconds on a coordinator (docs/scaling.md).
    await asyncio.gather(
        store.lexical_candidates(QUERY, tenant, UNLIMITED),
        store.replace_source("churn", tenant, churn(tenant, 0)),
    )

    admin = await asyncpg.connect(database_url, server_settings={"search_path": pg_schema})
    try:
        shard = await admin.fetchval(
            "SELECT get_shard_id_for_distribution_column('workspaces', $1::uuid)", tenant
        )
        source = await admin.fetchval(
            "SELECT n.nodeid FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid) "
            "WHERE p.shardid = $1",
            shard,
        )
        port = add_worker()
        target = await admin.fetchval("SELECT nodeid FROM pg_dist_node WHERE nodeport = $1", port)
        moving = True
        errors: list[BaseException] = []
        searches: list[float] = []
        writes: list[float] = []

        async def search() -> None:
            while moving:
                started = time.perf_counter()
                try:
                    found = await store.lexical_candidates(QUERY, tenant, UNLIMITED)
                except Exception as exc:  # every error is the finding
                    errors.append(exc)
                    continue
                searches.append(time.perf_counter() - started)
                # The read's own answer (ids and statistics, one snapshot): ``candidates``
                # would look up the text of rows the read did not prefetch on another
                # connection, where a rewrite committed since reads as deleted ("search
                # again", core.stores.postgres.lookups) — a rewrite's doing, not the move's.
                seen = (found.ids.tolist(), found.stats)
                assert seen in versions, "a search saw a mix of two versions"

        async def write() -> None:
            v = 0
            while moving:
                v = 1 - v
                started = time.perf_counter()
                try:
                    await store.replace_source("churn", tenant, churn(tenant, v))
                except Exception as exc:
                    errors.append(exc)
                    continue
                writes.append(time.perf_counter() - started)
            await store.replace_source("churn", tenant, churn(tenant, 0))

        loops = [asyncio.create_task(search()), asyncio.create_task(write())]
        await asyncio.sleep(0.5)
        started = time.perf_counter()
        await admin.execute(
            "SELECT citus_move_shard_placement($1, $2, $3, 'auto')", shard, source, target
        )
        moved_in = time.perf_counter() - started
        await asyncio.sleep(0.5)
        moving = False
        await asyncio.gather(*loops)

        assert errors == []
        assert searches and writes
        now = await admin.fetchval(
            "SELECT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid) "
            "WHERE p.shardid = $1",
            shard,
        )
        assert now == port
        assert await snapshot(store, tenant) == before
        await assert_derived_tables_agree(admin, tenant)
        print(
            f"moved in {moved_in:.1f} s; {len(searches)} searches (longest "
            f"{max(searches):.2f} s), {len(writes)} writes (longest {max(writes):.2f} s)"
        )
    finally:
        await admin.close()
