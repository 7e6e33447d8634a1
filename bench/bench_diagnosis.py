"""Issue 36's cost targets: Runs' diagnosis and the k1 x b grid against one Evaluate, per store.

For each store (in-memory; PostgreSQL at ``LEXPLAIN_DATABASE_URL``, else ``DATABASE_URL``)
and each workspace, the wall seconds through the facade of

- (a) one ``evaluate_judged`` of the set: one ``RunSpec`` at limit 1,000, k 10, by passage;
- (b) ``diagnose`` of the same set, k 10, limit 1,000;
- (c) ``tune`` with the default grid (k1 0.0-3.0 step 0.5 x b 0.0-1.0 step 0.2, 42 points),
  k 10, limit 1,000, by passage;
- (d) ``documents``: ``diagnose`` by document against ``evaluate_judged`` by document (issue
  50: one passage per document, every candidate's source needed);
- (e) ``files``: ``diagnose_files`` against ``evaluate`` of the same files (the set's queries
  as BEIR JSONL and its grades by document as TREC qrels, ``export_judgments``);

and the ratios (b)/(a), (c)/(a) (the issue's targets: at most 1.5x and 3x), (d) and (e) each
over its own Evaluate (issue 50: at most 1.5x). Workspaces: Cranfield (``load_sample`` +
``import_sample_grades``: its 225 queries, the qrels as grades), the 100k-passage synthetic
Zipf workspace of ``bench_scale`` (``zipf``) and a 5,183-passage one (``zipf5k``, the size of
issue 50's collection: the first 5,183 passages of that corpus, whichever workspaces are
asked), each with ``bench_judge``'s 300 graded queries (built by their own functions:
``build_memory`` / ``build_postgres``, ``bench_judge.graded_set``). ``--record``
writes the (d) and (e) rows to bench/results/diagnosis.json (``bench.results.record``),
each beside the figures of a run of the code before (``--before``: that run's output).
PostgreSQL's Zipf workspaces are ``build_postgres``'s (schema ``bench_scale``, dropped and
rebuilt, as bench_scale does); Cranfield's has a schema of its own (``bench_diagnosis``); both
are dropped at the end. The embedded PostgreSQL 18 is not a row: bench_scale has no builder
for it.

Each call is timed ``--repeats`` times in rounds (a, b, c, a, b, c, ...); the first round warms
caches, so the table reports the fastest of the repeats and the JSON lines every one. The load
average is read at the start and end of each row. Reported, never asserted (bench/README.md).

    .venv/bin/python -m bench.bench_diagnosis                         # both stores, both sets
    .venv/bin/python -m bench.bench_diagnosis --stores memory --workspaces zipf --repeats 3
    .venv/bin/python -m bench.bench_diagnosis --calls evaluate        # issue 37's figure only
    .venv/bin/python -m bench.bench_diagnosis --workspaces zipf5k,zipf --calls documents,files \
        --record --before before.txt                                   # issue 50's rows
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import bench_judge, bench_scale, scale_setup

if TYPE_CHECKING:
    from core.service import LexplainService

STORES = ("memory", "postgres")
WORKSPACES = ("cranfield", "zipf", "zipf5k")
CALLS = ("evaluate", "diagnose", "tune", "documents", "files")
#: Each call timed against an Evaluate of the same judgments: call -> (its Evaluate, its name).
PEERS = {
    "diagnose": "evaluate",
    "tune": "evaluate",
    "documents": "evaluate_documents",
    "files": "evaluate_files",
}
#: Results per query and the candidate limit of every call (the issue's figures).
K = 10
LIMIT = 1000
#: The Zipf workspace's size (bench_judge's issue-18 figure), and the small one's (issue 50's
#: collection: 5,183 passages, one per document).
PASSAGES = 100_000
SMALL = 5_183
ZIPF_SET = "bench"
CRANFIELD_WORKSPACE = "bench-diagnosis"
CRANFIELD_SCHEMA = "bench_diagnosis"


def database_url() -> str:
    url = os.environ.get("LEXPLAIN_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if not url:
        raise SystemExit("PostgreSQL rows need LEXPLAIN_DATABASE_URL (or DATABASE_URL)")
    return url


def drop_schema(schema: str) -> None:
    import asyncpg

    async def drop() -> None:
        conn = await asyncpg.connect(database_url())
        try:
            await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        finally:
            await conn.close()

    asyncio.run(drop())


def cranfield(store: str) -> tuple[LexplainService, str, str]:
    """The sample loaded into a fresh workspace, with Cranfield's qrels as its set's grades."""
    from core.service import SAMPLE_QUERY_SET, LexplainService
    from core.stores.memory import InMemoryChunkStore
    from core.stores.postgres import PostgresChunkStore

    async def factory() -> Any:
        if store == "memory":
            return InMemoryChunkStore()
        return await PostgresChunkStore.connect(database_url(), schema=CRANFIELD_SCHEMA)

    if store == "postgres":
        drop_schema(CRANFIELD_SCHEMA)
    service = LexplainService(factory)
    service.load_sample(workspace=CRANFIELD_WORKSPACE)
    service.import_sample_grades(workspace=CRANFIELD_WORKSPACE)
    return service, CRANFIELD_WORKSPACE, SAMPLE_QUERY_SET


def zipf(store: str, ids: list[str], texts: list[str]) -> tuple[LexplainService, str, str]:
    """bench_scale's corpus in ``store``, with bench_judge's 300 graded queries."""
    if store == "postgres":
        os.environ["DATABASE_URL"] = database_url()  # what build_postgres reads
    build = bench_scale.build_memory if store == "memory" else bench_scale.build_postgres
    _, _, opener = build(ids, texts)
    service = bench_judge.scale_service(opener)
    bench_judge.graded_set(service, scale_setup.WORKSPACE, ZIPF_SET)
    return service, scale_setup.WORKSPACE, ZIPF_SET


def timed(
    service: LexplainService, workspace: str, query_set: str, calls: list[str], repeats: int
) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Seconds of each call, ``repeats`` rounds; and what the calls found (a sanity check)."""
    from core.analysis.judgment_files import QueryFormat, write_queries
    from core.service import RunSpec

    spec = [RunSpec(workspace=workspace, limit=LIMIT)]
    found: dict[str, Any] = {}
    queries_file = write_queries(
        service.query_set(query_set, workspace=workspace).queries, QueryFormat.BEIR
    ).encode()
    qrels_file = service.export_judgments(
        query_set, "trec", workspace=workspace, by_document=True
    ).encode()

    def evaluate() -> None:
        (run,) = service.evaluate_judged(query_set, K, spec, workspace=workspace)
        found["queries"] = len(run.rows)
        found["ndcg"] = round(run.mean_ndcg, 4)

    def diagnose() -> None:
        done = service.diagnose(query_set, K, LIMIT, workspace=workspace)
        found["diagnosed"] = len(done.queries)
        found["lost"] = done.lost

    def tune() -> None:
        grid = service.tune(query_set, K, LIMIT, workspace=workspace)
        found["points"] = len(grid.k1s) * len(grid.bs)
        found["best"] = (grid.best.k1, grid.best.b, round(grid.best.mean, 4))

    def evaluate_documents() -> None:
        (run,) = service.evaluate_judged(query_set, K, spec, workspace=workspace, by_document=True)
        found["ndcg_documents"] = round(run.mean_ndcg, 4)

    def documents() -> None:
        done = service.diagnose(query_set, K, LIMIT, workspace=workspace, by_document=True)
        found["lost_documents"] = done.lost

    def evaluate_files() -> None:
        (run,) = service.evaluate(queries_file, qrels_file, K, [LIMIT], workspace=workspace)
        found["ndcg_files"] = round(run.mean_ndcg, 4)

    def files() -> None:
        done = service.diagnose_files(queries_file, qrels_file, K, LIMIT, workspace=workspace)
        found["lost_files"] = done.lost

    do: dict[str, Callable[[], None]] = {
        "evaluate": evaluate,
        "diagnose": diagnose,
        "tune": tune,
        "evaluate_documents": evaluate_documents,
        "documents": documents,
        "evaluate_files": evaluate_files,
        "files": files,
    }
    wanted = list(dict.fromkeys(c for call in calls for c in (PEERS.get(call, call), call)))
    took: dict[str, list[float]] = {call: [] for call in wanted}
    for _ in range(repeats):
        for call in wanted:
            started = time.perf_counter()
            do[call]()
            took[call].append(time.perf_counter() - started)
    return took, found


def row(
    store: str, workspace: str, calls: list[str], repeats: int, corpus: tuple[list[str], list[str]]
) -> dict[str, Any]:
    load_start = os.getloadavg()
    started = time.perf_counter()
    if workspace == "cranfield":
        service, ws, query_set = cranfield(store)
    else:
        ids, texts = corpus
        size = SMALL if workspace == "zipf5k" else len(ids)
        service, ws, query_set = zipf(store, ids[:size], texts[:size])
    built = time.perf_counter() - started
    try:
        took, found = timed(service, ws, query_set, calls, repeats)
    finally:
        service.close()
    result: dict[str, Any] = {"store": store, "workspace": workspace, "build_s": built}
    result |= {f"{call}_s": min(times) for call, times in took.items()}
    result |= {f"{call}_all_s": times for call, times in took.items()}
    for call, peer in PEERS.items():
        if call in took:
            result[f"{call}_per_evaluate"] = min(took[call]) / min(took[peer])
    result |= found
    result["load_start"] = load_start
    result["load_end"] = os.getloadavg()
    return result


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| store | workspace | evaluate s | diagnose s | tune s | diagnose/evaluate "
        "| tune/evaluate | by document / its Evaluate | files / its Evaluate "
        "| load (1 min) start → end |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def cell(r: dict[str, Any], key: str, fmt: str) -> str:
        return format(r[key], fmt) if key in r else "—"

    def pair(r: dict[str, Any], call: str) -> str:
        if f"{call}_s" not in r:
            return "—"
        peer = PEERS[call]
        return f"{r[f'{call}_s']:.2f} / {r[f'{peer}_s']:.2f} = {r[f'{call}_per_evaluate']:.2f}x"

    for r in results:
        lines.append(
            f"| {r['store']} | {r['workspace']} | {cell(r, 'evaluate_s', '.2f')} "
            f"| {cell(r, 'diagnose_s', '.2f')} | {cell(r, 'tune_s', '.2f')} "
            f"| {cell(r, 'diagnose_per_evaluate', '.2f')} "
            f"| {cell(r, 'tune_per_evaluate', '.2f')} "
            f"| {pair(r, 'documents')} | {pair(r, 'files')} "
            f"| {r['load_start'][0]:.2f} → {r['load_end'][0]:.2f} |"
        )
    return "\n".join(lines)


#: What a recorded row names each workspace and store by.
_NAMES = {
    "cranfield": "Cranfield 1,400, 225 graded queries",
    "zipf": "Zipf 100k",
    "zipf5k": "Zipf 5,183 (one passage per document)",
    "memory": "memory",
    "postgres": "PostgreSQL",
}
#: What a recorded row names each call by.
_CALLS = {
    "documents": "diagnose by document vs Evaluate by document",
    "files": "diagnose_files vs Evaluate of the same files",
}


def recorded(
    results: list[dict[str, Any]], before: dict[tuple[str, str], dict[str, Any]], command: str
) -> list[dict[str, Any]]:
    """The (d) and (e) rows as ``bench.results.record`` keeps them, each beside its figure
    before (a run of the code before, ``--before``), when there is one."""
    rows = []
    for r in results:
        was = before.get((r["store"], r["workspace"]), {})
        for call in ("documents", "files"):
            if f"{call}_s" not in r:
                continue
            peer = PEERS[call]
            then = (
                f" (before {was[f'{call}_s']:.2f} s against {was[f'{peer}_s']:.2f} s, load "
                f"{was['load_start'][0]:.1f}-{was['load_end'][0]:.1f})"
                if f"{call}_s" in was
                else ""
            )
            ratio_then = (
                f" (before {was[f'{call}_per_evaluate']:.1f}x)" if f"{call}_s" in was else ""
            )
            queries = "" if r["workspace"] == "cranfield" else ", 300 graded queries"
            rows.append(
                {
                    "workload": f"{_NAMES[r['workspace']]}{queries}, {_NAMES[r['store']]}, "
                    f"limit {LIMIT}: {_CALLS[call]} (issue 50)",
                    "lexplain": f"{r[f'{call}_s']:.2f} s{then}",
                    "peer": f"Evaluate {r[f'{peer}_s']:.2f} s",
                    "ratio": f"{r[f'{call}_per_evaluate']:.2f}x{ratio_then}",
                    "load": f"{r['load_start'][0]:.1f}-{r['load_end'][0]:.1f}",
                    "command": command,
                }
            )
    return rows


def read_before(path: str | None) -> dict[tuple[str, str], dict[str, Any]]:
    """A run's JSON lines (its printed output) by (store, workspace)."""
    if path is None:
        return {}
    found = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            found[r["store"], r["workspace"]] = r
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default=",".join(STORES))
    parser.add_argument("--workspaces", default=",".join(WORKSPACES))
    parser.add_argument("--calls", default=",".join(CALLS))
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--passages", type=int, default=PASSAGES)
    parser.add_argument("--record", action="store_true", help="write the (d), (e) rows")
    parser.add_argument("--before", help="a run's printed output: the figures before")
    args = parser.parse_args()
    import core

    # Which core ran (a second worktree's can be put first on PYTHONPATH for before/after).
    print(f"core from {Path(core.__file__).resolve().parent}", flush=True)
    stores, workspaces = args.stores.split(","), args.workspaces.split(",")
    calls = args.calls.split(",")
    corpus: tuple[list[str], list[str]] = ([], [])
    if "zipf" in workspaces or "zipf5k" in workspaces:
        ids, texts, _ = scale_setup.zipf_corpus(args.passages)  # zipf5k: its first SMALL
        corpus = (ids, texts)
    results = []
    try:
        for store in stores:
            for workspace in workspaces:
                results.append(row(store, workspace, calls, args.repeats, corpus))
                print(json.dumps(results[-1]), flush=True)
    finally:
        if "postgres" in stores:
            drop_schema(CRANFIELD_SCHEMA)
            drop_schema(scale_setup.SCHEMA)
    print(table(results))
    if args.record:
        from bench.results import record

        command = ".venv/bin/python -m bench.bench_diagnosis " + " ".join(sys.argv[1:])
        record("diagnosis", recorded(results, read_before(args.before), command))


if __name__ == "__main__":
    main()
