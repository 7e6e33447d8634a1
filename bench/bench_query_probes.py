"""Issue 21's query probes (item 5), re-run as the issue ran them: each one's outcome, seconds and
the app's peak memory above what it held before, in every store.

The issue probed a 47,505-passage workspace: a query of 10,000 distinct corpus words took
3.87 GB and 36 s to search with a huge limit, 4.05 GB on Truncation, 3.79 GB to explain, more
than 6 GB on Compare; ``compare`` with k = 10^9 timed out at 120 s; k = 10^9 with no limit
explained all 47k matches (0.5 GB); an Evaluate of 1M judged queries ran past 300 s. Here a
generated workspace of the same size (``bench.scale_setup.zipf_corpus``, 80-160 words a
passage) is uploaded through the service, then each probe is one service call, as a caller
of the API (not the pages, which cap k at 100) makes it. The words are the corpus's most
frequent (each matches the most passages). The peak is the process's own ``VmHWM`` after
resetting it (``/proc/self/clear_refs``), less its resident size before the call; a
PostgreSQL server's own memory is its business (its ``work_mem`` bounds a query there).
The other half of item 5, a heavy query beside a light one, is ``bench_stall --work
truncation``.

``--probes analyses`` runs issue 49 item 1's instead (``bench.analysis_probes``): every
analysis at the largest input the app accepts (10,000 graded queries, the largest grid, by
document, judgment files), each against 60 s and 1 GiB; ``--record`` writes their rows to
bench/results/query_probes.json. ``--store postgres`` is the server at ``DATABASE_URL`` (a
schema of the bench's own, dropped before and after), rather than a throwaway one; with
``--keep`` the schema is kept after the run and a later ``--keep`` run reuses its workspace,
sets and grades (the same seeded corpus and queries, so the same figures' inputs) instead of
uploading 47,505 passages again: a bound can then be re-measured in its probe's own time.
Rejected: a dump file of the workspace (the store's tables are the dump, and a schema of the
bench's own is dropped by any run without ``--keep``).

    .venv/bin/python -m bench.bench_query_probes --store memory|embedded|stock|citus|postgres
    .venv/bin/python -m bench.bench_query_probes --store postgres --probes analyses --record
    .venv/bin/python -m bench.bench_query_probes --store postgres --probes analyses --keep \
        --only "diagnose by passage, 2"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import SecretStr

from bench.bench_citus import cluster
from bench.bench_load import SERVERS, server
from bench.results import record
from bench.scale_setup import zipf_corpus
from core.analysis.rankers import Ranker, RankerKind
from core.domain.tokenize import tokenize
from core.service.facade import LexplainService
from core.service.runner import ResultCache
from core.settings import Settings
from core.stores.postgres.embedded import running

if TYPE_CHECKING:
    from collections.abc import Mapping

#: Passages of the issue's probed workspace.
PASSAGES = 47_505
#: Distinct words of the issue's heavy query.
MANY_TERMS = 10_000
#: The most distinct words a query may keep (``core.service.bounds.MAX_QUERY_TERMS``).
MOST_TERMS = 1_024
#: The issue's "huge" k and limit.
HUGE = 10**9
#: Judged queries of the issue's Evaluate.
EVALUATE_QUERIES = 1_000_000
WORKSPACE = "probe"
#: The schema ``--store postgres`` keeps its tables in (dropped before and after a run).
SCHEMA = "bench_query_probes"


def _status(field: str) -> int:
    """A ``/proc/self/status`` field in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def measured(call: Callable[[], str]) -> dict[str, object]:
    """``call``'s outcome (what it returned, or the refusal it raised), seconds and peak MiB
    above the resident size before it."""
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    before = _status("VmRSS")
    started = time.perf_counter()
    try:
        outcome = call()
    except (ValueError, KeyError, RuntimeError, TimeoutError) as error:
        outcome = f"refused: {error}"
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 2),
        "peak_over_mib": round((_status("VmHWM") - before) / 1024),
        "peak_mib": round(_status("VmHWM") / 1024),
        "outcome": outcome[:150],
    }


@contextmanager
def opened(store: str, keep: bool = False) -> Iterator[tuple[LexplainService, str | None]]:
    """A service on a fresh store of kind ``store``, and its server's URL (None in memory);
    ``keep`` (``postgres`` only): the bench's schema as the last ``keep`` run left it, kept."""
    if store == "memory":
        service = LexplainService.from_settings(Settings(store="memory"))
        try:
            yield service, None
        finally:
            service.close()
        return
    if store == "postgres":
        url = database_url()
        if not keep:
            drop_schema(url, SCHEMA)
        service = LexplainService.from_settings(
            Settings(database_url=SecretStr(url), database_schema=SCHEMA)
        )
        try:
            yield service, url
        finally:
            service.close()
            if not keep:
                drop_schema(url, SCHEMA)
        return
    if store == "embedded":
        with tempfile.TemporaryDirectory(prefix="lexplain-qprobe.") as data:
            service = LexplainService.from_settings(Settings(data_dir=Path(data)))
            found = running(Path(data))
            try:
                yield service, None if found is None else found.url
            finally:
                service.close()
        return
    with server(SERVERS["stock"]) if store == "stock" else cluster(settings="") as started:
        url = started[0] if isinstance(started, tuple) else started
        service = LexplainService.from_settings(Settings(database_url=SecretStr(url)))
        try:
            yield service, url
        finally:
            service.close()


def kept_passages(service: LexplainService) -> int:
    """Passages of a kept workspace (one a source in the generated corpus)."""
    return sum(source.passages for source in service.list_sources(workspace=WORKSPACE))


def database_url() -> str:
    """The running server's URL (``LEXPLAIN_DATABASE_URL``, else ``DATABASE_URL``)."""
    url = os.environ.get("LEXPLAIN_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if not url:
        raise SystemExit(
            "--store postgres needs DATABASE_URL (`source .ci/pg.sh && pg_start` starts a server "
            "and exports it)"
        )
    return url


def server_label(url: str) -> str:
    """ "PostgreSQL 15": how a row names the server it ran on, whichever ``--store`` started it
    (rows of one server replace each other's)."""
    import asyncpg

    async def version() -> int:
        conn = await asyncpg.connect(url)
        try:
            return int(await conn.fetchval("SHOW server_version_num")) // 10_000
        finally:
            await conn.close()

    return f"PostgreSQL {asyncio.run(version())}"


def drop_schema(url: str, schema: str) -> None:
    import asyncpg

    async def drop() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        finally:
            await conn.close()

    asyncio.run(drop())


def probes(service: LexplainService, texts: list[str]) -> dict[str, Callable[[], str]]:
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(set(tokenize(text)))
    frequent = [word for word, _ in counts.most_common(MANY_TERMS)]
    many, most = " ".join(frequent), " ".join(frequent[:MOST_TERMS])
    short = " ".join(frequent[100:103])
    passage = service.search(short, 1, 1000, workspace=WORKSPACE).passages[0].chunk.id
    a, b = Ranker.of(RankerKind.WORKSPACE), Ranker.of(RankerKind.CLASSIC)
    queries = b"".join(b'{"_id": "q%d", "text": "w1 w2"}\n' % n for n in range(EVALUATE_QUERIES))
    qrels = b"query-id\tcorpus-id\tscore\n" + b"".join(
        b"q%d\tz%d\t1\n" % (n, n % PASSAGES) for n in range(EVALUATE_QUERIES)
    )

    def search(query: str, k: int, limit: int) -> str:
        found = service.search(query, k, limit, workspace=WORKSPACE)
        return f"{len(found.passages)} passages ranked"

    def truncation(query: str) -> str:
        view = service.truncation(query, 10, 1000, workspace=WORKSPACE)
        return f"{len(view.unlimited)} unlimited entries"

    def explain(query: str) -> str:
        explanation = service.explain(query, passage, workspace=WORKSPACE)
        return f"explained, {len(explanation.terms)} terms"

    def compare(query: str, k: int, limit: int) -> str:
        view = service.compare(query, a, b, k, limit, workspace=WORKSPACE)
        return f"compared, {view.candidates_returned} candidates"

    def why_not(query: str) -> str:
        service.why_not(query, passage, 10, 1000, workspace=WORKSPACE)
        return "answered"

    def evaluate() -> str:
        runs = service.evaluate(queries, qrels, 10, [1000], workspace=WORKSPACE)
        return f"{len(runs)} runs"

    return {
        "search 10,000 words, limit 10^9": lambda: search(many, 10, HUGE),
        "Truncation 10,000 words": lambda: truncation(many),
        "explain 10,000 words": lambda: explain(many),
        "Compare 10,000 words": lambda: compare(many, 10, 1000),
        "search 1,024 words, limit 10^9": lambda: search(most, 10, HUGE),
        "search 1,024 words, limit 1,000": lambda: search(most, 10, 1000),
        "Truncation 1,024 words": lambda: truncation(most),
        "explain 1,024 words": lambda: explain(most),
        "why not 1,024 words": lambda: why_not(most),
        "Compare 1,024 words, k 1,000": lambda: compare(most, 1000, 1000),
        "Compare k 10^9": lambda: compare(short, HUGE, HUGE),
        "search k 10^9, limit 10^9": lambda: search(short, HUGE, HUGE),
        "search k 1,000, limit 10^9": lambda: search(short, 1000, HUGE),
        "Evaluate 1M judged queries": evaluate,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--store", choices=("memory", "embedded", "stock", "citus", "postgres"), required=True
    )
    parser.add_argument("--passages", type=int, default=PASSAGES)
    parser.add_argument("--probes", choices=("queries", "analyses"), default="queries")
    parser.add_argument("--only", default="", help="analyses: a comma-separated subset")
    parser.add_argument("--record", action="store_true", help="analyses: write their rows")
    parser.add_argument(
        "--keep", action="store_true", help="postgres: keep the workspace and reuse a kept one"
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help="analyses: rounds of every probe, fastest kept"
    )
    args = parser.parse_args()
    if args.keep and args.store != "postgres":
        parser.error("--keep keeps the schema of --store postgres")
    ids, texts, _ = zipf_corpus(args.passages)
    corpus = "".join(
        json.dumps({"_id": i, "text": t}) + "\n" for i, t in zip(ids, texts, strict=True)
    ).encode()
    with opened(args.store, args.keep) as (service, url):
        service._results = ResultCache(entries=0)  # every probe reads, none is answered cached
        kept = WORKSPACE in service.list_workspaces() and kept_passages(service) == len(ids)
        if not kept:
            if WORKSPACE in service.list_workspaces():
                service.delete_workspace(WORKSPACE)
            service.create_workspace(WORKSPACE)
            started = time.perf_counter()
            (report,) = service.upload_files([("corpus.jsonl", corpus)], workspace=WORKSPACE)
            print(
                json.dumps(
                    {
                        "store": args.store,
                        "passages": report.passages_written,
                        "upload_s": round(time.perf_counter() - started, 1),
                    }
                ),
                flush=True,
            )
        else:
            print(json.dumps({"store": args.store, "kept": len(ids)}), flush=True)
        if args.probes == "queries":
            for name, call in probes(service, texts).items():
                print(json.dumps({"probe": name, **measured(call)}), flush=True)
            return
        from bench import analysis_probes

        wanted = [name for name in args.only.split(",") if name]
        calls: Mapping[str, Callable[[], str]] = analysis_probes.probes(
            service, WORKSPACE, ids, texts, wanted
        )
        label = "memory" if url is None else server_label(url)
        # Rounds of every probe in turn, so a probe and the one it is compared with alternate
        # (the shared machine swung an Evaluate of 2,000 queries 1.3-2.3 s run to run at load
        # ~1); each row is the fastest round, with the highest peak of any.
        rounds: dict[str, list[dict[str, object]]] = {}
        for _ in range(max(1, args.repeats)):
            for name, call in calls.items():
                found = {"probe": name, **measured(call), "load": f"{os.getloadavg()[0]:.1f}"}
                print(json.dumps(found), flush=True)
                rounds.setdefault(name, []).append(found)
        fastest = {name: analysis_probes.fastest(runs) for name, runs in rounds.items()}
        seconds = {name: float(found["seconds"]) for name, found in fastest.items()}
        rows = [
            analysis_probes.row(name, label, len(ids), found, seconds)
            for name, found in fastest.items()
        ]
        if args.record:
            record("query_probes", rows)


if __name__ == "__main__":
    main()
