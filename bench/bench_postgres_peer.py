"""lexplain's PostgreSQL store against PostgreSQL's own full-text search, in one run.

The peer an engineer would reach for first inside PostgreSQL is its built-in
full-text search: a GIN index over ``to_tsvector('simple', text)`` (no stemming,
no stopwords, like ours) and ``ts_rank`` over an OR of the query terms. ParadeDB's
pg_search (BM25 in PostgreSQL) would be the closer peer, but it is not packaged
for Debian 12 and cannot be fetched here. Both engines read Cranfield from the
same server; queries alternate between them so load from other jobs hits both
alike. Overlap = mean share of lexplain's top-10 that FTS also returns: ts_rank
is not BM25, so this shows how different a ranking the built-in gives.

    source .ci/pg.sh && pg_start          # or any DATABASE_URL; uses schema bench_peer
    .venv/bin/python -m bench.bench_postgres_peer
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from uuid import UUID

import asyncpg

from core.analysis.evaluation import parse_qrels
from core.domain.chunks import StoredChunk
from core.domain.metrics import ndcg_at_k
from core.domain.ranking import rank_chunks
from core.domain.tokenize import tokenize
from core.stores.postgres import PostgresChunkStore

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT / "data" / "cranfield"
#: Schema used by both engines (dropped before and after).
SCHEMA = "bench_peer"
#: Results per query.
K = 10
#: Passes over the 225 queries.
REPEATS = 3
TENANT = UUID("00000000-0000-0000-0000-00000000b5e1")
#: PostgreSQL FTS: one OR query over the lexplain terms, ranked by ts_rank.
FTS_QUERY = f"""
SELECT id FROM {SCHEMA}.fts, to_tsquery('simple', $1) AS q
WHERE body @@ q ORDER BY ts_rank(body, q) DESC, id LIMIT {K}
"""  # noqa: S608 - constants only; the query text travels as $1


async def main() -> None:
    dsn = os.environ["DATABASE_URL"]
    docs = [json.loads(line) for line in (DATA / "corpus.jsonl").open(encoding="utf-8")]
    rows_q = [json.loads(line) for line in (DATA / "queries.jsonl").open()]
    queries = [tokenize(q["text"]) for q in rows_q]
    qrels = parse_qrels((DATA / "qrels.tsv").read_bytes())
    ndcg_ours: list[float] = []
    ndcg_fts: list[float] = []
    texts = {d["_id"]: f"{d['title']}\n{d['text']}" for d in docs}
    texts = {i: t for i, t in texts.items() if t.strip()}
    conn = await asyncpg.connect(dsn)
    await conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    store = await PostgresChunkStore.connect(dsn, schema=SCHEMA)
    try:
        started = time.perf_counter()
        await store.upsert_many(
            [
                StoredChunk(
                    tenant_id=TENANT,
                    source_id=i,
                    text=t,
                    chunk_index=0,
                    start_char=0,
                    end_char=len(t),
                )
                for i, t in texts.items()
            ]
        )
        ours_load = time.perf_counter() - started
        started = time.perf_counter()
        await conn.execute(f"CREATE TABLE {SCHEMA}.fts (id text PRIMARY KEY, body tsvector)")
        await conn.executemany(
            f"INSERT INTO {SCHEMA}.fts VALUES ($1, to_tsvector('simple', $2))",  # noqa: S608
            list(texts.items()),
        )
        await conn.execute(f"CREATE INDEX ON {SCHEMA}.fts USING gin (body)")
        await conn.execute(f"ANALYZE {SCHEMA}.fts")
        fts_load = time.perf_counter() - started

        ours: list[float] = []
        theirs: list[float] = []
        overlap: list[float] = []
        for repeat in range(REPEATS):
            for query, terms in zip(rows_q, queries, strict=True):
                t0 = time.perf_counter()
                pool = await store.lexical_candidates(terms, TENANT, 1000)
                mine = [r.chunk.source_id for r in rank_chunks(terms, pool, K)]
                ours.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                rows = await conn.fetch(FTS_QUERY, " | ".join(sorted(set(terms))) or "x")
                theirs.append(time.perf_counter() - t0)
                if repeat == 0:
                    found = [r["id"] for r in rows]
                    judged = qrels.get(query["_id"], {})
                    ndcg_ours.append(ndcg_at_k(mine, judged, K))
                    ndcg_fts.append(ndcg_at_k(found, judged, K))
                    if mine:
                        overlap.append(len(set(mine) & set(found)) / len(mine))
    finally:
        await store.close()
        await conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        await conn.close()

    def p(values: list[float], q: float) -> float:
        return sorted(values)[int(q * (len(values) - 1))] * 1000

    print(f"Cranfield, {len(texts)} passages, 225 queries x {REPEATS}, k = {K}\n")
    print(
        "| engine | load s | p50 ms | p95 ms | p50 ratio vs lexplain | top-10 overlap | nDCG@10 |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| lexplain PostgreSQL, limit 1000 | {ours_load:.2f} | {p(ours, 0.5):.2f} "
        f"| {p(ours, 0.95):.2f} | 1.00 | 1.000 | {statistics.mean(ndcg_ours):.4f} |"
    )
    print(
        f"| PostgreSQL FTS (GIN, ts_rank) | {fts_load:.2f} | {p(theirs, 0.5):.2f} "
        f"| {p(theirs, 0.95):.2f} | {p(theirs, 0.5) / p(ours, 0.5):.2f} "
        f"| {statistics.mean(overlap):.3f} | {statistics.mean(ndcg_fts):.4f} |"
    )


if __name__ == "__main__":
    asyncio.run(main())
