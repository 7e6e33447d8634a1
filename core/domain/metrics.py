"""Ranking quality: recall@k, MRR, nDCG@k, binary or graded.

Graded gain is linear (gain = grade), as trec_eval and BEIR compute it; the
exponential 2^g - 1 variant would weight Cranfield's grade 4 sixteen times grade
1, which overstates the scale's precision. Grades <= 0 count as not relevant.
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


def recall_at_k(ranked_ids: Sequence[Id], relevant: Set[Id] | Mapping[Id, float], k: int) -> float:
    """Share of the relevant ids found among the first ``k`` ranked ids."""
    _check_k(k)
    grades = _grades(relevant)
    if not grades:
        return 0.0
    found = {doc for doc in ranked_ids[:k] if doc in grades}
    return len(found) / len(grades)


def mrr(ranked_ids: Sequence[Id], relevant: Set[Id] | Mapping[Id, float]) -> float:
    """Reciprocal of the 1-based rank of the first relevant id; 0.0 if none."""
    grades = _grades(relevant)
    for rank, doc in enumerate(ranked_ids, start=1):
        if doc in grades:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked_ids: Sequence[Id], relevant: Set[Id] | Mapping[Id, float], k: int) -> float:
    """DCG of the first ``k`` over the ideal DCG; discount 1/log2(rank + 1), rank 1-based."""
    _check_k(k)
    grades = _grades(relevant)
    if not grades or k == 0:
        return 0.0
    seen: set[Id] = set()
    dcg = 0.0
    for rank, doc in enumerate(ranked_ids[:k], start=1):
        if doc in grades and doc not in seen:
            seen.add(doc)
            dcg += grades[doc] / math.log2(rank + 1)
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal, start=1))
    return dcg / idcg
