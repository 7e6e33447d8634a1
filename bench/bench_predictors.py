"""Issue 36 item 3: how well each query performance predictor tracks nDCG@10 on Cranfield, and
what computing them costs a search.

Cranfield (``data/cranfield``) is loaded into an in-memory store through the facade
(``load_sample``); its 225 judged queries are evaluated by the facade's own ``evaluate`` (k 10,
Search's default limit 1000, the sample's qrels) for per-query nDCG@10, and each is searched
(``service.search``, k 10, limit 1000) for ``SearchResult.difficulty``. For each predictor:
Kendall's tau-b with nDCG@10 (scipy's ``kendalltau``, its default variant b, which counts the
ties nDCG has many of; scipy is in the bench and dev locks) and its p-value; a positive tau means
a higher value goes with a better ranking. Then the "likely hard" rule: how many queries it
flags and their mean nDCG@10 against the rest's, with the scores (Search) and without (Judge's
pre-retrieval order, ``queries_hardest_first``), and the mean nDCG@10 of the first quarter of
Judge's hardest-first order against the other three quarters.

Speed: the 225 searches, the result cache off, with the predictors and with
``core.service.search.query_difficulty`` replaced by a function returning None: in each of
``ROUNDS`` rounds every query is searched both ways back to back (which goes first alternates),
and the overhead is the sum over queries of the fastest search with the predictors over the
sum of the fastest without, less 1 (whole sweeps per side, compared as totals, moved by up to
30% between rounds on the shared machine). The predictors' own time is also measured alone
(``query_difficulty`` on each search's numbers, ``REPEATS`` times) as a share of the fastest
search time. The issue's budget is a ratio, measured here, never a timed test.

    .venv/bin/python -m bench.bench_predictors
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from scipy.stats import kendalltau  # type: ignore[import-untyped]

import core.service.search as search_module
from core.analysis.predictors import QueryDifficulty, query_difficulty
from core.domain.bm25 import CorpusStats
from core.service import SAMPLE_QUERY_SET, SearchResult
from core.service.facade import LexplainService
from core.service.runner import ResultCache
from core.settings import Settings

WORKSPACE = "cranfield"
#: k and limit of the searches and of the evaluation (Search's defaults).
K, LIMIT = 10, 1000
#: Rounds of the 225 searches, each query with and without back to back (whole sweeps per side
#: moved -5% to +31% between rounds on the shared machine).
ROUNDS = 10
#: Repeats of the predictors alone over the 225 searches' numbers.
REPEATS = 200
#: The name ``core.service.search`` computes the predictors by (replaced for the "without" side).
PATCHED = "query_difficulty"
#: The predictors, in the order the table lists them, with what they are.
PREDICTORS = {
    "mean_idf": "mean IDF",
    "max_idf": "max IDF",
    "scq": "SCQ (sum)",
    "mean_scq": "AvSCQ",
    "scope": "query scope",
    "limit_cut_share": "limit cut share",
    "nqc": "NQC",
    "score_gap": "gap rank 1 to k",
}


def tau_table(
    difficulties: list[QueryDifficulty], ndcg: list[float]
) -> list[tuple[str, int, float, float]]:
    rows = []
    for name, label in PREDICTORS.items():
        pairs = [
            (getattr(d, name), n) for d, n in zip(difficulties, ndcg, strict=True) if d is not None
        ]
        pairs = [(v, n) for v, n in pairs if v is not None]
        result = kendalltau([v for v, _ in pairs], [n for _, n in pairs])
        rows.append((label, len(pairs), float(result.statistic), float(result.pvalue)))
    return rows


def split(ndcg: list[float], flags: list[bool]) -> tuple[int, float, float]:
    flagged = [n for n, f in zip(ndcg, flags, strict=True) if f]
    rest = [n for n, f in zip(ndcg, flags, strict=True) if not f]
    return len(flagged), statistics.fmean(flagged), statistics.fmean(rest)


def timed_search(service: LexplainService, text: str) -> float:
    started = time.perf_counter()
    service.search(text, K, LIMIT, workspace=WORKSPACE)
    return time.perf_counter() - started


def overhead(service: LexplainService, texts: list[str]) -> dict[str, Any]:
    """Each query searched with and without the predictors back to back, ``ROUNDS`` times.

    Per query and side the fastest of the rounds (what the search costs when no other
    engineer's job steals the core); the overhead is the sum of the fastest with over the
    sum of the fastest without, less 1. Also each round's own ratio of sums, for the spread.
    """
    real = getattr(search_module, PATCHED)
    none: Callable[..., None] = lambda *args, **kwargs: None  # noqa: E731
    service._results = ResultCache(entries=0)  # every search reads and ranks
    for text in texts:  # warm
        timed_search(service, text)
    times: dict[bool, list[list[float]]] = {True: [], False: []}
    try:
        for round_ in range(ROUNDS):
            spans: dict[bool, list[float]] = {True: [], False: []}
            for i, text in enumerate(texts):
                for with_predictors in (True, False) if (round_ + i) % 2 == 0 else (False, True):
                    setattr(search_module, PATCHED, real if with_predictors else none)
                    spans[with_predictors].append(timed_search(service, text))
            for side in (True, False):
                times[side].append(spans[side])
    finally:
        setattr(search_module, PATCHED, real)
    fastest = {side: [min(column) for column in zip(*times[side], strict=True)] for side in times}
    rounds = [
        math.fsum(w) / math.fsum(wo) - 1 for w, wo in zip(times[True], times[False], strict=True)
    ]
    return {
        "with_s": math.fsum(fastest[True]),
        "without_s": math.fsum(fastest[False]),
        "overhead": math.fsum(fastest[True]) / math.fsum(fastest[False]) - 1,
        "rounds": rounds,
    }


def alone(results: list[SearchResult]) -> float:
    """Seconds of ``query_difficulty`` over every result's numbers, once each (the fastest)."""
    calls = [
        (
            r.terms,
            CorpusStats(
                n_docs=r.n_docs, avg_doc_length=r.avg_doc_length, doc_frequencies=r.doc_frequencies
            ),
            r.matching_passages,
            r.cut_by_limit,
            r.filtered_out,
            r.passages,
        )
        for r in results
    ]
    spans = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        for terms, stats, matching, cut, filtered_out, passages in calls:
            query_difficulty(
                terms, stats, matching, cut, [p.score for p in passages], filtered_out=filtered_out
            )
        spans.append(time.perf_counter() - started)
    return min(spans)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    load_before = os.getloadavg()
    service = LexplainService.from_settings(Settings(store="memory"))
    try:
        service.load_sample(workspace=WORKSPACE)
        queries, qrels = LexplainService.sample_judgments()
        (run,) = service.evaluate(queries, qrels, K, [LIMIT], workspace=WORKSPACE)
        texts = [row.query for row in run.rows]
        ndcg = [row.ndcg for row in run.rows]
        results = [service.search(t, K, LIMIT, workspace=WORKSPACE) for t in texts]
        difficulties = [r.difficulty for r in results]
        assert all(d is not None for d in difficulties)
        known = [d for d in difficulties if d is not None]
        print(f"{len(texts)} judged queries, mean nDCG@{K} {run.mean_ndcg:.4f} (limit {LIMIT})")
        print("\n| predictor | queries | Kendall's tau-b with nDCG@10 | p |")
        print("|---|---:|---:|---:|")
        for label, n, tau, p in tau_table(known, ndcg):
            print(f"| {label} | {n} | {tau:+.3f} | {p:.2g} |")

        ordered = service.queries_hardest_first(SAMPLE_QUERY_SET, workspace=WORKSPACE)
        pre = {q.text: q.difficulty for q in ordered}
        flags_search = [d.likely_hard for d in known]
        flags_pre = [bool(pre[t] and pre[t].likely_hard) for t in texts]  # type: ignore[union-attr]
        quarter = {q.text for q in ordered[: len(ordered) // 4]}
        print("\n| rule | flagged | mean nDCG@10 flagged | the rest |")
        print("|---|---:|---:|---:|")
        for label, flags in (
            ("likely hard on Search (with the scores)", flags_search),
            ("likely hard before retrieval (Judge)", flags_pre),
            ("first quarter of Judge's hardest-first order", [t in quarter for t in texts]),
        ):
            n, flagged, rest = split(ndcg, flags)
            print(f"| {label} | {n} | {flagged:.3f} | {rest:.3f} |")

        cost = overhead(service, texts)
        per_search = cost["without_s"] / len(texts)
        own = alone(results) / len(texts)
        print(
            f"\nsearch x{len(texts)}, the fastest of {ROUNDS} rounds per query: "
            f"with predictors {cost['with_s']:.3f} s, without {cost['without_s']:.3f} s, "
            f"overhead {cost['overhead']:+.2%} (each round's: "
            + ", ".join(f"{r:+.1%}" for r in cost["rounds"])
            + ")"
        )
        print(
            f"predictors alone: {own * 1e6:.1f} us a query = {own / per_search:.2%} of a search "
            f"({per_search * 1e3:.2f} ms)"
        )
    finally:
        service.close()
    load_after = os.getloadavg()
    print(
        "load average before "
        + " ".join(f"{v:.2f}" for v in load_before)
        + ", after "
        + " ".join(f"{v:.2f}" for v in load_after)
        + f", {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
