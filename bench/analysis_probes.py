"""Issue 49 item 1's probes: every analysis at the largest input the app accepts, each against
the 60 s and 1 GiB one request may take (``bench_query_probes --probes analyses``).

The workspace is bench_query_probes' generated one; on it this saves 10,000 distinct Zipf
queries (``MAX_EVALUATE_QUERIES``, drawn as ``bench_judge.graded_set`` draws them) as a set and
imports five grades each (0-3, seeded) of passages holding one of the query's words, as one
TREC file by source id (one passage a document here, so by passage and by document alike).
Grading through ``search`` as ``graded_set`` does was rejected: 10,000 searches would be most
of the run. The same queries and grades are the judgment files of Evaluate and
``diagnose_files``. Each probe is one facade call, measured by ``bench_query_probes.measured``
(seconds, peak above the resident size before it); a row is within the bound when both its
seconds and that peak are. A PostgreSQL server's own memory is its business, as there.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import numpy as np

from bench import scale_setup
from core.analysis.expansion import ExpansionSpec
from core.analysis.rankers import Ranker, RankerKind
from core.analysis.tuning import GridSpec
from core.service import LIMIT_MAX, LexplainService, RunSpec
from core.service.bounds import (
    MAX_CANDIDATE_CELLS,
    MAX_CEILING_LIMITS,
    MAX_DIAGNOSED_QUERIES,
    MAX_EVALUATE_QUERIES,
    MAX_EXPANDED_QUERIES,
    MAX_GRID_RANKINGS,
    MAX_LEDGER_QUERIES,
    MAX_PARITY_QUERIES,
    MAX_QUERY_TERMS,
    MAX_UNCUT_EVALUATE_QUERIES,
)
from core.service.grading import CeilingJudgments

#: Results per query and the candidate limit of every analysis (issue 49's figures).
K: Final = 10
LIMIT: Final = 1_000
#: Grades per query, and the seed they and the queries are drawn with.
GRADED_PER_QUERY: Final = 5
SEED: Final = scale_setup.SEED + 49
#: The sets: every query; the most the default grid (42 points) tunes; the most the largest
#: grid (20 x 20) tunes; the most an expanded run takes; the most a diagnosis takes.
SET, TUNE_SET, WIDE_SET, EXPAND_SET = "probe", "probe-tune", "probe-wide", "probe-expand"
DIAGNOSE_SET, LEDGER_SET = "probe-diagnose", "probe-ledger"
DEFAULT_POINTS: Final = 42
WIDE_GRID: Final = GridSpec(
    k1s=tuple(round(0.2 * n, 1) for n in range(20)), bs=tuple(n / 19 for n in range(20))
)
#: What one request may take (issue 49).
BOUND_S: Final = 60.0
BOUND_MIB: Final = 1_024
#: Issue 49's figures of the code before, by probe (10,000 queries unless it says).
BEFORE: Final = {
    "Evaluate files": "22 s",
    "diagnose files": "10,000 queries: PostgreSQL 152 s, memory 41 s",
    "diagnose by document": "10,000 queries: PostgreSQL 74 s",
    "tune, 42 points x 2,380 queries": "10,000 queries: PostgreSQL 35 s, 2.4 GB",
    "tune, 400 points x 250 queries": "400 x 10,000: PostgreSQL 106 s, 2.55 GB",
    "parity": "10^9 queries: 94 s; 1,000 queries past 120 s",
    "limit ceiling": "a million limits: 20.7 s, 822 MB",
    "residual (Rocchio), 2,000": "10,000 queries: PostgreSQL 134 s",
}
#: Each probe timed against the Evaluate of the same input (issue 49: at most 1.5x).
PEERS: Final = {
    "diagnose files": "Evaluate files",
    f"diagnose files, {MAX_DIAGNOSED_QUERIES:,} queries": (
        f"Evaluate files, {MAX_DIAGNOSED_QUERIES:,} queries"
    ),
}


def graded_queries(
    texts: Sequence[str], count: int
) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """``count`` distinct Zipf queries of 3-6 words, each with ``GRADED_PER_QUERY`` (passage
    index, grade) pairs of passages holding one of its words, at least one grade above 0."""
    rng = np.random.default_rng(SEED)
    cdf = np.cumsum(1.0 / np.arange(1, scale_setup.VOCABULARY + 1) ** scale_setup.ZIPF_S)
    cdf /= cdf[-1]
    drawn: dict[str, list[str]] = {}
    while len(drawn) < count * 2:  # twice: a query none of whose words occurs is dropped
        words = [f"w{int(r)}" for r in np.searchsorted(cdf, rng.random(int(rng.integers(3, 7))))]
        drawn.setdefault(" ".join(words), words)
    wanted = {word for words in drawn.values() for word in words}
    postings: dict[str, list[int]] = defaultdict(list)
    for index, text in enumerate(texts):
        for word in wanted.intersection(text.split()):
            postings[word].append(index)
    queries: list[str] = []
    grades: list[list[tuple[int, int]]] = []
    for text, words in drawn.items():
        present = [w for w in dict.fromkeys(words) if w in postings]
        if not present:
            continue
        picked: dict[int, int] = {}
        for _ in range(GRADED_PER_QUERY):
            found = postings[present[int(rng.integers(len(present)))]]
            picked[found[int(rng.integers(len(found)))]] = int(rng.integers(0, 4))
        first = next(iter(picked))
        picked[first] = max(1, picked[first])
        queries.append(text)
        grades.append(list(picked.items()))
        if len(queries) == count:
            break
    return queries, grades


def judgment_files(
    ids: Sequence[str], queries: Sequence[str], grades: Sequence[Sequence[tuple[int, int]]]
) -> tuple[bytes, bytes]:
    """The queries as BEIR JSONL (ids ``q0``, ``q1``, ...) and their grades as TREC qrels."""
    beir = "".join(json.dumps({"_id": f"q{n}", "text": t}) + "\n" for n, t in enumerate(queries))
    trec = "".join(
        f"q{n} 0 {ids[index]} {grade}\n" for n, pairs in enumerate(grades) for index, grade in pairs
    )
    return beir.encode(), trec.encode()


def ceiling_words(texts: Sequence[str]) -> list[str]:
    """The most frequent words, as many as an unlimited read of them may hold (every one
    matches most passages): the largest query a ceiling or a Truncation accepts here."""
    counts: dict[str, int] = defaultdict(int)
    for text in texts[:5_000]:
        for word in set(text.split()):
            counts[word] += 1
    frequent = sorted(counts, key=counts.__getitem__, reverse=True)
    return frequent[: min(MAX_QUERY_TERMS, MAX_CANDIDATE_CELLS // len(texts))]


def probes(
    service: LexplainService,
    ws: str,
    ids: Sequence[str],
    texts: Sequence[str],
    wanted: Sequence[str] = (),
) -> dict[str, Callable[[], str]]:
    """The sets saved and graded on ``ws`` (unless a kept workspace has them all already),
    then every analysis probe by name (``wanted``: those whose names start with one of them;
    all when empty)."""
    queries, grades = graded_queries(texts, MAX_EVALUATE_QUERIES)
    queries_file, qrels_file = judgment_files(ids, queries, grades)
    few = MAX_DIAGNOSED_QUERIES
    few_files = judgment_files(ids, queries[:few], grades[:few])
    uncut = MAX_UNCUT_EVALUATE_QUERIES
    uncut_files = judgment_files(ids, queries[:uncut], grades[:uncut])
    tune_queries = MAX_GRID_RANKINGS // DEFAULT_POINTS
    wide_queries = MAX_GRID_RANKINGS // (len(WIDE_GRID.k1s) * len(WIDE_GRID.bs))
    sets = {SET: len(queries), TUNE_SET: tune_queries, WIDE_SET: wide_queries}
    sets |= {EXPAND_SET: MAX_EXPANDED_QUERIES, DIAGNOSE_SET: few, LEDGER_SET: MAX_LEDGER_QUERIES}
    saved = {found.name: found.queries for found in service.query_sets(workspace=ws)}
    if any(saved.get(name) != count for name, count in sets.items()):
        for name, count in sets.items():
            lines = b"".join(queries_file.splitlines(keepends=True)[:count])
            service.save_query_set(name, lines, "beir", workspace=ws)
        imported = service.import_judgments(qrels_file, "trec", SET, workspace=ws)
        print(json.dumps({"queries": len(queries), "imported": imported.model_dump(mode="json")}))
    words = ceiling_words(texts)
    heavy = " ".join(words)
    ceiling_files = (
        json.dumps({"_id": "c", "text": heavy}).encode(),
        "".join(f"c 0 {ids[n]} {1 + n % 3}\n" for n in range(0, len(ids), 97)).encode(),
    )
    limits = [round(n * len(ids) / MAX_CEILING_LIMITS) for n in range(MAX_CEILING_LIMITS)]
    spec = [RunSpec(workspace=ws, limit=LIMIT)]
    #: The most an Evaluate takes (MAX_EVALUATE_RUNS): two runs of two rankers, each ranked.
    two = [*spec, RunSpec(workspace=ws, limit=LIMIT, ranker=Ranker.of(RankerKind.CLASSIC))]
    rm3 = ExpansionSpec()

    def runs(found: Sequence[Any]) -> str:
        return f"{len(found[0].rows):,} queries, nDCG@10 {found[0].mean_ndcg:.3f}"

    def diagnosed(found: Any) -> str:
        return f"{len(found.queries):,} queries, {found.lost:,} lost"

    def tuned(found: Any) -> str:
        return f"best k1 {found.best.k1:g} b {found.best.b:g}, {found.best.mean:.3f}"

    def evaluate() -> str:
        return runs(service.evaluate(queries_file, qrels_file, K, [LIMIT], workspace=ws))

    def evaluate_few() -> str:
        return runs(service.evaluate(*few_files, K, [LIMIT], workspace=ws))

    every: dict[str, Callable[[], str]] = {
        "Evaluate files": evaluate,
        "Evaluate grades by passage": lambda: runs(
            service.evaluate_judged(SET, K, spec, workspace=ws)
        ),
        "Evaluate grades by document": lambda: runs(
            service.evaluate_judged(SET, K, spec, workspace=ws, by_document=True)
        ),
        "Evaluate grades by passage, two rankers": lambda: runs(
            service.evaluate_judged(SET, K, two, workspace=ws)
        ),
        "diagnose by passage": lambda: diagnosed(service.diagnose(SET, K, LIMIT, workspace=ws)),
        "diagnose by document": lambda: diagnosed(
            service.diagnose(SET, K, LIMIT, workspace=ws, by_document=True)
        ),
        "diagnose files": lambda: diagnosed(
            service.diagnose_files(queries_file, qrels_file, K, LIMIT, workspace=ws)
        ),
        f"diagnose by passage, {few:,} queries": lambda: diagnosed(
            service.diagnose(DIAGNOSE_SET, K, LIMIT, workspace=ws)
        ),
        f"diagnose by document, {few:,} queries": lambda: diagnosed(
            service.diagnose(DIAGNOSE_SET, K, LIMIT, workspace=ws, by_document=True)
        ),
        f"Evaluate files, {few:,} queries": evaluate_few,
        # The largest limit the app accepts: nothing is cut, every candidate is ranked; at
        # most MAX_UNCUT_EVALUATE_QUERIES queries (more are refused in one sentence).
        f"largest limit: Evaluate files of {MAX_EVALUATE_QUERIES} queries": lambda: runs(
            service.evaluate(queries_file, qrels_file, K, [LIMIT_MAX], workspace=ws)
        ),
        f"largest limit: Evaluate files of {MAX_UNCUT_EVALUATE_QUERIES} queries": lambda: runs(
            service.evaluate(*uncut_files, K, [LIMIT_MAX], workspace=ws)
        ),
        f"largest limit: diagnose by passage of {few} queries": lambda: diagnosed(
            service.diagnose(DIAGNOSE_SET, K, LIMIT_MAX, workspace=ws)
        ),
        f"largest limit: diagnose by document of {few} queries": lambda: diagnosed(
            service.diagnose(DIAGNOSE_SET, K, LIMIT_MAX, workspace=ws, by_document=True)
        ),
        f"largest limit: diagnose files of {few} queries": lambda: diagnosed(
            service.diagnose_files(*few_files, K, LIMIT_MAX, workspace=ws)
        ),
        f"diagnose files, {few:,} queries": lambda: diagnosed(
            service.diagnose_files(*few_files, K, LIMIT, workspace=ws)
        ),
        f"tune, 42 points x {tune_queries:,} queries": lambda: tuned(
            service.tune(TUNE_SET, K, LIMIT, workspace=ws)
        ),
        f"tune, 400 points x {wide_queries:,} queries": lambda: tuned(
            service.tune(WIDE_SET, K, LIMIT, workspace=ws, grid=WIDE_GRID)
        ),
        "tune, 42 points x 10,000 queries": lambda: tuned(
            service.tune(SET, K, LIMIT, workspace=ws)
        ),
        f"parity, {MAX_PARITY_QUERIES:,} queries": lambda: service.parity(
            workspace=ws, queries=MAX_PARITY_QUERIES
        ).summary(),
        f"limit ceiling, {MAX_CEILING_LIMITS:,} limits, {len(words)} words": lambda: (
            f"{len(service.limit_ceiling(heavy, K, limits, CeilingJudgments(files=ceiling_files), workspace=ws).points)} points"  # noqa: E501
        ),
        f"Truncation, {len(words)} words": lambda: (
            f"{len(service.truncation(heavy, K, LIMIT, workspace=ws).unlimited)} ranked"
        ),
        "hardest first, 10,000 queries": lambda: (
            f"{len(service.queries_hardest_first(SET, workspace=ws))} ordered"
        ),
        f"expansion ledger (RM3), {MAX_EXPANDED_QUERIES:,} queries": lambda: (
            f"{len(service.expansion_ledger(EXPAND_SET, K, LIMIT, workspace=ws, expand=rm3).rows)}"
        ),
        f"expansion ledger (RM3), {MAX_LEDGER_QUERIES:,} queries": lambda: (
            f"{len(service.expansion_ledger(LEDGER_SET, K, LIMIT, workspace=ws, expand=rm3).rows)}"
        ),
        f"residual (Rocchio), {MAX_EXPANDED_QUERIES:,} queries": lambda: (
            f"{len(service.evaluate_residual(EXPAND_SET, K, LIMIT, workspace=ws).typed.rows)}"
        ),
        "residual (Rocchio), 10,000 queries": lambda: (
            f"{len(service.evaluate_residual(SET, K, LIMIT, workspace=ws).typed.rows)} queries"
        ),
    }
    return {
        name: call
        for name, call in every.items()
        if not wanted or any(name.startswith(w) for w in wanted)
    }


def fastest(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A probe's fastest round (``measured`` outcomes), with the highest peak of any round and
    how many rounds there were (``runs``)."""
    best = min(runs, key=lambda found: float(found["seconds"]))
    return {
        **best,
        "peak_over_mib": max(int(found["peak_over_mib"]) for found in runs),
        "peak_mib": max(int(found["peak_mib"]) for found in runs),
        "runs": len(runs),
    }


def row(
    name: str,
    store: str,
    passages: int,
    found: Mapping[str, Any],
    seconds_of: Mapping[str, float] | None = None,
) -> dict[str, str]:
    """``found`` (a ``measured`` outcome) as a bench/results row, within the bound or not."""
    seconds, over = float(found["seconds"]), int(found["peak_over_mib"])
    runs = int(found.get("runs", 1))
    fastest_of = f" (fastest of {runs})" if runs > 1 else ""
    refused = str(found["outcome"]).startswith("refused")
    fits = seconds <= BOUND_S and over <= BOUND_MIB
    within = ("refused in one sentence, " if refused else "") + ("within" if fits else "OVER")
    peer = PEERS.get(name)
    ratio = ""
    if peer and seconds_of and seconds_of.get(peer):
        ratio = f"{seconds / seconds_of[peer]:.2f}x {peer}"
    alone = name.startswith(("tune", "parity", "limit", "Truncation")) or "queries" in name
    detail = "" if alone else f", {MAX_EVALUATE_QUERIES:,} queries, limit {LIMIT:,}"
    if name.startswith(("diagnose", "Evaluate")) and "queries" in name:
        detail = f", limit {LIMIT:,}"
    if name.startswith("largest limit"):
        detail = f", limit {LIMIT_MAX:,}"
    return {
        "workload": f"{name}{detail} ({store}, {passages:,} passages)",
        "lexplain": (
            f"{seconds:.1f} s{fastest_of}, +{over:,} MiB (process {int(found['peak_mib']):,} "
            f"MiB): {within} 60 s / 1 GiB"
        ),
        "peer": next((f"before: {was}" for key, was in BEFORE.items() if name.startswith(key)), ""),
        "ratio": ratio,
        "load": str(found["load"]),
        "command": (
            f".venv/bin/python -m bench.bench_query_probes --store {store} --probes analyses"
            + (f" --repeats {runs}" if runs > 1 else "")
        ),
        "outcome": str(found["outcome"]),
    }
