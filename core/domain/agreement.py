"""Several raters: how far they agree, and the one grade their grades become.

Kappa rather than raw agreement: two raters who both call 90% of passages "not relevant"
agree 82% of the time by chance alone, and kappa subtracts that. Cohen's kappa for exactly
two raters; Fleiss' kappa for three or more (it does not need the same raters on every pair).
Grades are categories here (0-3 unweighted): a weighted kappa would credit a 2 against a 3,
which flatters raters who disagree on what "relevant" means.

The grade a metric sees when raters differ is the LOWER MEDIAN of their grades. Quepid takes
the lowest, so one harsh rater decides every pair; the mean invents grades nobody gave
(1.5). The lower median is a grade someone gave; with two raters it is the lower of the two
(Quepid's cautious choice, where there is no majority), and from three on no single rater,
harsh or lenient, decides alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

Item = TypeVar("Item", bound=Hashable)

#: The rule of ``combined_grade`` in the words the screens show beside agreement.
COMBINING_RULE = (
    "Several raters' grades become their lower median: with two raters the lower grade, from"
    " three on the middle one, so no single harsh or lenient rater decides alone."
)


def combined_grade(grades: Sequence[int]) -> int:
    """The one grade several raters' grades become: their lower median (see the module)."""
    if not grades:
        raise ValueError("no grades to combine")
    ordered = sorted(grades)
    return ordered[(len(ordered) - 1) // 2]


def cohen_kappa(first: Mapping[Item, int], second: Mapping[Item, int]) -> float | None:
    """Cohen's kappa over the items both raters graded: (p_o - p_e) / (1 - p_e).

    None when it is undefined: no item graded by both, or chance agreement is already
    certain (both raters gave one and the same grade throughout).
    """
    shared = [item for item in first if item in second]
    n = len(shared)
    if n == 0:
        return None
    observed = sum(first[item] == second[item] for item in shared) / n
    count_a = Counter(first[item] for item in shared)
    count_b = Counter(second[item] for item in shared)
    expected = sum(count_a[grade] * count_b[grade] for grade in count_a) / (n * n)
    if expected == 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def fleiss_kappa(ratings: Mapping[Item, Sequence[int]]) -> float | None:
    """Fleiss' kappa over the items graded by two raters or more.

    Per item, the share of agreeing rater pairs, sum n_ij (n_ij - 1) / (n_i (n_i - 1)),
    averaged over items (p_bar); chance, p_e = sum_j p_j^2 with p_j the share of all grades
    in category j. With the same number of raters on every item this is Fleiss (1971)
    exactly; with varying numbers each item's agreement is over its own pairs. None when
    undefined (no item with two grades, or every grade the same).
    """
    rows = [list(grades) for grades in ratings.values() if len(grades) >= 2]
    if not rows:
        return None
    agreement = 0.0
    totals: Counter[int] = Counter()
    for grades in rows:
        counts = Counter(grades)
        n = len(grades)
        agreement += sum(c * (c - 1) for c in counts.values()) / (n * (n - 1))
        totals.update(counts)
    p_bar = agreement / len(rows)
    all_grades = sum(totals.values())
    p_e = sum((c / all_grades) ** 2 for c in totals.values())
    if p_e == 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)
