"""Every metric against trec_eval (through ir-measures) to 1e-12.

Two grounds: Cranfield (real BM25 runs, graded qrels 1-4) and generated runs whose
scores tie, whose judgments are graded 0-3 and leave many ranked documents unjudged.
ir-measures is a test-only dependency (requirements-dev.txt): the app's metrics must not
need it, but they must agree with it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import ir_measures
import pytest
from ir_measures import AP, RR, Judged, P, R, nDCG

from core.domain.classic import BM25
from core.domain.metrics import (
    average_precision,
    judged_at_k,
    mrr,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)
from core.domain.tokenize import tokenize

CRANFIELD = Path(__file__).resolve().parents[3] / "data" / "cranfield"
#: Agreement demanded of every metric with the outside implementation.
TOLERANCE = 1e-12
#: Cut-offs checked.
CUTOFFS = (1, 3, 5, 10, 20, 100)

Run = dict[str, list[str]]
Qrels = dict[str, dict[str, int]]


def _ours(name: str, ranked: Sequence[str], qrels: Mapping[str, int]) -> float:
    """Our value of the ir-measures measure called ``name`` (``AP``, ``RR``, ``P@10`` ...)."""
    if name == "AP":
        return average_precision(ranked, qrels)
    if name == "RR":
        return mrr(ranked, qrels)
    metric, k = name.split("@")
    cut = {"P": precision_at_k, "R": recall_at_k, "nDCG": ndcg_at_k, "Judged": judged_at_k}
    return cut[metric](ranked, qrels, int(k))


def _measures() -> list[object]:
    measures: list[object] = [AP, RR]
    for k in CUTOFFS:
        measures += [P @ k, R @ k, nDCG @ k, Judged @ k]
    return measures


def _theirs(scores: Mapping[str, Mapping[str, float]], qrels: Qrels) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for metric in ir_measures.iter_calc(_measures(), qrels, scores):
        out.setdefault(metric.query_id, {})[str(metric.measure)] = metric.value
    return out


def _compare(
    ranked: Callable[[str, str], list[str]],
    scores: Mapping[str, Mapping[str, float]],
    qrels: Qrels,
) -> int:
    """Compare every value ir-measures reports; ``ranked(query, measure)`` is our order."""
    theirs = _theirs(scores, qrels)
    compared = 0
    for query_id, values in theirs.items():
        for name, value in values.items():
            ours = _ours(name, ranked(query_id, name), qrels[query_id])
            assert ours == pytest.approx(value, abs=TOLERANCE, rel=0), (query_id, name)
            compared += 1
    return compared


def _by_rank(run: Run) -> dict[str, dict[str, float]]:
    """Scores that say exactly the given order (no ties)."""
    return {q: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for q, docs in run.items()}


@pytest.fixture(scope="module")
def cranfield() -> tuple[Run, Qrels]:
    ids, docs = [], []
    for line in (CRANFIELD / "corpus.jsonl").read_text().splitlines():
        row = json.loads(line)
        ids.append(row["_id"])
        docs.append(tokenize(f"{row['title']} {row['text']}"))
    bm25 = BM25(docs)
    run = {}
    for line in (CRANFIELD / "queries.jsonl").read_text().splitlines():
        row = json.loads(line)
        run[row["_id"]] = [ids[i] for i in bm25.rank(tokenize(row["text"]))[:100]]
    qrels: Qrels = {}
    for line in (CRANFIELD / "qrels.tsv").read_text().splitlines()[1:]:
        query_id, doc_id, grade = line.split("\t")
        qrels.setdefault(query_id, {})[doc_id] = int(grade)
    return run, qrels


def test_every_metric_agrees_with_trec_eval_on_cranfield(cranfield: tuple[Run, Qrels]) -> None:
    run, qrels = cranfield
    compared = _compare(lambda q, _: run[q], _by_rank(run), qrels)
    assert compared == 225 * (2 + 4 * len(CUTOFFS))


def _generated(seed: int) -> tuple[dict[str, dict[str, float]], Qrels]:
    """Runs with tied scores; graded 0-3 judgments covering part of each run and beyond it."""
    rng = random.Random(seed)
    scores: dict[str, dict[str, float]] = {}
    qrels: Qrels = {}
    for q in range(300):
        query_id = f"q{q}"
        pool = [f"d{n}" for n in rng.sample(range(400), rng.randint(1, 60))]
        # Few distinct scores, so ties are common, including across the cut-offs.
        scores[query_id] = {doc: float(rng.randint(0, 6)) for doc in pool}
        judged = rng.sample(range(400), rng.randint(1, 40))
        qrels[query_id] = {f"d{n}": rng.choice((0, 0, 1, 2, 3)) for n in judged}
        if q % 25 == 0:  # some queries judge nothing as relevant
            qrels[query_id] = dict.fromkeys(qrels[query_id], 0)
    return scores, qrels


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_metric_agrees_with_trec_eval_on_ties_grades_and_unjudged(seed: int) -> None:
    scores, qrels = _generated(seed)

    def ranked(query_id: str, measure: str) -> list[str]:
        # The ranked order is the caller's: order ties as each tool does (trec_eval by
        # document id descending; ir-measures' own Judged by document id ascending).
        items = scores[query_id].items()
        if measure.startswith("Judged"):
            return [doc for doc, _ in sorted(items, key=lambda x: (-x[1], x[0]))]
        by_id = sorted(items, key=lambda x: x[0], reverse=True)
        return [doc for doc, _ in sorted(by_id, key=lambda x: -x[1])]

    assert _compare(ranked, scores, qrels) > 300 * 20
