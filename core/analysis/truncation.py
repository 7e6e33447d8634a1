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

It works on the candidate columns (numpy): one vectorised scoring, and of the ranking
(score desc, id asc) only what the screens read: its head by partial sort, the rank of
the rows drawn by counting (see ``_Ranking``), so a million candidates cost a few linear
passes over arrays, neither a million models nor a million-row sort. Only the k results become
passages, and the per-candidate rows of the scatter are capped at ``SCATTER_ROWS``
(evenly spaced over the candidate order, plus every row the screens name), saying
so in ``candidates_sampled``; building one model per candidate was rejected, it is
seconds at a million. Positions count from 1 everywhere, as the screens show them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from core.analysis.evaluation import documents_in_rank_order
from core.checkpoint import Steps, finish
from core.domain.metrics import ndcg_at_k
from core.domain.models import built
from core.domain.ranking import (
    LexicalCandidates,
    RankedChunk,
    candidate_score_steps,
    candidate_scores,
    ranked_row_steps,
    top_rows,
)

#: Points of the overlap-versus-limit sweep (plus the exact safe limit and the total).
SWEEP_POINTS = 40
#: Most candidate rows a report carries for the scatter; above it they are sampled.
SCATTER_ROWS = 1_000
#: Scatter rows whose passages are looked up (or made rows) between two steps of
#: ``truncation_steps``: 200 passage copies were ~5-20 ms of a held loop.
LOOKUP_STEP = 50
#: Limits of the sweep whose overlap is computed between two steps.
OVERLAP_STEP = 8
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


class _Ranking:
    """The unlimited ranking of one query (score desc, chunk id asc), read only as far as asked.

    Sorting every scoring row (a 1M-row ``lexsort``) was most of an unlimited analysis at a
    million passages, yet the screens read only the head of the ranking, the limited top-k
    (the head of the rows before the limit) and the rank of the at most SCATTER_ROWS rows
    they draw. So the head is a partial sort (``top_rows``), grown on demand; the top-k of
    the first ``limit`` rows, when the head does not hold it, is ``top_rows`` over those
    rows (a prefix of the candidates keeps their relative order); and a row's rank is
    counted (rows scoring more, plus equal scores with a smaller id) rather than looked up.
    """

    def __init__(self, scores: npt.NDArray[np.float64], id_order: npt.NDArray[np.int64]) -> None:
        self.scores = scores
        self.id_order = id_order
        self.scoring = int(np.count_nonzero(scores > 0.0))
        self._head = np.empty(0, dtype=np.int64)
        self._wanted = 0

    def head(self, size: int) -> npt.NDArray[np.int64]:
        """The first ``size`` rows of the ranking (fewer if fewer score)."""
        if size > self._wanted and len(self._head) < self.scoring:
            self._wanted = max(size, 2 * self._wanted)
            self._head = top_rows(self.scores, self.id_order, self._wanted)
        return self._head[:size]

    def first_below(self, limit: int, k: int) -> npt.NDArray[np.int64]:
        """The limited top-k: the ranking of the first ``limit`` rows, first k of it."""
        head = self.head(4 * k + 64)
        kept = head[head < limit][:k]
        if len(kept) == k or len(head) == self.scoring:
            return kept
        return top_rows(self.scores[:limit], self.id_order[:limit], k)

    def ranks(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """1-based rank of each of ``rows`` (distinct) in the ranking, 0 if it scores nothing.

        rank = 1 + rows scoring more + rows scoring the same with a smaller id. The drawn rows'
        scores are a few distinct values; every scoring row is placed among them in linear
        time (``_values_below``), the rows above each value counted with one ``bincount``, and
        the ties before each drawn row counted per (value, drawn id interval) with another.
        Sorting the scoring rows, or binary-searching each of them, cost more than the
        whole rest of an unlimited analysis at 100k passages.
        """
        scores, ids = self.scores, self.id_order
        asked = scores[rows]
        drawn = np.flatnonzero(asked > 0.0)
        ranks = np.zeros(len(rows), dtype=np.int64)
        if not len(drawn):
            return ranks
        values = np.unique(asked[drawn])  # ascending
        scoring = np.flatnonzero(scores > 0.0)
        x = scores[scoring]
        below = _values_below(values, x)
        # above[i]: rows scoring more than values[i] = rows with more than i values below.
        per = np.bincount(below, minlength=len(values) + 1)
        above = np.cumsum(per[::-1])[::-1][1:]
        at = np.minimum(below, len(values) - 1)
        tied = values[at] == x
        group_t, id_t = at[tied], ids[scoring[tied]]
        group_d = np.searchsorted(values, asked[drawn])
        id_d = ids[rows[drawn]]
        span = int(max(int(id_t.max()), int(id_d.max()))) + 2
        width = len(drawn) + 1
        if len(id_t) * 16 < len(values) * width:
            # Few ties: sort them by (value, id) and count those up to each drawn row's key
            # (the drawn row itself included: it stands for the + 1 of a rank).
            keys = np.sort(group_t * span + id_t)
            own = group_d * span + id_d
            tied_before = np.searchsorted(keys, own, side="right")
            tied_before -= np.searchsorted(keys, group_d * span, side="left")
            ranks[drawn] = above[group_d] + tied_before
            return ranks
        # Many ties: no sort. seg[t] counts the drawn ids below t; a tied row (id t) of value
        # g comes before drawn row d (id u, the r-th smallest drawn id) iff t < u iff
        # seg[t] <= r and t != u, so counting seg <= r also counts d itself (the + 1).
        marker = np.zeros(span, dtype=np.int64)
        marker[id_d + 1] = 1
        seg = np.cumsum(marker)
        r_d = seg[id_d]
        # One flat count per (value, interval), cumulated along the intervals of each value.
        cells = np.bincount(group_t * width + seg[id_t], minlength=len(values) * width)
        cumulative = np.cumsum(cells)
        ranks[drawn] = above[group_d] + cumulative[group_d * width + r_d]
        ranks[drawn] -= np.where(group_d > 0, cumulative[group_d * width - 1], 0)
        return ranks


#: Most bits of the bucket index in ``_values_below`` (2**18 buckets: two small linear
#: passes); fewer for fewer scores, so a small list does not pay for a large table.
_BUCKET_BITS = 18


def _values_below(
    values: npt.NDArray[np.float64], x: npt.NDArray[np.float64]
) -> npt.NDArray[np.int64]:
    """Per element of ``x``, how many of ``values`` (sorted, distinct, positive) are below it.

    ``np.searchsorted`` does this with a binary search per element (slower, at 100k scores,
    than sorting them). Here each score gets a bucket by a monotone integer map (a higher
    bucket means a higher score); a bucket
    holding no value settles the count by table lookup, and only the scores sharing a bucket
    with a value are compared to it (or, where one bucket holds several values, searched).
    """
    # Positive doubles order as their bit patterns do (as int64), so the bucket is the bit
    # pattern's top bits above the smallest score: integer arithmetic, exactly monotone, and
    # finer where scores crowd (relative, not absolute, resolution).
    bits_x = x.view(np.int64)
    bits_v = values.view(np.int64)
    lo = int(min(int(bits_v[0]), int(bits_x.min())))
    top = int(max(int(bits_v[-1]), int(bits_x.max()))) - lo
    shift = max(0, top.bit_length() - min(_BUCKET_BITS, len(x).bit_length() + 2))
    buckets = (top >> shift) + 1
    bucket_x = (bits_x - lo) >> shift
    bucket_v = (bits_v - lo) >> shift
    inside = np.bincount(bucket_v, minlength=buckets)  # values in each bucket
    under = np.cumsum(inside) - inside  # values in lower buckets
    below: npt.NDArray[np.int64] = under[bucket_x]
    shared = inside[bucket_x]
    one = np.flatnonzero(shared == 1)
    below[one] += x[one] > values[below[one]]
    several = np.flatnonzero(shared > 1)
    if len(several):
        below[several] = np.searchsorted(values, x[several], side="left")
    return below


def _sweep_limits(total: int, safe: int, limit: int) -> list[int]:
    """Limits spaced evenly on a log scale from 1 to ``total`` (the screen's axis), plus 0,
    the limit, the smallest safe limit and the one just below it (where the step is).

    Evenly spaced points put one point below ``total / 40``, where a safe limit usually is.
    """
    points = {0, total, safe, max(safe - 1, 0), limit} | {
        round(total ** (i / SWEEP_POINTS)) for i in range(SWEEP_POINTS + 1)
    }
    return sorted(p for p in points if 0 <= p <= total)


def _overlap_steps(ranking: _Ranking, k: int, limits: list[int]) -> Steps[list[float]]:
    """Share of the unlimited top-k kept at each limit (1.0 when nothing scores), a step per
    ``OVERLAP_STEP`` limits (the sweep's ~30 in one piece: ~5 ms of a 1,000-term query)."""
    top = ranking.head(k)
    if not len(top):
        return [1.0 for _ in limits]
    overlaps = []
    for i, limit in enumerate(limits, start=1):
        overlaps.append(int(np.isin(ranking.first_below(limit, k), top).sum()) / len(top))
        if i % OVERLAP_STEP == 0:
            yield
    return overlaps


def _matched(full: LexicalCandidates, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Distinct query terms each of ``rows`` contains (read for those rows only)."""
    counts: npt.NDArray[np.int64] = np.count_nonzero(full.tfs[rows] > 0, axis=1).astype(np.int64)
    return counts


def analyse_truncation(
    terms: Sequence[str], full: LexicalCandidates, k: int, limit: int
) -> TruncationReport:
    """Compare the top-k at ``limit`` with the unlimited top-k, from unlimited candidates."""
    return finish(truncation_steps(terms, full, k, limit))


def truncation_steps(
    terms: Sequence[str], full: LexicalCandidates, k: int, limit: int
) -> Steps[TruncationReport]:
    """``analyse_truncation`` in steps (``core.checkpoint.stepped`` gives way between them):
    a 1,000-term query's analysis is 0.3-0.5 s of scoring, explaining and lookups."""
    _check(k, limit)
    n = len(full)
    scores = (yield from candidate_score_steps(terms, full)) if terms else np.zeros(n)
    ranking = _Ranking(scores, full.id_order)
    unlimited_rows = ranking.head(k)
    limited_rows = ranking.first_below(limit, k)
    matched = dict(
        zip(unlimited_rows.tolist(), _matched(full, unlimited_rows).tolist(), strict=True)
    )
    safe = int(unlimited_rows.max()) + 1 if len(unlimited_rows) else 0
    yield full.chunks_ahead(np.concatenate([unlimited_rows, limited_rows]))
    unlimited = yield from ranked_row_steps(terms, full, unlimited_rows, scores)
    limited = yield from ranked_row_steps(terms, full, limited_rows, scores)
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
    shown = np.arange(n)
    sampled = n > SCATTER_ROWS
    if sampled:
        named = [unlimited_rows, limited_rows, np.array([limit - 1, limit], dtype=np.int64)]
        shown = np.unique(
            np.concatenate([np.linspace(0, n - 1, SCATTER_ROWS).astype(np.int64), *named])
        )
        shown = shown[(shown >= 0) & (shown < n)]
    yield full.chunks_ahead(shown)  # read in one awaited round trip, not a lookup per block
    sources = []
    matched_parts = [np.zeros(0, dtype=np.int64)]
    for start in range(0, len(shown), LOOKUP_STEP):
        block = shown[start : start + LOOKUP_STEP]
        sources.extend(full.chunks(block))
        # Per block: a 1,000-term query's 1,000 rows at once were a 7 ms step.
        matched_parts.append(_matched(full, block))
        yield
    shown_matched = np.concatenate(matched_parts)
    shown_ranks = ranking.ranks(shown)
    yield
    rows: list[CandidateRow] = []
    for i, (row, chunk, terms_in, rank, score) in enumerate(
        zip(
            shown.tolist(),
            sources,
            shown_matched.tolist(),
            shown_ranks.tolist(),
            scores[shown].tolist(),
            strict=True,
        ),
        start=1,
    ):
        # Up to SCATTER_ROWS models of values typed here: built, not validated again.
        rows.append(
            built(
                CandidateRow,
                {
                    "chunk_id": chunk.id,
                    "source_id": chunk.source_id,
                    "chunk_index": chunk.chunk_index,
                    "position": row + 1,
                    "matched_terms": terms_in,
                    "score": score,
                    "unlimited_rank": rank or None,
                    "cut": row >= limit,
                },
            )
        )
        if i % LOOKUP_STEP == 0:
            yield
    yield
    limits = _sweep_limits(n, safe, limit)
    overlaps = yield from _overlap_steps(ranking, k, [limit, *limits])
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


class CeilingPoint(BaseModel):
    """What one limit allows against what BM25 makes of it, by nDCG@k."""

    model_config = ConfigDict(frozen=True)

    limit: int
    #: nDCG@k of BM25's top k over the first ``limit`` candidates.
    ndcg: float
    #: The best nDCG@k any ordering of those candidates could reach: the relevant ones the
    #: limit kept, best grade first. ceiling − ndcg is the ranking's cost, 1 − ceiling (for a
    #: query whose relevant passages all match) the limit's.
    ceiling: float


def limit_ceiling(
    terms: Sequence[str],
    full: LexicalCandidates,
    k: int,
    limits: Sequence[int],
    grades: Mapping[str, int],
    documents: Mapping[str, Sequence[str]] | None = None,
) -> list[CeilingPoint]:
    """Per limit, BM25's nDCG@k over the first ``limit`` candidates and the ceiling of that cut.

    ``grades`` judge passage ids; with ``documents`` (document id -> its passage ids) they
    judge documents, a document kept when any of its passages is, and ranked at its best
    passage (as Evaluate does). Both numbers are ``core.domain.metrics.ndcg_at_k``: the
    ceiling is the nDCG of the surviving relevant ids in grade order, so it shares its ideal
    (every relevant id, kept or not) with BM25's. Computing the ceiling as the kept share of
    the ideal DCG instead would be a second nDCG definition to keep in step.
    """
    _check(k, 0)
    members = documents if documents is not None else {i: [i] for i in grades}
    wanted = {passage: judged for judged, passages in members.items() for passage in passages}
    rows = np.flatnonzero(np.isin(full.ids, list(wanted))) if wanted else np.empty(0, np.int64)
    first: dict[str, int] = {}
    for row, passage in zip(rows.tolist(), full.ids[rows].tolist(), strict=True):
        judged = wanted[passage]
        first[judged] = min(row, first.get(judged, row))
    if documents is not None:
        ranked = top_documents(terms, full, k, limits)
    else:
        scores = candidate_scores(terms, full) if terms else np.zeros(len(full))
        ranking = _Ranking(scores, full.id_order)
        ranked = [full.ids_at(ranking.first_below(limit, k)).tolist() for limit in limits]
    relevant = sorted((g, i) for i, g in grades.items() if g > 0 and i in first)
    points = []
    for limit, top in zip(limits, ranked, strict=True):
        kept = [i for g, i in reversed(relevant) if first[i] < limit]
        points.append(
            CeilingPoint(
                limit=limit, ndcg=ndcg_at_k(top, grades, k), ceiling=ndcg_at_k(kept, grades, k)
            )
        )
    return points


def why_not(
    terms: Sequence[str], full: LexicalCandidates, chunk_id: str, k: int, limit: int
) -> WhyNot:
    """Where one passage stands: its terms, candidate position, ranks, and the limit it needs."""
    _check(k, limit)
    return finish(why_not_steps(terms, full, chunk_id, k, limit))


def why_not_steps(
    terms: Sequence[str], full: LexicalCandidates, chunk_id: str, k: int, limit: int
) -> Steps[WhyNot]:
    """``why_not`` in steps: the scoring of every candidate is most of it."""
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
    scores = (yield from candidate_score_steps(terms, full)) if terms else np.zeros(len(full))
    yield
    score = float(scores[row])
    ranking = _Ranking(scores, full.id_order)
    rank = int(ranking.ranks(np.array([row], dtype=np.int64))[0])
    limited = ranking.first_below(limit, k)
    in_limited = np.flatnonzero(limited == row)
    # It enters the limited top-k at limit row+1 if fewer than k earlier candidates outrank it;
    # a larger limit only adds rivals, so no later limit can bring it back.
    before, own = scores[:row], full.id_order[row]
    rivals = int(
        np.count_nonzero((before > score) | ((before == score) & (full.id_order[:row] < own)))
    )
    return WhyNot(
        chunk_id=chunk_id,
        contained_terms=contained,
        missing_terms=[t for t in wanted if t not in contained],
        position=row + 1,
        cut_by_limit=row >= limit,
        score=score,
        unlimited_rank=rank or None,
        limited_rank=int(in_limited[0]) + 1 if len(in_limited) else None,
        smallest_limit=row + 1 if score > 0.0 and rivals < k else None,
        k=k,
        limit=limit,
    )


def top_documents(
    terms: Sequence[str], full: LexicalCandidates, k: int, limits: Sequence[int]
) -> list[list[str]]:
    """Per limit, the first ``k`` distinct source ids in the ranking of the first ``limit``."""
    return finish(top_document_steps(terms, full, k, limits))


def top_document_steps(
    terms: Sequence[str], full: LexicalCandidates, k: int, limits: Sequence[int]
) -> Steps[list[list[str]]]:
    """``top_documents`` in steps: the scoring's blocks, then a step per limit (an Evaluate's
    query scored and ranked in one piece was its longest hold, 3-4 ms on the shared machine).

    Evaluate in bulk: the candidates are scored and sorted once per query, and each
    limit filters that one ranking (a prefix keeps the relative order); passages are
    looked up only until k documents are found. Ranking once per limit, with an
    explanation per passage, was what made 300 queries x 4 limits take minutes.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if terms and limits and min(limits) >= len(full):
        # Nothing cut (the largest limit): the ranking straight from the postings, where the
        # read can (every query's columns were 65.8 s of 10,000 queries in memory).
        direct = yield from _direct_documents(terms, full, k)
        if direct is not None:
            return [list(direct) for _ in limits]
    scores = (yield from candidate_score_steps(terms, full)) if terms else np.zeros(len(full))
    ranking = _Ranking(scores, full.id_order)
    sources: dict[int, str] = {}
    found: list[list[str]] = []
    for limit in limits:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        yield
        documents: list[str] = []
        want = 4 * k + 16
        while True:
            rows = ranking.first_below(limit, want)
            missing = [int(r) for r in rows if int(r) not in sources]
            # Each row's source from the read's source column where the store filled it
            # (``sources_at``): copying ~56 passages a query only to read their source was
            # ~1/8 of an Evaluate in memory, and their text a read ahead on PostgreSQL.
            if not len(full.source_pool):
                yield full.chunks_ahead(missing)
            sources.update(zip(missing, full.sources_at(missing).tolist(), strict=True))
            documents = documents_in_rank_order(sources[int(r)] for r in rows)
            if len(documents) >= k or len(rows) < want:
                break
            want *= 4
        found.append(documents[:k])
    return found


def _direct_documents(
    terms: Sequence[str], full: LexicalCandidates, k: int
) -> Steps[list[str] | None]:
    """``top_document_steps``' documents of a read nothing cut, from its ``top_directly``
    (its top rows ranked from the postings, as many as ``first_below`` would read at each
    turn, columns built for those alone), or None when the read cannot rank so."""
    want = 4 * k + 16
    while True:
        direct = full.top_directly(terms, want, None)
        if direct is None:
            return None
        head, _ = yield from direct
        documents = documents_in_rank_order(c.source_id for c in head.chunks(range(len(head))))
        if len(documents) >= k or len(head) < want:
            return documents[:k]
        want *= 4
