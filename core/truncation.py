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
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from core.bm25 import QueryScorer
from core.ranking import LexicalCandidate, LexicalCandidates, RankedChunk, rank_chunks

#: Points of the overlap-versus-limit sweep (plus the exact safe limit and the total).
SWEEP_POINTS = 40


class CandidateRow(BaseModel):
    """One candidate in the store's truncation order, scored."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    source_id: str
    chunk_index: int
    #: 0-based position in the store's order (matched-term count desc, then id asc).
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
    candidates: list[CandidateRow]


class WhyNot(BaseModel):
    """Why one passage is or is not in the limited top-k."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    contained_terms: list[str]
    missing_terms: list[str]
    #: 0-based position in the candidate order; None if it contains no query term.
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


def _scores(terms: Sequence[str], full: LexicalCandidates) -> list[float]:
    scorer = QueryScorer(terms, full.stats)
    return [scorer.score(c.term_frequencies, c.doc_length) for c in full.candidates]


def _matched(candidate: LexicalCandidate) -> int:
    return sum(1 for tf in candidate.term_frequencies.values() if tf > 0)


def _top_positions(scores: list[float], ids: list[str], upto: int, k: int) -> list[int]:
    """Positions of the top-k among the first ``upto`` candidates, by rank_chunks' order."""
    pool = ((-scores[i], ids[i], i) for i in range(min(upto, len(scores))) if scores[i] > 0.0)
    return [i for _, _, i in heapq.nsmallest(k, pool)]


def _sweep_limits(total: int, safe: int, limit: int) -> list[int]:
    points = {0, total, safe, limit} | {
        round(total * i / SWEEP_POINTS) for i in range(1, SWEEP_POINTS + 1)
    }
    return sorted(p for p in points if 0 <= p <= total)


def analyse_truncation(
    terms: Sequence[str], full: LexicalCandidates, k: int, limit: int
) -> TruncationReport:
    """Compare the top-k at ``limit`` with the unlimited top-k, from unlimited candidates."""
    _check(k, limit)
    scores = _scores(terms, full)
    ids = [c.chunk.id for c in full.candidates]
    unlimited_positions = _top_positions(scores, ids, len(ids), k)
    unlimited_set = set(unlimited_positions)
    safe = max(unlimited_positions, default=-1) + 1

    def overlap_at(upto: int) -> float:
        if not unlimited_positions:
            return 1.0
        kept = unlimited_set.intersection(_top_positions(scores, ids, upto, k))
        return len(kept) / len(unlimited_positions)

    unlimited = rank_chunks(terms, full, k)
    limited = rank_chunks(terms, full.head(limit), k)
    cut = [
        CutPassage(
            ranked=ranked,
            unlimited_rank=rank,
            position=pos,
            matched_terms=_matched(full.candidates[pos]),
        )
        for rank, (pos, ranked) in enumerate(zip(unlimited_positions, unlimited, strict=True), 1)
        if pos >= limit
    ]
    all_ranks = {
        pos: rank
        for rank, pos in enumerate(_top_positions(scores, ids, len(ids), len(ids)), start=1)
    }
    rows = [
        CandidateRow(
            chunk_id=c.chunk.id,
            source_id=c.chunk.source_id,
            chunk_index=c.chunk.chunk_index,
            position=pos,
            matched_terms=_matched(c),
            score=scores[pos],
            unlimited_rank=all_ranks.get(pos),
            cut=pos >= limit,
        )
        for pos, c in enumerate(full.candidates)
    ]
    return TruncationReport(
        terms=sorted(set(terms)),
        k=k,
        limit=limit,
        matching=len(full.candidates),
        unlimited=unlimited,
        limited=limited,
        cut=cut,
        overlap=overlap_at(limit),
        smallest_safe_limit=safe,
        sweep=[
            SweepPoint(limit=p, overlap=overlap_at(p)) for p in _sweep_limits(len(ids), safe, limit)
        ],
        candidates=rows,
    )


def why_not(
    terms: Sequence[str], full: LexicalCandidates, chunk_id: str, k: int, limit: int
) -> WhyNot:
    """Where one passage stands: its terms, candidate position, ranks, and the limit it needs."""
    _check(k, limit)
    wanted = sorted(set(terms))
    ids = [c.chunk.id for c in full.candidates]
    if chunk_id not in ids:
        return WhyNot(
            chunk_id=chunk_id, contained_terms=[], missing_terms=wanted, position=None,
            cut_by_limit=False, score=0.0, unlimited_rank=None, limited_rank=None,
            smallest_limit=None, k=k, limit=limit,
        )  # fmt: skip
    pos = ids.index(chunk_id)
    candidate = full.candidates[pos]
    contained = [t for t in wanted if candidate.term_frequencies.get(t, 0) > 0]
    scores = _scores(terms, full)
    unlimited = _top_positions(scores, ids, len(ids), len(ids))
    limited = _top_positions(scores, ids, limit, k)
    # It enters the limited top-k at limit pos+1 if fewer than k earlier candidates outrank it;
    # a larger limit only adds rivals, so no later limit can bring it back.
    key = (-scores[pos], ids[pos])
    rivals = sum(1 for i in range(pos) if scores[i] > 0.0 and (-scores[i], ids[i]) < key)
    return WhyNot(
        chunk_id=chunk_id,
        contained_terms=contained,
        missing_terms=[t for t in wanted if t not in contained],
        position=pos,
        cut_by_limit=pos >= limit,
        score=scores[pos],
        unlimited_rank=unlimited.index(pos) + 1 if pos in unlimited else None,
        limited_rank=limited.index(pos) + 1 if pos in limited else None,
        smallest_limit=pos + 1 if scores[pos] > 0.0 and rivals < k else None,
        k=k,
        limit=limit,
    )
