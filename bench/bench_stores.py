"""Ingest rate and query latency of both chunk stores, on Cranfield and a Zipf corpus.

A query is what the Search screen does: ``lexical_candidates`` then ``rank_chunks``
(k = 10), one query at a time; p50/p95 over the query set, at limit 100 and 1000.
Ingest is ``upsert_many`` in batches (the CLI loader's path: COPY into staging
tables, then INSERT ... SELECT in one transaction per batch). The synthetic corpus
is Zipf-distributed (s = 1.1 over a 200k-term vocabulary, 40-120 tokens per
passage); its queries take 2-5 terms from ranks 50-20,000, so they hit long and
short posting lists alike. Results go to bench/results/stores.json (bench/README.md's table).

    source .ci/pg.sh && pg_start          # or any DATABASE_URL; uses schema bench_stores
    .venv/bin/python -m bench.bench_stores [--passages 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from uuid import UUID

import asyncpg
import numpy as np

from bench.results import record
from core.domain.chunks import StoredChunk
from core.domain.ranking import rank_chunks
from core.domain.tokenize import tokenize
from core.stores.memory import InMemoryChunkStore
from core.stores.port import ChunkStore
from core.stores.postgres import PostgresChunkStore

ROOT = Path(__file__).resolve().parents[1]

#: The Cranfield collection shipped with the repository.
DATA = ROOT / "data" / "cranfield"
#: Results per query, as in the UI's default.
K = 10
#: The candidate limits compared.
LIMITS = (100, 1000)
#: Passages per upsert_many call when loading.
BATCH = 5000
#: Zipf exponent and vocabulary of the synthetic corpus.
ZIPF_S, VOCABULARY = 1.1, 200_000
#: Queries run against the synthetic corpus.
SYNTHETIC_QUERIES = 100
#: The schema the PostgreSQL store uses (dropped before and after).
SCHEMA = "bench_stores"
TENANT = UUID("00000000-0000-0000-0000-00000000b5e0")
#: One-minute load average when the run started, reported with the numbers.
LOAD_AT_START = os.getloadavg()[0]


def cranfield() -> tuple[list[StoredChunk], list[list[str]]]:
    chunks = []
    for line in (DATA / "corpus.jsonl").open(encoding="utf-8"):
        doc = json.loads(line)
        text = f"{doc['title']}\n{doc['text']}"
        if text.strip():
            chunks.append(_chunk(doc["_id"], text))
    queries = [tokenize(json.loads(line)["text"]) for line in (DATA / "queries.jsonl").open()]
    return chunks, queries


def zipf(passages: int, seed: int = 7) -> tuple[list[StoredChunk], list[list[str]]]:
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, VOCABULARY + 1) ** ZIPF_S
    lengths = rng.integers(40, 121, size=passages)
    ranks = rng.choice(VOCABULARY, size=int(lengths.sum()), p=weights / weights.sum())
    words = [f"t{rank}" for rank in ranks.tolist()]
    chunks, start = [], 0
    for i, length in enumerate(lengths.tolist()):
        chunks.append(_chunk(f"z{i // 20}", " ".join(words[start : start + length]), i % 20))
        start += length
    queries = [
        [f"t{rank}" for rank in rng.integers(50, 20_000, size=int(rng.integers(2, 6))).tolist()]
        for _ in range(SYNTHETIC_QUERIES)
    ]
    return chunks, queries


def _chunk(source_id: str, text: str, index: int = 0) -> StoredChunk:
    return StoredChunk(
        tenant_id=TENANT,
        source_id=source_id,
        text=text,
        chunk_index=index,
        start_char=0,
        end_char=len(text),
    )


async def ingest(store: ChunkStore, chunks: Sequence[StoredChunk]) -> float:
    """Passages per second through upsert_many in batches."""
    started = time.perf_counter()
    for offset in range(0, len(chunks), BATCH):
        await store.upsert_many(chunks[offset : offset + BATCH])
    return len(chunks) / (time.perf_counter() - started)


async def latencies(
    store: ChunkStore, queries: list[list[str]], limit: int, tenant: UUID = TENANT
) -> list[float]:
    """Milliseconds per query for lexical_candidates + rank_chunks, after one warm-up pass."""
    for terms in queries[:10]:
        rank_chunks(terms, await store.lexical_candidates(terms, tenant, limit), K)
    times = []
    for terms in queries:
        started = time.perf_counter()
        rank_chunks(terms, await store.lexical_candidates(terms, tenant, limit), K)
        times.append((time.perf_counter() - started) * 1000)
    return times


def p(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


async def drop_schema(dsn: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    finally:
        await conn.close()


async def measure(
    name: str, chunks: list[StoredChunk], queries: list[list[str]], dsn: str
) -> list[str]:
    rows = []
    await drop_schema(dsn)
    memory = InMemoryChunkStore()
    postgres = await PostgresChunkStore.connect(dsn, schema=SCHEMA)
    try:
        for label, store in (("memory", memory), ("PostgreSQL", postgres)):
            rate = await ingest(store, chunks)
            print(f"{name} {label}: {rate:,.0f} passages/s", file=sys.stderr)
            cells = [name, label, f"{len(chunks):,}", f"{rate:,.0f}"]
            for limit in LIMITS:
                times = await latencies(store, queries, limit)
                cells += [f"{p(times, 50):.1f}", f"{p(times, 95):.1f}"]
                print(f"  limit {limit}: p50 {cells[-2]} ms, p95 {cells[-1]} ms", file=sys.stderr)
            rows.append("| " + " | ".join(cells) + " |")
    finally:
        await postgres.close()
        await drop_schema(dsn)
    return rows


def record_figures(rows: list[str], passages: int) -> None:
    """Memory against PostgreSQL at limit 1000, per corpus, as bench/results/stores.json's rows
    (the table's markdown rows, as printed, are ``| corpus | store | passages | rate | p50 @100
    | p95 @100 | p50 @1000 | p95 @1000 |``)."""
    cells = [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]
    by = {(c[0], c[1]): c for c in cells}
    figures = []
    for corpus in dict.fromkeys(c[0] for c in cells):
        memory, postgres = by[(corpus, "memory")], by[(corpus, "PostgreSQL")]
        figures.append(
            {
                "workload": f"{corpus} ({memory[2]} passages) search p50 @1000, k {K}",
                "lexplain": f"memory {memory[6]} ms",
                "peer": f"PostgreSQL store {postgres[6]} ms",
                "ratio": f"{float(memory[6]) / float(postgres[6]):.2f}x",
                "load": f"{LOAD_AT_START:.1f}",
                "command": f".venv/bin/python -m bench.bench_stores --passages {passages}",
            }
        )
    record("stores", figures)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--dsn", default=os.environ.get("DATABASE_URL", ""))
    args = parser.parse_args()
    if not args.dsn:
        sys.exit("set DATABASE_URL (e.g. `source .ci/pg.sh && pg_start`) or pass --dsn")
    rows = await measure("Cranfield", *cranfield(), args.dsn)
    rows += await measure("Zipf", *zipf(args.passages), args.dsn)
    record_figures(rows, args.passages)
    print("\n".join(rows))


if __name__ == "__main__":
    asyncio.run(main())
