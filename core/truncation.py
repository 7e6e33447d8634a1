"""What the candidate ``limit`` costs: the limited ranking against the unlimited one.

A store hands BM25 at most ``limit`` candidates, chosen by how many distinct query
terms each contains (then id), before anything is scored. A passage with one
rare term can rank first over the whole corpus and still be cut. This module
computes, from one unlimited candidate list in the store's own order, what the
limited ranking loses, which passages were cut and where they stood, the smallest
limit that changes nothing, and the overlap as the limit grows.

Everything is derived from a single ``lexical_candidates`` call with no limit:
the store's truncation order is contract, so the first ``limit`` of the full list
are exactly what a limited call returns. Asking the store once per limit of a
sweep would cost one round trip per point and risk reading two snapshots.

It works on the candidate columns (numpy): one vectorised scoring, one sort of the
matching passages by (score desc, id asc), and the sweep from a running count, so a
million candidates cost arrays, not a million models. Only the k results become
passages, and the per-candidate rows of the scatter are capped at ``SCATTER_ROWS``
(evenly spaced over the candidate order, plus every row the screens name), saying
so in ``candidates_sampled``; building one model per candidate was rejected, it is
seconds at a million. Positions count from 1 everywhere, as the screens show them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from core.evaluation import documents_in_rank_order
from core.ranking import LexicalCandidates, RankedChunk, candidate_scores, ranked_rows

#: Points of the overlap-versus-limit sweep (plus the exact safe limit and the total).
SWEEP_POINTS = 40
#: Most candidate rows a report carries for the scatter; above it they are sampled.
SCATTER_ROWS = 1_000
#: The "no limit" of an analysis or an Evaluate run: larger than any corpus.
UNLIMITED = 2**62


class CandidateRow(BaseModel):
    """One candidate in the store's truncation order, scored."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    source_id: str
    chunk_index: int
    #: 1-based position in the store's order (matched-term count desc, then id asc).
    position: int
    matched_terms: int
    score: float
    #: Rank (1-based) in the unlimited ranking, if it scores at all.
    unlimited_rank: int | None
    cut: bool


class CutPassage(BaseModel):
    """A passage of the unlimited top-k that the limit removed before scoring."""

    model_config = ConfigDict(frozen=True)

    ranked: RankedChunk
    unlimited_rank: int
    #: 1-based position in the store's order.
    position: int
    matched_terms: int


class SweepPoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    limit: int
    #: |limited top-k ∩ unlimited top-k| / |unlimited top-k| (1.0 when both are empty).
    overlap: float


class TruncationReport(BaseModel):
    """The limited and unlimited rankings of one query and what separates them."""

    model_config = ConfigDict(frozen=True)

    terms: list[str]
    k: int
    limit: int
    #: Passages containing at least one query term (the unlimited candidate count).
    matching: int
    unlimited: list[RankedChunk]
    limited: list[RankedChunk]
    cut: list[CutPassage]
    overlap: float
    #: The smallest limit whose top-k equals the unlimited top-k.
    smallest_safe_limit: int
    sweep: list[SweepPoint]
    #: Candidate rows in the store's order: all of them, or a sample (see below).
    candidates: list[CandidateRow]
    #: True when ``candidates`` is a sample of the matching passages (more than SCATTER_ROWS).
    candidates_sampled: bool = False


class WhyNot(BaseModel):
    """Why one passage is or is not in the limited top-k."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    contained_terms: list[str]
    missing_terms: list[str]
    #: 1-based position in the candidate order; None if it contains no query term.
    position: int | None
    cut_by_limit: bool
    score: float
    unlimited_rank: int | None
    limited_rank: int | None
    #: Smallest limit at which it appears in the limited top-k; None if none does.
    smallest_limit: int | None
    k: int
    limit: int


def _check(k: int, limit: int) -> None:
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")


def _ranking(scores: npt.NDArray[np.float64], full: LexicalCandidates) -> npt.NDArray[np.int64]:
    """Every scoring row (0-based), by score desc then chunk id asc: rank_chunks' order."""
    rows = np.flatnonzero(scores > 0.0)
    return rows[np.lexsort((full.id_order[rows], -scores[rows]))]


def _sweep_limits(total: int, safe: int, limit: int) -> list[int]:
    points = {0, total, safe, limit} | {
        round(total * i / SWEEP_POINTS) for i in range(1, SWEEP_POINTS + 1)
    }
    return sorted(p for p in points if 0 <= p <= total)


def _first_below(order: npt.NDArray[np.int64], limit: int, k: int) -> npt.NDArray[np.int64]:
    """The limited top-k: the first k rows of the unlimited ranking positioned below ``limit``.

    A prefix of the candidates keeps their relative order, so ranking the first ``limit``
    equals filtering the whole ranking. The ranking is scanned in growing blocks: at a
    large limit the k are found at once, and a million-row mask per sweep point is avoided.
    """
    size = 4 * k + 64
    while True:
        head = order[:size]
        kept = head[head < limit][:k]
        if len(kept) == k or size >= len(order):
            return kept
        size *= 4


def _overlaps(order: npt.NDArray[np.int64], k: int, limits: list[int]) -> list[float]:
    """Share of the unlimited top-k kept at each limit (1.0 when nothing scores)."""
    top = order[:k]
    if not len(top):
        return [1.0 for _ in limits]
    return [int(np.isin(_first_below(order, limit, k), top).sum()) / len(top) for limit in limits]


def analyse_truncation(
    terms: Sequence[str], full: LexicalCandidates, k: int, limit: int
) -> TruncationReport:
    """Compare the top-k at ``limit`` with the unlimited top-k, from unlimited candidates."""
    _check(k, limit)
    n = len(full)
    scores = candidate_scores(terms, full) if terms else np.zeros(n)
    order = _ranking(scores, full)
    matched = full.matched_terms
    unlimited_rows = order[:k]
    limited_rows = _first_below(order, limit, k)
    safe = int(unlimited_rows.max()) + 1 if len(unlimited_rows) else 0
    unlimited = ranked_rows(terms, full, unlimited_rows, scores)
    limited = ranked_rows(terms, full, limited_rows, scores)
    cut = [
        CutPassage(
            ranked=ranked,
            unlimited_rank=rank,
            position=int(row) + 1,
            matched_terms=int(matched[row]),
        )
        for rank, (row, ranked) in enumerate(zip(unlimited_rows, unlimited, strict=True), 1)
        if row >= limit
    ]
    rank_of = np.zeros(n, dtype=np.int64)  # 0: scores nothing
    rank_of[order] = np.arange(1, len(order) + 1)
    shown = np.arange(n)
    sampled = n > SCATTER_ROWS
    if sampled:
        named = [unlimited_rows, limited_rows, np.array([limit - 1, limit], dtype=np.int64)]
        shown = np.unique(
            np.concatenate([np.linspace(0, n - 1, SCATTER_ROWS).astype(np.int64), *named])
        )
        shown = shown[(shown >= 0) & (shown < n)]
    sources = full.chunks(shown)
    rows = [
        CandidateRow(
            chunk_id=chunk.id,
            source_id=chunk.source_id,
            chunk_index=chunk.chunk_index,
            position=int(row) + 1,
            matched_terms=int(matched[row]),
            score=float(scores[row]),
            unlimited_rank=int(rank_of[row]) or None,
            cut=bool(row >= limit),
        )
        for row, chunk in zip(shown, sources, strict=True)
    ]
    limits = _sweep_limits(n, safe, limit)
    overlaps = _overlaps(order, k, [limit, *limits])
    return TruncationReport(
        terms=sorted(set(terms)),
        k=k,
        limit=limit,
        matching=n,
        unlimited=unlimited,
        limited=limited,
        cut=cut,
        overlap=overlaps[0],
        smallest_safe_limit=safe,
        sweep=[SweepPoint(limit=p, overlap=o) for p, o in zip(limits, overlaps[1:], strict=True)],
        candidates=rows,
        candidates_sampled=sampled,
    )


def why_not(
    terms: Sequence[str], full: LexicalCandidates, chunk_id: str, k: int, limit: int
) -> WhyNot:
    """Where one passage stands: its terms, candidate position, ranks, and the limit it needs."""
    _check(k, limit)
    wanted = sorted(set(terms))
    row = full.row_of(chunk_id)
    if row is None:
        return WhyNot(
            chunk_id=chunk_id, contained_terms=[], missing_terms=wanted, position=None,
            cut_by_limit=False, score=0.0, unlimited_rank=None, limited_rank=None,
            smallest_limit=None, k=k, limit=limit,
        )  # fmt: skip
    tfs = full.term_frequencies(row)
    contained = [t for t in wanted if tfs.get(t, 0) > 0]
    scores = candidate_scores(terms, full) if terms else np.zeros(len(full))
    score = float(scores[row])
    order = _ranking(scores, full)
    found = np.flatnonzero(order == row)
    limited = _first_below(order, limit, k)
    in_limited = np.flatnonzero(limited == row)
    # It enters the limited top-k at limit row+1 if fewer than k earlier candidates outrank it;
    # a larger limit only adds rivals, so no later limit can bring it back.
    ahead = order[: int(found[0])] if len(found) else order[:0]
    rivals = int(np.count_nonzero(ahead < row))
    return WhyNot(
        chunk_id=chunk_id,
        contained_terms=contained,
        missing_terms=[t for t in wanted if t not in contained],
        position=row + 1,
        cut_by_limit=row >= limit,
        score=score,
        unlimited_rank=int(found[0]) + 1 if len(found) else None,
        limited_rank=int(in_limited[0]) + 1 if len(in_limited) else None,
        smallest_limit=row + 1 if score > 0.0 and rivals < k else None,
        k=k,
        limit=limit,
    )


def top_documents(
    terms: Sequence[str], full: LexicalCandidates, k: int, limits: Sequence[int]
) -> list[list[str]]:
    """Per limit, the first ``k`` distinct source ids in the ranking of the first ``limit``.

    Evaluate in bulk: the candidates are scored and sorted once per query, and each
    limit filters that one ranking (a prefix keeps the relative order); passages are
    looked up only until k documents are found. Ranking once per limit, with an
    explanation per passage, was what made 300 queries x 4 limits take minutes.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    scores = candidate_scores(terms, full) if terms else np.zeros(len(full))
    order = _ranking(scores, full)
    sources: dict[int, str] = {}
    found: list[list[str]] = []
    for limit in limits:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        documents: list[str] = []
        want = 4 * k + 16
        while True:
            rows = _first_below(order, limit, want)
            missing = [int(r) for r in rows if int(r) not in sources]
            for row, chunk in zip(missing, full.chunks(missing), strict=True):
                sources[row] = chunk.source_id
            documents = documents_in_rank_order(sources[int(r)] for r in rows)
            if len(documents) >= k or len(rows) < want:
                break
            want *= 4
        found.append(documents[:k])
    return found
