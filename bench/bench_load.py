"""The ``load`` command end to end on three servers in one run: embedded default, stock, tuned.

Why three: a store that is fast only on a server tuned for it is slow for everyone who did not
tune one (issue 20: 104 passages/s on a stock PostgreSQL 15 where the tuned one did 3,728/s, and
the embedded default, which is what a newcomer gets, collapsed the same way). Each target gets a
new interpreter running ``python -m core load FILE --whole-documents`` on the synthetic Zipf
corpus of ``bench_scale`` written as one BEIR-style JSONL file:

- ``embedded``: no URL, a fresh ``LEXPLAIN_DATA_DIR`` (lexplain starts and configures the server);
- ``stock``: PostgreSQL 15 from ``.ci/pg.sh`` with only durability off and max_connections 20
  (everything else as ``initdb`` leaves it: shared_buffers 128 MB, 64 locks per transaction);
- ``tuned``: the same server as bench/README's Scale section (shared_buffers 2 GB, work_mem 64 MB,
  maintenance_work_mem 1 GB, max_connections 200).

Reported: seconds, passages/s, passages read back through the store's own summary, the client's
peak RSS (alone, and summed with its workers': ``tools.process_tree``), ERROR lines in
the server's log (a load must leave none), and each rate as a ratio to the tuned server's.

    .venv/bin/python -m bench.bench_load [--passages 100000] [--only embedded,stock,tuned]
        [--full-priority]

``load`` runs at nice 10 (bulk background work): on a busy machine that slows it by however
much the other work takes; ``--full-priority`` measures the loader alone at normal priority.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.scale_setup import zipf_corpus
from core.stores.postgres import embedded
from tools.process_tree import TreePeak, run_measured

ROOT = Path(__file__).resolve().parents[1]
#: The workspace each load writes.
WORKSPACE = "bench-load"
#: Server settings per external target (``-c`` options after the port and socket).
SERVERS = {
    "stock": "-c fsync=off -c synchronous_commit=off -c max_connections=20",
    "tuned": (
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 "
        "-c shared_buffers=2GB -c work_mem=64MB -c maintenance_work_mem=1GB"
    ),
}
TARGETS = ("embedded", "stock", "tuned")
#: A load that has not finished after this many seconds is recorded as unfinished.
LOAD_TIMEOUT_S = 1_800
#: Extra arguments of every ``load`` (``--full-priority`` from the command line).
LOAD_FLAGS: list[str] = []


@contextmanager
def server(settings: str) -> Iterator[tuple[str, Path]]:
    """A throwaway PostgreSQL 15 (``.ci/pg.sh``'s launcher): its URL and its log."""
    folder = Path(tempfile.mkdtemp(prefix="lexplain-bench-pg."))
    script = 'source .ci/pg.sh && _pg_launch "$1" "$2"'
    done = subprocess.run(
        ["bash", "-c", script, "_", str(folder), settings],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        if done.returncode != 0:
            raise RuntimeError(f"server did not start: {done.stderr}")
        yield (
            f"postgresql://postgres@127.0.0.1:{done.stdout.strip()}/postgres",
            folder / "server.log",
        )
    finally:
        subprocess.run(
            ["bash", "-c", 'source .ci/pg.sh && _pg_halt "$1"', "_", str(folder)],
            cwd=ROOT,
            check=False,
        )


def errors_in(log: Path) -> list[str]:
    if not log.exists():
        return []
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    return [line for line in lines if " ERROR: " in line or " FATAL: " in line]


def stored(url: str | None, data_dir: Path | None, workspace: str = WORKSPACE) -> int:
    """Passages the workspace holds, read back through the store (not assumed)."""
    from core.domain.chunks import workspace_tenant_id
    from core.stores.postgres import PostgresChunkStore
    from core.stores.postgres.embedded_store import open_embedded

    async def count() -> int:
        if url is not None:
            store = await PostgresChunkStore.connect(url)
        else:
            assert data_dir is not None
            store = await open_embedded(data_dir)
        try:
            return (await store.corpus_summary(workspace_tenant_id(workspace))).passages
        finally:
            await store.close()

    return asyncio.run(count())


def timed_load(
    path: Path, env: dict[str, str], url: str | None, data_dir: Path | None = None
) -> dict[str, Any]:
    """One ``load`` in a new interpreter: its wall time, exit status, its own peak RSS and the
    peak of its processes summed (``tools.process_tree``; the embedded server left out)."""
    command = [sys.executable, "-m", "core", "load", str(path), "--whole-documents"]
    command += ["--workspace", WORKSPACE, *LOAD_FLAGS]
    if url is not None:
        command += ["--database-url", url]

    def server() -> list[int]:
        found = None if data_dir is None else embedded.running(data_dir)
        return [] if found is None else [found.pid]

    started = time.perf_counter()
    status: int | str
    try:
        status, output, peak = run_measured(
            command, cwd=ROOT, env=env, timeout=LOAD_TIMEOUT_S, apart=server
        )
    except TimeoutError:
        status, output, peak = "timeout", "", TreePeak()
    elapsed = time.perf_counter() - started
    passages = stored(url, data_dir)
    return {
        "seconds": elapsed,
        "exit": status,
        "passages_stored": passages,
        "passages_per_s": passages / elapsed,
        "rss_mb": peak.root_mib,
        "tree_mb": peak.total_mib,
        "tail": output.strip().splitlines()[-1:],
    }


def run_target(target: str, path: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("LEXPLAIN_DATABASE_URL",)}
    if target == "embedded":
        data_dir = Path(tempfile.mkdtemp(prefix="lexplain-bench-embedded."))
        env["LEXPLAIN_DATA_DIR"] = str(data_dir)
        try:
            result = timed_load(path, env, None, data_dir)
            result["errors"] = errors_in(data_dir / "pgdata" / "server.log")
        finally:
            subprocess.run(
                [sys.executable, "-m", "core", "db", "stop"], cwd=ROOT, env=env, check=False
            )
            shutil.rmtree(data_dir, ignore_errors=True)
        return result
    with server(SERVERS[target]) as (url, log):
        result = timed_load(path, env, url)
        result["errors"] = errors_in(log)
    return result


def write_corpus(path: Path, ids: list[str], texts: list[str]) -> None:
    """The corpus as one BEIR-style JSONL file, the form ``load`` reads."""
    with path.open("w", encoding="utf-8") as out:
        for doc_id, text in zip(ids, texts, strict=True):
            out.write(json.dumps({"_id": doc_id, "title": "", "text": text}) + "\n")


def load_on(target: str, ids: list[str], texts: list[str]) -> dict[str, Any]:
    """One ``load`` of the corpus into ``target`` (embedded, stock or tuned), as ``run_target``
    reports it (bench_scale's load rows come from here)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "corpus.jsonl"
        write_corpus(path, ids, texts)
        return run_target(target, path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--only", default=",".join(TARGETS))
    parser.add_argument("--full-priority", action="store_true", help="load at normal priority")
    args = parser.parse_args()
    if args.full_priority:
        LOAD_FLAGS.append("--full-priority")
    targets = [t for t in args.only.split(",") if t]
    ids, texts, _ = zipf_corpus(args.passages)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "corpus.jsonl"
        write_corpus(path, ids, texts)
        del ids, texts
        for target in targets:
            results[target] = run_target(target, path)
            print(target, json.dumps(results[target]), file=sys.stderr, flush=True)
    tuned = results.get("tuned", {}).get("passages_per_s")
    print(f"load average {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} cores\n")
    print(
        "| server | passages stored | s | passages/s | ÷ tuned | peak RSS MB "
        "| with workers MB | server errors |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for target, r in results.items():
        ratio = f"{r['passages_per_s'] / tuned:.2f}" if tuned else "—"
        print(
            f"| {target} | {r['passages_stored']:,} | {r['seconds']:.1f} | "
            f"{r['passages_per_s']:,.0f} | {ratio} | {r['rss_mb']:.0f} | "
            f"{r['tree_mb']:.0f} | {len(r['errors'])} |"
        )


if __name__ == "__main__":
    main()
