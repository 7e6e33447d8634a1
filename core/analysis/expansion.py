"""Query expansion by pseudo-relevance feedback (RM3), with where every added weight came from.

RM3 as Anserini computes it by default, with each float summed in a stated order so both stores
(which hand ranking identical columns) give identical weights:

1. the top ``fb_docs`` passages of the unexpanded ranking (score descending, then id) are the
   feedback; passage D's share is its score over the feedback's scores summed in rank order;
2. P(w|D) = tf(w, D) / dl(D) over D's terms after the workspace's profile (the tokenizer that
   indexed it, so tf and dl are the index's own);
3. R(w) = the sum, over the feedback in rank order, of share(D) * P(w|D);
4. the ``fb_terms`` highest R(w) are kept (ties by term ascending) and renormalised to sum 1,
   their sum taken in that kept order;
5. each distinct query term has P(t|Q) = 1 / (number of distinct query terms), and a term's
   weight is ``original_weight * P(t|Q) + (1 - original_weight) * R(t)``: a term in both gets
   both parts, a weight of 0 (a query term when ``original_weight`` is 0) is dropped.

Then the weighted, expanded term set is ranked again (``core.domain.ranking`` with weights; the
candidate rule is the store's, on the expanded terms). Kept here, in the analysis layer, because
it is arithmetic on passages a ranking returned; the stores only read candidates, as for any
query. Rejected: asking a store for each feedback passage's term counts (one more port method
on every server): tokenising the ten passages' text with the workspace's profile gives the same
counts the index holds, by the one tokenizer.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Sequence
from typing import Final, Literal, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field

from core.analysis.diagnosis import LostCause, RunDiagnosis
from core.analysis.evaluation import METRICS as METRIC_LABELS
from core.analysis.evaluation import EvaluationRun, Metric, mean_of
from core.domain.chunks import StoredChunk
from core.domain.comparison import SignificanceResult, randomisation_test
from core.domain.tokenize import Profile, tokenize

#: Anserini's RM3 defaults: feedback passages, kept expansion terms, the query's own share.
FB_DOCS: Final = 10
FB_TERMS: Final = 10
ORIGINAL_WEIGHT: Final = 0.5
#: Most feedback passages or expansion terms one expansion takes.
MAX_FEEDBACK: Final = 100
#: Rocchio's defaults: the typed query, the relevant passages' and the non-relevant passages'
#: shares (the SMART/Anserini values).
ROCCHIO_ALPHA: Final = 1.0
ROCCHIO_BETA: Final = 0.75
ROCCHIO_GAMMA: Final = 0.15


class ExpansionSpec(BaseModel):
    """How a query is expanded: the method and its parameters, refused outside their ranges."""

    model_config = ConfigDict(frozen=True)

    #: ``rm3``: feedback from the top passages; ``rocchio``: from the analyst's grades.
    method: Literal["rm3", "rocchio"] = "rm3"
    fb_docs: int = Field(default=FB_DOCS, ge=1, le=MAX_FEEDBACK)
    fb_terms: int = Field(default=FB_TERMS, ge=1, le=MAX_FEEDBACK)
    #: The typed query's share (RM3's original weight, Rocchio's alpha).
    original_weight: float = Field(default=ORIGINAL_WEIGHT, ge=0.0, le=1.0, allow_inf_nan=False)
    #: Rocchio only: the graded-relevant passages' share and the graded-0 passages' penalty.
    beta: float = Field(default=ROCCHIO_BETA, ge=0.0, le=1.0, allow_inf_nan=False)
    gamma: float = Field(default=ROCCHIO_GAMMA, ge=0.0, le=1.0, allow_inf_nan=False)

    @classmethod
    def rocchio(cls) -> ExpansionSpec:
        """Rocchio with its defaults (alpha 1.0, beta 0.75, gamma 0.15, 10 terms)."""
        return cls(method="rocchio", original_weight=ROCCHIO_ALPHA)

    @property
    def label(self) -> str:
        """How the screens name it."""
        if self.method == "rocchio":
            return (
                f"Rocchio from the grades (alpha {self.original_weight:g}, beta {self.beta:g}, "
                f"gamma {self.gamma:g}, terms {self.fb_terms})"
            )
        return (
            f"RM3 (feedback passages {self.fb_docs}, terms {self.fb_terms}, "
            f"original weight {self.original_weight:g})"
        )


class FeedbackPassage(BaseModel):
    """One passage the expansion learned from."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    source_id: str
    chunk_index: int
    #: Its rank in the unexpanded ranking (1-based) and its score there.
    rank: int
    score: float
    #: Its score over the feedback's summed scores: how much its terms weigh.
    share: float
    #: Its length after the profile (dl); 0: it has no term left, and taught nothing.
    doc_length: int


class TermSource(BaseModel):
    """What one feedback passage gave one term: share(D) * tf(w, D) / dl(D)."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    tf: int
    part: float


class ExpansionTerm(BaseModel):
    """A term of the expanded query with its weight and both parts of it."""

    model_config = ConfigDict(frozen=True)

    term: str
    weight: float
    #: Whether the analyst typed it.
    typed: bool
    #: original_weight * P(t|Q): the typed query's part (0 for an added term).
    query_part: float
    #: (1 - original_weight) * R(t) renormalised over the kept terms (0 if not kept).
    feedback_part: float
    #: R(t) before renormalising: the feedback passages' parts summed in rank order.
    relevance: float
    #: Each feedback passage that holds the term, in rank order.
    sources: list[TermSource] = Field(default_factory=list)


class Expansion(BaseModel):
    """An expanded query: the terms with their weights, and what they came from."""

    model_config = ConfigDict(frozen=True)

    spec: ExpansionSpec
    feedback: list[FeedbackPassage]
    #: Every term of the expanded query, by weight descending, then term.
    terms: list[ExpansionTerm]
    #: Said on screen when the expansion could not do what was asked (no feedback, fewer
    #: feedback passages than asked, a passage with no terms); None when it did.
    note: str | None = None

    @property
    def weights(self) -> dict[str, float]:
        """Term -> weight, the input ``QueryScorer`` takes."""
        return {t.term: t.weight for t in self.terms}

    @property
    def added(self) -> list[str]:
        """The terms the expansion added (not typed), by weight."""
        return [t.term for t in self.terms if not t.typed]


class Scored(Protocol):
    """A passage with its score: a ``RankedChunk``, or a ``Feedback`` (no explanation)."""

    @property
    def chunk(self) -> StoredChunk: ...

    @property
    def score(self) -> float: ...


class Feedback(NamedTuple):
    """A feedback passage as the unexpanded ranking scored it (no explanation built)."""

    chunk: StoredChunk
    score: float


class _Weighed:
    """The passages weighed so far, in order, each with its weight, term counts and dl: a
    term's parts (``TermSource``) are built only for the few terms kept, not for every term
    of every passage (~500 a query, most of an RM3 expansion's time)."""

    def __init__(self) -> None:
        self.passages: list[tuple[str, float, Counter[str], int]] = []

    def sources(self, term: str) -> list[tuple[str, int, float]]:
        """(chunk id, tf, part) of ``term`` in each passage holding it, in the order weighed."""
        return [
            (chunk_id, counts[term], weight * (counts[term] / dl))
            for chunk_id, weight, counts, dl in self.passages
            if term in counts
        ]


def _add_passage(
    chunk: StoredChunk,
    weight: float,
    profile: Profile,
    totals: dict[str, float],
    weighed: _Weighed,
) -> int:
    """Add ``weight * tf(t, D) / dl(D)`` of each of the passage's terms (after ``profile``) to
    ``totals`` (one addition per term and passage, so the order within a passage changes no
    sum), and the passage to ``weighed``; the passage's dl (0: nothing added). RM3 and Rocchio
    both weigh a passage's terms so; they differ in the weight."""
    tokens = tokenize(chunk.text, profile)
    dl = len(tokens)
    counts = Counter(tokens)
    for term, tf in counts.items():
        totals[term] = totals.get(term, 0.0) + weight * (tf / dl)
    weighed.passages.append((chunk.id, weight, counts, dl))
    return dl


def _highest(values: dict[str, float], n: int) -> list[tuple[str, float]]:
    """The ``n`` highest values, ties by term ascending: ``sorted(...)[:n]`` without sorting
    every term (the key is unique, so both give the same list). The n-th highest value is
    found among the bare floats first, and only the terms at or above it are keyed and sorted:
    ``heapq.nsmallest`` with the key called a Python lambda on each of a query's ~530 terms."""
    if n <= 0 or not values:
        return []
    floor = heapq.nlargest(n, values.values())[-1]
    above = [item for item in values.items() if item[1] >= floor]
    return sorted(above, key=lambda item: (-item[1], item[0]))[:n]


def _as_typed(
    spec: ExpansionSpec, distinct: list[str], passages: list[FeedbackPassage], notes: list[str]
) -> Expansion:
    """The query as typed (every weight 1), with the feedback read and why nothing was added."""
    terms = [
        ExpansionTerm(
            term=t, weight=1.0, typed=True, query_part=1.0, feedback_part=0.0, relevance=0.0
        )
        for t in distinct
    ]
    return Expansion(spec=spec, feedback=passages, terms=terms, note="; ".join(notes))


class _Rm3(NamedTuple):
    """What RM3 weighed: the feedback used with each passage's share and dl, R(w) and its
    sources, the renormalised feedback parts of the kept terms, and the expanded query's
    weights (term order; empty: nothing was added, the query is searched as typed)."""

    distinct: list[str]
    used: list[Scored]
    shares: list[float]
    dls: list[int]
    relevance: dict[str, float]
    sources: _Weighed
    from_feedback: dict[str, float]
    query_share: float
    weights: dict[str, float]


def _rm3(
    query_terms: Sequence[str], feedback: Sequence[Scored], profile: Profile, spec: ExpansionSpec
) -> _Rm3:
    """Steps 1-5 of the module docstring: the one computation ``rm3`` and ``rm3_weights``
    share, so the weights a run ranks by are the weights Search shows."""
    distinct = sorted(set(query_terms))
    if not distinct:
        raise ValueError("the query has no terms to expand")
    used = list(feedback[: spec.fb_docs])
    total = 0.0
    for ranked in used:
        total += ranked.score
    shares: list[float] = []
    dls: list[int] = []
    relevance: dict[str, float] = {}
    sources = _Weighed()
    for ranked in used:
        share = ranked.score / total if total > 0 else 0.0
        shares.append(share)
        dls.append(_add_passage(ranked.chunk, share, profile, relevance, sources))
    kept = _highest(relevance, spec.fb_terms)
    norm = 0.0
    for _, value in kept:
        norm += value
    feedback_weight = 1.0 - spec.original_weight
    from_feedback = {term: feedback_weight * (value / norm) for term, value in kept if norm > 0}
    query_share = spec.original_weight * (1.0 / len(distinct))
    weights: dict[str, float] = {}
    if from_feedback:
        asked = set(distinct)
        for term in sorted(asked | from_feedback.keys()):
            weight = (query_share if term in asked else 0.0) + from_feedback.get(term, 0.0)
            if weight > 0.0:
                weights[term] = weight
    return _Rm3(
        distinct, used, shares, dls, relevance, sources, from_feedback, query_share, weights
    )


def rm3_weights(
    query_terms: Sequence[str],
    feedback: Sequence[Scored],
    profile: Profile,
    spec: ExpansionSpec,
) -> dict[str, float]:
    """``rm3(...).weights``, the same floats in the same order, without the ``Expansion``
    around them: an Evaluate run ranks by the weights alone, and the terms' parts, sources and
    feedback passages (~120 models a query) were a fifth of its RM3. Rejected: ``rm3`` with
    its sources made lazy, a second way for an explanation to be built that every reader of
    an ``Expansion`` would have to keep in mind."""
    weighed = _rm3(query_terms, feedback, profile, spec)
    if not weighed.weights:
        return dict.fromkeys(weighed.distinct, 1.0)
    return dict(sorted(weighed.weights.items(), key=lambda item: (-item[1], item[0])))


def rm3(
    query_terms: Sequence[str],
    feedback: Sequence[Scored],
    profile: Profile,
    spec: ExpansionSpec,
) -> Expansion:
    """The RM3 expansion of ``query_terms`` from ``feedback``, the unexpanded ranking's top
    passages in rank order (at most ``spec.fb_docs`` of them are used)."""
    weighed = _rm3(query_terms, feedback, profile, spec)
    used = weighed.used
    notes: list[str] = []
    if not used:
        notes.append("no passage matched the query, so there was nothing to learn from")
    elif len(used) < spec.fb_docs:
        notes.append(
            f"only {len(used)} passage{'s' if len(used) != 1 else ''} matched, so the feedback "
            f"is {len(used)} of the {spec.fb_docs} asked for"
        )
    passages = [
        FeedbackPassage(
            chunk_id=ranked.chunk.id,
            source_id=ranked.chunk.source_id,
            chunk_index=ranked.chunk.chunk_index,
            rank=rank,
            score=ranked.score,
            share=share,
            doc_length=dl,
        )
        for rank, (ranked, share, dl) in enumerate(
            zip(used, weighed.shares, weighed.dls, strict=True), start=1
        )
    ]
    empty = sum(dl == 0 for dl in weighed.dls)
    if empty:
        notes.append(
            f"{empty} feedback passage{'s' if empty != 1 else ''} had no terms left after the "
            "profile and added nothing"
        )
    from_feedback = weighed.from_feedback
    if not from_feedback:
        notes.append("the query is searched as typed")
        return _as_typed(spec, weighed.distinct, passages, notes)
    asked = set(weighed.distinct)
    terms = [
        ExpansionTerm(
            term=term,
            weight=weight,
            typed=term in asked,
            query_part=weighed.query_share if term in asked else 0.0,
            feedback_part=from_feedback.get(term, 0.0),
            relevance=weighed.relevance.get(term, 0.0),
            sources=[
                TermSource(chunk_id=chunk_id, tf=tf, part=part)
                for chunk_id, tf, part in (
                    weighed.sources.sources(term) if term in from_feedback else []
                )
            ],
        )
        for term, weight in weighed.weights.items()
    ]
    terms.sort(key=lambda t: (-t.weight, t.term))
    return Expansion(spec=spec, feedback=passages, terms=terms, note="; ".join(notes) or None)


def rocchio(
    query_terms: Sequence[str],
    graded: Sequence[tuple[StoredChunk, int]],
    profile: Profile,
    spec: ExpansionSpec,
) -> Expansion:
    """Relevance feedback from the analyst's grades: weight(t) = alpha * P(t|Q) + beta * the
    mean over the passages graded >= 1 of P(t|D) - gamma * the mean over those graded 0, the
    ``fb_terms`` highest positive feedback terms kept (ties by term); P(t|D) as for RM3 and the
    means summed in the order given. A typed term whose weight is not positive is dropped (the
    note says so); no grade at all searches the query as typed."""
    distinct = sorted(set(query_terms))
    if not distinct:
        raise ValueError("the query has no terms to expand")
    relevant = [(c, g) for c, g in graded if g >= 1]
    other = [(c, g) for c, g in graded if g == 0]
    notes: list[str] = []
    passages: list[FeedbackPassage] = []
    parts: dict[str, float] = {}
    sources = _Weighed()
    for group, sign, share in (
        (relevant, 1.0, spec.beta / len(relevant) if relevant else 0.0),
        (other, -1.0, spec.gamma / len(other) if other else 0.0),
    ):
        for chunk, grade in group:
            dl = _add_passage(chunk, sign * share, profile, parts, sources)
            passages.append(
                FeedbackPassage(
                    chunk_id=chunk.id, source_id=chunk.source_id, chunk_index=chunk.chunk_index,
                    rank=len(passages) + 1, score=float(grade), share=sign * share, doc_length=dl,
                )
            )  # fmt: skip
    if not relevant:
        notes.append("no passage of this query is graded relevant, so it is searched as typed")
        return _as_typed(spec, distinct, passages, notes)
    kept = _highest({t: v for t, v in parts.items() if v > 0}, spec.fb_terms)
    from_feedback = dict(kept)
    query_share = spec.original_weight * (1.0 / len(distinct))
    asked = set(distinct)
    out: list[ExpansionTerm] = []
    dropped = []
    for term in sorted(asked | from_feedback.keys()):
        query_part = query_share if term in asked else 0.0
        feedback_part = from_feedback.get(term, parts.get(term, 0.0) if term in asked else 0.0)
        weight = query_part + feedback_part
        if weight <= 0.0:
            dropped.append(term)
            continue
        out.append(
            ExpansionTerm(
                term=term, weight=weight, typed=term in asked, query_part=query_part,
                feedback_part=feedback_part, relevance=parts.get(term, 0.0),
                sources=[TermSource(chunk_id=c, tf=n, part=p) for c, n, p in sources.sources(term)],
            )
        )  # fmt: skip
    if dropped:
        notes.append(f"dropped, the passages graded 0 outweighing them: {', '.join(dropped)}")
    out.sort(key=lambda t: (-t.weight, t.term))
    return Expansion(spec=spec, feedback=passages, terms=out, note="; ".join(notes) or None)


class LedgerRow(BaseModel):
    """One query under the typed and the expanded run: the metric, and what moved."""

    model_config = ConfigDict(frozen=True)

    query_id: str
    query: str
    before: float
    after: float
    change: float
    #: Relevant ids (grade >= 1) in the expanded top k and not in the typed one.
    recovered: list[str]
    #: Of ``recovered``, those the typed run's diagnosis called a vocabulary mismatch.
    recovered_mismatch: list[str]
    #: Relevant ids in the typed top k that the expanded one lost.
    lost: list[str]


class ExpansionLedger(BaseModel):
    """Helped and hurt, query by query, with the paired randomisation test of the change."""

    model_config = ConfigDict(frozen=True)

    metric: Metric
    k: int
    expansion: str
    #: Queries by change, most helped first.
    rows: list[LedgerRow]
    helped: int
    hurt: int
    unchanged: int
    mean_before: float
    mean_after: float
    significance: SignificanceResult
    recovered: int
    recovered_mismatch: int
    #: Relevant passages the typed run lost to a vocabulary mismatch: the ceiling the
    #: expansion can lift (``recovered_mismatch`` of them it did).
    mismatch: int

    @property
    def summary(self) -> str:
        """The ledger in one paragraph, as Runs and the terminal say it."""
        name = METRIC_LABELS[self.metric].replace("@k", f"@{self.k}")
        p = self.significance.p_value
        tested = "not tested" if p is None else f"p = {p:.4f}, paired randomisation test"
        return (
            f"{name}: {self.mean_before:.4f} as typed, {self.mean_after:.4f} expanded "
            f"({self.mean_after - self.mean_before:+.4f}; {tested}). {self.helped} queries "
            f"helped, {self.hurt} hurt, {self.unchanged} unchanged. {self.recovered} relevant "
            f"passages entered the top {self.k}; {self.recovered_mismatch} of them were among "
            f"the {self.mismatch} the typed query could never find (no query term)."
        )


def expansion_ledger(
    typed: EvaluationRun,
    expanded: EvaluationRun,
    diagnosis: RunDiagnosis,
    expansion: str,
    metric: Metric = "ndcg",
) -> ExpansionLedger:
    """The ledger of ``expanded`` against ``typed`` (the same queries, k and grades), with
    ``diagnosis`` the typed run's (which relevant passages it lost to a vocabulary mismatch).
    The test is ``randomisation_test`` (expanded minus typed), as Runs' comparisons use."""
    mismatch = {
        (q.query_id, lost.chunk_id)
        for q in diagnosis.queries
        for lost in q.lost
        if lost.cause is LostCause.VOCABULARY
    }
    after = {row.query_id: row for row in expanded.rows}
    rows: list[LedgerRow] = []
    for row in typed.rows:
        other = after[row.query_id]

        def relevant(run: EvaluationRun, query_id: str = row.query_id) -> list[str]:
            ids, grades = run.ranked.get(query_id, []), run.grades.get(query_id, [])
            return [i for i, g in zip(ids, grades, strict=False) if g is not None and g >= 1]

        was, now = relevant(typed), relevant(expanded)
        recovered = [i for i in now if i not in set(was)]
        before_value, after_value = (
            getattr(row, METRIC_FIELDS[metric]),
            getattr(other, METRIC_FIELDS[metric]),
        )
        rows.append(
            LedgerRow(
                query_id=row.query_id,
                query=row.query,
                before=before_value,
                after=after_value,
                change=after_value - before_value,
                recovered=recovered,
                recovered_mismatch=[i for i in recovered if (row.query_id, i) in mismatch],
                lost=[i for i in was if i not in set(now)],
            )
        )
    ordered = typed_order(rows, typed)
    rows.sort(key=lambda r: (-r.change, r.query_id))
    return ExpansionLedger(
        metric=metric,
        k=typed.k,
        expansion=expansion,
        rows=rows,
        helped=sum(r.change > 0 for r in rows),
        hurt=sum(r.change < 0 for r in rows),
        unchanged=sum(r.change == 0 for r in rows),
        mean_before=mean_of(r.before for r in ordered),
        mean_after=mean_of(r.after for r in ordered),
        significance=randomisation_test([r.after for r in ordered], [r.before for r in ordered]),
        recovered=sum(len(r.recovered) for r in rows),
        recovered_mismatch=sum(len(r.recovered_mismatch) for r in rows),
        mismatch=len(mismatch),
    )


#: Each metric's field of a ``QueryScore``.
METRIC_FIELDS: Final[dict[str, str]] = {
    "ndcg": "ndcg",
    "recall": "recall",
    "precision": "precision",
    "mrr": "mrr",
}


def typed_order(rows: Sequence[LedgerRow], typed: EvaluationRun) -> list[LedgerRow]:
    """``rows`` in the typed run's query order (the order its means are taken in)."""
    by_id = {r.query_id: r for r in rows}
    return [by_id[row.query_id] for row in typed.rows]


def expansion_rows(expansion: Expansion) -> list[dict[str, object]]:
    """The expanded query as table rows (Search's "Expanded query"): each term's weight, its
    two parts, and each feedback passage's part of it as "#rank part" (the unexpanded rank)."""
    rank = {passage.chunk_id: passage.rank for passage in expansion.feedback}
    return [
        {
            "term": term.term,
            "from": "typed" if term.typed else "added",
            "weight": term.weight,
            "query part": term.query_part,
            "feedback part": term.feedback_part,
            "feedback passages (#rank: part)": ", ".join(
                f"#{rank[source.chunk_id]}: {source.part:.4f}" for source in term.sources
            ),
        }
        for term in expansion.terms
    ]
