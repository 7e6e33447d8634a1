"""What one Search costs through the facade on PostgreSQL, uncached (issue 50 item 6).

``bench_stores`` times the store's read and the ranking; a Search also pays the facade: the
workspace looked up (a round trip each on PostgreSQL), the candidates scored, the results
built. Issue 50 item 6 asked that a search look its workspace up once per call and score each
candidate once, measured before and after. This times ``LexplainService.search`` on Cranfield
in a PostgreSQL store, every query once a round, with the result cache off (a cached search
does no store call at all), p50 and p95 over the queries. ``--before DIR`` alternates rounds
of another tree's ``core`` (a worktree of the commit before the change, first on the child's
``sys.path``) with this tree's (or ``--after DIR``'s: the change's own commit, to isolate it),
in child processes, so the machine's load hits both alike.
Rejected: adding the facade to ``bench_stores``, whose rows compare the two stores' reads.

    source .ci/pg.sh && pg_start          # or any DATABASE_URL; uses schema bench_search_call
    .venv/bin/python -m bench.bench_search_call [--before ../old-tree] [--rounds 3] [--record]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: The schema the PostgreSQL store uses (dropped before each child's load).
SCHEMA = "bench_search_call"
#: The workspace the sample is loaded into.
WORKSPACE = "bench-search-call"
#: k and limit of every search (the Search screen's defaults).
K, LIMIT = 10, 1000


def child(core_dir: str) -> dict[str, Any]:
    """One round in this process: ``core`` from ``core_dir``, Cranfield loaded into a fresh
    schema, every sample query searched once uncached; milliseconds per search."""
    sys.path.insert(0, core_dir)
    import asyncio

    import asyncpg

    import core
    from core.service import LexplainService
    from core.service.runner import ResultCache
    from core.stores.postgres import PostgresChunkStore

    dsn = os.environ["DATABASE_URL"]

    async def drop() -> None:
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        finally:
            await conn.close()

    async def factory() -> Any:
        return await PostgresChunkStore.connect(dsn, schema=SCHEMA)

    asyncio.run(drop())
    service = LexplainService(factory)
    try:
        service.load_sample(workspace=WORKSPACE)
        service._results = ResultCache(entries=0)  # every search asks the store
        queries = [
            json.loads(line)["text"]
            for line in (ROOT / "data" / "cranfield" / "queries.jsonl").read_text().splitlines()
        ]
        for query in queries[:10]:  # warm-up: the passage image, the connections
            service.search(query, K, LIMIT, workspace=WORKSPACE)
        times = []
        for query in queries:
            started = time.perf_counter()
            service.search(query, K, LIMIT, workspace=WORKSPACE)
            times.append((time.perf_counter() - started) * 1000)
    finally:
        service.close()
        asyncio.run(drop())
    cuts = statistics.quantiles(times, n=100, method="inclusive")
    tree = Path(core.__file__).resolve().parents[1]
    commit = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "commit": commit,  # the tree's commit, not its path (no machine's path is recorded)
        "p50_ms": cuts[49],
        "p95_ms": cuts[94],
        "searches": len(times),
    }


def rounds(trees: dict[str, str], n: int) -> dict[str, list[dict[str, Any]]]:
    """``n`` alternating rounds of a child per tree (label -> the directory holding ``core``)."""
    found: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
    for _ in range(n):
        for label, tree in trees.items():
            out = subprocess.run(
                [sys.executable, "-m", "bench.bench_search_call", "--child", tree],
                cwd=ROOT,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            result = json.loads(out.strip().splitlines()[-1])
            print(label, result, flush=True)
            found[label].append(result)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--before", help="a tree (a worktree's root) whose core is the before")
    parser.add_argument("--after", default=str(ROOT), help="the tree whose core is the after")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if "DATABASE_URL" not in os.environ:
        sys.exit("set DATABASE_URL (e.g. `source .ci/pg.sh && pg_start`)")
    if args.child:
        print(json.dumps(child(args.child)))
        return
    load = os.getloadavg()[0]
    trees = {"after": args.after} | ({"before": args.before} if args.before else {})
    found = rounds(trees, args.rounds)
    load_end = os.getloadavg()[0]

    def best(label: str, key: str) -> float:
        return float(min(r[key] for r in found[label]))

    def at(label: str) -> str:  # the tree's commit, then its fastest round's figures
        commit = found[label][0]["commit"]
        return f"{commit}: p50 {best(label, 'p50_ms'):.2f} / p95 {best(label, 'p95_ms'):.2f} ms"

    after = at("after")
    line = f"service.search, Cranfield, PostgreSQL, uncached: {after}"
    row: dict[str, Any] = {
        "workload": "Cranfield, PostgreSQL, service.search uncached, limit 1000, k 10 "
        "(issue 50 item 6), fastest of the rounds",
        "trees": {label: results[0]["commit"] for label, results in found.items()},
        "lexplain": after,
        "load": f"{load:.1f}-{load_end:.1f}",
        "command": ".venv/bin/python -m bench.bench_search_call --before <tree> [--after <tree>] "
        f"--rounds {args.rounds} --record",
        "rounds": {label: results for label, results in found.items()},
    }
    if args.before:
        before = at("before")
        row["peer"] = f"before: {before}"
        row["ratio"] = (
            f"{best('after', 'p50_ms') / best('before', 'p50_ms'):.2f}x / "
            f"{best('after', 'p95_ms') / best('before', 'p95_ms'):.2f}x"
        )
        line += f"; before {before}"
    print(line)
    if args.record:
        from bench.results import record

        record("search_call", [row])


if __name__ == "__main__":
    main()
