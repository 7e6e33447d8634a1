"""lexplain against BM25 peers at 10k, 100k and 1M passages, one command, one run.

Each (engine, corpus) pair runs in its own child process (``--child``), so peak RSS
(``ru_maxrss`` read in the child) and warm caches are that engine's alone. Corpora: the
synthetic Zipf corpus of the scale issue (s = 1.1 over ``w0 … w199999``, passages of
80-159 tokens, queries of 3-6 terms from the same Zipf, fixed seed) at each size, plus
Cranfield. Engines: lexplain in memory and in PostgreSQL (``lexical_candidates`` +
``rank_chunks``, k = 10, at limit 100 and 1000, and the unlimited Truncation analysis),
bm25s (lucene, fed lexplain's token lists), tantivy (default tokenizer over the same
words), rank-bm25 (skipped above 100k passages: it scores every passage in Python) and
PostgreSQL's full-text search (GIN + ``ts_rank_cd`` over an OR tsquery of the same
terms, same server). Peers have no candidate limit, so their two "limit" columns are
the same top-k search measured twice. Also in the run: Evaluate (300 judged queries x 3
limits through the facade) for the lexplain engines, and the ``load`` command end to end (a
new interpreter reading one JSONL file) at up to 100k into the embedded default, a stock-settings
PostgreSQL and the tuned one (``bench_load``'s servers, started fresh for each). The
README section ends with the issues' targets, computed from this run's figures.

Build time includes tokenising (lexplain tokenises inside ``upsert_many``; bm25s and
rank-bm25 get ``core.domain.tokenize`` timed in their build; tantivy tokenises itself). The
PostgreSQL engines' RSS is the Python client's only; the server is not counted.

    .venv/bin/uv pip install --python .venv/bin/python --require-hashes -r bench/requirements.lock
    source .ci/pg.sh && pg_start
    .venv/bin/python -m bench.bench_scale            # writes bench/scale.json, README, PNG
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
from pathlib import Path
from typing import Any

import numpy as np

from core.domain.chunks import workspace_tenant_id
from core.domain.tokenize import tokenize

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT / "data" / "cranfield"
README = ROOT / "bench" / "README.md"
RESULTS = ROOT / "bench" / "scale.json"
PLOT = ROOT / "bench" / "scale.png"
SECTION = "## Scale"
#: Results per query.
K = 10
#: The two candidate limits measured.
LIMITS = (100, 1000)
#: Synthetic corpus: Zipf exponent, vocabulary, passage lengths [lo, hi), seed.
ZIPF_S = 1.1
VOCABULARY = 200_000
LENGTHS = (80, 160)
SEED = 20261201
#: Synthetic queries per size (fewer at 1M, where one query costs most).
QUERIES = {10_000: 200, 100_000: 200, 1_000_000: 100}
#: Queries of the unlimited Truncation analysis (it reads every matching passage).
ANALYSIS_QUERIES = 30
#: Evaluate as issue 8 sets it: this many judged queries at these limits, on corpora up to
#: EVALUATE_MAX passages per lexplain engine (the peers have no Evaluate). PostgreSQL reads
#: each query's candidates unlimited: 92 s at 10k before its analyses moved into the database.
EVALUATE_QUERIES = 300
EVALUATE_LIMITS = (100, 1000, 2**62)
EVALUATE_MAX = {"memory": 100_000, "postgres": 10_000}
#: rank-bm25 scores every passage in Python per query: skipped above this size.
RANK_BM25_MAX = 100_000
#: Seconds one latency series may take; a slow engine is measured on fewer queries (at least
#: MIN_QUERIES) rather than holding the run for an hour. The count is in the results.
BUDGET_S = 40.0
MIN_QUERIES = 3
#: lexplain's PostgreSQL store is skipped above this size (it loaded ~150 passages/s before
#: posting blocks and COPY; ~2,300/s since, so 1M runs).
POSTGRES_MAX = 1_000_000
#: The ``load`` command (end to end, from a JSONL file into PostgreSQL) is timed up to this size.
LOAD_MAX = 100_000
#: Passages per upsert_many batch.
BATCH = 5_000
#: A child that has not answered after this many seconds is recorded as unfinished.
CHILD_TIMEOUT = 3_600
#: The workspace every lexplain engine writes (its tenant id is the workspace's own).
WORKSPACE = "bench-scale"
TENANT = workspace_tenant_id(WORKSPACE)
SCHEMA = "bench_scale"
#: The ``load`` command's rows: engine -> bench_load's server (the embedded default, a stock
#: PostgreSQL and the tuned one, each started fresh by bench_load).
LOADS = {"load-embedded": "embedded", "load-stock": "stock", "load-tuned": "tuned"}
ENGINES = ("memory", "postgres", "bm25s", "tantivy", "rank-bm25", "pg-fts", *LOADS)


# -- corpora -------------------------------------------------------------------------------


def zipf_corpus(passages: int) -> tuple[list[str], list[str], list[list[str]]]:
    """Ids, texts and query token lists of the synthetic corpus (same seed, same corpus)."""
    rng = np.random.default_rng(SEED)
    cdf = np.cumsum(1.0 / np.arange(1, VOCABULARY + 1) ** ZIPF_S)
    cdf /= cdf[-1]
    vocab = [f"w{i}" for i in range(VOCABULARY)]
    lengths = rng.integers(LENGTHS[0], LENGTHS[1], size=passages)
    ends = np.cumsum(lengths)
    texts: list[str] = []
    step = 100_000  # draw words in slices: 1M passages are 120M words
    for lo in range(0, passages, step):
        hi = min(passages, lo + step)
        start = int(ends[lo] - lengths[lo])
        ranks = np.searchsorted(cdf, rng.random(int(ends[hi - 1]) - start)).tolist()
        offset = start
        for i in range(lo, hi):
            end = int(ends[i])
            texts.append(" ".join([vocab[r] for r in ranks[offset - start : end - start]]))
            offset = end
    qrng = np.random.default_rng(SEED + 1)
    queries = [
        [vocab[int(r)] for r in np.searchsorted(cdf, qrng.random(int(qrng.integers(3, 7))))]
        for _ in range(QUERIES.get(passages, 200))
    ]
    return [f"z{i}" for i in range(passages)], texts, queries


def cranfield_corpus() -> tuple[list[str], list[str], list[list[str]]]:
    ids, texts = [], []
    for line in (DATA / "corpus.jsonl").open(encoding="utf-8"):
        doc = json.loads(line)
        text = f"{doc['title']}\n{doc['text']}"
        if text.strip():
            ids.append(doc["_id"])
            texts.append(text)
    queries = [tokenize(json.loads(line)["text"]) for line in (DATA / "queries.jsonl").open()]
    return ids, texts, queries


def corpus(name: str) -> tuple[list[str], list[str], list[list[str]]]:
    return cranfield_corpus() if name == "cranfield" else zipf_corpus(int(name))


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
    not the metric. The store is opened on the facade's own loop by ``opener``.
    """
    from core.service import LexplainService
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
        service.evaluate(
            queries_data.encode(), qrels_data.encode(), K, EVALUATE_LIMITS, workspace=WORKSPACE
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

    return {limit: at(limit) for limit in LIMITS}, analysis, opener


def build_memory(ids: list[str], texts: list[str]) -> Built:
    from core.stores.memory import InMemoryChunkStore

    store = InMemoryChunkStore()
    loop = asyncio.new_event_loop()
    chunks = _chunks(ids, texts)
    for offset in range(0, len(chunks), BATCH):
        loop.run_until_complete(store.upsert_many(chunks[offset : offset + BATCH]))
    del chunks
    # The first read after writes makes the read view (memory_reads), as a real workspace pays.
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

    return dict.fromkeys(LIMITS, search), None, None


def build_rank_bm25(ids: list[str], texts: list[str]) -> Built:
    from rank_bm25 import BM25Okapi

    model = BM25Okapi([tokenize(t) for t in texts], k1=1.2, b=0.75)

    def search(terms: list[str]) -> object:
        scores = model.get_scores(sorted(set(terms)))
        top = np.argsort(-scores, kind="stable")[:K]
        return [ids[i] for i in top if scores[i] > 0]

    return dict.fromkeys(LIMITS, search), None, None


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

    return dict.fromkeys(LIMITS, search), None, None


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

    return dict.fromkeys(LIMITS, search), None, None


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
        result[f"p50_{limit}"] = percentile(times, 50)
        result[f"p95_{limit}"] = percentile(times, 95)
        result[f"n_{limit}"] = len(times)
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


def _fmt(value: Any, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _get(row: dict[str, Any] | None, key: str) -> float | None:
    return None if row is None or row.get(key) is None else float(row[key])


def _ratio(value: Any, peer: dict[str, Any] | None, key: str) -> float | None:
    return value / peer[key] if value is not None and peer and peer.get(key) else None


def table(results: list[dict[str, Any]]) -> str:
    """Every engine at every size: absolute figures (ms unless named) and the peer ratios."""
    lines = [
        "| corpus | passages | engine | build s | peak RSS MB | p50 @100 | p95 @100 "
        "| p50 @1000 | p95 @1000 | unlimited analysis p50 | Evaluate s "
        "| p50 ÷ bm25s @100 / @1000 | p50 ÷ pg-fts @100 / @1000 |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def peers(engine: str) -> dict[str, dict[str, Any]]:
        return {r["corpus"]: r for r in results if r["engine"] == engine and "skipped" not in r}

    bm25s, fts = peers("bm25s"), peers("pg-fts")
    for r in results:
        if r["engine"] in LOADS:
            continue
        if "skipped" in r:
            lines.append(f"| {r['corpus']} | | {r['engine']} | skipped: {r['skipped']} "
                         "| | | | | | | | | |")  # fmt: skip
            continue
        cells = []
        for peer in (bm25s.get(r["corpus"]), fts.get(r["corpus"])):
            low, high = (_ratio(r[f"p50_{limit}"], peer, f"p50_{limit}") for limit in LIMITS)
            cells.append("—" if low is None else f"{_fmt(low, 2)} / {_fmt(high, 2)}")
        lines.append(
            f"| {r['corpus']} | {r['passages']:,} | {r['engine']} | {_fmt(r['build_s'])} "
            f"| {_fmt(r['rss_mb'], 0)} | {_fmt(r['p50_100'], 2)} | {_fmt(r['p95_100'], 2)} "
            f"| {_fmt(r['p50_1000'], 2)} | {_fmt(r['p95_1000'], 2)} "
            f"| {_fmt(r.get('analysis_p50'), 1)} | {_fmt(r.get('evaluate_s'), 1)} "
            f"| {cells[0]} | {cells[1]} |"
        )
    return "\n".join(lines)


def load_table(results: list[dict[str, Any]]) -> str:
    """The ``load`` command, end to end, into each server of ``LOADS``."""
    lines = [
        "| server | corpus | passages in the file | passages stored | seconds | passages/s "
        "| peak RSS MB | server errors |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if r["engine"] not in LOADS:
            continue
        server = LOADS[r["engine"]]
        if "skipped" in r:
            lines.append(f"| {server} | {r['corpus']} | | | skipped: {r['skipped']} | | | |")
            continue
        lines.append(
            f"| {server} | {r['corpus']} | {r['passages']:,} | {r['passages_stored']:,} "
            f"| {_fmt(r['seconds'])} | {_fmt(r['passages_per_s'], 0)} | {_fmt(r['rss_mb'], 0)} "
            f"| {len(r['errors'])} |"
        )
    return "\n".join(lines)


def targets(results: list[dict[str, Any]]) -> str:
    """Each issue target, the figure measured in this run, and whether it was met."""
    by = {(r["engine"], r["corpus"]): r for r in results if "skipped" not in r}
    rows: list[tuple[str, str, str, float | None, float]] = []  # issue, what, corpus, value, bound
    for size in ("100000", "1000000"):
        memory, peer = by.get(("memory", size)), by.get(("bm25s", size))
        pg, fts = by.get(("postgres", size)), by.get(("pg-fts", size))
        for limit in LIMITS:
            key = f"p50_{limit}"
            rows.append(("8", f"memory search p50 @{limit} ÷ bm25s", size,
                         _ratio(_get(memory, key), peer, key), 1.0))  # fmt: skip
        for limit in LIMITS:
            key = f"p50_{limit}"
            bound = 0.15 if size == "100000" else 0.05
            rows.append(("9", f"postgres search p50 @{limit} ÷ pg-fts", size,
                         _ratio(_get(pg, key), fts, key), bound))  # fmt: skip
    million = "1000000"
    memory, peer, pg = (
        by.get(("memory", million)),
        by.get(("bm25s", million)),
        by.get(("postgres", million)),
    )
    rows.append(("8", "memory unlimited analysis p50, ms", million,
                 _get(memory, "analysis_p50"), 250.0))  # fmt: skip
    rows.append(
        (
            "8",
            "memory build ÷ bm25s",
            million,
            _ratio(_get(memory, "build_s"), peer, "build_s"),
            1.0,
        )
    )
    rows.append(
        (
            "8",
            "memory peak RSS ÷ bm25s",
            million,
            _ratio(_get(memory, "rss_mb"), peer, "rss_mb"),
            1.0,
        )
    )
    rows.append(("9", "postgres unlimited analysis p50, ms", million,
                 _get(pg, "analysis_p50"), 2000.0))  # fmt: skip
    memory_100k = by.get(("memory", "100000"))
    evaluate = f"Evaluate {EVALUATE_QUERIES} queries x {len(EVALUATE_LIMITS)} limits, memory, s"
    rows.append(("8", evaluate,
                 "100000", _get(memory_100k, "evaluate_s"), 10.0))  # fmt: skip
    lines = ["| issue | target | corpus | measured | bound | met |", "|---|---|---:|---:|---:|---|"]
    for issue, what, size, value, bound in rows:
        met = "—" if value is None else ("yes" if value <= bound else "**no**")
        lines.append(f"| {issue} | {what} | {int(size):,} | {_fmt(value, 2)} | {bound:g} | {met} |")
    for engine, server in LOADS.items():
        rate = _get(by.get((engine, "100000")), "passages_per_s")
        met = "—" if rate is None else ("yes" if rate >= 5000 else "**no**")
        lines.append(
            f"| 20 | load command, {server}, passages/s (at least) | 100,000 "
            f"| {_fmt(rate, 0)} | 5000 | {met} |"
        )
    return "\n".join(lines)


def plot(results: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 5))
    for engine in ENGINES:
        rows = sorted(
            (r for r in results if r["engine"] == engine and "skipped" not in r
             and r["corpus"] != "cranfield" and "p50_1000" in r),
            key=lambda r: r["passages"],
        )  # fmt: skip
        if rows:
            axis.plot([r["passages"] for r in rows], [r["p50_1000"] for r in rows], "o-",
                      label=f"{engine} (limit 1000)" if engine in ("memory", "postgres")
                      else engine)  # fmt: skip
        if engine == "memory" and rows:
            axis.plot([r["passages"] for r in rows], [r["analysis_p50"] for r in rows], "s--",
                      label="memory, unlimited analysis")  # fmt: skip
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("passages (synthetic Zipf)")
    axis.set_ylabel("search p50, ms (k = 10)")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(PLOT, dpi=110)


def write_readme(results: list[dict[str, Any]], note: str) -> None:
    text = README.read_text(encoding="utf-8")
    body = (
        f"{SECTION}\n\n`bench/bench_scale.py` (one run; each engine and corpus in its own "
        f"process; raw figures in `bench/scale.json`). {note}\n\n{table(results)}\n\n"
        f"![search p50 against corpus size](scale.png)\n\n"
        f"The `load` command, end to end (a new interpreter reading one JSONL file, whole "
        f"documents, into the embedded default, a stock-settings PostgreSQL and the tuned one, "
        f"each fresh; bench/bench_load.py):\n\n{load_table(results)}\n\n"
        f"The issues' targets, from the figures above (ratios are engine ÷ peer, lower is "
        f"better):\n\n{targets(results)}\n"
    )
    if SECTION in text:
        head, _, rest = text.partition(SECTION)
        tail = rest.split("\n## ", 1)
        text = head + body + ("\n## " + tail[1] if len(tail) > 1 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + body
    README.write_text(text, encoding="utf-8")


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
        RESULTS.write_text(json.dumps(results, indent=1), encoding="utf-8")
        write_readme(results, note)
        plot(results)
    print(table(results), load_table(results), targets(results), sep="\n\n")


if __name__ == "__main__":
    main()
