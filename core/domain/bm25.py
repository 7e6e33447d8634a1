"""The BM25 formula, corpus statistics and the per-term explanation.

Lucene's IDF, ``ln(1 + (N - df + 0.5) / (df + 0.5))``, is positive for every
``0 <= df <= N``, so no clamping is needed; the textbook IDF (``core.domain.classic``)
goes negative for common terms, which makes explanations confusing. The
``(k1 + 1)`` factor stays in the numerator as in the BM25 papers; Lucene 8+ and
Elasticsearch dropped it, so their scores are ours divided by 2.2, same order.

There is one implementation of the formula (``_idf``, ``_length_norm``,
``_tf_part``, inside ``QueryScorer``); the score and the explanation add the same
contributions in the same order, so an explanation adds up to the ranker's score
exactly, not approximately. The
alternative, a fast scorer and a separate "explainer", is how explanations in
other engines drift from the scores they claim to explain.

``QueryScorer`` takes k1, b and the IDF form as arguments so the what-if rankers
(``core.analysis.rankers``) and the textbook class (``core.domain.classic``) go through this same
arithmetic; their defaults are the module constants, the only ones a store's own
ranking ever uses. A second copy of the formula per ranker would be shorter to
write and would let the what-if and the workspace's own score drift apart.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Final, cast, overload

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.domain.models import built
from core.domain.steps import Steps, finish

#: Term-frequency saturation: how fast repeats stop adding score (Lucene's default).
BM25_K1: Final[float] = 1.2
#: Length normalisation: 0 ignores passage length, 1 normalises fully (Lucene's default).
BM25_B: Final[float] = 0.75
#: Candidate x term cells ``score_columns`` computes in one step (128 KB per temporary array):
#: a step holds the service's loop ~1 ms idle, so a light search arriving waits no longer.
SCORE_BLOCK_CELLS: Final = 1 << 14
#: Query terms up to which ``score_columns`` adds a block's term columns one numpy call each
#: (more: one ``cumsum`` along the rows, a call per block however many terms).
COLUMN_ADDS: Final = 16
#: A context that changes nothing (``score_column_steps`` when no cell can divide by 0).
_AS_IT_IS: Final = contextlib.nullcontext()


class IdfForm(StrEnum):
    """Which IDF a scorer uses."""

    #: ``ln(1 + (N - df + 0.5) / (df + 0.5))``: positive for every df; the workspace's own.
    LUCENE = "lucene"
    #: ``ln((N - df + 0.5) / (df + 0.5))``: the textbook; <= 0 for df >= N/2.
    CLASSIC = "classic"


class CorpusStats(BaseModel):
    """The statistics of a whole corpus that a BM25 score depends on."""

    model_config = ConfigDict(frozen=True)

    n_docs: int = Field(ge=0)
    avg_doc_length: float = Field(ge=0.0, allow_inf_nan=False)
    #: Document frequency per term; a term missing here has df 0.
    doc_frequencies: dict[str, int] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _frequencies_fit_the_corpus(self) -> CorpusStats:
        for term, df in self.doc_frequencies.items():
            if df < 0 or df > self.n_docs:
                raise ValueError(
                    f"document frequency of {term!r} is {df}, outside 0..N={self.n_docs}"
                )
        return self

    def df(self, term: str) -> int:
        return self.doc_frequencies.get(term, 0)


class TermContribution(BaseModel):
    """One query term's part of one passage's score, with every input shown."""

    model_config = ConfigDict(frozen=True)

    term: str
    tf: int
    df: int
    n_docs: int
    idf: float
    doc_length: int
    avg_doc_length: float
    #: Saturated, length-normalised TF factor: tf*(k1+1) / (tf + k1*(1 - b + b*dl/avgdl)).
    tf_part: float
    #: weight * idf * tf_part (as ``(weight * idf) * tf_part``); 0 when the passage lacks it.
    contribution: float
    #: The length-normalisation denominator term k1*(1 - b + b*dl/avgdl).
    length_norm: float
    #: The query term's weight: 1 for a typed term, else what an expansion gave it.
    weight: float = 1.0


#: One fields set for every TermContribution ``explain_columns`` builds (the model is frozen).
_CONTRIBUTION_FIELDS: Final = set(TermContribution.model_fields)


class ScoreExplanation(BaseModel):
    """Why one passage got its score for one query: per distinct term it contains, sorted.

    The query terms it lacks add exactly nothing, so they are listed by name (``unmatched``,
    with their df), not as a ``TermContribution`` each: a 1,000-term Truncation built 20,000
    such models for its 20 passages, 1.3 s holding the service's one loop. ``every_term``
    builds the full table, unmatched rows included, when a screen shows one.
    """

    model_config = ConfigDict(frozen=True)

    score: float
    #: The query terms the passage contains (tf > 0), sorted; they sum, in order, to ``score``.
    terms: list[TermContribution]
    k1: float = BM25_K1
    b: float = BM25_B
    idf_form: IdfForm = IdfForm.LUCENE
    #: The query terms the passage lacks (tf 0, contribution 0), sorted.
    unmatched: list[str] = Field(default_factory=list)
    #: The df of each of ``unmatched``, in the same order.
    unmatched_df: list[int] = Field(default_factory=list)
    n_docs: int = 0
    avg_doc_length: float = 0.0
    doc_length: int = 0
    #: The length-normalisation denominator term k1*(1 - b + b*dl/avgdl) of this passage.
    length_norm: float = 0.0
    #: Every query term's weight that is not 1 (a typed query has none), by term.
    weights: dict[str, float] = Field(default_factory=dict)

    def every_term(self) -> list[TermContribution]:
        """Every query term's row, sorted by term: the matched ones and, built now, the rest
        (typed already, so built unvalidated as the matched ones are: a Search card shows all)."""
        idf, n, dl = IDF_FUNCTIONS[self.idf_form], self.n_docs, self.doc_length
        absent = [built(TermContribution, {
            "term": term, "tf": 0, "df": df, "n_docs": n, "idf": idf(df, n), "doc_length": dl,
            "avg_doc_length": self.avg_doc_length, "tf_part": 0.0, "contribution": 0.0,
            "length_norm": self.length_norm, "weight": self.weights.get(term, 1.0),
        }, _CONTRIBUTION_FIELDS) for term, df in zip(self.unmatched, self.unmatched_df, strict=True)
        ]  # fmt: skip
        return sorted([*self.terms, *absent], key=lambda part: part.term)


def inverse_document_frequency(term: str, stats: CorpusStats) -> float:
    """Lucene's BM25 IDF of ``term`` in the corpus described by ``stats``."""
    return _idf(stats.df(term), stats.n_docs)


def _idf(df: int, n_docs: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def classic_idf(df: int, n_docs: int) -> float:
    """The textbook IDF, ``ln((N - df + 0.5) / (df + 0.5))``: zero or below from df >= N/2."""
    return math.log((n_docs - df + 0.5) / (df + 0.5))


#: The IDF function of each form.
IDF_FUNCTIONS: Final = {IdfForm.LUCENE: _idf, IdfForm.CLASSIC: classic_idf}


@overload
def _length_norm(
    doc_length: int, avg_doc_length: float, k1: float = ..., b: float = ...
) -> float: ...
@overload
def _length_norm(
    doc_length: npt.NDArray[np.int64],
    avg_doc_length: float,
    k1: float | npt.NDArray[np.float64] = ...,
    b: float | npt.NDArray[np.float64] = ...,
) -> npt.NDArray[np.float64]: ...
def _length_norm(
    doc_length: int | npt.NDArray[np.int64],
    avg_doc_length: float,
    k1: float | npt.NDArray[np.float64] = BM25_K1,
    b: float | npt.NDArray[np.float64] = BM25_B,
) -> float | npt.NDArray[np.float64]:
    # avgdl = 0 means every document is empty: the length ratio is taken as 0.
    # numpy float64 element-wise operations round exactly as Python floats do, so an array
    # of lengths gets, element by element, the bits a single length gets.
    ratio = doc_length / avg_doc_length if avg_doc_length > 0 else 0.0
    return k1 * (1.0 - b + b * ratio)


@overload
def _tf_part(tf: int, norm: float, k1: float = ...) -> float: ...
@overload
def _tf_part(
    tf: npt.NDArray[np.int64],
    norm: float | npt.NDArray[np.float64],
    k1: float | npt.NDArray[np.float64] = ...,
) -> npt.NDArray[np.float64]: ...
def _tf_part(
    tf: int | npt.NDArray[np.int64],
    norm: float | npt.NDArray[np.float64],
    k1: float | npt.NDArray[np.float64] = BM25_K1,
) -> float | npt.NDArray[np.float64]:
    """The saturated, length-normalised TF factor; the one place it is written."""
    return cast("float | npt.NDArray[np.float64]", tf * (k1 + 1.0) / (tf + norm))


#: Largest weight a query term may carry (an expansion's are at most 1; past this, a mistake).
MAX_TERM_WEIGHT: Final = 1_000.0


def checked_weights(terms: Sequence[str], weights: Mapping[str, float] | None) -> dict[str, float]:
    """The weights of ``terms`` that are not 1, each finite, > 0 and at most ``MAX_TERM_WEIGHT``,
    and of a term in ``terms``; else ``ValueError`` naming the term and the weight."""
    if not weights:
        return {}
    asked = set(terms)
    kept: dict[str, float] = {}
    for term, weight in weights.items():
        if term not in asked:
            raise ValueError(f"a weight for {term!r}, which is not a query term")
        if not (math.isfinite(weight) and 0.0 < weight <= MAX_TERM_WEIGHT):
            raise ValueError(
                f"the weight of {term!r} must be a number above 0 and at most "
                f"{MAX_TERM_WEIGHT:g}, got {weight!r}"
            )
        if weight != 1.0:
            kept[term] = float(weight)
    return dict(sorted(kept.items()))


class QueryScorer:
    """One query against one corpus: distinct terms sorted, df and idf looked up once.

    Ranking scores hundreds of candidates per query; looking up df and computing
    idf per candidate would repeat the same work for every one of them.
    """

    __slots__ = ("_b", "_idf_form", "_index", "_k1", "_plain", "_stats", "_terms", "_weights")

    def __init__(
        self,
        terms: Iterable[str],
        stats: CorpusStats,
        *,
        k1: float = BM25_K1,
        b: float = BM25_B,
        idf_form: IdfForm = IdfForm.LUCENE,
        weights: Mapping[str, float] | None = None,
    ) -> None:
        """``weights``: a weight per query term (absent: 1); each term's idf is multiplied by
        its weight once, here, so every score and explanation uses ``(weight * idf) * tf_part``
        and a weight of 1 gives exactly today's bits (``1.0 * idf`` is ``idf``)."""
        if not (math.isfinite(k1) and k1 >= 0):
            raise ValueError(f"k1 must be a finite number >= 0, got {k1}")
        if not 0.0 <= b <= 1.0:
            raise ValueError(f"b must be within 0..1, got {b}")
        idf = IDF_FUNCTIONS[idf_form]
        self._stats = stats
        self._k1 = k1
        self._b = b
        self._idf_form = idf_form
        distinct = sorted(set(terms))
        self._weights = checked_weights(distinct, weights)
        # The idf of each weighted term, as the explanation shows it beside its weight.
        self._plain = {t: idf(stats.df(t), stats.n_docs) for t in self._weights}
        # Each entry: (term, df, weight * idf), the factor every score multiplies tf_part by.
        frequencies, n_docs = stats.doc_frequencies, stats.n_docs
        self._terms = [
            (term, df, self._weights[term] * self._plain[term])
            if term in self._weights
            else (term, df, idf(df, n_docs))
            for term in distinct
            for df in (frequencies.get(term, 0),)
        ]
        self._index = {entry[0]: entry for entry in self._terms}

    def score(self, term_frequencies: Mapping[str, int], doc_length: int) -> float:
        """Contributions summed in sorted term order (absent terms add exactly nothing)."""
        if self._stats.n_docs == 0:
            return 0.0
        k1 = self._k1
        norm = _length_norm(doc_length, self._stats.avg_doc_length, k1, self._b)
        score = 0.0
        for term, _, idf in self._terms:
            tf = term_frequencies.get(term, 0)
            if tf > 0:
                score += idf * _tf_part(tf, norm, k1)
        return score

    def score_columns(
        self,
        columns: Sequence[str],
        tfs: npt.NDArray[np.int64],
        doc_lengths: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.float64]:
        """``score`` for many passages at once: row i of ``tfs`` holds the tf of each column term.

        The same formula in the same order (sorted terms, from 0.0, a term with tf 0 adding
        nothing), so each element has exactly the bits ``score`` gives that passage.
        """
        return finish(self.score_column_steps(columns, tfs, doc_lengths))

    def score_column_steps(
        self,
        columns: Sequence[str],
        tfs: npt.NDArray[np.int64],
        doc_lengths: npt.NDArray[np.int64],
    ) -> Steps[npt.NDArray[np.float64]]:
        """``score_columns`` in steps of ``SCORE_BLOCK_CELLS`` candidate x term cells."""
        scores = np.zeros(len(doc_lengths), dtype=np.float64)
        if self._stats.n_docs == 0 or not len(doc_lengths):
            return scores
        k1 = self._k1
        norm = _length_norm(doc_lengths, self._stats.avg_doc_length, k1, self._b)
        norm = norm if isinstance(norm, np.ndarray) else np.full(scores.shape, norm)  # avgdl 0
        column = {term: j for j, term in enumerate(columns)}
        used = [(column[term], idf) for term, _, idf in self._terms if term in column]
        if not used:
            return scores
        at = [j for j, _ in used]
        # All the columns in order (a store's read): the block is read as it is, not gathered.
        wanted = None if at == list(range(len(columns))) else np.array(at, dtype=np.int64)
        idfs = np.array([idf for _, idf in used], dtype=np.float64)
        # Unmasked, a tf-0 cell (idf * 0 / norm) is +0.0 if idfs are finite > 0 and norms > 0.
        masked = not (all(0.0 < idf < math.inf for _, idf in used) and norm.min() > 0.0)
        # All terms at once, in blocks of rows (a call per term: ~0.2 s for 1,000 terms); adding
        # left to right from the first term gives each row the bits of the sorted-order sum.
        step = max(1, SCORE_BLOCK_CELLS // len(used))
        for start in range(0, len(doc_lengths), step):
            block = tfs[start : start + step]
            tf = block if wanted is None else block[:, wanted]
            # Unmasked, no cell divides by 0 (tf + norm > 0): numpy's error state is left as it is
            # (entering ``np.errstate`` was ~1 us of a 10k-passage search's ~15 numpy calls here).
            with np.errstate(divide="ignore", invalid="ignore") if masked else _AS_IT_IS:
                part = idfs * _tf_part(tf, norm[start : start + step, None], k1)
            part = np.where(tf > 0, part, 0.0) if masked else part  # absent: adds exactly 0.0
            if len(used) <= COLUMN_ADDS:
                # The same left-to-right sum a column at a time: ``cumsum`` along rows of a few
                # terms loops per row (~18 ms of a 300k-candidate Truncation's ~100 ms).
                total = scores[start : start + step]
                total[:] = part[:, 0]
                for j in range(1, len(used)):
                    total += part[:, j]
            else:
                scores[start : start + step] = np.cumsum(part, axis=1)[:, -1]
            yield
        return scores

    def score_grid(
        self,
        columns: Sequence[str],
        tfs: npt.NDArray[np.int64],
        doc_lengths: npt.NDArray[np.int64],
        settings: Sequence[tuple[float, float]],
    ) -> npt.NDArray[np.float64]:
        """``score_columns`` under each (k1, b) of ``settings`` at once, shape (settings, rows):
        row i has, element by element, the bits ``QueryScorer(..., k1=, b=).score_columns``
        gives (the same operations in the same order, the k1 and b broadcast; the IDF does not
        depend on them). A tuning grid scores every point from one query's columns in one pass
        of numpy calls instead of a pass per point (its calls were most of a 42-point grid)."""
        points, n = len(settings), len(doc_lengths)
        scores = np.zeros((points, n), dtype=np.float64)
        if self._stats.n_docs == 0 or not n or not points:
            return scores
        for k1, b in settings:
            if not (math.isfinite(k1) and k1 >= 0) or not 0.0 <= b <= 1.0:
                raise ValueError(f"k1 must be finite and >= 0 and b within 0..1, got {k1}, {b}")
        column = {term: j for j, term in enumerate(columns)}
        used = [(column[term], idf) for term, _, idf in self._terms if term in column]
        if not used:
            return scores
        wanted = np.array([j for j, _ in used], dtype=np.int64)
        idfs = np.array([idf for _, idf in used], dtype=np.float64)
        k1s = np.array([k1 for k1, _ in settings], dtype=np.float64)[:, None]
        bs = np.array([b for _, b in settings], dtype=np.float64)[:, None]
        norm = np.broadcast_to(
            _length_norm(doc_lengths, self._stats.avg_doc_length, k1s, bs), (points, n)
        )
        # Only the cells a term is present in: a term absent from a passage adds exactly
        # nothing, so adding each term's column over the passages that hold it, in sorted term
        # order from 0.0, gives every row the bits of the dense left-to-right sum (a dense
        # grid, with its zeros, was twice the work for a Cranfield query's ~75% empty cells).
        for j, idf in zip(wanted.tolist(), idfs.tolist(), strict=True):
            rows = np.flatnonzero(tfs[:, j])
            if not len(rows):
                continue
            tf = tfs[rows, j]
            with np.errstate(divide="ignore", invalid="ignore"):
                part = idf * _tf_part(tf, norm[:, rows], k1s)
            scores[:, rows] += part
        return scores

    def explain(self, term_frequencies: Mapping[str, int], doc_length: int) -> ScoreExplanation:
        """The per-term breakdown whose contributions sum, in order, to ``score``."""
        stats = self._stats
        k1 = self._k1
        norm = _length_norm(doc_length, stats.avg_doc_length, k1, self._b)
        parts: list[TermContribution] = []
        # Only the terms present are visited: the rest add exactly nothing (x + 0.0 is x), so
        # they are named, not built.
        index = self._index
        matched = (
            sorted(term for term, tf in term_frequencies.items() if tf > 0 and term in index)
            if stats.n_docs > 0
            else []
        )
        if matched:
            found = set(matched)
            unmatched = [term for term, _, _ in self._terms if term not in found]
            unmatched_df = [df for term, df, _ in self._terms if term not in found]
        else:
            unmatched = [term for term, _, _ in self._terms]
            unmatched_df = [df for _, df, _ in self._terms]
        score = 0.0
        for term in matched:
            _, df, idf = index[term]
            weight = self._weights.get(term, 1.0)
            tf = term_frequencies[term]
            tf_part = _tf_part(tf, norm, k1)
            contribution = idf * tf_part if tf_part else 0.0
            score += contribution
            # Every value is computed here with its declared type: validating it again costs
            # more than the arithmetic (a third of a search's time at k = 10).
            parts.append(
                built(
                    TermContribution,
                    {
                        "term": term,
                        "tf": tf,
                        "df": df,
                        "n_docs": stats.n_docs,
                        "idf": self._plain.get(term, idf),
                        "doc_length": doc_length,
                        "avg_doc_length": stats.avg_doc_length,
                        "tf_part": tf_part,
                        "contribution": contribution,
                        "length_norm": norm,
                        "weight": weight,
                    },
                    _CONTRIBUTION_FIELDS,
                )
            )
        return built(
            ScoreExplanation,
            {
                "score": score,
                "terms": parts,
                "k1": k1,
                "b": self._b,
                "idf_form": self._idf_form,
                "unmatched": unmatched,
                "unmatched_df": unmatched_df,
                "n_docs": stats.n_docs,
                "avg_doc_length": stats.avg_doc_length,
                "doc_length": doc_length,
                "length_norm": norm,
                "weights": self._weights,
            },
        )

    def explain_columns(
        self,
        columns: Sequence[str],
        tfs: npt.NDArray[np.int64],
        doc_lengths: npt.NDArray[np.int64],
    ) -> list[ScoreExplanation]:
        """``explain`` for many passages at once (row i of ``tfs``: each column term's tf), with
        exactly ``explain``'s bits (the same elementwise operations, the same sorted-order sum
        from 0.0): one numpy pass over the rows, Python only in the cells a term is present in
        (one ``explain`` per result was most of a 10k-passage search)."""
        stats = self._stats
        n = len(doc_lengths)
        if not n:
            return []
        k1, b, avgdl = self._k1, self._b, stats.avg_doc_length
        column = {term: j for j, term in enumerate(columns)}
        used = [entry for entry in self._terms if entry[0] in column] if stats.n_docs > 0 else []
        everyone = [term for term, _, _ in self._terms]
        every_df = [df for _, df, _ in self._terms]
        lengths = doc_lengths.tolist()
        norm = np.broadcast_to(_length_norm(doc_lengths, avgdl, k1, b), (n,))
        norms = norm.tolist()
        cells: list[list[TermContribution]] = [[] for _ in range(n)]
        if used:
            tf = tfs[:, [column[term] for term, _, _ in used]]
            idfs = np.array([idf for _, _, idf in used], dtype=np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                part = _tf_part(tf, norm[:, None], k1)
                contribution = np.where(part != 0.0, idfs * part, 0.0)
            at_row, at_term = np.nonzero(tf > 0)
            for i, j, count, tf_part, share in zip(
                at_row.tolist(),
                at_term.tolist(),
                tf[at_row, at_term].tolist(),
                part[at_row, at_term].tolist(),
                contribution[at_row, at_term].tolist(),
                strict=True,
            ):
                term, df, idf = used[j]
                weight = self._weights.get(term, 1.0)
                cells[i].append(
                    built(
                        TermContribution,
                        {
                            "term": term,
                            "tf": count,
                            "df": df,
                            "n_docs": stats.n_docs,
                            "idf": self._plain.get(term, idf),
                            "doc_length": lengths[i],
                            "avg_doc_length": avgdl,
                            "tf_part": tf_part,
                            "contribution": share,
                            "length_norm": norms[i],
                            "weight": weight,
                        },
                        _CONTRIBUTION_FIELDS,
                    )
                )
        explanations: list[ScoreExplanation] = []
        for i, parts in enumerate(cells):
            score = 0.0
            for part_i in parts:
                score += part_i.contribution
            if parts:
                found = {part_i.term for part_i in parts}
                unmatched = [term for term in everyone if term not in found]
                unmatched_df = [df for term, df in zip(everyone, every_df, strict=True)
                                if term not in found]  # fmt: skip
            else:
                unmatched, unmatched_df = list(everyone), list(every_df)
            explanations.append(
                built(
                    ScoreExplanation,
                    {
                        "score": score,
                        "terms": parts,
                        "k1": k1,
                        "b": b,
                        "idf_form": self._idf_form,
                        "unmatched": unmatched,
                        "unmatched_df": unmatched_df,
                        "n_docs": stats.n_docs,
                        "avg_doc_length": avgdl,
                        "doc_length": lengths[i],
                        "length_norm": norms[i],
                        "weights": self._weights,
                    },
                )
            )
        return explanations


def bm25_score(
    terms: Iterable[str],
    term_frequencies: Mapping[str, int],
    doc_length: int,
    stats: CorpusStats,
) -> float:
    """The BM25 score of one passage: contributions summed in sorted term order."""
    return QueryScorer(terms, stats).score(term_frequencies, doc_length)


def explain_score(
    terms: Iterable[str],
    term_frequencies: Mapping[str, int],
    doc_length: int,
    stats: CorpusStats,
) -> ScoreExplanation:
    """The per-term breakdown whose contributions sum, in order, to ``bm25_score``."""
    return QueryScorer(terms, stats).explain(term_frequencies, doc_length)


def corpus_stats(documents: Iterable[list[str]], terms: Iterable[str] | None = None) -> CorpusStats:
    """Statistics computed directly from tokenised documents.

    ``terms`` restricts ``doc_frequencies`` to those terms (each present, 0 if absent);
    ``None`` keeps every term of the corpus.
    """
    n_docs = 0
    total = 0
    df: dict[str, int] = {}
    for tokens in documents:
        n_docs += 1
        total += len(tokens)
        for term in set(tokens):
            df[term] = df.get(term, 0) + 1
    if terms is not None:
        df = {term: df.get(term, 0) for term in set(terms)}
    return CorpusStats(
        n_docs=n_docs,
        avg_doc_length=total / n_docs if n_docs else 0.0,
        doc_frequencies=df,
    )
