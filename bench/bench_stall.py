"""Search latency of one session while another session's long work runs, in both stores.

Issue 13 item 5: long work (Evaluate, loads, re-indexing) must not block other sessions'
searches; the target is search p99 during an Evaluate under twice the idle p99. One service
(``LexplainService``, as the app has one per process) holds Cranfield; a "searcher" thread
runs the Search screen's call (``service.search``, k = 10, limit = 1000) over Cranfield's
queries one after another with a short pause (a person typing, not a load test), in blocks
alone (idle) alternated with blocks while another thread does long work again and again
(``tools.alternation``: both sides sample the same minutes of a shared machine; ``--sequential``
measures every idle search first, as up to session 11): ``--work evaluate``
(default) the sample's Evaluate (225 queries, limits 100 and 1000); ``upload`` the sample
loaded into another workspace (empty: deleted and created again each time); ``upload-more``
the sample under new source ids into another workspace that already holds ``MERGE_FACTOR - 1``
copies of it (the first upload measured merges ten segments into one, as a growing workspace
does; the uploads' bytes are made before the measured window, as a browser's file arrives
whole: renaming 1,398 JSON records in the uploading thread was 9-16 ms of Python in the windows
of the slowest searches); ``upload-big`` a JSONL of ``BIG_RECORDS`` tiny records (over
``ASIDE_BYTES``: read and cut in the upload's worker process, as the 1M tiny records' probe of
issue 21 is) into another workspace, empty each time; ``reindex`` another workspace
re-indexed under the other tokenizer profile; ``load`` the CLI's ``load`` of the sample into
another workspace, in its own process (into the same PostgreSQL server; with ``--store
memory``, ``load --dry-run``: an in-memory store lives in one process, so another process's load
shares only the cores);
``truncation``, ``search``, ``why-not`` and ``compare`` the screen's action on a query of
``HEAVY_TERMS`` (1,000) distinct words, the corpus's most frequent, on the same workspace (issue
21: a heavy query must not hold up a light one); ``none`` (not in a pass) nothing: both sides
measure the same thing, so its ratio's spread over runs is the bench's own noise. The long work
restarts at once, so every measured search overlaps it. ``--holds`` samples the loop's thread
and prints what held it (``bench.loop_holds``); ``--steps`` times each step the loop runs in CPU
time, by coroutine (``bench.loop_steps``: a step's size whatever the machine's load; steps over
5 ms named by where they resumed and suspended); ``--windows`` sums, per measured search, the
loop CPU of the other work's steps that ran inside its window, and names what filled the slowest
(``bench.loop_windows``). Every run also reports ``slowest_windows``: who used the CPU inside
each pass's slowest searches (the loop thread and its wait for a core, other threads, the
processes it started, the server, the rest of the machine: ``bench.loop_threads``), which says
whether the code or the machine made them slow. The tools run from the first idle block on
(the other work's steps all fall in during blocks; ``--windows`` sums them over the during
searches only). One run, ratios only: the machine is shared.

    .venv/bin/python -m bench.bench_stall --store memory [--work upload|...] [--holds] [--steps]
        [--windows]
    source .ci/pg.sh && pg_start && .venv/bin/python -m bench.bench_stall --store postgres
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from pydantic import SecretStr

from bench.loop_holds import LoopHolds
from bench.loop_steps import LoopSteps
from bench.loop_threads import WindowCpu
from bench.loop_windows import SearchWindows
from core.analysis.evaluation import parse_queries
from core.analysis.rankers import Ranker, RankerKind
from core.domain.chunks import ChunkingOptions
from core.domain.tokenize import tokenize
from core.ingest.aside import ASIDE_BYTES
from core.service import SAMPLE_CORPUS
from core.service.facade import LexplainService
from core.service.runner import ResultCache
from core.settings import Settings
from core.stores.memory.index import MERGE_FACTOR
from tools.alternation import BLOCKS, WorkGate, alternate

ROOT = Path(__file__).resolve().parents[1]

#: The workspace the benchmark loads Cranfield into.
WORKSPACE = "bench-stall"
#: The other session's workspace (uploaded into, or re-indexed).
OTHER = "bench-stall-other"
#: Searches measured while idle, and at least while Evaluate runs.
SEARCHES = 300
#: Pause between one session's searches (seconds): a person, not a load generator.
PAUSE_S = 0.01
#: The Search screen's defaults.
K, LIMIT = 10, 1000
#: Limits of the Evaluate run (the Evaluate screen's default pair).
EVALUATE_LIMITS = (100, 1000)
#: Distinct terms of the heavy query (``--work truncation|search|why-not|compare``).
HEAVY_TERMS = 1_000
#: Uploads made ahead for ``upload-more`` (more runs than this make theirs as they go).
UPLOADS_AHEAD = 16
#: Records of ``upload-big``'s JSONL (~7.4 MiB, over ``ASIDE_BYTES``), each two or three of
#: the heavy query's words.
BIG_RECORDS = 150_000
#: Every kind of other work, in the README's order.
WORKS = (
    "truncation", "search", "why-not", "compare", "upload", "upload-more", "upload-big", "load",
    "reindex", "evaluate",
)  # fmt: skip
#: Works that ask the heavy query.
HEAVY_WORKS = ("truncation", "search", "why-not", "compare")
#: ``--work none``: the other thread sleeps this long a run and does nothing else, so both sides
#: measure the same thing and the ratio's spread is the measurement's own (not a pass's row).
NONE_RUN_S = 0.2


def heavy_query(corpus: Path) -> str:
    """``HEAVY_TERMS`` distinct words, the corpus's most frequent (each matches the most)."""
    counts: Counter[str] = Counter()
    for line in corpus.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        counts.update(set(tokenize(f"{record.get('title', '')} {record['text']}")))
    words = [word for word, _ in counts.most_common(HEAVY_TERMS)]
    query = " ".join(words)
    assert len(set(tokenize(query))) == HEAVY_TERMS, "the corpus has too few distinct words"
    return query


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(values) * 1000, 2),
        "p99_ms": round(percentile(values, 0.99) * 1000, 2),
        "max_ms": round(max(values) * 1000, 2),
    }


def open_service(store: str) -> LexplainService:
    if store == "memory":
        service = LexplainService.from_settings(Settings(store="memory"))
    else:
        url = os.environ.get("DATABASE_URL")
        if not url:
            raise SystemExit("--store postgres needs DATABASE_URL (source .ci/pg.sh && pg_start)")
        service = LexplainService.from_settings(Settings(database_url=SecretStr(url)))
    # Every search measured is a search: the service's result cache (a rerun asking again)
    # would answer the same 225 queries from memory once the idle pass had asked them.
    service._results = ResultCache(entries=0)
    return service


def timed_searches(
    service: LexplainService,
    queries: list[str],
    windows: SearchWindows | None = None,
    cpu: WindowCpu | None = None,
    first: int = 0,
    count: int = SEARCHES,
) -> list[float]:
    """``count`` searches, one after another with a pause, from the ``first``-th query on;
    the seconds each took (each one's window marked in ``windows`` if given, the CPU inside it
    sampled into ``cpu``)."""
    timings: list[float] = []
    for i in range(first, first + count):
        if cpu is not None:
            cpu.before()
        started = time.perf_counter()
        service.search(queries[i % len(queries)], K, LIMIT, workspace=WORKSPACE)
        ended = time.perf_counter()
        if cpu is not None:
            cpu.after(ended - started)
        timings.append(ended - started)
        if windows is not None:
            windows.window(started, ended)
        time.sleep(PAUSE_S)
    return timings


def server_pid(store: str) -> int | None:
    """The PostgreSQL server's first process when ``.ci/pg.sh`` started it (its data folder in
    ``LEXPLAIN_TEST_PG_DATA``), for ``slowest_windows``' server column; else None."""
    folder = os.environ.get("LEXPLAIN_TEST_PG_DATA")
    if store != "postgres" or not folder:
        return None
    try:
        return int((Path(folder) / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _is_search(owner: str) -> bool:
    """Whether a loop step is one of the measured searches' own (``--windows``)."""
    return owner == "SearchActions._search"


def load_command(store: str, full_priority: bool = False) -> list[str]:
    """The CLI's ``load`` of the sample into ``OTHER`` (``--dry-run`` for the memory store);
    at the command's own lower priority unless ``full_priority``."""
    command = [sys.executable, "-m", "core", "load", "--workspace", OTHER, "--whole-documents"]
    if full_priority:
        command.append("--full-priority")
    if store == "memory":
        command.append("--dry-run")
    else:
        command += ["--database-url", os.environ["DATABASE_URL"]]
    return [*command, str(SAMPLE_CORPUS)]


def renamed_sample(copy: int) -> tuple[str, bytes]:
    """The sample as an upload whose documents' ids (its source ids) carry ``copy``."""
    lines = []
    for line in SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record["_id"] = f"copy{copy}-{record['_id']}"
        lines.append(json.dumps(record))
    return f"copy{copy}-{SAMPLE_CORPUS.name}", "\n".join(lines).encode()


def big_upload(words: list[str]) -> tuple[str, bytes]:
    """``upload-big``'s file: ``BIG_RECORDS`` tiny records made of ``words``."""
    lines = [
        json.dumps({"_id": f"big{n}", "text": " ".join(words[n % len(words) :][: 2 + n % 2])})
        for n in range(BIG_RECORDS)
    ]
    data = "\n".join(lines).encode()
    assert len(data) >= ASIDE_BYTES, "upload-big must go through the upload's worker"
    return "big.jsonl", data


def run(
    store: str,
    work: str,
    holds: bool = False,
    full_priority: bool = False,
    steps: bool = False,
    windows: bool = False,
    sequential: bool = False,
    searches: int = SEARCHES,
) -> dict[str, object]:
    service = open_service(store)
    try:
        for name in (WORKSPACE, OTHER):
            if name in service.list_workspaces():
                service.delete_workspace(name)
        service.create_workspace(WORKSPACE)
        service.load_sample(workspace=WORKSPACE)
        whole = ChunkingOptions(whole_documents=True)
        if work in ("reindex", "upload-more"):
            service.create_workspace(OTHER)
            service.load_sample(workspace=OTHER)
        if work == "upload-more":
            for copy in range(1, MERGE_FACTOR - 1):
                service.upload_files([renamed_sample(copy)], workspace=OTHER, chunking=whole)
        queries_data, qrels_data = service.sample_judgments()
        queries = list(parse_queries(queries_data.decode()).values())
        for query in queries[:20]:  # warm caches
            service.search(query, K, LIMIT, workspace=WORKSPACE)
        profiles = ("english", "plain")
        heavy = heavy_query(SAMPLE_CORPUS) if work in (*HEAVY_WORKS, "upload-big") else ""
        big = big_upload(heavy.split()) if work == "upload-big" else None
        a_passage = service.search(queries[0], K, LIMIT, workspace=WORKSPACE).passages[0].chunk.id
        more = work == "upload-more"
        ahead = [renamed_sample(MERGE_FACTOR + i) for i in range(UPLOADS_AHEAD if more else 0)]

        def one_run(i: int) -> None:
            if work == "none":  # the null row: no other work at all
                time.sleep(NONE_RUN_S)
            elif work == "evaluate":
                service.evaluate(queries_data, qrels_data, K, EVALUATE_LIMITS, workspace=WORKSPACE)
            elif work == "truncation":  # another session's heavy Truncation, no limit cut
                service.truncation(heavy, K, LIMIT, workspace=WORKSPACE)
            elif work == "search":
                service.search(heavy, K, LIMIT, workspace=WORKSPACE)
            elif work == "why-not":
                service.why_not(heavy, a_passage, K, LIMIT, workspace=WORKSPACE)
            elif work == "compare":
                a, b = Ranker.of(RankerKind.WORKSPACE), Ranker.of(RankerKind.CLASSIC)
                service.compare(heavy, a, b, K, LIMIT, workspace=WORKSPACE)
            elif work == "load":  # another process loads the sample
                subprocess.run(load_command(store, full_priority), check=True, capture_output=True)
            elif work == "upload":  # another session loads the sample into its own workspace
                service.delete_workspace(OTHER)
                service.create_workspace(OTHER)
                service.load_sample(workspace=OTHER)
            elif work == "upload-more":  # the same, into a workspace that holds passages
                upload = ahead[i] if i < len(ahead) else renamed_sample(MERGE_FACTOR + i)
                service.upload_files([upload], workspace=OTHER, chunking=whole)
            elif work == "upload-big" and big is not None:  # a big JSONL, through the worker
                if OTHER in service.list_workspaces():
                    service.delete_workspace(OTHER)
                service.create_workspace(OTHER)
                service.upload_files([big], workspace=OTHER)
            else:  # another session re-indexes its workspace under the other profile
                service.change_profile(OTHER, profiles[i % 2])

        sampler = LoopHolds(service._loop, service._thread) if holds else None
        timer = LoopSteps(service._thread) if steps else None
        marks = SearchWindows(service._thread, _is_search) if windows else None
        idle_cpu = WindowCpu(service._thread, server_pid(store))
        during_cpu = WindowCpu(service._thread, server_pid(store))
        idle: list[float] = []
        during: list[float] = []
        gate = WorkGate(one_run)
        if sequential:  # session 11's order: every idle search, then every search during
            idle += timed_searches(service, queries, cpu=idle_cpu, count=searches)
            gate.open()
        for tool in (sampler, timer, marks):  # every step from here on (idle blocks' too)
            if tool is not None:
                tool.start()

        def measure(busy: bool, first: int, count: int) -> None:
            if busy:
                during.extend(timed_searches(service, queries, marks, during_cpu, first, count))
            else:
                idle.extend(timed_searches(service, queries, None, idle_cpu, first, count))

        try:
            if sequential:
                measure(True, 0, searches)
                gate.close()
            else:
                alternate(measure, gate, searches)
        finally:
            for tool in (sampler, timer, marks):
                if tool is not None:
                    tool.stop()
            gate.finish()
        work_s = gate.seconds
        for name in (WORKSPACE, OTHER):
            if name in service.list_workspaces():
                service.delete_workspace(name)
    finally:
        service.close()
    result: dict[str, object] = {
        "store": store,
        "work": work + (" (--full-priority)" if full_priority else ""),
        "order": "sequential" if sequential else f"alternated, {BLOCKS} blocks a side",
        "idle": summary(idle),
        "during": summary(during),
        "work_s": round(statistics.median(work_s), 2) if work_s else None,
        "runs": len(work_s),
    }
    result["p99_ratio"] = round(summary(during)["p99_ms"] / summary(idle)["p99_ms"], 2)
    result["load_average"] = round(os.getloadavg()[0], 1)
    result["slowest_windows"] = {"idle": idle_cpu.report(), "during": during_cpu.report()}
    if sampler is not None:
        result["loop"] = sampler.report()
    if timer is not None:
        result["steps"] = timer.report()
    if marks is not None:
        result["windows"] = marks.report()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("memory", "postgres"), required=True)
    parser.add_argument("--work", choices=(*WORKS, "none"), default="evaluate")
    parser.add_argument("--holds", action="store_true", help="print what held the loop")
    parser.add_argument("--steps", action="store_true", help="print the loop's steps' CPU time")
    parser.add_argument(
        "--windows", action="store_true", help="print other work's loop CPU in each search's wait"
    )
    parser.add_argument(
        "--full-priority", action="store_true", help="--work load: the load at normal priority"
    )
    parser.add_argument(
        "--sequential",
        action="store_true",
        help="every idle search, then every search during (session 11's order, for comparison)",
    )
    parser.add_argument(
        "--searches", type=int, default=SEARCHES, help=f"searches a side (default {SEARCHES})"
    )
    args = parser.parse_args()
    result = run(
        args.store, args.work, args.holds, args.full_priority, args.steps, args.windows,
        args.sequential, args.searches,
    )  # fmt: skip
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
