"""Ingest rate of the whole upload path, documents/s and passages/s, in both stores.

Measures what an upload or ``python -m core load`` costs end to end: read (JSONL/text parse),
cut into passages, extract entities (rules), then per document ``upsert_entities`` +
``replace_source`` (one transaction per document in PostgreSQL). Not the raw store write
rate: bench_stores.py measures ``upsert_many`` alone. Corpora: Cranfield (BEIR corpus.jsonl,
whole documents and 1,200/150 windows), and "news": 300 synthetic documents of 60 sentences
drawn from the entity gold set (capitalised names everywhere: the extractor's worst case).
Results go to the "Ingest" section of bench/README.md.

    source /tmp/devpg.env   # or any DATABASE_URL; uses (and drops) schema bench_ingest
    .venv/bin/python -m bench.bench_ingest [--no-postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from core.domain.chunks import ChunkingOptions, workspace_tenant_id
from core.ingest.indexing import UploadResult, index_uploads, read_upload
from core.stores.memory import InMemoryChunkStore
from core.stores.port import ChunkStore

ROOT = Path(__file__).resolve().parents[1]

CRANFIELD = ROOT / "data" / "cranfield" / "corpus.jsonl"
GOLD = ROOT / "tests" / "data" / "entities_gold.jsonl"
#: PostgreSQL schema the benchmark writes to (dropped before and after).
SCHEMA = "bench_ingest"
#: Synthetic news documents, and sentences in each.
NEWS_DOCUMENTS = 300
NEWS_SENTENCES = 60


def cranfield_upload() -> Callable[[], list[UploadResult]]:
    data = CRANFIELD.read_bytes()
    return lambda: [read_upload("corpus.jsonl", data)]


def news_upload() -> Callable[[], list[UploadResult]]:
    sentences = [json.loads(line)["text"] for line in GOLD.read_text().splitlines()]
    rng = random.Random(7)
    files = []
    for i in range(NEWS_DOCUMENTS):
        paragraphs = [
            " ".join(rng.choice(sentences) for _ in range(6)) for _ in range(NEWS_SENTENCES // 6)
        ]
        files.append((f"news-{i:04d}.txt", "\n\n".join(paragraphs).encode()))
    return lambda: [read_upload(name, data) for name, data in files]


async def measure(
    open_store: Callable[[], Awaitable[ChunkStore]],
    uploads: Callable[[], list[UploadResult]],
    chunking: ChunkingOptions,
) -> tuple[int, int, float]:
    store = await open_store()
    try:
        started = time.perf_counter()
        report = await index_uploads(
            uploads(), store, workspace_tenant_id("bench"), chunking=chunking
        )
        elapsed = time.perf_counter() - started
    finally:
        await store.close()
    assert report.ok, report.rejected[:3]
    return report.documents_indexed, report.passages_written, elapsed


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL", "")
    stores: dict[str, Callable[[], Awaitable[ChunkStore]]] = {}

    async def memory() -> ChunkStore:
        return InMemoryChunkStore()

    stores["memory"] = memory
    if url and not args.no_postgres:
        import asyncpg

        from core.stores.postgres import PostgresChunkStore

        async def drop() -> None:
            conn = await asyncpg.connect(url)
            try:
                await conn.execute(f'DROP SCHEMA IF EXISTS "{SCHEMA}" CASCADE')
            finally:
                await conn.close()

        async def postgres() -> ChunkStore:
            await drop()
            return await PostgresChunkStore.connect(url, schema=SCHEMA)

        stores["PostgreSQL"] = postgres
    corpora = {"Cranfield": cranfield_upload(), "news (synthetic)": news_upload()}
    chunkings = {
        "whole documents": ChunkingOptions(whole_documents=True),
        "1,200 / 150": ChunkingOptions(),
    }
    print("| corpus | store | passages as | documents | passages | s | documents/s | passages/s |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for corpus, uploads in corpora.items():
        for store_name, open_store in stores.items():
            for chunk_name, chunking in chunkings.items():
                docs, passages, seconds = await measure(open_store, uploads, chunking)
                print(
                    f"| {corpus} | {store_name} | {chunk_name} | {docs:,} | {passages:,} |"
                    f" {seconds:.2f} | {docs / seconds:,.0f} | {passages / seconds:,.0f} |"
                )
    # One 50 MB text file (reading and cutting included), memory store, entities on and off.
    line = "Run {}: boundary layer on a flat plate at Mach 2.5 for NASA; transition moved aft.\n"
    big = "".join(line.format(i) for i in range(620_000)).encode()
    for extractor_on in (False, True):
        store = InMemoryChunkStore()
        started = time.perf_counter()
        upload = read_upload("big.txt", big)
        tenant = workspace_tenant_id("b")
        if extractor_on:
            report = await index_uploads([upload], store, tenant)
        else:
            report = await index_uploads([upload], store, tenant, extractor=None)
        seconds = time.perf_counter() - started
        label = "with entities" if extractor_on else "no entities"
        rate = report.passages_written / seconds
        print(
            f"| one {len(big) / 1e6:.0f} MB text file ({label}) | memory | 1,200 / 150 | 1 |"
            f" {report.passages_written:,} | {seconds:.2f} | — | {rate:,.0f} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
