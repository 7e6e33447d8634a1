"""lexplain against BM25 peers at 10k, 100k and 1M passages, one command, one run.

Each (engine, corpus) pair runs in its own child process (``--child``), so peak RSS
(``ru_maxrss`` read in the child) and warm caches are that engine's alone. Corpora: the
synthetic Zipf corpus of the scale issue (s = 1.1 over ``w0 … w199999``, passages of
80-159 tokens, queries of 3-6 terms from the same Zipf, fixed seed) at each size, plus
Cranfield. Engines: lexplain in memory and in PostgreSQL (``lexical_candidates`` +
``rank_chunks``, k = 10, at limit 100, 1000 and none, and the unlimited Truncation analysis),
bm25s (lucene, fed lexplain's token lists), tantivy (default tokenizer over the same
words), rank-bm25 (skipped above 100k passages: it scores every passage in Python) and
PostgreSQL's full-text search (GIN + ``ts_rank_cd`` over an OR tsquery of the same
terms, same server). Peers have no candidate limit, so their three "limit" columns are
the same top-k search measured three times. Also in the run: Evaluate (300 judged queries x 3
limits through the facade) for the lexplain engines, and the ``load`` command end to end (a
new interpreter reading one JSONL file) at up to 100k into the embedded default, a stock-settings
PostgreSQL and the tuned one (``bench_load``'s servers, started fresh for each). The run
prints the issues' targets, computed from its figures; the in-memory store against bm25s at each
size goes to bench/results/scale.json (bench/README.md's table).

Build time includes tokenising (lexplain tokenises inside ``upsert_many``; bm25s and
rank-bm25 get ``core.domain.tokenize`` timed in their build; tantivy tokenises itself). The
PostgreSQL engines' RSS is the Python client's only; the server is not counted.

    .venv/bin/uv pip install --python .venv/bin/python --require-hashes -r bench/requirements.lock
    source .ci/pg.sh && pg_start
    .venv/bin/python -m bench.bench_scale            # writes bench/scale.json, results, PNG
    .venv/bin/python -m bench.bench_scale --sizes 10000 --engines memory,bm25s   # quick
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench.scale_report import RESULTS, load_table, plot, record_figures, table, targets
from bench.scale_setup import (
    ANALYSIS_QUERIES,
    BATCH,
    BUDGET_S,
    CHILD_TIMEOUT,
    ENGINES,
    EVALUATE_LIMITS,
    EVALUATE_MAX,
    EVALUATE_QUERIES,
    LIMITS,
    LOAD_MAX,
    LOADS,
    MIN_QUERIES,
    POSTGRES_MAX,
    RANK_BM25_MAX,
    SCHEMA,
    SEARCH_LIMITS,
    SEED,
    TENANT,
    VOCABULARY,
    WORKSPACE,
    ZIPF_S,
    K,
    corpus,
)
from core.domain.tokenize import tokenize

# -- engines: build() -> {limit: search(terms)}, analysis(terms) or None ---------------------

Search = Callable[[list[str]], object]
#: What opens the engine's store again on another event loop (lexplain engines), for Evaluate.
Opener = Callable[[], Any]
Built = tuple[dict[int, Search], Search | None, Opener | None]


def _chunks(ids: list[str], texts: list[str]) -> list[Any]:
    from core.domain.chunks import StoredChunk

    return [
        StoredChunk(
            tenant_id=TENANT, source_id=i, text=t, chunk_index=0, start_char=0, end_char=len(t)
        )
        for i, t in zip(ids, texts, strict=True)
    ]


def evaluate_seconds(
    ids: list[str], opener: Callable[[], Any], queries: list[list[str]] | None = None
) -> float:
    """Seconds of one Evaluate through the facade: EVALUATE_QUERIES queries x EVALUATE_LIMITS.

    Synthetic judgments (five random passages per query) are enough: the cost is the ranking,
    not the metric. The store is opened on the facade's own loop by ``opener``. One Evaluate
    takes at most ``MAX_EVALUATE_RUNS`` limits (two since issue 49): the limits are asked in
    groups of that many, timed together (one more read per query than a single call of all
    three, at the smaller group's largest limit).
    """
    from core.service import LexplainService
    from core.service.bounds import MAX_EVALUATE_RUNS
    from core.stores.port import Workspace

    rng = np.random.default_rng(SEED + 2)
    if queries is None:
        cdf = np.cumsum(1.0 / np.arange(1, VOCABULARY + 1) ** ZIPF_S)
        cdf /= cdf[-1]
        queries = [
            [f"w{int(r)}" for r in np.searchsorted(cdf, rng.random(int(rng.integers(3, 7))))]
            for _ in range(EVALUATE_QUERIES)
        ]
    queries = (queries * (EVALUATE_QUERIES // max(1, len(queries)) + 1))[:EVALUATE_QUERIES]
    queries_data = "".join(
        json.dumps({"_id": f"q{n}", "text": " ".join(terms)}) + "\n"
        for n, terms in enumerate(queries)
    )
    qrels_data = "query-id\tcorpus-id\tscore\n" + "".join(
        f"q{n}\t{ids[int(i)]}\t1\n"
        for n in range(len(queries))
        for i in rng.integers(0, len(ids), 5)
    )

    async def factory() -> Any:
        store = await opener()
        await store.upsert_workspace(Workspace(tenant_id=TENANT, name=WORKSPACE))
        return store

    service = LexplainService(factory)
    try:
        started = time.perf_counter()
        for first in range(0, len(EVALUATE_LIMITS), MAX_EVALUATE_RUNS):
            group = EVALUATE_LIMITS[first : first + MAX_EVALUATE_RUNS]
            service.evaluate(
                queries_data.encode(), qrels_data.encode(), K, group, workspace=WORKSPACE
            )
        return time.perf_counter() - started
    finally:
        service.close()


def _lexplain(store: Any, loop: asyncio.AbstractEventLoop, opener: Opener) -> Built:
    from core.analysis.truncation import analyse_truncation
    from core.domain.ranking import rank_chunks

    def at(limit: int) -> Search:
        def search(terms: list[str]) -> object:
            pool = loop.run_until_complete(store.lexical_candidates(terms, TENANT, limit))
            return [r.chunk.source_id for r in rank_chunks(terms, pool, K)]

        return search

    def analysis(terms: list[str]) -> object:
        full = loop.run_until_complete(store.lexical_candidates(terms, TENANT, 2**62))
        return analyse_truncation(terms, full, K, LIMITS[-1])

    return {limit: at(limit) for limit in SEARCH_LIMITS}, analysis, opener


def build_memory(ids: list[str], texts: list[str]) -> Built:
    from core.stores.memory import InMemoryChunkStore

    store = InMemoryChunkStore()
    loop = asyncio.new_event_loop()
    chunks = _chunks(ids, texts)
    for offset in range(0, len(chunks), BATCH):
        loop.run_until_complete(store.upsert_many(chunks[offset : offset + BATCH]))
    del chunks
    # The first read after writes makes the read view (memory.reads), as a real workspace pays.
    loop.run_until_complete(store.lexical_candidates(["w0"], TENANT, 1))

    async def same_store() -> Any:
        return store

    return _lexplain(store, loop, same_store)


def build_postgres(ids: list[str], texts: list[str]) -> Built:
    import asyncpg

    from core.stores.postgres import PostgresChunkStore

    dsn = os.environ["DATABASE_URL"]
    loop = asyncio.new_event_loop()

    async def make() -> Any:
        conn = await asyncpg.connect(dsn)
        await conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        await conn.close()
        store = await PostgresChunkStore.connect(dsn, schema=SCHEMA)
        for offset in range(0, len(ids), BATCH):
            await store.upsert_many(
                _chunks(ids[offset : offset + BATCH], texts[offset : offset + BATCH])
            )
        # As for the memory store: the first read loads the workspace's passage image.
        await store.lexical_candidates(["w0"], TENANT, 1)
        return store

    async def reopen() -> Any:
        return await PostgresChunkStore.connect(dsn, schema=SCHEMA)

    return _lexplain(loop.run_until_complete(make()), loop, reopen)


def build_bm25s(ids: list[str], texts: list[str]) -> Built:
    import bm25s

    model = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    model.index([tokenize(t) for t in texts], show_progress=False)

    def search(terms: list[str]) -> object:
        scores = model.get_scores(sorted(set(terms)))
        top = np.argpartition(-scores, K)[:K] if len(scores) > K else np.arange(len(scores))
        return [ids[i] for i in top[np.argsort(-scores[top], kind="stable")] if scores[i] > 0]

    return dict.fromkeys(SEARCH_LIMITS, search), None, None


def build_rank_bm25(ids: list[str], texts: list[str]) -> Built:
    from rank_bm25 import BM25Okapi

    model = BM25Okapi([tokenize(t) for t in texts], k1=1.2, b=0.75)

    def search(terms: list[str]) -> object:
        scores = model.get_scores(sorted(set(terms)))
        top = np.argsort(-scores, kind="stable")[:K]
        return [ids[i] for i in top if scores[i] > 0]

    return dict.fromkeys(SEARCH_LIMITS, search), None, None


def build_tantivy(ids: list[str], texts: list[str]) -> Built:
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("body", stored=False)
    index = tantivy.Index(builder.build())
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    for doc_id, text in zip(ids, texts, strict=True):
        writer.add_document(tantivy.Document(id=doc_id, body=text))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()

    def search(terms: list[str]) -> object:
        if not terms:
            return []
        query = index.parse_query(" ".join(sorted(set(terms))), ["body"])
        hits = searcher.search(query, K).hits
        return [searcher.doc(address)["id"][0] for _, address in hits]

    return dict.fromkeys(SEARCH_LIMITS, search), None, None


def build_pg_fts(ids: list[str], texts: list[str]) -> Built:
    import asyncpg

    dsn = os.environ["DATABASE_URL"]
    loop = asyncio.new_event_loop()
    table = f"{SCHEMA}_fts"
    sql = (
        f"SELECT id FROM {table}, to_tsquery('simple', $1) AS q "  # noqa: S608
        f"WHERE body @@ q ORDER BY ts_rank_cd(body, q) DESC, id LIMIT {K}"
    )

    async def make() -> Any:
        conn = await asyncpg.connect(dsn)
        await conn.execute(f"DROP TABLE IF EXISTS {table}")
        await conn.execute(f"CREATE UNLOGGED TABLE {table} (id text PRIMARY KEY, body tsvector)")
        await conn.execute("CREATE TEMP TABLE raw (id text, body text)")
        await conn.copy_records_to_table("raw", records=list(zip(ids, texts, strict=True)))
        await conn.execute(
            f"INSERT INTO {table} SELECT id, to_tsvector('simple', body) FROM raw"  # noqa: S608
        )
        await conn.execute("DROP TABLE raw")
        await conn.execute(f"CREATE INDEX ON {table} USING gin (body)")
        await conn.execute(f"ANALYZE {table}")
        return conn

    conn = loop.run_until_complete(make())

    def search(terms: list[str]) -> object:
        query = " | ".join(sorted(set(terms))) or "x"
        return loop.run_until_complete(conn.fetch(sql, query))

    return dict.fromkeys(SEARCH_LIMITS, search), None, None


BUILDERS: dict[str, Callable[[list[str], list[str]], Built]] = {
    "memory": build_memory,
    "postgres": build_postgres,
    "bm25s": build_bm25s,
    "tantivy": build_tantivy,
    "rank-bm25": build_rank_bm25,
    "pg-fts": build_pg_fts,
}


def percentile(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def timed(search: Search, queries: list[list[str]]) -> list[float]:
    deadline = time.perf_counter() + BUDGET_S
    for terms in queries[:3]:
        search(terms)  # warm-up
    times: list[float] = []
    for terms in queries:
        if len(times) >= MIN_QUERIES and time.perf_counter() > deadline:
            break
        started = time.perf_counter()
        search(terms)
        times.append((time.perf_counter() - started) * 1000)
    return times


def child(engine: str, corpus_name: str) -> dict[str, Any]:
    ids, texts, queries = corpus(corpus_name)
    if engine in LOADS:
        # Imported here: bench_load takes its corpus from this module.
        from bench.bench_load import load_on

        done = load_on(LOADS[engine], ids, texts)
        return {"engine": engine, "corpus": corpus_name, "passages": len(ids)} | done
    queries = [q for q in queries if q]
    started = time.perf_counter()
    searches, analysis, opener = BUILDERS[engine](ids, texts)
    build = time.perf_counter() - started
    del texts
    result: dict[str, Any] = {"engine": engine, "corpus": corpus_name, "passages": len(ids)}
    result["build_s"] = build
    for limit, search in searches.items():
        times = timed(search, queries)
        label = limit if limit in LIMITS else "none"
        result[f"p50_{label}"] = percentile(times, 50)
        result[f"p95_{label}"] = percentile(times, 95)
        result[f"n_{label}"] = len(times)
    if analysis is not None:
        times = timed(analysis, queries[:ANALYSIS_QUERIES])
        result["analysis_p50"] = percentile(times, 50)
        result["analysis_p95"] = percentile(times, 95)
        result["n_analysis"] = len(times)
    if opener is not None and len(ids) <= EVALUATE_MAX.get(engine, 0):
        synthetic = corpus_name != "cranfield"
        result["evaluate_s"] = evaluate_seconds(ids, opener, None if synthetic else queries)
    result["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


# -- the run --------------------------------------------------------------------------------


def run(engines: list[str], corpora: list[str]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for name in corpora:
        for engine in engines:
            if engine == "rank-bm25" and name != "cranfield" and int(name) > RANK_BM25_MAX:
                results.append({"engine": engine, "corpus": name, "skipped": "above 100k"})
                continue
            if engine in LOADS and (name == "cranfield" or int(name) > LOAD_MAX):
                continue  # the load target is set on a 100k-passage JSONL
            if engine == "postgres" and name != "cranfield" and int(name) > POSTGRES_MAX:
                results.append(
                    {"engine": engine, "corpus": name, "skipped": "load would take over an hour"}
                )
                continue
            print(f"{engine} on {name} ...", file=sys.stderr, flush=True)
            try:
                done = subprocess.run(
                    [sys.executable, "-m", "bench.bench_scale", "--child", engine, name],
                    capture_output=True,
                    text=True,
                    timeout=CHILD_TIMEOUT,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                results.append({"engine": engine, "corpus": name, "skipped": "timed out"})
                continue
            if done.returncode != 0:
                tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
                results.append({"engine": engine, "corpus": name, "skipped": tail[0][:120]})
                continue
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"  {results[-1]}", file=sys.stderr, flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "CORPUS"))
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--no-cranfield", action="store_true")
    parser.add_argument("--note", default="")
    parser.add_argument("--no-write", action="store_true", help="print the tables only")
    parser.add_argument("--replot", action="store_true", help="redraw scale.png from scale.json")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    if args.replot:
        plot(json.loads(RESULTS.read_text(encoding="utf-8")))
        return
    corpora = ([] if args.no_cranfield else ["cranfield"]) + args.sizes.split(",")
    started = time.perf_counter()
    results = run(args.engines.split(","), corpora)
    note = (
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end, "
        f"{(time.perf_counter() - started) / 60:.0f} min in all. {args.note}"
    )
    if not args.no_write:
        # Recorded before the run's own file is written: the commit is then not "-dirty" for it.
        record_figures(results, ".venv/bin/python -m bench.bench_scale " + " ".join(sys.argv[1:]))
        RESULTS.write_text(json.dumps(results, indent=1), encoding="utf-8")
        print(note)
    print(table(results), load_table(results), targets(results), sep="\n\n")
    if not args.no_write:
        # Last: without matplotlib (the bench extra) the run has still printed its tables.
        plot(results)


if __name__ == "__main__":
    main()
