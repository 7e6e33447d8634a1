"""Where a passage past a read's limit stands in its truncation order, from its postings.

A diagnosis says of a relevant passage the limit cut "position 4,812: a limit of 4,812 keeps
it" and which query terms it holds. That position is its place in the truncation order of
every matching passage (distinct query terms held, most first, then chunk id), which a read
cut at the limit never orders. The diagnosis read the query again unlimited for it: every
matching passage's row, tf columns and source (with a Zipf query's common word, every
passage), for the two or three relevant passages past the limit a query has; at issue 49's
probes (47,505 passages, 2,000 judged queries) that was ~3/4 of ``diagnose_files``. The place
needs much less: the count of each row's matched terms (one ``bincount`` over the query's
postings, which the cut read already holds), how many rows hold more, and how many hold as
many with a smaller id. So the kernel hands a cut read a ``PlaceLookup`` over its own postings:
the same snapshot as the read, no second read. Rejected: a store method of its own (a second
read, a round trip a query on PostgreSQL, and possibly another snapshot than the run's).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt


class Place(NamedTuple):
    """A matching passage's place in the truncation order of every matching passage."""

    #: 0-based: the passages before it in that order (the smallest limit keeping it, less 1).
    position: int
    #: Its tf of each of the read's terms, in the read's term order (0: it lacks the term).
    tfs: tuple[int, ...]


#: Rows of one level placed one by one (a pass over the level each, ~2-20 us at 47k rows); more
#: take one running sum (~30 us) or sort (~1-2 ms for a level of 40k) of the level.
_ONE_BY_ONE: Final = 8
#: A set of corpus rows as a bitset: row r is bit r % 8 of byte r // 8 (uint64 words, so
#: operations run a word at a time; only word-wise logic and popcounts read them as words).
#: The kernel's (``core.domain.postings``), defined here where its levels are read too.
Bits = npt.NDArray[np.uint64]
#: Chunk ids -> the place of each that holds a query term (the others are left out).
PlaceLookup = Callable[[Sequence[str]], dict[str, Place]]


def level_bits(counters: Sequence[Bits], level: int) -> Bits:
    """The rows whose count is ``level`` (> 0, so no padding bit past the last row), from a
    bit-sliced counter (``counters[i]``: bit i of each row's count)."""
    out = counters[0].copy() if level & 1 else ~counters[0]
    for i, counter in enumerate(counters[1:], 1):
        out &= counter if level >> i & 1 else ~counter
    return out


def _bit_positions(
    counters: Sequence[Bits], terms: int, at: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """The place of each row of ``at`` (rows in chunk-id order), -1 for a row of no level,
    from the bit-sliced counter: a few word operations per level (N/64 words), where the
    count array was one ``bincount`` of every posting (~175 us of ~380 at 47,505 passages)."""
    words, shift = at >> 6, (at & 63).astype(np.uint64)
    levels = np.zeros(len(at), dtype=np.int64)
    for i, counter in enumerate(counters):
        levels |= ((counter[words] >> shift) & np.uint64(1)).astype(np.int64) << i
    positions = np.full(len(at), -1, dtype=np.int64)
    wanted = sorted(set(levels[levels > 0].tolist()))
    if not wanted:
        return positions
    held = {
        level: level_bits(counters, level)
        for level in range(wanted[0], min(terms, (1 << len(counters)) - 1) + 1)
    }
    for level in wanted:
        more = sum(int(np.bitwise_count(held[m]).sum()) for m in held if m > level)
        rows, mine = held[level], np.flatnonzero(levels == level)
        # The rows of the level before each: whole words first (a running sum for many).
        pops = (
            np.cumsum(np.bitwise_count(rows), dtype=np.int64) if len(mine) > _ONE_BY_ONE else None
        )
        for i in mine.tolist():
            word = int(words[i])
            below = int(np.bitwise_count(rows[word] & ((np.uint64(1) << shift[i]) - np.uint64(1))))
            whole = (
                int(np.bitwise_count(rows[:word]).sum())
                if pops is None
                else (int(pops[word - 1]) if word else 0)
            )
            positions[i] = more + whole + below
    return positions


def place_lookup(
    postings: Sequence[tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]],
    n_rows: int,
    ids: npt.NDArray[np.object_],
    id_rank: npt.NDArray[np.int64] | None = None,
    id_rows: npt.NDArray[np.int64] | None = None,
    admitted: npt.NDArray[np.int64] | None = None,
    counters: Callable[[], Sequence[Bits]] | None = None,
) -> PlaceLookup:
    """Places over the read's ``postings`` (each term's rows ascending and tfs), ``n_rows``
    corpus rows with chunk ids ``ids``: rows numbered in chunk-id order (``id_rank`` None),
    or ``id_rank`` each row's rank in that order and ``id_rows`` the rows in it (the
    PostgreSQL image's ``live``). ``admitted``: a filter's rows, the only ones with a place.
    ``counters`` (rows in chunk-id order): the bit-sliced counter of the read's term bitsets,
    the filter applied, which places are then read from. Nothing is computed until asked."""

    def row_of(chunk_id: str) -> int | None:
        if id_rank is None:  # row r holds the r-th id ascending
            row = bisect.bisect_left(ids, chunk_id)
            inside = row < len(ids)
        else:
            assert id_rows is not None, "rows out of chunk-id order need the rows in that order"
            at = bisect.bisect_left(range(len(id_rows)), chunk_id, key=lambda r: ids[id_rows[r]])
            inside = at < len(id_rows)
            row = int(id_rows[at]) if inside else -1
        return row if inside and ids[row] == chunk_id else None

    def places(chunk_ids: Sequence[str]) -> dict[str, Place]:
        rows = {chunk_id: row for chunk_id in chunk_ids if (row := row_of(chunk_id)) is not None}
        if not rows:
            return {}
        at = np.fromiter(rows.values(), dtype=np.int64, count=len(rows))
        if counters is not None:
            positions = _bit_positions(counters(), len(postings), at)
        else:
            positions = _count_positions(postings, n_rows, id_rank, admitted, at)
        columns = []
        for term_rows, term_tfs in postings:
            found = np.minimum(np.searchsorted(term_rows, at), max(len(term_rows) - 1, 0))
            hit = term_rows[found] == at if len(term_rows) else np.zeros(len(at), dtype=bool)
            columns.append(np.where(hit, term_tfs[found] if len(term_rows) else 0, 0))
        tfs = np.stack(columns, axis=1).tolist()
        return {
            chunk_id: Place(int(positions[i]), tuple(tfs[i]))
            for i, chunk_id in enumerate(rows)
            if positions[i] >= 0
        }

    return places


def _count_positions(
    postings: Sequence[tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]],
    n_rows: int,
    id_rank: npt.NDArray[np.int64] | None,
    admitted: npt.NDArray[np.int64] | None,
    at: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """The place of each row of ``at``, -1 for a row of no level, from the count array (one
    ``bincount`` of the postings): rows out of chunk-id order, or a query of many terms."""
    positions = np.full(len(at), -1, dtype=np.int64)
    lists = [found for found, _ in postings if len(found)]
    if not lists:
        return positions
    counts = np.bincount(np.concatenate(lists), minlength=n_rows)
    if admitted is not None:
        kept = np.zeros(n_rows, dtype=counts.dtype)
        kept[admitted] = counts[admitted]
        counts = kept
    levels = counts[at]
    for level in np.unique(levels[levels > 0]).tolist():
        mine = np.flatnonzero(levels == level)
        same = counts == level
        positions[mine] = np.count_nonzero(counts > level)  # the rows holding more terms
        # Then the rows holding as many with a smaller id: a count per row, or one sort
        # or running sum of the level for many rows.
        many = len(mine) > _ONE_BY_ONE
        if id_rank is not None:
            ranks, keys = id_rank[same], id_rank[at[mine]]
            positions[mine] += (
                np.searchsorted(np.sort(ranks), keys)
                if many
                else [np.count_nonzero(ranks < key) for key in keys.tolist()]
            )
        else:
            positions[mine] += (
                np.cumsum(same)[at[mine]] - 1
                if many
                else [np.count_nonzero(same[:row]) for row in at[mine].tolist()]
            )
    return positions


__all__ = ["Bits", "Place", "PlaceLookup", "level_bits", "place_lookup"]
