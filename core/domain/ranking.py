"""Candidates to ranked passages: pure, deterministic, store-agnostic.

Candidates cross the store port in columns (numpy arrays, one row per passage, in the
store's truncation order) rather than as one pydantic model per passage: at a million
passages an unlimited read (what Truncation, why-not and Evaluate do) would otherwise
build a million models nobody looks at. Only the ``k`` rows returned become
``StoredChunk`` objects, through the lookup the store hands over with the columns. The
per-passage model, ``LexicalCandidate``, remains as a view (``candidates``) and as a
way to build columns from rows (``LexicalCandidates(stats=..., candidates=[...])``).

Every candidate is scored with the one BM25 implementation (``QueryScorer.score_columns``
is ``score`` element-wise, same formula, same order, same bits); zero scores (no query
term present) are dropped; order is score descending then chunk id ascending, a total
order, so two stores handing over the same candidates in any order produce the
identical list. The id tie-break is an integer compare on ``id_order``. Explanations are
built only for the k that are returned.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, Final, NamedTuple, cast

import numpy as np
import numpy.typing as npt
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from core.domain.bm25 import CorpusStats, QueryScorer, ScoreExplanation
from core.domain.chunks import StoredChunk
from core.domain.models import builder
from core.domain.places import PlaceLookup
from core.domain.steps import Steps, finish

#: Rows (positions in the truncation order) -> the caller's own copies of those passages.
ChunkLookup = Callable[[Sequence[int]], list[StoredChunk]]
#: Rows about to be looked up -> what a runner of steps awaits first so that the lookup needs
#: no round trip of its own (a store reading them ahead), or None: nothing to await.
RowsAhead = Callable[[Sequence[int]], object]
#: Query terms up to which a row's tfs are read in Python (``term_frequencies``).
_FEW_TERMS: Final = 32


class LexicalCandidate(BaseModel):
    """A passage a store proposes for scoring, with what BM25 needs to know of it."""

    chunk: StoredChunk
    #: Token count of the passage, repeats and all (stopwords excluded).
    doc_length: int = Field(ge=0)
    #: tf of each requested term the passage contains.
    term_frequencies: dict[str, int] = Field(default_factory=dict)


def _ints(values: Any = ()) -> npt.NDArray[np.int64]:
    return np.asarray(values, dtype=np.int64)


def _frozen(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    array.flags.writeable = False
    return array


def _no_chunks(rows: Sequence[int]) -> list[StoredChunk]:
    if len(rows):
        raise IndexError(f"no candidate rows to look up, asked for {len(rows)}")
    return []


def _nothing_ahead(rows: Sequence[int]) -> object:
    return None


def id_order_of(ids: npt.NDArray[np.object_]) -> npt.NDArray[np.int64]:
    """Each id's rank among ``ids`` in ascending order: the integer tie-break key."""
    order = np.argsort(ids, kind="stable")
    ranks = np.empty(len(ids), dtype=np.int64)
    ranks[order] = np.arange(len(ids), dtype=np.int64)
    return ranks


class _Scored(NamedTuple):
    """Scores kept with the exact inputs they were computed from (compared by identity: a
    copy with other rows or statistics has other objects, so it never reuses them)."""

    terms: tuple[str, ...]
    #: The query's term weights that are not 1, sorted (empty for a typed query).
    weights: tuple[tuple[str, float], ...]
    stats: CorpusStats
    tfs: npt.NDArray[np.int64]
    doc_lengths: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]


class LexicalCandidates(BaseModel):
    """Whole-corpus statistics plus the (possibly truncated) candidates, as columns.

    Row i is the i-th passage of the store's truncation order (distinct requested terms
    matched desc, then chunk id asc). ``tfs[i, j]`` is row i's tf of ``terms[j]``;
    ``id_order`` ranks the rows' chunk ids (any integers ordered as the ids are).
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    stats: CorpusStats
    #: The requested terms, distinct and sorted: the columns of ``tfs``.
    terms: tuple[str, ...] = ()
    #: Chunk ids (object array of str): one per row, or, with ``id_rows``, a pool they index.
    #: (Pass ``ids=`` for the first form.) An unlimited read at a million passages would
    #: otherwise copy a million ids (one reference count each, ~30 ms) that a screen rarely
    #: reads; ``ids`` gathers them on first use.
    id_pool: npt.NDArray[np.object_] = Field(default_factory=lambda: np.empty(0, dtype=object))
    #: Row -> index into ``id_pool``; None when ``id_pool`` holds one id per row.
    id_rows: npt.NDArray[np.int64] | None = None
    #: Source id (object array of str) beside each entry of ``id_pool``, indexed as it is
    #: (through ``id_rows`` when given); empty when the store did not say (``sources_at``
    #: then copies the passages). Both stores fill it from their image: a diagnosis by
    #: document needs every candidate's source, and looking 1,000 ids up per query was
    #: a third of it (issue 50).
    source_pool: npt.NDArray[np.object_] = Field(default_factory=lambda: np.empty(0, dtype=object))
    #: Integers ordered as the rows' chunk ids are (ties between scores compare these).
    id_order: npt.NDArray[np.int64] = Field(default_factory=_ints)
    #: Token count per row, repeats and all (stopwords excluded).
    doc_lengths: npt.NDArray[np.int64] = Field(default_factory=_ints)
    #: tf per row and requested term, shape (rows, len(terms)).
    tfs: npt.NDArray[np.int64] = Field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    #: Passages containing at least one requested term that the filter (if any) admits,
    #: before the limit cut (same snapshot); never fewer than the candidates handed over.
    matching: int = Field(default=0, ge=0)
    #: Passages containing a requested term that the filter excluded (0 without a filter):
    #: what the filter removed, apart from what the limit cut.
    filtered_out: int = Field(default=0, ge=0)
    #: Rows -> copies of their passages, from the snapshot the columns were read from.
    lookup: ChunkLookup = _no_chunks
    #: Rows about to be looked up -> what to await before (see ``RowsAhead``).
    ahead: RowsAhead = _nothing_ahead
    #: A cut read's: chunk ids -> their places past the cut (``core.domain.places``); None
    #: when the store did not say (an unlimited read needs none: every row is there).
    places: PlaceLookup | None = None
    #: The last ``candidate_score_steps`` answer and what it was computed from (``_Scored``).
    _scored: _Scored | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _columns_from_rows(cls, data: Any) -> Any:
        """``candidates=[LexicalCandidate, ...]`` (in truncation order) becomes columns."""
        if isinstance(data, dict) and "ids" in data:
            data = dict(data)
            data["id_pool"] = data.pop("ids")
        if not isinstance(data, dict) or "candidates" not in data:
            return data
        data = dict(data)
        rows: list[LexicalCandidate] = list(data.pop("candidates"))
        stats: CorpusStats = data["stats"]
        if "terms" not in data:
            names = set(stats.doc_frequencies)
            for row in rows:
                names.update(row.term_frequencies)
            data["terms"] = tuple(sorted(names))
        terms: tuple[str, ...] = tuple(data["terms"])
        ids = np.empty(len(rows), dtype=object)
        ids[:] = [row.chunk.id for row in rows]
        data["id_pool"] = ids
        sources = np.empty(len(rows), dtype=object)
        sources[:] = [row.chunk.source_id for row in rows]
        data["source_pool"] = sources
        data["id_order"] = id_order_of(ids)
        data["doc_lengths"] = _ints([row.doc_length for row in rows])
        tfs = np.zeros((len(rows), len(terms)), dtype=np.int64)
        for i, row in enumerate(rows):
            for j, term in enumerate(terms):
                tfs[i, j] = row.term_frequencies.get(term, 0)
        data["tfs"] = tfs
        chunks = [row.chunk for row in rows]
        data["lookup"] = lambda wanted: [chunks[i].model_copy(deep=True) for i in wanted]
        return data

    @model_validator(mode="after")
    def _columns_agree(self) -> LexicalCandidates:
        n = len(self.id_order)
        if n == 0 and self.tfs.size == 0:
            object.__setattr__(self, "tfs", np.zeros((0, len(self.terms)), dtype=np.int64))
        if self.tfs.shape != (n, len(self.terms)):
            raise ValueError(f"tfs has shape {self.tfs.shape}, not ({n}, {len(self.terms)})")
        per_row = self.id_pool if self.id_rows is None else self.id_rows
        if len(per_row) != n or len(self.doc_lengths) != n:
            raise ValueError("ids, id_order and doc_lengths must have one entry per row")
        if len(self.source_pool) and len(self.source_pool) != len(self.id_pool):
            raise ValueError("source_pool must have one entry per entry of id_pool")
        # A pool indexed through ``id_rows`` is the store's own (its image's), not frozen here.
        sources = (self.source_pool,) if self.id_rows is None else ()
        for array in (per_row, self.id_order, self.doc_lengths, self.tfs, *sources):
            _frozen(array)
        if self.matching < n:
            object.__setattr__(self, "matching", n)
        return self

    def __len__(self) -> int:
        return len(self.id_order)

    @cached_property
    def ids(self) -> npt.NDArray[np.object_]:
        """Chunk id per row (object array of str, read-only)."""
        if self.id_rows is None:
            return self.id_pool
        return _frozen(self.id_pool[self.id_rows])

    def ids_at(self, rows: Sequence[int] | npt.NDArray[np.int64]) -> npt.NDArray[np.object_]:
        """The chunk ids of ``rows`` alone: ``ids[rows]`` without building every row's id
        (over a pool, the whole column of a million candidates is ~150 ms in one piece)."""
        picked = np.asarray(rows, dtype=np.int64)
        if "ids" in self.__dict__ or self.id_rows is None:
            return self.ids[picked]
        return self.id_pool[self.id_rows[picked]]

    def sources_at(self, rows: Sequence[int] | npt.NDArray[np.int64]) -> npt.NDArray[np.object_]:
        """The source ids of ``rows`` (object array of str), as the read saw them: from the
        source column when the store filled it, else from copies of the passages."""
        picked = np.asarray(rows, dtype=np.int64)
        if not len(picked):
            return np.empty(0, dtype=object)
        if len(self.source_pool):
            return self.source_pool[picked if self.id_rows is None else self.id_rows[picked]]
        found = np.empty(len(picked), dtype=object)
        found[:] = [chunk.source_id for chunk in self.chunks(picked)]
        return found

    def __eq__(self, other: object) -> bool:
        """Same statistics, same rows in the same order, same passages (ids equal, not approx)."""
        if not isinstance(other, LexicalCandidates):
            return NotImplemented
        return (
            self.stats == other.stats
            and self.terms == other.terms
            and self.matching == other.matching
            and self.filtered_out == other.filtered_out
            and list(self.ids) == list(other.ids)
            and np.array_equal(self.doc_lengths, other.doc_lengths)
            and np.array_equal(self.tfs, other.tfs)
            and self.chunks(range(len(self))) == other.chunks(range(len(other)))
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def cut_by_limit(self) -> int:
        """Matching passages the limit kept from being scored."""
        return self.matching - len(self)

    @property
    def matched_terms(self) -> npt.NDArray[np.int64]:
        """Distinct requested terms each row contains."""
        counts: npt.NDArray[np.int64] = np.count_nonzero(self.tfs > 0, axis=1).astype(np.int64)
        return counts

    def chunks(self, rows: Sequence[int] | npt.NDArray[np.int64]) -> list[StoredChunk]:
        """The caller's own copies of the passages at ``rows`` (as ints: ``tolist``, ~0.5 us for
        a search's 10 rows, where ``int`` of each numpy scalar was ~1.9)."""
        return self.lookup(np.asarray(rows, dtype=np.int64).tolist())

    def chunks_ahead(self, rows: Sequence[int] | npt.NDArray[np.int64]) -> object:
        """What a step yields before ``chunks(rows)``: a runner that can wait
        (``core.checkpoint.stepped``) awaits it, so a store reads those passages without
        holding the loop; ``finish`` drops it and the lookup reads them itself."""
        return self.ahead(np.asarray(rows, dtype=np.int64).tolist())

    def term_frequencies(self, row: int) -> dict[str, int]:
        """Row ``row``'s tf of each requested term it contains (a few terms: read as Python
        ints, ~1 us against ~5 for numpy's calls; many: the numpy calls, then fewer)."""
        tfs = self.tfs[row]
        if len(self.terms) <= _FEW_TERMS:
            return {term: tf for term, tf in zip(self.terms, tfs.tolist(), strict=True) if tf > 0}
        present = np.flatnonzero(tfs > 0).tolist()
        return dict(zip([self.terms[j] for j in present], tfs[present].tolist(), strict=True))

    def row_of(self, chunk_id: str) -> int | None:
        """The row of ``chunk_id``, None if it is no candidate."""
        found = np.flatnonzero(self.ids == chunk_id)
        return int(found[0]) if len(found) else None

    def head(self, limit: int) -> LexicalCandidates:
        """The first ``limit`` rows: exactly what a read with that limit hands over."""
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        ids = (
            {"id_pool": self.id_pool[:limit], "source_pool": self.source_pool[:limit]}
            if self.id_rows is None
            else {"id_rows": self.id_rows[:limit]}
        )
        head = self.model_copy(
            update={
                **ids,
                "id_order": self.id_order[:limit],
                "doc_lengths": self.doc_lengths[:limit],
                "tfs": self.tfs[:limit],
            }
        )
        head.__dict__.pop("ids", None)  # the copy's own ids, not this list's cached ones
        return head

    def top_directly(
        self, terms: Sequence[str], k: int, weights: Mapping[str, float] | None
    ) -> Steps[tuple[LexicalCandidates, npt.NDArray[np.float64]]] | None:
        """The top ``k`` rows (as candidates of their own, best first) and their scores, from a
        read that ranks without its columns (``core.domain.unlimited``; they are built in
        ``column_steps``), or None."""
        return None

    def column_steps(self) -> Steps[None]:
        yield from ()

    @property
    def candidates(self) -> list[LexicalCandidate]:
        """Every row as a model (the caller's own copies); for small lists and tests."""
        chunks = self.chunks(range(len(self)))
        return [
            LexicalCandidate.model_construct(
                chunk=chunk,
                doc_length=int(self.doc_lengths[i]),
                term_frequencies=self.term_frequencies(i),
            )
            for i, chunk in enumerate(chunks)
        ]


class _Explainer:
    """The explanations of a list of results, built on the first read of any of them
    (``QueryScorer.explain_columns`` over all their rows at once: the bits an eager build
    gives, since every cell is computed alone and each sum is in sorted term order). The
    scorer too (an IDF per term) is built then: the ranking already checked the weights."""

    __slots__ = ("_built", "_doc_lengths", "_stats", "_terms", "_tfs", "_typed", "_weights")

    def __init__(
        self,
        typed: Sequence[str],
        stats: CorpusStats,
        weights: Mapping[str, float] | None,
        terms: Sequence[str],
        tfs: npt.NDArray[np.int64],
        doc_lengths: npt.NDArray[np.int64],
    ) -> None:
        self._typed, self._stats = tuple(typed), stats
        self._weights = None if weights is None else dict(weights)
        self._terms, self._tfs, self._doc_lengths = terms, tfs, doc_lengths
        self._built: list[ScoreExplanation] | None = None

    def explanation(self, i: int) -> ScoreExplanation:
        built_ = self._built
        if built_ is None:
            # Two threads reading at once both build the same list; either one is kept.
            scorer = QueryScorer(self._typed, self._stats, weights=self._weights)
            built_ = scorer.explain_columns(self._terms, self._tfs, self._doc_lengths)
            self._built = built_
        return built_[i]


class RankedChunk(BaseModel):
    """One result: the passage, its score, and the arithmetic behind the score.

    ``rank_chunks`` hands results whose ``explanation`` is built on its first read (then kept):
    at 10k passages a search's explanations were ~40% of it, and a caller that reads the ids
    and scores alone (a benchmark, parity's top-k check) never pays them. Every way a model is
    read whole (``==``, dumps, ``repr``) reads it first; a copy or a pickle carries the
    explainer. Rejected: callers telling ``rank_chunks`` whether they will read them (each
    would have to know), and explanations in numpy for all rows (landed, ``explain_columns``:
    the models built per term were the cost, not the arithmetic). The stepped ``rank_steps``
    the screens use still builds them, a step per block, so no screen's read holds the loop.
    """

    model_config = ConfigDict(frozen=True)

    chunk: StoredChunk
    score: float
    explanation: ScoreExplanation
    #: (the explainer, this result's index in it) until ``explanation`` is first read.
    _later: tuple[_Explainer, int] | None = PrivateAttr(default=None)

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            if name == "explanation":
                return self._explained()
            return super().__getattr__(name)

    def _explained(self) -> ScoreExplanation:
        """The explanation, built now if it was left for later."""
        done = self.__dict__.get("explanation")
        if done is not None:
            return cast(ScoreExplanation, done)
        private = self.__pydantic_private__ or {}
        later = cast("tuple[_Explainer, int] | None", private.get("_later"))
        if later is None:
            raise AttributeError(f"{type(self).__name__!r} object has no 'explanation'")
        explainer, i = later
        explanation = explainer.explanation(i)
        self.__dict__["explanation"] = explanation  # frozen to callers; filled in once here
        return explanation

    @model_serializer(mode="wrap")
    def _explained_first(self, handler: SerializerFunctionWrapHandler) -> Any:
        self._explained()
        return handler(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RankedChunk):
            return NotImplemented
        return (
            type(self) is type(other)
            and self.chunk == other.chunk
            and self.score == other.score
            and self._explained() == other._explained()
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr_args__(self) -> Any:
        self._explained()
        return super().__repr_args__()


#: Builds every RankedChunk ``ranked_row_steps`` makes, one fields set for all (frozen model).
_RANKED: Final = builder(RankedChunk, set(RankedChunk.model_fields))
#: Result x query-term cells explained a step (a 1,000-term query's 10 results: ~0.1 s).
EXPLAIN_BLOCK_CELLS: Final = 4_096


def candidate_scores(
    terms: Sequence[str],
    candidates: LexicalCandidates,
    weights: Mapping[str, float] | None = None,
) -> npt.NDArray[np.float64]:
    """Every row's BM25 score for ``terms`` (0.0 for a row with none of them; read-only);
    ``weights``: the query terms' weights, when any is not 1 (``QueryScorer``)."""
    return finish(candidate_score_steps(terms, candidates, weights))


def candidate_score_steps(
    terms: Sequence[str],
    candidates: LexicalCandidates,
    weights: Mapping[str, float] | None = None,
) -> Steps[npt.NDArray[np.float64]]:
    """``candidate_scores`` in steps (``core.domain.steps``).

    Kept with the candidates: a PostgreSQL read scores every candidate to choose what to
    prefetch, and the analysis it hands them to scores them again (at 1M passages each pass
    is ~0.1-0.3 s of the loop). Rejected: passing scores along beside the candidates, which
    every analysis's signature would carry for one store's prefetch."""
    yield from candidates.column_steps()  # a deferred read's columns, in steps
    key = tuple(terms)
    weighed = tuple(sorted((t, float(w)) for t, w in (weights or {}).items() if w != 1.0))
    # Read from the private dict: pydantic's __getattr__ for ``_scored`` was ~1.7 us a search.
    private = candidates.__pydantic_private__
    kept = cast("_Scored | None", private.get("_scored") if private is not None else None)
    if (
        kept is not None
        and kept.terms == key
        and kept.weights == weighed
        and kept.stats is candidates.stats
        and kept.tfs is candidates.tfs
        and kept.doc_lengths is candidates.doc_lengths
    ):
        return kept.scores
    scorer = QueryScorer(terms, candidates.stats, weights=weights)
    yield
    scores = yield from scorer.score_column_steps(
        candidates.terms, candidates.tfs, candidates.doc_lengths
    )
    scores.flags.writeable = False
    kept = _Scored(key, weighed, candidates.stats, candidates.tfs, candidates.doc_lengths, scores)
    if private is not None:
        private["_scored"] = kept
    else:
        candidates._scored = kept
    return scores


def top_rows(
    scores: npt.NDArray[np.float64], id_order: npt.NDArray[np.int64], k: int
) -> npt.NDArray[np.int64]:
    """Rows of the ``k`` best positive scores: score descending, then chunk id ascending."""
    rows = (scores > 0.0).nonzero()[0]
    if k <= 0 or not len(rows):
        return rows[:0]
    if len(rows) > k:
        kept = scores[rows]
        # Everything scoring at least the k-th best, ties at the boundary included.
        kth = np.partition(kept, len(kept) - k)[len(kept) - k]
        rows = rows[kept >= kth]
    order = np.lexsort((id_order[rows], -scores[rows]))
    return rows[order[:k]]


def rank_chunks(
    terms: Sequence[str],
    candidates: LexicalCandidates,
    k: int,
    weights: Mapping[str, float] | None = None,
) -> list[RankedChunk]:
    """The top ``k`` candidates by BM25, ties broken by chunk id ascending; each explanation is
    built when first read (``RankedChunk``)."""
    return finish(rank_steps(terms, candidates, k, weights, later=True))


def rank_steps(
    terms: Sequence[str],
    candidates: LexicalCandidates,
    k: int,
    weights: Mapping[str, float] | None = None,
    *,
    later: bool = False,
) -> Steps[list[RankedChunk]]:
    """``rank_chunks`` in steps: the scoring's blocks, then one step per explained result (a
    1,000-term query's scoring and explanations were ~0.1 s in one piece); ``later``: the
    explanations are built on first read instead (``ranked_row_steps``)."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if k == 0 or not terms:
        return []
    if (direct := candidates.top_directly(terms, k, weights)) is not None:
        candidates, scores = yield from direct
        rows = np.arange(len(candidates), dtype=np.int64)
    else:
        scores = yield from candidate_score_steps(terms, candidates, weights)
        rows = top_rows(scores, candidates.id_order, k)
    return (yield from ranked_row_steps(terms, candidates, rows, scores, weights, later=later))


def ranked_rows(
    terms: Sequence[str],
    candidates: LexicalCandidates,
    rows: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    weights: Mapping[str, float] | None = None,
) -> list[RankedChunk]:
    """The rows given, as explained results; each explanation sums to the row's score."""
    return finish(ranked_row_steps(terms, candidates, rows, scores, weights))


def ranked_row_steps(
    terms: Sequence[str],
    candidates: LexicalCandidates,
    rows: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    weights: Mapping[str, float] | None = None,
    *,
    later: bool = False,
) -> Steps[list[RankedChunk]]:
    """``ranked_rows`` in steps of ``EXPLAIN_BLOCK_CELLS`` result x term cells; the scorer (an
    IDF per distinct term) and the passages' copies are steps of their own (~2 ms each for
    1,000 terms and 100 rows). ``later``: no explanation is built here; each result's is built
    on its first read, all of the list's at once (``RankedChunk``)."""
    if later:
        chunks = candidates.chunks(rows)
        yield
        explainer = _Explainer(
            terms,
            candidates.stats,
            weights,
            candidates.terms,
            candidates.tfs[rows],
            candidates.doc_lengths[rows],
        )
        waiting: list[RankedChunk] = []
        for i, (chunk, score) in enumerate(zip(chunks, scores[rows].tolist(), strict=True)):
            waiting.append(_RANKED({"chunk": chunk, "score": score}, {"_later": (explainer, i)}))
        return waiting
    scorer = QueryScorer(terms, candidates.stats, weights=weights)
    yield
    chunks = candidates.chunks(rows)
    yield
    ranked: list[RankedChunk] = []
    step = max(1, EXPLAIN_BLOCK_CELLS // max(1, len(candidates.terms)))
    for start in range(0, len(rows), step):
        block = rows[start : start + step]
        explanations = scorer.explain_columns(
            candidates.terms, candidates.tfs[block], candidates.doc_lengths[block]
        )
        for chunk, score, explanation in zip(
            chunks[start : start + step], scores[block].tolist(), explanations, strict=True
        ):
            ranked.append(
                _RANKED({"chunk": chunk, "score": score, "explanation": explanation}, None)
            )
        yield
    return ranked


__all__ = [
    *("ChunkLookup", "CorpusStats", "LexicalCandidate", "LexicalCandidates", "RankedChunk"),
    *("candidate_scores", "rank_chunks", "rank_steps", "ranked_row_steps", "ranked_rows"),
    "top_rows",
]
