"""Ranking quality: P@k, recall@k, MRR, average precision (MAP), nDCG@k, Judged@k.

One definition each, checked against trec_eval (through ``ir-measures``) to 1e-12 in
the tests, so a number here is the number a reviewer's own tooling would print.

Every metric takes a ranked list (best first) and the judgments of one query: a set of
relevant ids (binary) or a mapping id -> grade (graded). The rules, shared by all:

- Relevant means a grade > 0. Binary metrics (P@k, recall@k, MRR, AP) count a grade 1
  and a grade 3 alike; only nDCG@k uses the grade itself.
- Graded gain is linear (gain = grade), as trec_eval and BEIR compute it; the
  exponential 2^g - 1 variant would weight Cranfield's grade 4 sixteen times grade
  1, which overstates the scale's precision.
- An unjudged id counts as not relevant (grade 0), as in trec_eval: a run full of
  unjudged results scores low, not unknown. Judged@k is the metric that says how much of
  a score rests on judgments at all; show it beside the others.
- Ties are the caller's: the ranked order given is the order scored (trec_eval breaks
  tied scores by document id; a caller wanting that sorts first).
- An id repeated in the ranked list keeps its rank but earns nothing the second time.
- Judgments with nothing relevant give 0.0 (trec_eval leaves such a query out; a caller
  averaging over queries decides which queries to average).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence, Set
from typing import TypeVar

Id = TypeVar("Id", bound=Hashable)


def _grades(relevant: Set[Id] | Mapping[Id, float]) -> dict[Id, float]:
    if isinstance(relevant, Mapping):
        return {key: float(grade) for key, grade in relevant.items() if grade > 0}
    return {key: 1.0 for key in relevant}


def _check_k(k: int) -> None:
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")


def _first_hits(ranked_ids: Sequence[Id], grades: Mapping[Id, float]) -> list[int]:
    """1-based ranks at which a relevant id appears for the first time."""
    seen: set[Id] = set()
    ranks: list[int] = []
    for rank, doc in enumerate(ranked_ids, start=1):
        if doc in grades and doc not in seen:
            seen.add(doc)
            ranks.append(rank)
    return ranks


def precision_at_k(
    ranked_ids: Sequence[Id], relevant: Set[Id] | Mapping[Id, float], k: int
) -> float:
    """Relevant ids among the first ``k`` over ``k`` (not over the ids returned).

    A run that returns 3 results, 1 relevant, has P@10 = 0.1, as in trec_eval: the empty
    places were offered and not filled. Graded: relevant is grade > 0; unjudged is not
    relevant. k = 0 gives 0.0.
    """
    _check_k(k)
    if k == 0:
        return 0.0
    return len(_first_hits(ranked_ids[:k], _grades(relevant))) / k


def recall_at_k(ranked_ids: Sequence[Id], relevant: Set[Id] | Mapping[Id, float], k: int) -> float:
    """Share of the relevant ids (grade > 0) found among the first ``k`` ranked ids.

    Unjudged ids are not relevant; no relevant ids gives 0.0.
    """
    _check_k(k)
    grades = _grades(relevant)
    if not grades:
        return 0.0
    return len(_first_hits(ranked_ids[:k], grades)) / len(grades)


def mrr(ranked_ids: Sequence[Id], relevant: Set[Id] | Mapping[Id, float]) -> float:
    """Reciprocal rank: 1 / the 1-based rank of the first relevant id (grade > 0); 0.0 if none.

    Averaged over queries it is the mean reciprocal rank. Cut it at k by passing
    ``ranked_ids[:k]``. Unjudged ids are not relevant.
    """
    hits = _first_hits(ranked_ids, _grades(relevant))
    return 1.0 / hits[0] if hits else 0.0


def average_precision(ranked_ids: Sequence[Id], relevant: Set[Id] | Mapping[Id, float]) -> float:
    """AP: the mean, over ALL relevant ids (grade > 0), of P@rank at the rank each is found.

    A relevant id never ranked contributes 0, so AP over a top-k list is bounded by the
    share of relevant ids the list holds (trec_eval's ``map`` on that list). Averaged over
    queries it is MAP. Unjudged ids are not relevant; no relevant ids gives 0.0.
    """
    grades = _grades(relevant)
    if not grades:
        return 0.0
    hits = _first_hits(ranked_ids, grades)
    return sum(found / rank for found, rank in enumerate(hits, start=1)) / len(grades)


def ndcg_at_k(ranked_ids: Sequence[Id], relevant: Set[Id] | Mapping[Id, float], k: int) -> float:
    """DCG of the first ``k`` over the ideal DCG@k; gain = grade, discount 1/log2(rank + 1).

    The ideal ordering is every relevant id (grade > 0) by grade, best first, cut at k,
    whether or not the run found it. Unjudged ids have gain 0. No relevant ids, or k = 0,
    gives 0.0.
    """
    _check_k(k)
    grades = _grades(relevant)
    if not grades or k == 0:
        return 0.0
    dcg = sum(
        grades[ranked_ids[rank - 1]] / math.log2(rank + 1)
        for rank in _first_hits(ranked_ids[:k], grades)
    )
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal, start=1))
    return dcg / idcg


def judged_at_k(ranked_ids: Sequence[Id], judgments: Set[Id] | Mapping[Id, float], k: int) -> float:
    """Share of the first ``k`` ranked ids that carry a judgment of any grade, 0 included.

    Divided by the ids actually in the top k (min(k, len(ranked_ids))), as ir-measures'
    Judged@k: a run returning 4 results, all judged, is fully judged. A set of ids counts
    as judgments of those ids. An empty ranking, or k = 0, gives 0.0. A low Judged@k says
    the other metrics counted many unjudged results as not relevant: the score is a lower
    bound, not a measurement.
    """
    _check_k(k)
    top = ranked_ids[:k]
    if not top:
        return 0.0
    seen: set[Id] = set()
    judged = 0
    for doc in top:
        if doc in judgments and doc not in seen:
            judged += 1
        seen.add(doc)
    return judged / len(top)
