"""Query performance predictors: how likely a query is to rank badly, before anyone grades it.

Why: a ranking can be weak without any sign on screen, and graders start wherever a set
happens to begin. The predictors here are the textbook ones, computed from numbers a search
already holds (the whole workspace's N and each term's df, the passages that matched, the
limit's cut and the ranked scores), so they cost no store read, only about 20 us for an
11-term query (bench/bench_predictors.py):

- pre-retrieval: mean and max IDF of the query's terms (the workspace's own BM25 IDF,
  ``core.domain.bm25``), SCQ and its mean over the terms (Zhao, Scholer and Tsegay 2008), the
  query's scope (the share of the workspace's passages matching any term) and the share of the
  matching passages the limit cut before scoring;
- post-retrieval: NQC (Shtok, Kurland, Carmel et al. 2012: the spread of the top-k scores)
  and the gap between rank 1 and rank k.

Two variants, because the store port gives df and no collection frequency cf: SCQ's term
weight is ``(1 + ln df) * idf(df)`` (``ln cf`` replaced by ``ln df``, and the workspace's own
BM25 IDF rather than SCQ's ``ln(1 + N/df)``, so there is one IDF in the code base: both fall as
df grows, so they order terms alike, and ours is lower by at most ln 2); NQC divides the
standard deviation of the top-k scores by their mean, not by a corpus score, which BM25 here
has no meaning for (the whole workspace as one passage would need cf). The gap is relative to
the top score for the same reason: a BM25 score is only comparable within one result list.

Rejected: predictors that read more (clarity needs a language model of the top passages,
query feedback a second retrieval, cf an extra column in every store): each costs a read per
query, which the issue's budget (under 5% of the search's own time) does not allow.

"Likely hard" is a rule of named thresholds, each of which gives the page a plain reason. They
were chosen on Cranfield (docs/predictors.md: the flagged queries' nDCG@10 against the rest's)
and the correlations measured there are weak; the line says "likely", not "is".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict

from core.domain.bm25 import IDF_FUNCTIONS, CorpusStats, IdfForm
from core.domain.models import built

#: Query scope (share of the workspace's passages matching any term) from which terms are common.
HARD_SCOPE: Final = 0.5
#: Max IDF below which even the rarest term is common (idf 4.0 is df about 1.8% of N).
HARD_MAX_IDF: Final = 4.0
#: Share of the matching passages cut by the limit from which the cut alone makes a query hard.
HARD_CUT_SHARE: Final = 0.2
#: NQC (spread of the top-k scores over their mean) below which the top scores are level.
HARD_NQC: Final = 0.1
#: The IDF every workspace ranks with (``core.domain.bm25``'s one formula, by df and N).
WORKSPACE_IDF: Final = IDF_FUNCTIONS[IdfForm.LUCENE]
#: Fewest ranked scores NQC and the gap are computed from (one score has no spread).
MIN_SCORES: Final = 2


class QueryDifficulty(BaseModel):
    """The predictors of one query, whether it is likely hard, and why in plain words."""

    model_config = ConfigDict(frozen=True)

    #: Distinct query terms the workspace holds (df > 0); the IDF figures are over these.
    terms_present: int
    #: Mean and max IDF of the present terms (None when no term is present).
    mean_idf: float | None
    max_idf: float | None
    #: SCQ summed over the present terms, and its mean (AvSCQ); None when none is present.
    scq: float | None
    mean_scq: float | None
    #: The rarest present term's df as a share of N (None when none is present).
    rarest_share: float | None
    #: Share of the workspace's passages that contain any query term.
    scope: float
    #: Share of the matching passages the limit cut before scoring (0 when nothing matched).
    limit_cut_share: float
    #: Standard deviation of the top-k scores over their mean (None without post-retrieval
    #: scores, or with fewer than ``MIN_SCORES``).
    nqc: float | None = None
    #: (score at rank 1 - score at rank k) / score at rank 1 (None like ``nqc``).
    score_gap: float | None = None
    #: How many ranked scores the post-retrieval predictors were computed from.
    scored: int = 0
    likely_hard: bool
    #: The reasons, each a phrase; empty when the query is not likely hard.
    reasons: tuple[str, ...] = ()

    @property
    def line(self) -> str | None:
        """The one sentence a screen shows when the query is likely hard, else None."""
        if not self.likely_hard:
            return None
        return "Likely hard: " + "; ".join(self.reasons) + "."


def percent(share: float) -> str:
    """A share as a whole percent, never rounding a non-zero share down to "0%"."""
    if 0.0 < share < 0.005:
        return "under 1%"
    return f"{share:.0%}"


def query_difficulty(
    terms: Sequence[str],
    stats: CorpusStats,
    matching: int,
    cut_by_limit: int,
    scores: Sequence[float] | None = None,
    *,
    filtered_out: int = 0,
) -> QueryDifficulty:
    """The predictors of the query ``terms`` from one candidate read's numbers.

    ``stats``: the whole workspace's N and the terms' df; ``matching``: the passages the read
    could hand over (with a filter, those it admits), ``filtered_out`` the matching ones the
    filter excluded, so the scope counts every matching passage of the workspace while the
    cut share is of what the limit saw; ``scores``: the ranked top-k, best first (None before
    retrieval: no NQC, no gap, and the rule uses the pre-retrieval predictors only).
    """
    n_docs = stats.n_docs
    frequencies = {t: stats.df(t) for t in set(terms)}
    present = sorted(t for t, df in frequencies.items() if df > 0)
    dfs = [frequencies[t] for t in present]
    idfs = [WORKSPACE_IDF(df, n_docs) for df in dfs]
    scqs = [(1.0 + math.log(df)) * idf for df, idf in zip(dfs, idfs, strict=True)]
    scope = (matching + filtered_out) / n_docs if n_docs else 0.0
    cut_share = cut_by_limit / matching if matching else 0.0
    nqc = gap = None
    ranked = list(scores or ())
    if len(ranked) >= MIN_SCORES and ranked[0] > 0.0:
        # Plain float arithmetic: ``statistics.pstdev`` is exact (fractions), 10x the time.
        mean = math.fsum(ranked) / len(ranked)
        nqc = math.sqrt(math.fsum((x - mean) ** 2 for x in ranked) / len(ranked)) / mean
        gap = (ranked[0] - ranked[-1]) / ranked[0]
    max_idf = max(idfs) if idfs else None
    rarest = min(dfs) / n_docs if dfs else None
    reasons: list[str] = []
    if matching + filtered_out and max_idf is not None and rarest is not None:
        if scope >= HARD_SCOPE and max_idf < HARD_MAX_IDF:
            reasons.append(
                f"its terms are common: {percent(scope)} of passages match, "
                f"and even the rarest term is in {percent(rarest)} of them"
            )
        if cut_share >= HARD_CUT_SHARE:
            reasons.append(f"the limit cut {percent(cut_share)} of the matches before scoring")
        if nqc is not None and nqc < HARD_NQC:
            reasons.append(
                f"the top {len(ranked)} scores are nearly level "
                f"(their spread is {percent(nqc)} of their mean)"
            )
    # Every value is computed here with its declared type: no second validation (a fifth of
    # the predictors' time on a Cranfield query).
    return built(
        QueryDifficulty,
        {
            "terms_present": len(present),
            "mean_idf": math.fsum(idfs) / len(idfs) if idfs else None,
            "max_idf": max_idf,
            "scq": math.fsum(scqs) if scqs else None,
            "mean_scq": math.fsum(scqs) / len(scqs) if scqs else None,
            "rarest_share": rarest,
            "scope": scope,
            "limit_cut_share": cut_share,
            "nqc": nqc,
            "score_gap": gap,
            "scored": len(ranked) if nqc is not None else 0,
            "likely_hard": bool(reasons),
            "reasons": tuple(reasons),
        },
    )


def hardest_first(difficulties: Sequence[QueryDifficulty | None]) -> list[int]:
    """The indices of ``difficulties``, hardest first.

    The likely-hard queries first (what Search would flag), then by AvSCQ ascending: the
    pre-retrieval predictor that correlated best with nDCG@10 on Cranfield (docs/predictors.md).
    Queries with no term the workspace holds go last (there is nothing to grade), after them
    those with no predictors at all (None: a query that cannot be searched); ties keep the
    given order.
    """

    def key(i: int) -> tuple[int, int, float, int]:
        d = difficulties[i]
        if d is None:
            return (2, 0, 0.0, i)
        if d.mean_scq is None:
            return (1, 0, 0.0, i)
        return (0, int(not d.likely_hard), d.mean_scq, i)

    return sorted(range(len(difficulties)), key=key)
