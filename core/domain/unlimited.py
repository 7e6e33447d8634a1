"""A read that nothing cut, ranked straight from its postings: its columns built only if read.

With no candidate limit every passage holding a query term is a candidate (with a Zipf query's
commonest word, every passage), and the read built each one's place in the truncation order and
its tf columns, then ``rank_chunks`` scored them all and took ten: at 100k passages ~5.9 ms a
search against bm25s' 1.3 and tantivy's 1.1 (a profile: tf columns 1.9 ms, scoring 1.7, the
top-k partition 0.9, the order 0.6). A search needs none of those columns: its scores are each
term's contributions added, in sorted term order, into an array over the corpus rows (a scatter
per term), and its top k alone get tf columns and explanations. ``UnlimitedCandidates`` is such a
read: ``top_directly`` ranks it that way, and any other reader of its columns (an analysis, a
copy, ``==``) builds them, all at once, on the first read, exactly as the read would have.

Bit-identical to the columns' ranking: each contribution is ``QueryScorer.score_columns`` of the
term's own column (elementwise, so the bits of the dense block's cell), and each row's sum runs
from 0.0 in sorted term order, adding nothing for a term it lacks, where the dense kernel adds
its +0.0 (``x + 0.0`` is ``x`` for the non-negative sums of a store's ranking, and a masked
scorer's absent cells are 0.0 too). Rejected: per-posting contributions kept in the store at
index time (bm25s' way, its RSS 2.5x ours at 1M), which would hold a score per posting for one
(k1, b, IDF) and still need this path for weighted queries; and building the columns lazily
one by one, which the analyses read together anyway. A filtered read keeps its columns (the
admitted rows would have to be a mask on every term's scatter).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

import numpy as np
import numpy.typing as npt
from pydantic import PrivateAttr

from core.domain.bm25 import SCORE_BLOCK_CELLS, QueryScorer
from core.domain.ranking import LexicalCandidates, top_rows
from core.domain.steps import Steps, finish

#: The columns a deferred read builds on first use (with the lookup of its rows).
DEFERRED: Final = frozenset({"id_rows", "id_order", "doc_lengths", "tfs", "lookup"})
#: ``top_corpus_rows`` thresholds on every this-many-th score when there are more than
#: ``SAMPLE_FROM`` x k scores: a partition of every score was ~1/5 of an unlimited search at
#: 1M rows, and 70 of ~450 us at 10k (a sample's ~0.01 of it, and ~16 k rows to sort).
SAMPLE_STRIDE: Final = 16
SAMPLE_FROM: Final = 4

#: A term in at least 1/this of the rows keeps its contributions for the next search
#: (``corpus_scores``), 8 bytes a posting, while a store's kept ones hold at most
#: ``KEPT_PER_ROW`` per row (128 bytes a passage).
KEEP_SCORES: Final = 64
KEPT_PER_ROW: Final = 16

#: Stacked postings x terms up to which ``corpus_scores`` scores its terms in one call
#: (``_batched``; ``SCORE_BLOCK_CELLS``: one block of the scorer).
BATCH_CELLS: Final = SCORE_BLOCK_CELLS

#: (query terms, k, weights) -> steps to the top k as candidates of their own and their scores.
DirectRanker = Callable[
    [Sequence[str], int, Mapping[str, float] | None],
    Steps[tuple[LexicalCandidates, npt.NDArray[np.float64]]],
]


def corpus_scores(
    scorer: QueryScorer,
    asked: Sequence[str],
    columns: Sequence[str],
    postings: Sequence[tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]],
    doc_lengths: npt.NDArray[np.int64],
    kept: dict[str, npt.NDArray[np.float64]] | None = None,
) -> Steps[npt.NDArray[np.float64]]:
    """Every corpus row's score (0.0 where no term is): per column term ``asked`` (the scorer's
    query terms) holds, in sorted order, its contributions added at its posting's rows; a
    step per term. ``kept``: a store's contributions of common terms under ``scorer``'s
    settings (the caller's promise: the same statistics, k1, b, IDF form and weights), read
    and filled here (``KEEP_SCORES``)."""
    n_rows = len(doc_lengths)
    scores = np.zeros(n_rows, dtype=np.float64)
    wanted = set(asked)
    batched = _batched(scorer, wanted, columns, postings, doc_lengths, kept)
    for term, (rows, tfs) in zip(columns, postings, strict=True):
        if term not in wanted or not len(rows):
            continue
        part = None if kept is None else kept.get(term)
        if part is None:
            part = batched.get(term)
            if part is None:
                # The int32 tfs give the int64 column's bits (every operation is in float64).
                tf = cast("npt.NDArray[np.int64]", tfs[:, None])
                part = scorer.score_columns((term,), tf, doc_lengths[rows])
            if (
                kept is not None
                and len(rows) * KEEP_SCORES >= n_rows
                # A copy of the values: a reader in a thread may be adding one meanwhile.
                and sum(map(len, list(kept.values()))) + len(rows) <= KEPT_PER_ROW * n_rows
            ):
                part.flags.writeable = False
                kept[term] = part
        if len(rows) == n_rows:  # every row: rows is 0..n-1
            scores += part
        else:
            # One addition per row (a posting's rows are distinct): ``scores[rows] += part``'s
            # bits, without its two int64 copies of the rows (3.0 against 7.5 ms at 1M rows).
            np.add.at(scores, rows, part)
        yield
    return scores


def _batched(
    scorer: QueryScorer,
    wanted: set[str],
    columns: Sequence[str],
    postings: Sequence[tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]],
    doc_lengths: npt.NDArray[np.int64],
    kept: dict[str, npt.NDArray[np.float64]] | None,
) -> dict[str, npt.NDArray[np.float64]]:
    """The contributions of the terms ``corpus_scores`` would score one by one (asked, in some
    passage, not kept), all in one ``score_columns`` when they are several and small
    (``BATCH_CELLS``): their postings stacked, each row holding its own term's tf and 0 in the
    others' columns. A row's sum is then its one contribution (every other cell adds exactly
    0.0, as an absent term's does), with the bits of its own column scored alone; a term's
    scoring was ~20 numpy calls however short its posting (most of a 10k-passage unlimited
    search's ranking for the rare terms of a Zipf query)."""
    todo = [
        (term, rows, tfs)
        for term, (rows, tfs) in zip(columns, postings, strict=True)
        if term in wanted and len(rows) and (kept is None or term not in kept)
    ]
    total = sum(len(rows) for _, rows, _ in todo)
    if len(todo) < 2 or total * len(todo) > BATCH_CELLS:
        return {}
    tf = np.zeros((total, len(todo)), dtype=np.int32)
    start = 0
    for j, (_, rows, tfs) in enumerate(todo):
        tf[start : start + len(rows), j] = tfs
        start += len(rows)
    every = np.concatenate([rows for _, rows, _ in todo])
    names = [term for term, _, _ in todo]
    parts = scorer.score_columns(names, cast("npt.NDArray[np.int64]", tf), doc_lengths[every])
    out: dict[str, npt.NDArray[np.float64]] = {}
    start = 0
    for term, rows, _ in todo:
        out[term] = parts[start : start + len(rows)].copy()  # kept ones must not pin the rest
        start += len(rows)
    return out


def top_corpus_rows(scores: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.int64]:
    """``top_rows`` of corpus rows numbered in chunk-id order (each row its own id order): the
    k-th best of every ``SAMPLE_STRIDE``-th score is at most the k-th best of all, so the rows
    scoring at least it hold every row ``top_rows`` could keep, ties included."""
    floor = 0.0
    if len(scores) > SAMPLE_FROM * SAMPLE_STRIDE * k:
        sample = scores[::SAMPLE_STRIDE]
        sample = sample[sample > 0.0]
        if len(sample) >= k:
            floor = float(np.partition(sample, len(sample) - k)[len(sample) - k])
    rows = ((scores >= floor) if floor > 0.0 else (scores > 0.0)).nonzero()[0]
    kept: npt.NDArray[np.int64] = rows[top_rows(scores[rows], rows, k)]
    return kept


class UnlimitedCandidates(LexicalCandidates):
    """A read that nothing cut: ``DEFERRED`` columns built by ``_columns`` on their first read,
    ``top_directly`` from ``_ranker`` while it still holds every matching passage."""

    _columns: Callable[[], Steps[dict[str, Any]]] | None = PrivateAttr(default=None)
    _ranker: DirectRanker | None = PrivateAttr(default=None)

    @classmethod
    def deferred(
        cls,
        fields: dict[str, Any],
        columns: Callable[[], Steps[dict[str, Any]]],
        ranker: DirectRanker,
    ) -> UnlimitedCandidates:
        """``fields`` (typed already; the rest of ``DEFERRED``'s complement their defaults)
        and the two builders."""
        values: dict[str, Any] = {}
        for name, factory, default in _DEFAULTS:
            if name in fields:
                values[name] = fields[name]
            else:
                values[name] = factory() if factory is not None else default  # type: ignore[call-arg]
        model = cls.__new__(cls)
        object.__setattr__(model, "__dict__", values)
        object.__setattr__(model, "__pydantic_fields_set__", set(fields) | DEFERRED)
        object.__setattr__(model, "__pydantic_extra__", None)
        private = {"_scored": None, "_columns": columns, "_ranker": ranker}
        object.__setattr__(model, "__pydantic_private__", private)
        return model

    def _built(self) -> dict[str, Any]:
        """The instance's fields, the deferred ones built now (in one piece) if not yet."""
        finish(self.column_steps())
        return self.__dict__

    def column_steps(self) -> Steps[None]:
        """The deferred columns built, in the kernel's steps (``candidate_score_steps`` runs
        them first: an analysis of a 1M-passage read would otherwise hold the loop ~0.1 s)."""
        if "tfs" in self.__dict__:
            return
        # Two threads reading at once both build the same columns; either one is kept.
        columns = yield from (self.__pydantic_private__ or {})["_columns"]()
        for name in ("id_rows", "id_order", "doc_lengths", "tfs"):
            columns[name].flags.writeable = False
        self.__dict__.update(columns)

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            if name in DEFERRED:
                return self._built()[name]
            return super().__getattr__(name)

    def __len__(self) -> int:
        order = self.__dict__.get("id_order")
        return self.matching if order is None else len(order)

    def top_directly(
        self, terms: Sequence[str], k: int, weights: Mapping[str, float] | None
    ) -> Steps[tuple[LexicalCandidates, npt.NDArray[np.float64]]] | None:
        ranker = (self.__pydantic_private__ or {}).get("_ranker")
        # A copy with fewer rows (``head``) is no longer every matching passage.
        if ranker is None or len(self) != self.matching:
            return None
        return cast(DirectRanker, ranker)(terms, k, weights)

    def __repr_args__(self) -> Any:
        self._built()
        return super().__repr_args__()


#: Each field but ``DEFERRED`` with its default factory (or None) and default (``deferred``):
#: pydantic's ``get_default`` per field was ~2.5 of its ~3.6 us.
_DEFAULTS: Final = [
    (name, info.default_factory, info.default)
    for name, info in UnlimitedCandidates.model_fields.items()
    if name not in DEFERRED
]


__all__ = ["DirectRanker", "UnlimitedCandidates", "corpus_scores", "top_corpus_rows"]
