"""Ranking metrics on cases computed by hand."""

from __future__ import annotations

import math

import pytest

from core.domain.metrics import (
    average_precision,
    judged_at_k,
    mrr,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)


def test_mrr_of_a_hit_at_rank_one_is_one() -> None:
    assert mrr(["a", "b"], {"a"}) == 1.0


def test_mrr_is_the_reciprocal_of_the_first_relevant_rank() -> None:
    assert mrr(["x", "y", "a", "b"], {"a", "b"}) == 1 / 3
    assert mrr(["x", "y"], {"a"}) == 0.0


def test_recall_counts_relevant_ids_within_k() -> None:
    assert recall_at_k(["a", "x", "b", "c"], {"a", "b", "c", "d"}, k=3) == 0.5
    assert recall_at_k(["a"], {"a"}, k=0) == 0.0


def test_ndcg_discounts_by_log2_of_rank_plus_one() -> None:
    # One relevant document at rank 3 of a binary judgment: DCG = 1/log2(4), IDCG = 1.
    assert ndcg_at_k(["x", "y", "a"], {"a"}, k=10) == 1 / math.log2(4)


def test_graded_ndcg_uses_the_grade_as_gain() -> None:
    ranked = ["b", "a", "x"]
    grades = {"a": 3, "b": 1}
    dcg = 1 / math.log2(2) + 3 / math.log2(3)
    idcg = 3 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k(ranked, grades, k=3) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["a", "b"], grades, k=2) == 1.0


def test_ndcg_is_cut_at_k_on_both_sides() -> None:
    # Ideal DCG@1 takes only the best grade; the ranked list only its first entry.
    assert ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, k=1) == 0.5


def test_a_duplicated_id_earns_its_gain_once() -> None:
    assert ndcg_at_k(["a", "a"], {"a", "b"}, k=2) == 1 / (1 + 1 / math.log2(3))


def test_empty_judgments_give_zero_everywhere() -> None:
    assert recall_at_k(["a"], set(), 5) == 0.0
    assert mrr(["a"], {}) == 0.0
    assert ndcg_at_k(["a"], {"a": 0}, 5) == 0.0


def test_a_negative_k_is_refused() -> None:
    with pytest.raises(ValueError):
        ndcg_at_k(["a"], {"a"}, -1)


def test_precision_divides_by_k_even_when_fewer_results_came_back() -> None:
    assert precision_at_k(["a", "x", "b"], {"a": 1, "b": 3}, 10) == 0.2
    assert precision_at_k(["a"], {"a"}, 0) == 0.0


def test_average_precision_counts_relevant_ids_never_found_as_zero() -> None:
    # Hits at ranks 1 and 3 of 3 relevant: (1/1 + 2/3) / 3.
    assert average_precision(["a", "x", "b"], {"a", "b", "c"}) == (1 + 2 / 3) / 3


def test_unjudged_ids_count_as_not_relevant_but_lower_judged_at_k() -> None:
    judgments = {"a": 2, "n": 0}
    ranked = ["u", "a", "n", "v"]
    assert precision_at_k(ranked, judgments, 4) == 0.25
    assert judged_at_k(ranked, judgments, 4) == 0.5
    assert judged_at_k(ranked, judgments, 10) == 0.5
    assert judged_at_k([], judgments, 10) == 0.0


def test_a_repeated_id_earns_nothing_the_second_time_in_any_metric() -> None:
    assert precision_at_k(["a", "a"], {"a"}, 2) == 0.5
    assert average_precision(["a", "a", "b"], {"a", "b"}) == (1 + 2 / 3) / 2
    assert judged_at_k(["a", "a"], {"a"}, 2) == 0.5
