"""What bench_scale measures on: the synthetic Zipf corpus, Cranfield, and the run's constants.

Its own module because every other benchmark that needs "the bench_scale corpus" (bench_load,
bench_browser, bench_judge, bench_rerun, bench_users) imports it, and importing the runner for
that would drag its engine builders in; keeping them in bench_scale.py put it over 600 lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from core.domain.chunks import workspace_tenant_id
from core.domain.tokenize import tokenize

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT / "data" / "cranfield"
#: Results per query.
K = 10
#: The two candidate limits measured.
LIMITS = (100, 1000)
#: The searches timed: those limits and none (every matching passage scored, as the peers do);
#: the results name the last one ``none`` (``p50_none``).
SEARCH_LIMITS = (*LIMITS, 2**62)
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
