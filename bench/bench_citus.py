"""The coordinator hop, measured: lexplain on a Citus cluster against one server, in one run.

Per size (the synthetic Zipf corpus of ``bench_scale``, same seed), each target gets a fresh
server: ``one server`` is ``bench_load``'s tuned PostgreSQL 15 (shared_buffers 2 GB, work_mem
64 MB, maintenance_work_mem 1 GB, fsync off); ``citus`` is ``scripts/citus.sh``'s coordinator
and two workers on the same machine with the same settings on every node. On each:
``python -m core load`` end to end (``bench_load.timed_load``: a new interpreter, passages read
back through the store), then search as the Search screen does it (``bench_stores.latencies``:
``lexical_candidates`` + ``rank_chunks``, k = 10, at limit 100 and 1000, one query at a time,
p50/p95), and the size of every table (``pg_total_relation_size``; on the cluster
``citus_total_relation_size``, the shards summed). Ratios are cluster / one server.

Why not reuse bench_scale's child processes: the cluster needs its own servers started and
stopped per size, and what is compared is one server against the cluster, not engines.
``--sizes-only N`` writes N passages through ``upsert_many`` into a tuned server and reports the
table sizes only (the 1M workspace; run it under ``flock /tmp/lexplain-big.lock``).

    .venv/bin/python -m bench.bench_citus [--sizes 10000,100000]
    flock /tmp/lexplain-big.lock .venv/bin/python -m bench.bench_citus --sizes-only 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import asyncpg

from bench.bench_load import SERVERS, WORKSPACE, server, timed_load, write_corpus
from bench.bench_scale import _chunks
from bench.bench_stores import LIMITS, latencies, p
from bench.scale_setup import BATCH, zipf_corpus
from core.stores.postgres import PostgresChunkStore, citus

ROOT = Path(__file__).resolve().parents[1]
#: The tuned server's settings as postgresql.conf lines, for every node of the cluster.
NODE_SETTINGS = "\n".join(
    option.replace("=", " = ", 1) for option in SERVERS["tuned"].split(" ") if option != "-c"
)
TARGETS = ("one server", "citus")


@contextmanager
def cluster(settings: str = NODE_SETTINGS) -> Iterator[str]:
    """A fresh coordinator and two workers (``scripts/citus.sh``), each node with ``settings``
    (postgresql.conf lines: tuned unless told; "" leaves citus.sh's own, stock memory); the
    coordinator URL."""
    env = {**os.environ, "CITUS_NODE_SETTINGS": settings}
    started = subprocess.run(
        [
            "bash",
            "-c",
            'source scripts/citus.sh && citus_start && echo "$CITUS_TMP $LEXPLAIN_TEST_CITUS_URL"',
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if started.returncode != 0:
        raise RuntimeError(f"the cluster did not start: {started.stderr}")
    folder, url = started.stdout.split()[-2:]
    try:
        yield url
    finally:
        stop = {**os.environ, "CITUS_TMP": folder, "CITUS_PGBIN": "/usr/lib/postgresql/15/bin"}
        subprocess.run(
            ["bash", "-c", "source scripts/citus.sh && citus_stop"], cwd=ROOT, env=stop, check=False
        )


async def table_sizes(url: str) -> dict[str, int]:
    """Bytes per store table (heap, indexes, TOAST); on a coordinator summed over the shards."""
    conn = await asyncpg.connect(url)
    try:
        size = (
            "citus_total_relation_size"
            if await citus.is_coordinator(conn)
            else "pg_total_relation_size"
        )
        tables = await citus.store_tables(conn)
        return {
            t: int(await conn.fetchval(f"SELECT {size}($1::text::regclass)", t)) for t in tables
        }
    finally:
        await conn.close()


async def searches(url: str, queries: list[list[str]]) -> dict[str, float]:
    """Search p50/p95 in ms at each limit, on the workspace ``load`` wrote."""
    store = await PostgresChunkStore.connect(url)
    try:
        workspace = await store.find_workspace(WORKSPACE)
        assert workspace is not None, "the load wrote no workspace"
        found: dict[str, float] = {}
        for limit in LIMITS:
            times = await latencies(store, queries, limit, workspace.tenant_id)
            found |= {f"p50@{limit}": p(times, 50), f"p95@{limit}": p(times, 95)}
        return found
    finally:
        await store.close()


def measure(target: str, path: Path, queries: list[list[str]]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "LEXPLAIN_DATABASE_URL"}
    with cluster() if target == "citus" else server(SERVERS["tuned"]) as started:
        url = started if isinstance(started, str) else started[0]
        result = timed_load(path, env, url)
        result |= asyncio.run(searches(url, queries))
        result["sizes"] = asyncio.run(table_sizes(url))
    return result


def sizes_only(passages: int) -> None:
    """``passages`` written through ``upsert_many`` into a tuned server: the tables' sizes."""
    ids, texts, _ = zipf_corpus(passages)

    async def write(url: str) -> dict[str, int]:
        store = await PostgresChunkStore.connect(url)
        try:
            for offset in range(0, len(ids), BATCH):
                await store.upsert_many(
                    _chunks(ids[offset : offset + BATCH], texts[offset : offset + BATCH])
                )
        finally:
            await store.close()
        conn = await asyncpg.connect(url)
        try:
            await conn.execute("VACUUM ANALYZE")
        finally:
            await conn.close()
        return await table_sizes(url)

    with server(SERVERS["tuned"]) as (url, _):
        sizes = asyncio.run(write(url))
    print(json.dumps({"passages": passages, "sizes": sizes}))
    print(size_table({"one server": {"sizes": sizes}}))


def size_table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| table | " + " | ".join(f"{t} MB" for t in results) + " |"]
    lines.append("|---|" + "---:|" * len(results))
    tables = sorted(
        next(iter(results.values()))["sizes"],
        key=lambda t: -max(r["sizes"].get(t, 0) for r in results.values()),
    )
    for table in [*tables, "total"]:
        cells = [
            sum(r["sizes"].values()) if table == "total" else r["sizes"].get(table, 0)
            for r in results.values()
        ]
        lines.append(f"| {table} | " + " | ".join(f"{c / 2**20:,.1f}" for c in cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--sizes-only", type=int, default=0)
    parser.add_argument("--targets", default=",".join(TARGETS), help="to split a run in two")
    args = parser.parse_args()
    if args.sizes_only:
        sizes_only(args.sizes_only)
        return
    rows = []
    for passages in [int(s) for s in args.sizes.split(",") if s]:
        ids, texts, queries = zipf_corpus(passages)
        results: dict[str, dict[str, Any]] = {}
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "corpus.jsonl"
            write_corpus(path, ids, texts)
            del ids, texts
            for target in [t for t in TARGETS if t in args.targets.split(",")]:
                results[target] = measure(target, path, queries)
                print(passages, target, json.dumps(results[target]), file=sys.stderr, flush=True)
        if len(results) < len(TARGETS):
            continue
        one, hop = results["one server"], results["citus"]
        for target, r in results.items():
            cells = [f"{passages:,}", target, f"{r['passages_stored']:,}"]
            cells.append(f"{r['passages_per_s']:,.0f}")
            cells += [f"{r[f'{q}@{limit}']:.1f}" for limit in LIMITS for q in ("p50", "p95")]
            rows.append("| " + " | ".join(cells) + " |")
        ratios = [f"{hop['passages_per_s'] / one['passages_per_s']:.2f}"]
        ratios += [
            f"{hop[f'{q}@{lim}'] / one[f'{q}@{lim}']:.2f}" for lim in LIMITS for q in ("p50", "p95")
        ]
        rows.append(f"| {passages:,} | **citus ÷ one server** | | " + " | ".join(ratios) + " |")
        print(size_table(results), file=sys.stderr, flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} cores\n")
    print(
        "| passages | target | stored | load passages/s | p50 @100 | p95 @100 | p50 @1000 "
        "| p95 @1000 |\n|---:|---|---:|---:|---:|---:|---:|---:|"
    )
    print("\n".join(rows))


if __name__ == "__main__":
    main()
