"""Significance, intervals, win/tie/loss and overlap, checked against scipy where it has them."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from core.domain.comparison import (
    MIN_QUERIES,
    jaccard_at_k,
    mean_interval,
    paired_t_test,
    randomisation_test,
    rank_biased_overlap,
    t_two_sided_p,
    win_tie_loss,
)


def _pairs(seed: int, n: int, shift: float) -> tuple[list[float], list[float]]:
    rng = random.Random(seed)
    a = [rng.random() for _ in range(n)]
    return a, [min(1.0, max(0.0, x - shift + rng.gauss(0, 0.15))) for x in a]


@pytest.mark.parametrize(("seed", "n", "shift"), [(1, 5, 0.1), (2, 30, 0.02), (3, 300, 0.01)])
def test_the_paired_t_test_matches_scipy(seed: int, n: int, shift: float) -> None:
    a, b = _pairs(seed, n, shift)
    ours = paired_t_test(a, b)
    theirs = stats.ttest_rel(a, b)
    assert ours.p_value == pytest.approx(float(theirs.pvalue), abs=1e-10)


@pytest.mark.parametrize("df", [1, 2, 5, 24, 299])
@pytest.mark.parametrize("t", [0.0, 0.3, 1.96, 4.0, 12.0])
def test_the_t_tail_matches_scipy(df: int, t: float) -> None:
    assert t_two_sided_p(t, df) == pytest.approx(2 * stats.t.sf(t, df), abs=1e-12, rel=1e-9)


@pytest.mark.parametrize(("seed", "n"), [(4, 6), (5, 12), (6, 13)])
def test_an_exact_randomisation_test_matches_scipy_exactly(seed: int, n: int) -> None:
    a, b = _pairs(seed, n, 0.05)
    diff = [x - y for x, y in zip(a, b, strict=True)]
    theirs = stats.permutation_test(
        (diff,), lambda d, axis: d.mean(axis=axis), permutation_type="samples", n_resamples=10_000
    )
    assert randomisation_test(a, b).p_value == pytest.approx(float(theirs.pvalue), abs=1e-12)


@pytest.mark.parametrize(("seed", "n", "shift"), [(7, 40, 0.03), (8, 300, 0.005)])
def test_a_sampled_randomisation_test_lands_near_scipy_and_repeats_itself(
    seed: int, n: int, shift: float
) -> None:
    a, b = _pairs(seed, n, shift)
    diff = [x - y for x, y in zip(a, b, strict=True)]
    theirs = stats.permutation_test(
        (diff,),
        lambda d, axis: d.mean(axis=axis),
        permutation_type="samples",
        n_resamples=20_000,
        rng=1,
    )
    ours = randomisation_test(a, b)
    assert ours.p_value is not None
    # 10,000 draws: a standard error of at most 0.005 on p.
    assert ours.p_value == pytest.approx(float(theirs.pvalue), abs=0.02)
    assert randomisation_test(a, b).p_value == ours.p_value


def test_a_sampled_randomisation_test_gives_one_p_whatever_the_order_or_side_of_the_runs() -> None:
    """Tune and Compare listed the same pairs in two orders and said p 0.0013 and 0.0011."""
    a, b = _pairs(7, 225, 0.03)
    order = list(range(len(a)))
    random.Random(3).shuffle(order)
    p = randomisation_test(a, b).p_value
    assert randomisation_test([a[i] for i in order], [b[i] for i in order]).p_value == p
    assert randomisation_test(b, a).p_value == p


def test_identical_runs_are_not_significantly_different() -> None:
    a = [0.1, 0.5, 0.7, 0.2] * 10
    assert paired_t_test(a, a).p_value == 1.0
    assert randomisation_test(a, a).p_value == 1.0
    assert win_tie_loss(a, a).ties == 40


def test_a_constant_gain_is_certainly_a_difference_for_the_t_test() -> None:
    a = [0.5] * 30
    assert paired_t_test([x + 0.1 for x in a], a).p_value == 0.0


def test_too_few_queries_come_with_a_plain_warning() -> None:
    a, b = _pairs(9, MIN_QUERIES - 1, 0.1)
    for result in (paired_t_test(a, b), randomisation_test(a, b)):
        assert result.p_value is not None
        assert f"Only {MIN_QUERIES - 1} queries" in result.warning
    a, b = _pairs(9, MIN_QUERIES, 0.1)
    assert paired_t_test(a, b).warning == ""
    one = paired_t_test([0.5], [0.2])
    assert one.p_value is None
    assert "nothing to test" in one.warning


def test_runs_over_different_queries_are_refused() -> None:
    with pytest.raises(ValueError, match="same queries"):
        paired_t_test([0.1, 0.2], [0.1])


@pytest.mark.parametrize("n", [2, 5, 300])
def test_the_confidence_interval_matches_scipy(n: int) -> None:
    scores = _pairs(n, n, 0)[0]
    ours = mean_interval(scores)
    low, high = stats.t.interval(0.95, n - 1, loc=stats.tmean(scores), scale=stats.sem(scores))
    assert (ours.low, ours.high) == pytest.approx((low, high), abs=1e-10)
    assert ours.mean == pytest.approx(sum(scores) / n, abs=1e-15)


def test_one_score_has_no_spread_to_measure() -> None:
    assert mean_interval([0.4]).low == mean_interval([0.4]).high == 0.4


def test_win_tie_loss_counts_queries_by_the_sign_of_the_difference() -> None:
    result = win_tie_loss([0.5, 0.2, 0.3, 0.1 + 0.2], [0.4, 0.2, 0.9, 0.3])
    assert (result.wins, result.ties, result.losses) == (1, 2, 1)


def test_jaccard_compares_the_top_k_as_sets() -> None:
    assert jaccard_at_k(["a", "b", "c"], ["b", "a", "x"], 2) == 1.0
    assert jaccard_at_k(["a", "b", "c"], ["b", "a", "x"], 3) == 2 / 4
    assert jaccard_at_k([], [], 5) == 1.0


def test_rbo_is_one_for_the_same_list_and_zero_for_disjoint_lists() -> None:
    ranked = [f"d{i}" for i in range(20)]
    assert rank_biased_overlap(ranked, ranked) == pytest.approx(1.0, abs=1e-15)
    assert rank_biased_overlap(ranked, [f"x{i}" for i in range(20)]) == 0.0


def test_rbo_weighs_a_swap_at_the_top_above_one_at_the_bottom() -> None:
    ranked = [f"d{i}" for i in range(10)]
    top = ["x", *ranked[1:]]
    bottom = [*ranked[:-1], "x"]
    assert rank_biased_overlap(ranked, top) < rank_biased_overlap(ranked, bottom) < 1.0


def test_rbo_of_equal_lengths_is_webbers_equation_30() -> None:
    a, b = ["a", "b", "c", "d"], ["b", "a", "d", "e"]
    p = 0.9
    overlaps = [0, 2, 2, 3]
    expected = overlaps[-1] / 4 * p**4 + (1 - p) / p * sum(
        x / d * p**d for d, x in enumerate(overlaps, start=1)
    )
    assert rank_biased_overlap(a, b, p) == pytest.approx(expected, abs=1e-15)
    assert rank_biased_overlap(b, a, p) == rank_biased_overlap(a, b, p)


def test_rbo_extrapolates_a_shorter_list_by_its_agreement_at_the_end() -> None:
    # A prefix of the other list: full agreement as far as it goes, so RBO_ext is 1.
    ranked = [f"d{i}" for i in range(10)]
    assert rank_biased_overlap(ranked[:4], ranked) == pytest.approx(1.0, abs=1e-12)
    assert not math.isnan(rank_biased_overlap([], ranked))
