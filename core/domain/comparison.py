"""Comparing runs: significance, confidence intervals, win/tie/loss, list overlap.

Pure arithmetic over per-query scores and ranked lists, so the Compare screen, a saved
run read a month later and the tests compute one thing one way. The t distribution is
evaluated here (the regularised incomplete beta function, Numerical Recipes' continued
fraction) rather than by scipy: scipy is a 30 MB wheel the app would carry for two
functions; the tests check these against scipy to 1e-10.

Two tests, because they fail differently: the paired t-test assumes the per-query
differences are roughly normal (they rarely are for nDCG on few queries); the randomisation
test assumes only that, under no difference, either run's score could have been either's
(Smucker, Allan and Carterette 2007 found it the safer default for IR). Both are shown; when
they disagree the reader learns the data is thin.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

#: Sign flips drawn by the randomisation test (exact enumeration when 2^n is no more).
PERMUTATIONS: Final[int] = 10_000
#: Seed of the randomisation test: the same two runs give the same p-value every time.
SEED: Final[int] = 20_070_601
#: Fewer paired queries than this and a p-value is shown with a warning (Sakai's rule of
#: thumb for topic sets; below it a real 0.05 difference in nDCG is usually missed).
MIN_QUERIES: Final[int] = 25
#: Two scores closer than this are a tie (the same ranked list scored twice is identical).
TIE: Final[float] = 1e-12
#: Confidence of the intervals shown beside means.
CONFIDENCE: Final[float] = 0.95
#: Persistence of rank-biased overlap: 0.9 puts about 86% of the weight on the top 10.
RBO_P: Final[float] = 0.9


class SignificanceResult(BaseModel):
    """A paired test of run A against run B over the same queries."""

    model_config = ConfigDict(frozen=True)

    queries: int
    mean_difference: float
    #: None when there is nothing to test (fewer than two queries).
    p_value: float | None
    #: A plain sentence when the result should not be leaned on; empty otherwise.
    warning: str = ""


class MeanInterval(BaseModel):
    model_config = ConfigDict(frozen=True)

    mean: float
    low: float
    high: float
    queries: int


class WinTieLoss(BaseModel):
    """How often run A beat, tied with and lost to run B, query by query."""

    model_config = ConfigDict(frozen=True)

    wins: int
    ties: int
    losses: int


def _paired(a: Sequence[float], b: Sequence[float]) -> npt.NDArray[np.float64]:
    if len(a) != len(b):
        raise ValueError(f"paired scores need the same queries: {len(a)} against {len(b)}")
    diff: npt.NDArray[np.float64] = np.asarray(a, dtype=np.float64) - np.asarray(
        b, dtype=np.float64
    )
    return diff


def _result(diff: npt.NDArray[np.float64], p: float | None) -> SignificanceResult:
    n = len(diff)
    mean = float(diff.mean()) if n else 0.0
    return SignificanceResult(queries=n, mean_difference=mean, p_value=p, warning=_warning(n))


def _warning(n: int) -> str:
    if n < 2:
        return f"{n} paired quer{'y' if n == 1 else 'ies'}: nothing to test."
    if n < MIN_QUERIES:
        return (
            f"Only {n} queries: too few to tell a real difference from chance; treat the"
            f" p-value as a hint and judge at least {MIN_QUERIES} queries."
        )
    return ""


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Lentz's evaluation of the incomplete beta continued fraction (Numerical Recipes 6.4)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


@functools.lru_cache(maxsize=256)
def t_quantile(probability: float, df: float) -> float:
    """The t value below which ``probability`` (> 0.5) of the distribution lies (bisection).

    Cached: ~200 incomplete-beta evaluations each, and the runs of one comparison share their
    query count, so five intervals asked the same quantile five times (1.2 of 3 s comparing
    five runs of 300 queries)."""
    tail = 2.0 * (1.0 - probability)
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > tail:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_two_sided_p(middle, df) > tail:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> SignificanceResult:
    """Two-sided paired t-test of mean(a - b) = 0.

    All differences equal: p = 1.0 when they are all zero (nothing differs), 0.0 when they
    are all the same non-zero number (scipy says nan; a reader is better served by the limit).
    """
    diff = _paired(a, b)
    n = len(diff)
    mean = float(diff.mean()) if n else 0.0
    if n < 2:
        return SignificanceResult(
            queries=n, mean_difference=mean, p_value=None, warning=_warning(n)
        )
    sd = float(diff.std(ddof=1))
    if sd == 0.0:
        p = 1.0 if mean == 0.0 else 0.0
    else:
        p = t_two_sided_p(mean / (sd / math.sqrt(n)), n - 1)
    return SignificanceResult(queries=n, mean_difference=mean, p_value=p, warning=_warning(n))


def randomisation_test(
    a: Sequence[float], b: Sequence[float], permutations: int = PERMUTATIONS, seed: int = SEED
) -> SignificanceResult:
    """Two-sided paired randomisation (sign-flip) test of the mean difference.

    Each query's difference keeps its size and takes either sign. With 2^n assignments at
    most ``permutations``, all are enumerated and p is exact (count / 2^n, scipy's exact
    test); otherwise ``permutations`` are drawn with a fixed seed over the differences' sorted
    magnitudes (so p is a function of the pairs, not of their order) and p = (count + 1) /
    (permutations + 1), which never claims a zero the sample cannot show. Two-sided: an
    assignment counts when |its mean| reaches |the observed mean|.
    """
    diff = _paired(a, b)
    n = len(diff)
    mean = float(diff.mean()) if n else 0.0
    if n < 2:
        return SignificanceResult(
            queries=n, mean_difference=mean, p_value=None, warning=_warning(n)
        )
    observed = abs(mean)
    reach = observed * (1.0 - 1e-12)  # equal means, summed in another order, still count
    if 2**n <= permutations:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        means = np.abs(signs @ diff) / n
        p = float(np.count_nonzero(means >= reach)) / len(signs)
    else:
        # The draws flip the sorted magnitudes: a sign flip of d is one of |d|, so the null is
        # the same, and p no longer depends on the order the queries came in (Tune and Compare
        # listed the same pairs in two orders and reported 0.0013 and 0.0011).
        magnitudes = np.sort(np.abs(diff))
        rng = np.random.default_rng(seed)
        hits = 0
        for start in range(0, permutations, 1000):
            rows = min(1000, permutations - start)
            signs = rng.choice((1.0, -1.0), size=(rows, n))
            hits += int(np.count_nonzero(np.abs(signs @ magnitudes) / n >= reach))
        p = (hits + 1) / (permutations + 1)
    return _result(diff, p)


def mean_interval(scores: Sequence[float], confidence: float = CONFIDENCE) -> MeanInterval:
    """The mean with its t-based confidence interval (mean ± t * sd / sqrt(n)).

    One score: the interval is the point (nothing measures its spread); none: all zeros.
    """
    values = np.asarray(scores, dtype=float)
    n = len(values)
    if n == 0:
        return MeanInterval(mean=0.0, low=0.0, high=0.0, queries=0)
    mean = float(values.mean())
    if n == 1:
        return MeanInterval(mean=mean, low=mean, high=mean, queries=1)
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * float(values.std(ddof=1)) / math.sqrt(n)
    return MeanInterval(mean=mean, low=mean - half, high=mean + half, queries=n)


def win_tie_loss(a: Sequence[float], b: Sequence[float]) -> WinTieLoss:
    """Queries where A scored above B (win), within ``TIE`` of it (tie), below it (loss)."""
    diff = _paired(a, b)
    return WinTieLoss(
        wins=int(np.count_nonzero(diff > TIE)),
        ties=int(np.count_nonzero(np.abs(diff) <= TIE)),
        losses=int(np.count_nonzero(diff < -TIE)),
    )


def jaccard_at_k(first: Sequence[str], second: Sequence[str], k: int) -> float:
    """|A ∩ B| / |A ∪ B| of the two top-k sets; two empty lists are identical (1.0)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    a, b = set(first[:k]), set(second[:k])
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def rank_biased_overlap(first: Sequence[str], second: Sequence[str], p: float = RBO_P) -> float:
    """Extrapolated rank-biased overlap (Webber, Moffat and Zobel 2010, eq. 32).

    The agreement of the two prefixes at every depth, weighted p^(d-1) so the top counts
    most, extrapolated past the shorter list by assuming the agreement seen at its end
    continues. 1.0 for identical lists, 0.0 for disjoint ones; two empty lists give 1.0.
    A repeated id counts at its first rank only.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be within (0, 1), got {p}")
    a = list(dict.fromkeys(first))
    b = list(dict.fromkeys(second))
    if len(a) > len(b):
        a, b = b, a
    s, l_ = len(a), len(b)
    if l_ == 0:
        return 1.0
    if s == 0:
        return 0.0
    seen_a: set[str] = set()
    seen_b: set[str] = set()
    overlap = 0  # X_d: ids the two prefixes share at depth d (all of the shorter past s)
    x_s = 0
    total = 0.0
    for d in range(1, l_ + 1):
        item_b = b[d - 1]
        if d <= s:
            item_a = a[d - 1]
            overlap += (item_a in seen_b) + (item_b in seen_a) + (item_a == item_b)
            seen_a.add(item_a)
        else:
            overlap += item_b in seen_a
        seen_b.add(item_b)
        if d == s:
            x_s = overlap
        total += overlap / d * p**d
        if d > s:
            total += x_s * (d - s) / (s * d) * p**d
    tail = ((overlap - x_s) / l_ + x_s / s) * p**l_
    return (1.0 - p) / p * total + tail
