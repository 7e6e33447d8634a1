"""Rater agreement on textbook cases, and the rule that turns several grades into one."""

from __future__ import annotations

import pytest

from core.domain.agreement import cohen_kappa, combined_grade, fleiss_kappa


def test_cohens_kappa_subtracts_the_agreement_expected_by_chance() -> None:
    # Wikipedia's example: 50 items, 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no.
    pairs = [(1, 1)] * 20 + [(1, 0)] * 5 + [(0, 1)] * 10 + [(0, 0)] * 15
    first = {i: a for i, (a, _) in enumerate(pairs)}
    second = {i: b for i, (_, b) in enumerate(pairs)}
    assert cohen_kappa(first, second) == pytest.approx(0.4, abs=1e-12)


def test_cohens_kappa_reads_only_the_items_both_raters_graded() -> None:
    assert cohen_kappa({"a": 1, "b": 0, "c": 3}, {"a": 1, "b": 0, "z": 0}) == 1.0
    assert cohen_kappa({"a": 1}, {"b": 1}) is None


def test_kappa_is_undefined_when_chance_agreement_is_certain() -> None:
    assert cohen_kappa({"a": 2, "b": 2}, {"a": 2, "b": 2}) is None
    assert fleiss_kappa({"a": [1, 1, 1], "b": [1, 1]}) is None


def test_fleiss_kappa_matches_the_textbook_example() -> None:
    # Wikipedia's example (Fleiss 1971 layout): 10 items, 14 raters, 5 categories; kappa 0.210.
    table = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    ratings = {
        item: [grade for grade, count in enumerate(row) for _ in range(count)]
        for item, row in enumerate(table)
    }
    p_bar = sum(sum(c * (c - 1) for c in row) / (14 * 13) for row in table) / len(table)
    p_e = sum((sum(row[j] for row in table) / 140) ** 2 for j in range(5))
    assert fleiss_kappa(ratings) == pytest.approx((p_bar - p_e) / (1 - p_e), abs=1e-12)
    assert fleiss_kappa(ratings) == pytest.approx(0.210, abs=5e-4)


def test_fleiss_kappa_of_two_raters_everywhere_is_close_to_cohens() -> None:
    first = {i: i % 3 for i in range(30)}
    second = {i: (i % 3 if i % 5 else 0) for i in range(30)}
    fleiss = fleiss_kappa({i: [first[i], second[i]] for i in first})
    cohen = cohen_kappa(first, second)
    assert fleiss is not None and cohen is not None
    assert abs(fleiss - cohen) < 0.05


def test_items_graded_once_do_not_count_towards_fleiss_kappa() -> None:
    assert fleiss_kappa({"a": [3], "b": [0]}) is None
    assert fleiss_kappa({"a": [3], "b": [0, 0], "c": [2, 2]}) == 1.0


def test_two_raters_combine_to_the_lower_grade() -> None:
    assert combined_grade([3, 1]) == 1


def test_from_three_raters_no_single_rater_decides() -> None:
    assert combined_grade([0, 3, 3]) == 3
    assert combined_grade([3, 3, 0]) == 3
    assert combined_grade([0, 0, 3]) == 0
    assert combined_grade([0, 1, 2, 3]) == 1


def test_nothing_to_combine_is_refused() -> None:
    with pytest.raises(ValueError):
        combined_grade([])
