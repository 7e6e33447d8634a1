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

A passage the read kept is placed too (a diagnosis by document places each passage of a
relevant document outside its top k, many of them within the cut): at its index in the read,
its place in that order; only the others' levels are counted (``place_lookup``'s ``selected``).
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
#: take one running sum (~30 us) or sort (~1-2 ms for a level of 40k) of the level. Also the
#: rows looked for in a read's kept rows one comparison each (``_kept_positions``; more: a sort).
_ONE_BY_ONE: Final = 8
#: A set of corpus rows as a bitset: row r is bit r % 8 of byte r // 8 (uint64 words, so
#: operations run a word at a time; only word-wise logic and popcounts read them as words).
#: The kernel's (``core.domain.postings``), defined here where its levels are read too.
Bits = npt.NDArray[np.uint64]
#: Chunk ids -> the place of each that holds a query term (the others are left out).
PlaceLookup = Callable[[Sequence[str]], dict[str, Place]]


class BitLevels(NamedTuple):
    """A read's levels as its selection counted them on bitsets (rows in chunk-id order)."""

    #: The bit-sliced counter: ``counters[i]`` holds bit i of each row's count.
    counters: Sequence[Bits]
    #: The rows it counts (holding a term, admitted by the filter, if any).
    matching: int


#: Each row's level as the read counted it, the filter applied: its bit-sliced counter, or its
#: count array (rows out of chunk-id order, or a query of many terms).
LevelCount = BitLevels | npt.NDArray[np.int64]


def level_bits(counters: Sequence[Bits], level: int) -> Bits:
    """The rows whose count is ``level`` (> 0, so no padding bit past the last row), from a
    bit-sliced counter (``counters[i]``: bit i of each row's count)."""
    out = counters[0].copy() if level & 1 else ~counters[0]
    for i, counter in enumerate(counters[1:], 1):
        out &= counter if level >> i & 1 else ~counter
    return out


def _bit_positions(counters: Sequence[Bits], matching: int, at: Sequence[int]) -> list[int]:
    """The place of each row of ``at`` (rows in chunk-id order), -1 for a row of no level,
    from the bit-sliced counter: a few word operations per level (N/64 words), where the
    count array was one ``bincount`` of every posting (~175 us of ~380 at 47,505 passages).
    The rows holding more terms than a level are the ``matching`` rows less those of it and
    the levels below, so only those are counted (a passage past the cut holds few terms).
    A row's own word is read as a Python int: a query asks for a few rows."""
    levels = [
        sum((int(counter[row >> 6]) >> (row & 63) & 1) << i for i, counter in enumerate(counters))
        for row in at
    ]
    positions = [-1] * len(at)
    wanted = sorted(set(levels) - {0})
    if not wanted:
        return positions
    held = {level: level_bits(counters, level) for level in range(1, wanted[-1] + 1)}
    sizes = {level: int(np.bitwise_count(rows).sum()) for level, rows in held.items()}
    for level in wanted:
        more = matching - sum(size for other, size in sizes.items() if other <= level)
        rows = held[level]
        mine = [i for i, each in enumerate(levels) if each == level]
        # The rows of the level before each: whole words first (a running sum for many).
        pops = np.cumsum(np.bitwise_count(rows)).tolist() if len(mine) > _ONE_BY_ONE else None
        for i in mine:
            word, bit = at[i] >> 6, at[i] & 63
            below = (int(rows[word]) & ((1 << bit) - 1)).bit_count()
            if pops is not None:
                whole = pops[word - 1] if word else 0
            else:
                whole = int(np.bitwise_count(rows[:word]).sum())
            positions[i] = more + whole + below
    return positions


def place_lookup(
    postings: Sequence[tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]],
    ids: npt.NDArray[np.object_],
    levels: LevelCount,
    id_rank: npt.NDArray[np.int64] | None = None,
    id_rows: npt.NDArray[np.int64] | None = None,
    selected: npt.NDArray[np.int64] | None = None,
) -> PlaceLookup:
    """Places over the read's ``postings`` (each term's rows ascending and tfs) and ``levels``
    (the read's own count of each row's terms, the filter applied: nothing is counted
    again), rows with chunk ids ``ids``: numbered in chunk-id order (``id_rank`` None), or
    ``id_rank`` each row's rank in that order and ``id_rows`` the rows in it (the PostgreSQL
    image's ``live``). ``selected``: the rows the read kept, in its order; a row among them
    is placed at its index there, the levels counted only for the others (a diagnosis by
    document places its relevant documents' passages, many of them within the cut: the counts
    were ~1/6 of what it cost beyond its Evaluate when it placed every relevant document's).
    Nothing is computed until asked."""

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
        at = list(rows.values())
        positions = _kept_positions(selected, at)
        past = [i for i, position in enumerate(positions) if position < 0]
        if past:
            beyond = [at[i] for i in past]
            if isinstance(levels, BitLevels):
                counted = _bit_positions(levels.counters, levels.matching, beyond)
            else:
                counted = _count_positions(
                    levels, id_rank, np.array(beyond, dtype=np.int64)
                ).tolist()
            for i, position in zip(past, counted, strict=True):
                positions[i] = position
        # Each term's tf in each row: one search of its posting, with needles of the
        # posting's own dtype (int64 ones cast the whole int32 posting first).
        needles = np.array(at, dtype=np.int32)
        columns = []
        for term_rows, term_tfs in postings:
            found = np.searchsorted(term_rows, needles).tolist()
            last = len(term_rows)
            columns.append(
                [
                    int(term_tfs[j]) if j < last and term_rows[j] == row else 0
                    for j, row in zip(found, at, strict=True)
                ]
            )
        return {
            chunk_id: Place(positions[i], tuple(column[i] for column in columns))
            for i, chunk_id in enumerate(rows)
            if positions[i] >= 0
        }

    return places


def _kept_positions(selected: npt.NDArray[np.int64] | None, at: Sequence[int]) -> list[int]:
    """Each row of ``at``'s index in ``selected`` (the rows a read kept, in its order), -1
    for a row not there: a comparison with each row for a few, one sort for many."""
    if selected is None or not len(selected):
        return [-1] * len(at)
    if len(at) <= _ONE_BY_ONE:
        return [int(hit[0]) if len(hit := (selected == row).nonzero()[0]) else -1 for row in at]
    order = np.argsort(selected, kind="stable")
    ranked = selected[order]
    found = np.minimum(np.searchsorted(ranked, at), len(ranked) - 1)
    kept: list[int] = np.where(ranked[found] == at, order[found], -1).tolist()
    return kept


def _count_positions(
    counts: npt.NDArray[np.int64],
    id_rank: npt.NDArray[np.int64] | None,
    at: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """The place of each row of ``at``, -1 for a row of no level, from the read's count array
    (each row's terms, 0 outside a filter)."""
    positions = np.full(len(at), -1, dtype=np.int64)
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


__all__ = ["BitLevels", "Bits", "LevelCount", "Place", "PlaceLookup", "level_bits", "place_lookup"]
