"""Query latency and index memory of lexplain against BM25 peers, on Cranfield, in one run.

Peers: bm25s (sparse-matrix BM25, Lucene variant), rank-bm25 (the common pure-Python
BM25Okapi) and tantivy (a Rust Lucene-like engine). Each engine runs in its own
subprocess so peak memory (ru_maxrss after the index is built, minus the same
process before) is not shared; every engine is fed the same lexplain token lists
(tantivy re-tokenises their space-joined text with its default tokenizer). Times
are per query, one query at a time (an analyst's search), k = 10, p50/p95 over the
225 Cranfield queries, repeated REPEATS times. Ratios are peer / lexplain.

Pyserini is left out: it needs a JVM and Lucene jars that this machine cannot fetch.

    .venv/bin/uv pip install --python .venv/bin/python --require-hashes -r bench/requirements.lock
    .venv/bin/python -m bench.bench_ranking          # prints a Markdown table
"""

from __future__ import annotations

import asyncio
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

from core.domain.tokenize import tokenize

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT / "data" / "cranfield"
#: Results per query, as in the UI's default.
K = 10
#: Passes over the 225 queries per engine.
REPEATS = 3
TENANT = UUID("00000000-0000-0000-0000-0000000000b1")


def load() -> tuple[list[str], list[str], list[list[str]], list[list[str]]]:
    docs = [json.loads(line) for line in (DATA / "corpus.jsonl").open(encoding="utf-8")]
    ids = [d["_id"] for d in docs]
    texts = [f"{d['title']}\n{d['text']}" for d in docs]
    queries = [json.loads(line)["text"] for line in (DATA / "queries.jsonl").open()]
    return ids, texts, [tokenize(t) for t in texts], [tokenize(q) for q in queries]


def engine_lexplain(limit: int) -> Callable[[], tuple[Callable[[list[str]], list[str]], Any]]:
    def build() -> tuple[Callable[[list[str]], list[str]], Any]:
        from core.domain.chunks import StoredChunk
        from core.domain.ranking import rank_chunks
        from core.stores.memory import InMemoryChunkStore

        ids, texts, _, _ = load()
        store = InMemoryChunkStore()
        chunks = [
            StoredChunk(
                tenant_id=TENANT,
                source_id=i,
                text=t,
                chunk_index=0,
                start_char=0,
                end_char=len(t),
            )
            for i, t in zip(ids, texts, strict=True)
            if t.strip()
        ]
        loop = asyncio.new_event_loop()
        loop.run_until_complete(store.upsert_many(chunks))

        def search(terms: list[str]) -> list[str]:
            pool = loop.run_until_complete(store.lexical_candidates(terms, TENANT, limit))
            return [r.chunk.source_id for r in rank_chunks(terms, pool, K)]

        return search, store

    return build


def engine_bm25s() -> tuple[Callable[[list[str]], list[str]], Any]:
    import bm25s
    import numpy as np

    ids, _, tokens, _ = load()
    model = bm25s.BM25(method="lucene", k1=1.2, b=0.75, dtype="float64")
    model.index(tokens, show_progress=False)

    def search(terms: list[str]) -> list[str]:
        scores = model.get_scores(sorted(set(terms)))
        top = np.argsort(-scores, kind="stable")[:K]
        return [ids[i] for i in top if scores[i] > 0]

    return search, model


def engine_rank_bm25() -> tuple[Callable[[list[str]], list[str]], Any]:
    from rank_bm25 import BM25Okapi

    ids, _, tokens, _ = load()
    model = BM25Okapi(tokens, k1=1.2, b=0.75)

    def search(terms: list[str]) -> list[str]:
        scores = model.get_scores(sorted(set(terms)))
        top = sorted(range(len(ids)), key=lambda i: -scores[i])[:K]
        return [ids[i] for i in top if scores[i] > 0]

    return search, model


def engine_tantivy() -> tuple[Callable[[list[str]], list[str]], Any]:
    import tantivy

    ids, _, tokens, _ = load()
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("body", stored=False)
    schema = builder.build()
    index = tantivy.Index(schema)
    writer = index.writer(heap_size=50_000_000, num_threads=1)
    for doc_id, toks in zip(ids, tokens, strict=True):
        writer.add_document(tantivy.Document(id=doc_id, body=" ".join(toks)))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()

    def search(terms: list[str]) -> list[str]:
        if not terms:
            return []
        query = index.parse_query(" ".join(sorted(set(terms))), ["body"])
        hits = searcher.search(query, K).hits
        return [searcher.doc(address)["id"][0] for _, address in hits]

    return search, index


ENGINES: dict[str, Callable[[], tuple[Callable[[list[str]], list[str]], Any]]] = {
    "lexplain memory, limit 100": engine_lexplain(100),
    "lexplain memory, limit 1000": engine_lexplain(1000),
    "lexplain memory, unlimited": engine_lexplain(10**9),
    "bm25s 0.3.16 (numpy)": engine_bm25s,
    "rank-bm25 0.2.2 (BM25Okapi)": engine_rank_bm25,
    "tantivy 0.27.0": engine_tantivy,
}


def run_one(name: str) -> dict[str, Any]:
    _, _, _, queries = load()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    search, keep = ENGINES[name]()
    build_s = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times: list[float] = []
    results: list[list[str]] = []
    for repeat in range(REPEATS):
        for terms in queries:
            t0 = time.perf_counter()
            found = search(terms)
            times.append(time.perf_counter() - t0)
            if repeat == 0:
                results.append(found)
    del keep
    times.sort()
    return {
        "name": name,
        "build_s": build_s,
        "index_mb": (after - before) / 1024,
        "p50_ms": statistics.median(times) * 1000,
        "p95_ms": times[int(0.95 * (len(times) - 1))] * 1000,
        "results": results,
    }


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--engine":
        print(json.dumps(run_one(sys.argv[2])))
        return
    rows = []
    for name in ENGINES:
        out = subprocess.run(
            [sys.executable, "-m", "bench.bench_ranking", "--engine", name],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    base = next(r for r in rows if r["name"] == "lexplain memory, limit 1000")
    reference = next(r for r in rows if r["name"] == "lexplain memory, unlimited")["results"]
    print(f"Cranfield: 1,400 docs, 225 queries x {REPEATS}, k={K}, one query at a time.\n")
    print(
        "| engine | build s | index MB (maxrss delta) | p50 ms | p95 ms "
        "| p50 ratio vs lexplain@1000 | top-10 overlap with lexplain unlimited |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        overlap = statistics.mean(
            len(set(a) & set(b)) / max(len(b), 1)
            for a, b in zip(r["results"], reference, strict=True)
        )
        print(
            f"| {r['name']} | {r['build_s']:.2f} | {r['index_mb']:.1f} | {r['p50_ms']:.3f} "
            f"| {r['p95_ms']:.3f} | {r['p50_ms'] / base['p50_ms']:.2f} | {overlap:.3f} |"
        )


if __name__ == "__main__":
    main()
