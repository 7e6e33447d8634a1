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
the same top-k search measured twice.

Build time includes tokenising (lexplain tokenises inside ``upsert_many``; bm25s and
rank-bm25 get ``core.tokenize`` timed in their build; tantivy tokenises itself). The
PostgreSQL engines' RSS is the Python client's only; the server is not counted.

    .venv/bin/uv pip install --python .venv/bin/python -r bench/requirements.txt
    source .ci/pg.sh && pg_start
    .venv/bin/python bench/bench_scale.py            # writes bench/scale.json, README, PNG
    .venv/bin/python bench/bench_scale.py --sizes 10000 --engines memory,bm25s   # quick
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
from uuid import UUID

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.tokenize import tokenize  # noqa: E402

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
#: rank-bm25 scores every passage in Python per query: skipped above this size.
RANK_BM25_MAX = 100_000
#: Seconds one latency series may take; a slow engine is measured on fewer queries (at least
#: MIN_QUERIES) rather than holding the run for an hour. The count is in the results.
BUDGET_S = 40.0
MIN_QUERIES = 3
#: lexplain's PostgreSQL store is skipped above this size: its load (~200 passages/s through
#: upsert_many here) would take well over an hour at 1M.
POSTGRES_MAX = 100_000
#: PostgreSQL FTS is skipped above this size in this run (session deadline).
PG_FTS_MAX = 100_000
#: Passages per upsert_many batch.
BATCH = 5_000
#: A child that has not answered after this many seconds is recorded as unfinished.
CHILD_TIMEOUT = 3_600
TENANT = UUID("00000000-0000-0000-0000-00000000b5ca")
SCHEMA = "bench_scale"
ENGINES = ("memory", "postgres", "bm25s", "tantivy", "rank-bm25", "pg-fts")


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
Built = tuple[dict[int, Search], Search | None]


def _chunks(ids: list[str], texts: list[str]) -> list[Any]:
    from core.chunks import StoredChunk

    return [
        StoredChunk(
            tenant_id=TENANT, source_id=i, text=t, chunk_index=0, start_char=0, end_char=len(t)
        )
        for i, t in zip(ids, texts, strict=True)
    ]


def _lexplain(store: Any, loop: asyncio.AbstractEventLoop) -> Built:
    from core.ranking import rank_chunks
    from core.truncation import analyse_truncation

    def at(limit: int) -> Search:
        def search(terms: list[str]) -> object:
            pool = loop.run_until_complete(store.lexical_candidates(terms, TENANT, limit))
            return [r.chunk.source_id for r in rank_chunks(terms, pool, K)]

        return search

    def analysis(terms: list[str]) -> object:
        full = loop.run_until_complete(store.lexical_candidates(terms, TENANT, 2**62))
        return analyse_truncation(terms, full, K, LIMITS[-1])

    return {limit: at(limit) for limit in LIMITS}, analysis


def build_memory(ids: list[str], texts: list[str]) -> Built:
    from core.stores.memory import InMemoryChunkStore

    store = InMemoryChunkStore()
    loop = asyncio.new_event_loop()
    chunks = _chunks(ids, texts)
    for offset in range(0, len(chunks), BATCH):
        loop.run_until_complete(store.upsert_many(chunks[offset : offset + BATCH]))
    del chunks
    # The first read after writes builds the columnar image (postings as arrays): part of
    # the build, as a real workspace pays it once after a load.
    loop.run_until_complete(store.lexical_candidates(["w0"], TENANT, 1))
    return _lexplain(store, loop)


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
        return store

    return _lexplain(loop.run_until_complete(make()), loop)


def build_bm25s(ids: list[str], texts: list[str]) -> Built:
    import bm25s

    model = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    model.index([tokenize(t) for t in texts], show_progress=False)

    def search(terms: list[str]) -> object:
        scores = model.get_scores(sorted(set(terms)))
        top = np.argpartition(-scores, K)[:K] if len(scores) > K else np.arange(len(scores))
        return [ids[i] for i in top[np.argsort(-scores[top], kind="stable")] if scores[i] > 0]

    return dict.fromkeys(LIMITS, search), None


def build_rank_bm25(ids: list[str], texts: list[str]) -> Built:
    from rank_bm25 import BM25Okapi

    model = BM25Okapi([tokenize(t) for t in texts], k1=1.2, b=0.75)

    def search(terms: list[str]) -> object:
        scores = model.get_scores(sorted(set(terms)))
        top = np.argsort(-scores, kind="stable")[:K]
        return [ids[i] for i in top if scores[i] > 0]

    return dict.fromkeys(LIMITS, search), None


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

    return dict.fromkeys(LIMITS, search), None


def build_pg_fts(ids: list[str], texts: list[str]) -> Built:
    import asyncpg

    if len(ids) > PG_FTS_MAX:
        raise SystemExit("skipped: loading and indexing would not finish before the deadline")

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

    return dict.fromkeys(LIMITS, search), None


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
    queries = [q for q in queries if q]
    started = time.perf_counter()
    searches, analysis = BUILDERS[engine](ids, texts)
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
            if engine == "postgres" and name != "cranfield" and int(name) > POSTGRES_MAX:
                results.append(
                    {"engine": engine, "corpus": name, "skipped": "load would take over an hour"}
                )
                continue
            print(f"{engine} on {name} ...", file=sys.stderr, flush=True)
            try:
                done = subprocess.run(
                    [sys.executable, __file__, "--child", engine, name],
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


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| corpus | passages | engine | build s | peak RSS MB | p50 @100 | p95 @100 "
        "| p50 @1000 | p95 @1000 | unlimited analysis p50 | p50 @1000 ÷ bm25s |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    bm25s = {r["corpus"]: r for r in results if r["engine"] == "bm25s" and "skipped" not in r}
    for r in results:
        if "skipped" in r:
            lines.append(f"| {r['corpus']} | | {r['engine']} | skipped: {r['skipped']} "
                         "| | | | | | | |")  # fmt: skip
            continue
        peer = bm25s.get(r["corpus"])
        ratio = r["p50_1000"] / peer["p50_1000"] if peer else None
        lines.append(
            f"| {r['corpus']} | {r['passages']:,} | {r['engine']} | {_fmt(r['build_s'])} "
            f"| {_fmt(r['rss_mb'], 0)} | {_fmt(r['p50_100'], 2)} | {_fmt(r['p95_100'], 2)} "
            f"| {_fmt(r['p50_1000'], 2)} | {_fmt(r['p95_1000'], 2)} "
            f"| {_fmt(r.get('analysis_p50'), 1)} | {_fmt(ratio, 2)} |"
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
             and r["corpus"] != "cranfield"),
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
        f"![search p50 against corpus size](scale.png)\n"
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
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    corpora = ([] if args.no_cranfield else ["cranfield"]) + args.sizes.split(",")
    started = time.perf_counter()
    results = run(args.engines.split(","), corpora)
    note = (
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end, "
        f"{(time.perf_counter() - started) / 60:.0f} min in all. {args.note}"
    )
    RESULTS.write_text(json.dumps(results, indent=1), encoding="utf-8")
    write_readme(results, note)
    plot(results)
    print(table(results))


if __name__ == "__main__":
    main()
