"""What-if rankers: the same candidate read ranked under other BM25 settings.

Three rankers: the workspace's own BM25 (the module constants of ``core.domain.bm25``,
the only ones a store's ranking ever uses), the textbook BM25 of ``core.domain.classic``
(k1 1.5, b 0.75, the classic IDF that goes negative), and BM25 with k1 and b the
analyst sets (Lucene's IDF). Each is a ``Ranker`` value, and every one of them
scores through ``core.domain.bm25.QueryScorer``, so a what-if differs from the
workspace's ranking in exactly the parameters it names and nothing else.

Both sides of a comparison are computed here, in the domain, from ONE candidate
read: the same statistics, the same tf and lengths. A what-if therefore needs no
re-index and no second query, and a difference between two rankings is a
difference of formula, never of snapshot. The alternative, a store method per
ranker (or k1/b passed down to SQL), would put a second copy of the formula in
every store and let a concurrent write slip between the two reads.

The run's order is defined here too, once for every screen and analysis: ``score_all`` (score
descending, then chunk id), ``best_first`` (only the prefix a caller needs ordered), and
``rank_of`` / ``rows_ahead`` (a row's rank, counted, not sorted). ``rank_documents`` is a run
judged by document (``DocumentRanking``: its first k documents and the k-th's row): a
diagnosis by document ranks with it first, so the service looks up only the relevant
documents outside the top k (issue 50). Rejected: leaving it inside
``diagnosis.diagnose_documents``, which takes every relevant document's rows already looked up
(and is near 600 lines).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.domain.bm25 import BM25_B, BM25_K1, IdfForm, QueryScorer, ScoreExplanation
from core.domain.classic import CLASSIC_B, CLASSIC_K1
from core.domain.ranking import (
    LexicalCandidates,
    RankedChunk,
    candidate_score_steps,
    rank_steps,
    ranked_row_steps,
    top_rows,
)
from core.domain.steps import Steps, finish

#: Largest k1 a what-if accepts: beyond it saturation is effectively off, the numbers unreadable.
MAX_K1: Final[float] = 100.0


class RankerKind(StrEnum):
    """Which BM25 a ranker is."""

    #: The workspace's own: k1 = BM25_K1, b = BM25_B, Lucene's IDF. What Search shows.
    WORKSPACE = "workspace"
    #: ``core.domain.classic``: k1 = 1.5, b = 0.75, the textbook IDF.
    CLASSIC = "classic"
    #: Lucene's IDF with the analyst's k1 and b.
    CUSTOM = "custom"


class Ranker(BaseModel):
    """One BM25 variant; build it with ``Ranker.of`` to get each kind's fixed parameters."""

    model_config = ConfigDict(frozen=True)

    kind: RankerKind
    k1: float = Field(ge=0.0, le=MAX_K1, allow_inf_nan=False)
    b: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _fixed_kinds_keep_their_parameters(self) -> Ranker:
        fixed = _FIXED.get(self.kind)
        if fixed is not None and (self.k1, self.b) != fixed:
            raise ValueError(
                f"the {self.kind.value} ranker has k1 = {fixed[0]:g}, b = {fixed[1]:g}; "
                f"got k1 = {self.k1:g}, b = {self.b:g} (use the custom ranker to change them)"
            )
        return self

    @classmethod
    def of(cls, kind: RankerKind | str, k1: float | None = None, b: float | None = None) -> Ranker:
        """The ranker of ``kind``; k1/b only matter for ``custom`` (default: the workspace's)."""
        kind = RankerKind(kind)
        fixed = _FIXED.get(kind)
        if fixed is not None:
            return cls(kind=kind, k1=fixed[0], b=fixed[1])
        return cls(kind=kind, k1=BM25_K1 if k1 is None else k1, b=BM25_B if b is None else b)

    @property
    def row(self) -> RankerRow:
        """This ranker's row of ``RANKERS``."""
        return RANKER_ROWS[self.kind]

    @property
    def idf_form(self) -> IdfForm:
        return self.row.idf_form

    @property
    def label(self) -> str:
        """How the screens name this ranker."""
        return self.row.label.format(k1=self.k1, b=self.b)

    def scorer(
        self,
        terms: Sequence[str],
        candidates: LexicalCandidates,
        weights: Mapping[str, float] | None = None,
    ) -> QueryScorer:
        return QueryScorer(
            terms,
            candidates.stats,
            k1=self.k1,
            b=self.b,
            idf_form=self.idf_form,
            weights=weights,
        )


class RankerRow(NamedTuple):
    """Everything about one ranker kind that is not its formula: one row of ``RANKERS``."""

    kind: RankerKind
    #: (k1, b) when the kind fixes them; None when they are the analyst's.
    fixed: tuple[float, float] | None
    idf_form: IdfForm
    #: How a choice offers the kind (Compare, Evaluate, Runs): its parameters from constants,
    #: so a screen never writes k1 or b itself.
    choice: str
    #: How a ranker of this kind is named, with ``{k1}`` and ``{b}`` filled in.
    label: str
    #: How the Judge screen offers it as a pool ranker (over every candidate, unlimited);
    #: None when a pool may not use it.
    pool: str | None
    #: Whether Runs offers it as a saved run's ranker (custom points come from Tune).
    in_runs: bool


#: The ranker table: one row per kind. A new ranker is a ``RankerKind`` member, a row here and,
#: when its IDF is new, an ``IdfForm`` with its function in ``core.domain.bm25``; the screens'
#: choices, labels and the judging pools derive from this.
RANKERS: Final[tuple[RankerRow, ...]] = (
    RankerRow(
        kind=RankerKind.WORKSPACE,
        fixed=(BM25_K1, BM25_B),
        idf_form=IdfForm.LUCENE,
        choice=f"workspace BM25 (k1 {BM25_K1:g}, b {BM25_B:g})",
        label="workspace BM25 (k1 {k1:g}, b {b:g})",
        pool="workspace BM25, no limit",
        in_runs=True,
    ),
    RankerRow(
        kind=RankerKind.CLASSIC,
        fixed=(CLASSIC_K1, CLASSIC_B),
        idf_form=IdfForm.CLASSIC,
        choice=(
            f"textbook BM25 (core/domain/classic.py: k1 {CLASSIC_K1:g}, b {CLASSIC_B:g}, "
            "classic idf)"
        ),
        label="textbook BM25 (k1 {k1:g}, b {b:g}, classic idf)",
        pool="textbook BM25",
        in_runs=True,
    ),
    RankerRow(
        kind=RankerKind.CUSTOM,
        fixed=None,
        idf_form=IdfForm.LUCENE,
        choice="BM25 with your k1 and b",
        label="BM25 k1 {k1:g}, b {b:g}",
        pool="BM25 with its own k1 and b",
        in_runs=False,
    ),
)
#: ``RANKERS`` by kind.
RANKER_ROWS: Final[dict[RankerKind, RankerRow]] = {row.kind: row for row in RANKERS}
#: Kinds whose parameters are not the analyst's to set.
_FIXED: Final[dict[RankerKind, tuple[float, float]]] = {
    row.kind: row.fixed for row in RANKERS if row.fixed is not None
}
#: How a ranker kind is offered in a choice (Compare, Evaluate): one wording for every screen.
KIND_LABELS: Final[dict[RankerKind, str]] = {row.kind: row.choice for row in RANKERS}
#: The kinds Runs offers for a saved run, in the table's order.
RUN_KINDS: Final[tuple[RankerKind, ...]] = tuple(row.kind for row in RANKERS if row.in_runs)


def score_all(
    ranker: Ranker,
    terms: Sequence[str],
    candidates: LexicalCandidates,
    weights: Mapping[str, float] | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Rows of every candidate that contains a query term, best first; and every row's score.

    Order: score descending, then chunk id ascending. A classic score can be zero or
    negative (a common term's IDF is); such a passage still matched, so it is ranked,
    below every positive one, not dropped.
    """
    return finish(score_all_steps(ranker, terms, candidates, weights))


def score_all_steps(
    ranker: Ranker,
    terms: Sequence[str],
    candidates: LexicalCandidates,
    weights: Mapping[str, float] | None = None,
) -> Steps[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]]:
    """``score_all`` in the scoring's steps (``core.domain.steps``); the scorer (an IDF per
    distinct term) and the ordering after the scores are steps of their own (~2-3 ms each for
    1,000 terms: with the step before them, Compare held the loop 5-6 ms)."""
    rows, scores = yield from matched_score_steps(ranker, terms, candidates, weights)
    return best_first(rows, scores, candidates.id_order, len(rows)), scores


def matched_score_steps(
    ranker: Ranker,
    terms: Sequence[str],
    candidates: LexicalCandidates,
    weights: Mapping[str, float] | None = None,
    scorer: QueryScorer | None = None,
) -> Steps[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]]:
    """``score_all_steps`` before its ordering: the rows it ranks, in row order, and every
    row's score (``best_first`` orders as many of them as a caller needs). ``scorer``:
    ``ranker``'s for these terms and candidates' statistics, when the caller made it (a
    diagnosis explains the k-th with it)."""
    scores = np.zeros(len(candidates), dtype=np.float64)
    if not terms or not len(candidates):
        return np.zeros(0, dtype=np.int64), scores
    yield
    if scorer is None:
        scorer = ranker.scorer(terms, candidates, weights)
    yield
    scores = yield from scorer.score_column_steps(
        candidates.terms, candidates.tfs, candidates.doc_lengths
    )
    yield
    return matched_rows(terms, candidates), scores


def matched_rows(terms: Sequence[str], candidates: LexicalCandidates) -> npt.NDArray[np.int64]:
    """The rows ``score_all`` ranks (those holding a query term), in row order."""
    asked = set(terms)
    wanted = [j for j, term in enumerate(candidates.terms) if term in asked]
    if len(wanted) == candidates.tfs.shape[1]:  # every column: no copy of them (~5 ms of 1.4 M)
        matched = candidates.tfs.any(axis=1)
    else:
        matched = (candidates.tfs[:, wanted] > 0).any(axis=1)
    return np.flatnonzero(matched).astype(np.int64)


def best_first(
    rows: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    id_order: npt.NDArray[np.int64],
    n: int,
) -> npt.NDArray[np.int64]:
    """The first ``n`` of ``rows`` in ``score_all``'s order (score descending, then chunk id
    ascending), exactly its prefix: only the rows scoring at least the n-th best are sorted
    (a diagnosis by document needs the first k documents, a few dozen rows of a thousand)."""
    if 0 < n < len(rows):
        kept = scores[rows]
        nth = np.partition(kept, len(kept) - n)[len(kept) - n]
        rows = rows[kept >= nth]  # ties at the boundary included: the sort below decides them
    return rows[np.lexsort((id_order[rows], -scores[rows]))][: max(n, 0)]


class DocumentRanking(NamedTuple):
    """A query's run judged by document, before its lost documents are looked for: the first
    ``limit`` rows ``head``, scored by ``scorer`` (``matched``: the rows it ranks; ``scores``:
    every row's), its first k documents ``top`` (-> their best passage's place), and the row of
    the k-th's best passage (None when fewer than k were ranked); ``k`` and ``limit``: what it
    was ranked at (a diagnosis refuses a ranking of another run than its own)."""

    head: LexicalCandidates
    scorer: QueryScorer
    matched: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]
    top: dict[str, int]
    kth_row: int | None
    k: int
    limit: int


def rank_documents(
    terms: Sequence[str],
    full: LexicalCandidates,
    k: int,
    limit: int,
    ranker: Ranker,
    sources_of: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.object_]],
    weights: Mapping[str, float] | None = None,
) -> DocumentRanking:
    """The run by document over ``full``'s first ``limit`` rows (a by-document diagnosis's first
    half): only the rows the first k documents take are ordered and their sources read
    (``sources_of``: the source of each of some of those rows, an object array): the source
    of every candidate and a sort of them all were ~1/3 of what a diagnosis by document cost
    beyond its Evaluate at limit 1,000 (issue 49). A caller looks up only the relevant
    documents outside ``top``: the ones in it are not lost."""
    head = full.head(limit)
    scorer = ranker.scorer(terms, head, weights)
    matched, scores = finish(matched_score_steps(ranker, terms, head, weights, scorer))
    n = min(2 * k, len(matched))
    while True:
        order = best_first(matched, scores, head.id_order, n)
        top: dict[str, int] = {}
        for place, document in enumerate(sources_of(order).tolist()):
            if len(top) == k:
                break
            top.setdefault(document, place)
        if len(top) == k or n == len(matched):
            break
        n = min(2 * n, len(matched))
    kth_row = int(order[top[next(reversed(top))]]) if len(top) == k and k else None
    return DocumentRanking(head, scorer, matched, scores, top, kth_row, k, limit)


def rows_ahead(
    row: int,
    rows: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    id_order: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64] | None:
    """The rows of ``rows`` (ascending) ahead of ``row`` in ``best_first``'s order, None if
    ``row`` is not one of them: compared, not sorted."""
    at = int(np.searchsorted(rows, row))
    if at == len(rows) or rows[at] != row:
        return None
    theirs, score = scores[rows], scores[row]
    ahead: npt.NDArray[np.int64] = rows[
        (theirs > score) | ((theirs == score) & (id_order[rows] < id_order[row]))
    ]
    return ahead


def rank_of(
    row: int,
    rows: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    id_order: npt.NDArray[np.int64],
) -> int | None:
    """``row``'s 1-based place in ``best_first``'s order of ``rows``, None if not one of them."""
    ahead = rows_ahead(row, rows, scores, id_order)
    return None if ahead is None else len(ahead) + 1


def top_scored_steps(
    ranker: Ranker,
    terms: Sequence[str],
    candidates: LexicalCandidates,
    k: int,
    weights: Mapping[str, float] | None = None,
) -> Steps[tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]]:
    """The rows of ``rank_with``'s top ``k`` in its order, and every row's score, with no
    explanation: for a caller that keeps only scores and ids (an Evaluate run, RM3's feedback).
    Rejected: ``rank_with`` and dropping its explanations, which were most of an expanded
    Evaluate (the feedback passages' and the top k's, ~520 terms a query explained unread)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if ranker.kind is RankerKind.WORKSPACE:  # as rank_steps ranks: positive scores only
        if k == 0 or not terms:
            return np.zeros(0, dtype=np.int64), np.zeros(len(candidates), dtype=np.float64)
        scores = yield from candidate_score_steps(terms, candidates, weights)
        return top_rows(scores, candidates.id_order, k), scores
    rows, scores = yield from score_all_steps(ranker, terms, candidates, weights)
    return rows[:k], scores


def rank_with(
    ranker: Ranker,
    terms: Sequence[str],
    candidates: LexicalCandidates,
    k: int,
    weights: Mapping[str, float] | None = None,
) -> list[RankedChunk]:
    """The top ``k`` under ``ranker``, with explanations; the workspace's is ``rank_chunks``.
    ``weights``: the query terms' weights (an expanded query), as ``QueryScorer`` takes them."""
    return finish(rank_with_steps(ranker, terms, candidates, k, weights=weights))


def rank_with_steps(
    ranker: Ranker,
    terms: Sequence[str],
    candidates: LexicalCandidates,
    k: int,
    scored: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None,
    *,
    weights: Mapping[str, float] | None = None,
) -> Steps[list[RankedChunk]]:
    """``rank_with`` in steps of one explained result; ``scored`` is ``score_all``'s answer
    when the caller has it already (Compare scored every candidate once per ranker)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if ranker.kind is RankerKind.WORKSPACE:
        if scored is None:
            return (yield from rank_steps(terms, candidates, k, weights))
        if k == 0 or not terms:
            return []
        scores = scored[1]
        rows = top_rows(scores, candidates.id_order, k)
        return (yield from ranked_row_steps(terms, candidates, rows, scores, weights))
    rows, scores = (
        scored
        if scored is not None
        else (yield from score_all_steps(ranker, terms, candidates, weights))
    )
    rows = rows[:k]
    scorer = ranker.scorer(terms, candidates, weights)
    yield
    ranked: list[RankedChunk] = []
    for row, chunk in zip(rows, candidates.chunks(rows), strict=True):
        ranked.append(
            RankedChunk(
                chunk=chunk,
                score=float(scores[row]),
                explanation=scorer.explain(
                    candidates.term_frequencies(int(row)), int(candidates.doc_lengths[row])
                ),
            )
        )
        yield
    return ranked


class RankMovement(BaseModel):
    """Where one passage stands under A and under B (1-based ranks among every match)."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    source_id: str
    chunk_index: int
    rank_a: int
    rank_b: int
    score_a: float
    score_b: float
    in_top_a: bool
    in_top_b: bool

    @property
    def movement(self) -> int:
        """Places gained going from A to B: positive when B ranks it higher."""
        return self.rank_a - self.rank_b


class RankingComparison(BaseModel):
    """Two rankers over one candidate read: both lists, movements and their overlap at k."""

    model_config = ConfigDict(frozen=True)

    terms: list[str]
    k: int
    ranker_a: Ranker
    ranker_b: Ranker
    a: list[RankedChunk]
    b: list[RankedChunk]
    #: Every passage in either top k, ordered by its rank under A, then under B.
    movements: list[RankMovement]
    #: Passages in both top-k lists.
    shared: int = Field(ge=0)
    #: shared / the length of the lists (1.0 when nothing matched).
    overlap: float = Field(ge=0.0, le=1.0)
    #: Candidates ranked (those that contain a query term).
    ranked: int = Field(ge=0)


def compare_rankers(
    terms: Sequence[str],
    candidates: LexicalCandidates,
    k: int,
    a: Ranker,
    b: Ranker,
) -> RankingComparison:
    """Rank one candidate read under ``a`` and ``b``; movement of every passage in either top k."""
    return finish(compare_ranker_steps(terms, candidates, k, a, b))


def compare_ranker_steps(
    terms: Sequence[str],
    candidates: LexicalCandidates,
    k: int,
    a: Ranker,
    b: Ranker,
) -> Steps[RankingComparison]:
    """``compare_rankers`` in steps: every candidate scored once per ranker, in blocks."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    rows_a, scores_a = yield from score_all_steps(a, terms, candidates)
    rows_b, scores_b = yield from score_all_steps(b, terms, candidates)
    ids = candidates.ids
    rank_a = {str(ids[r]): (i + 1, float(scores_a[r])) for i, r in enumerate(rows_a)}
    yield
    rank_b = {str(ids[r]): (i + 1, float(scores_b[r])) for i, r in enumerate(rows_b)}
    yield
    top_a = yield from rank_with_steps(a, terms, candidates, k, (rows_a, scores_a))
    top_b = yield from rank_with_steps(b, terms, candidates, k, (rows_b, scores_b))
    yield
    ids_a = [r.chunk.id for r in top_a]
    ids_b = [r.chunk.id for r in top_b]
    # One set each: rebuilt per passage, a comparison at k = 10^9 was quadratic.
    in_a, in_b = set(ids_a), set(ids_b)
    chunks = {r.chunk.id: r.chunk for r in [*top_a, *top_b]}
    movements = [
        RankMovement(
            chunk_id=cid,
            source_id=chunks[cid].source_id,
            chunk_index=chunks[cid].chunk_index,
            rank_a=rank_a[cid][0],
            rank_b=rank_b[cid][0],
            score_a=rank_a[cid][1],
            score_b=rank_b[cid][1],
            in_top_a=cid in in_a,
            in_top_b=cid in in_b,
        )
        for cid in dict.fromkeys([*ids_a, *ids_b])
    ]
    movements.sort(key=lambda m: (m.rank_a, m.rank_b))
    shared = len(in_a & in_b)
    size = max(len(ids_a), len(ids_b))
    return RankingComparison(
        terms=sorted(set(terms)),
        k=k,
        ranker_a=a,
        ranker_b=b,
        a=top_a,
        b=top_b,
        movements=movements,
        shared=shared,
        overlap=shared / size if size else 1.0,
        ranked=len(rows_a),
    )


def explain_under(
    ranker: Ranker, terms: Sequence[str], candidates: LexicalCandidates, chunk_id: str
) -> ScoreExplanation | None:
    """The per-term breakdown of one candidate under ``ranker``; None if it is not a candidate."""
    row = candidates.row_of(chunk_id)
    if row is None:
        return None
    scorer = ranker.scorer(terms, candidates)
    return scorer.explain(candidates.term_frequencies(row), int(candidates.doc_lengths[row]))
