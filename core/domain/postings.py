"""The columnar query kernel: CSR postings of the query terms -> ``LexicalCandidates``.

Pure and store-agnostic, so the in-memory store and the PostgreSQL store (which fetches
the query terms' posting blocks from the database) select candidates with the same code
and hand ``rank_chunks`` the same columns. A store supplies, per query term, its posting
list as two arrays (``rows`` ascending, ``tfs``), where a row is the passage's index in
the store's own passage arrays (``doc_lengths``, ``ids``); this module computes the
distinct terms each row matches, the truncation order (terms matched desc, then chunk id
asc), the first ``limit`` rows of it, and their tf columns.

When rows are numbered in chunk-id order (``id_rank=None``: the in-memory store's view) and
the query has at most ``BIT_TERMS`` terms, rows are counted on bitsets: each term's rows as
N/64 words (a store keeps the common terms' packed), a bit-sliced counter added a word at a
time, a level's rows one AND per counter bit, and only the words holding the first ``limit``
of them unpacked. Rejected for that case: the count array, one ``np.bincount`` over the
concatenated postings and a ``flatnonzero`` per level, which costs every posting of the
query's terms plus N-sized passes (the Zipf queries' postings are ~1.7 N: at 300k passages
6.6 ms a query against 2.0 through the store's view, CPU on the shared machine).

Otherwise (rows in write order, with ``id_rank`` each row's rank in chunk-id order: the
PostgreSQL store; or a heavy query) counting is that ``np.bincount`` and the order is built
level by level from the count array (sorted when it holds more than ``LEVEL_SCANS`` counts).
Measured slower on 100k passages: an N-sized fancy-index scatter per term (``counts[rows]
+= 1``, about five times the ``bincount``) and a sort of the concatenated postings by
(level, row), O(P log P) where the level scan is O(N) with a tiny constant.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from core.domain.bm25 import CorpusStats, QueryScorer
from core.domain.chunks import StoredChunk
from core.domain.columns import candidates_of
from core.domain.places import BitLevels, Bits, LevelCount, level_bits, place_lookup
from core.domain.ranking import LexicalCandidates
from core.domain.steps import Steps, finish
from core.domain.unlimited import UnlimitedCandidates, corpus_scores, top_corpus_rows

#: One term's posting list: rows ascending (int32) and the term's tf in each (int32).
Posting = tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]
#: Corpus rows -> the passages at those rows (the caller's own, or immutable shared ones).
RowChunks = Callable[[npt.NDArray[np.int64]], list[StoredChunk]]

#: What ``tf_columns`` weighs, in posting entries scattered: one row binary-searched in one
#: posting, and one numpy call per term (searching pays one per term, scattering does not).
SEARCH_COST: Final = 10
CALL_COST: Final = 2_500
#: Postings ``tf_column_steps`` reads between two steps (~1 ms of scattering).
COLUMN_STEP_POSTINGS: Final = 16_384
#: ``truncation_order`` scans level by level while the candidates hold at most this many
#: distinct match counts, and sorts them otherwise (a 1,000-term query: 1,000 scans).
LEVEL_SCANS: Final = 16
#: ``in_key_order`` places rows by a scatter from this many rows (a sort is cheaper below)
#: when their keys span at most ``SCATTER_ORDER_SPAN`` times as many values as there are rows.
SCATTER_ORDER_ROWS: Final = 4_096
SCATTER_ORDER_SPAN: Final = 16
#: The posting of a term no passage has.
EMPTY_POSTING: Final[Posting] = (np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int32))
#: Query terms up to which rows numbered in chunk-id order are counted on bitsets (a
#: bit-sliced counter: ~3 word operations per term and counter bit); more take ``bincount``.
BIT_TERMS: Final = 16
#: Candidate x term cells up to which the bitset path reads the tf columns off the terms'
#: bitsets (``bit_tf_columns``: one step, and only while the words it counts, up to the last
#: row's, cost less than binary searches); more go through ``tf_column_steps``, in steps.
#: ``BIT_TERMS`` x 2,048 rows: an RM3 query's expanded read (~12-16 terms at limit 1,000) is
#: inside it; at 1 << 13 it binary-searched each term's posting, 1.0 against 0.4 ms a read
#: at 100k Zipf passages (the bitset path's one step: ~0.6 ms for 16 terms at 1M rows).
BIT_TF_CELLS: Final = 1 << 15
#: Bitset words counted per unit of ``SEARCH_COST``: a word (copied, popcounted, summed) cost
#: ~2 ns against ~4 ns a posting scattered (16 terms, 1,000 rows of 1M: 0.53 ms for the
#: words against 0.66-1.4 ms searching). Counted as 1, the bitset path stopped at ~800k rows
#: and a 1M-passage RM3 read binary-searched its terms (RM3 search p50 5.4 against 8.2 ms).
WORDS_PER_COST: Final = 2

#: Words of a bitset up to which ``_first_rows`` unpacks every non-zero word rather than
#: summing popcounts to find where the rows it takes end (16k rows: at most 16 KB unpacked;
#: at 10k Zipf passages the sum was ~3 of ~10 us a level of the truncation order).
SMALL_WORDS: Final = 256

#: Bit i of a word alone, and the bits below it (``bit_tf_columns``).
_BIT: Final = np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64))
_BELOW: Final = _BIT - np.uint64(1)

#: Query term j (its index in ``terms``) -> its posting's rows as ``Bits`` (a store's cache).
TermBits = Callable[[int], Bits]
#: Query term j -> its tf in every row, 0 where absent (int64, read-only: a small store's cache).
TermTfs = Callable[[int], npt.NDArray[np.int64]]


def matched_counts(postings: Sequence[Posting], n_rows: int) -> npt.NDArray[np.int64]:
    """Per row of the corpus, how many of the given (distinct terms') postings contain it."""
    lists = [rows for rows, _ in postings if len(rows)]
    if not lists:
        return np.zeros(n_rows, dtype=np.int64)
    return np.bincount(np.concatenate(lists), minlength=n_rows)


def truncation_order(
    counts: npt.NDArray[np.int64],
    levels: int,
    limit: int,
    id_rank: npt.NDArray[np.int64] | None = None,
) -> npt.NDArray[np.int64]:
    """The first ``limit`` matching rows: count desc, then chunk id asc (row or ``id_rank``).

    ``levels`` is the largest possible count (the number of query terms). Each level is one
    ``flatnonzero`` over ``counts``; levels below the one that fills ``limit`` are not read.
    """
    held = np.bincount(counts, minlength=levels + 1)[1:]
    present = (np.flatnonzero(held) + 1)[::-1]  # the counts some row has, descending
    if len(present) > LEVEL_SCANS:
        rows = np.flatnonzero(counts)
        ids = rows if id_rank is None else id_rank[rows]
        ordered: npt.NDArray[np.int64] = rows[np.lexsort((ids, -counts[rows]))[:limit]]
        return ordered
    parts: list[npt.NDArray[np.int64]] = []
    taken = 0
    for level in present.tolist():
        if taken >= limit:
            break
        at = np.flatnonzero(counts == level)
        if id_rank is not None:
            keys = id_rank[at]
            if taken + len(at) > limit:
                # Only the `limit - taken` smallest ids of this level are kept.
                cut = np.argpartition(keys, limit - taken - 1)[: limit - taken]
                at, keys = at[cut], keys[cut]
            at = in_key_order(at, keys)
        parts.append(at)
        taken += len(at)
    if not parts:
        return np.empty(0, dtype=np.int64)
    return np.concatenate(parts)[:limit]


def posting_bits(rows: npt.NDArray[np.int32], n_rows: int) -> Bits:
    """``rows`` (each < ``n_rows``) as ``Bits`` of ``n_rows`` rounded up to whole words: a
    scatter into an N-byte flag array (allocated zeroed, lazily) and one pack, which measured
    faster than OR-reducing each byte's bits from the sorted rows at every density."""
    flags = np.zeros(-(-n_rows // 64) * 64, dtype=np.bool_)
    flags[rows] = True
    out: Bits = np.packbits(flags, bitorder="little").view(np.uint64)
    return out


def _counters(bits: Sequence[Bits]) -> list[Bits]:
    """Per row, how many of ``bits`` hold it, bit-sliced: ``out[i]`` is bit i of the count (a
    ripple-carry add of each set into the counter, word by word)."""
    out: list[Bits] = []
    for k, term in enumerate(bits):
        carry = term
        for counter in out:
            above = counter & carry
            counter ^= carry  # every counter is this function's own array
            carry = above
        if (k + 1).bit_length() > len(out):
            out.append(carry.copy() if carry is term else carry)
    return out


def _first_rows(bits: Bits, most: int) -> npt.NDArray[np.int64]:
    """The smallest ``most`` rows of ``bits``, ascending: only the words up to the one where
    they are reached are unpacked, and of those only the non-zero ones."""
    if len(bits) <= SMALL_WORDS:  # every non-zero word unpacked: no popcounts to sum
        words = bits.nonzero()[0]
        if not len(words):  # an empty level (a Zipf query's top ones): ~10 calls less
            return words
    else:
        pops = np.cumsum(np.bitwise_count(bits), dtype=np.int64)
        if not len(pops) or not pops[-1]:
            return np.empty(0, dtype=np.int64)
        end = int(np.searchsorted(pops, most)) + 1 if most < pops[-1] else len(bits)
        words = bits[:end].nonzero()[0]
    flags = np.unpackbits(bits[words].view(np.uint8), bitorder="little").view(np.bool_)
    at = flags.nonzero()[0][:most]
    rows: npt.NDArray[np.int64] = words[at >> 6] * 64 + (at & 63)
    return rows


def bit_selection(
    bits: Sequence[Bits], levels: int, limit: int, counters: list[Bits] | None = None
) -> tuple[int, npt.NDArray[np.int64] | None]:
    """``matched_counts`` and ``truncation_order`` over rows numbered in chunk-id order, on
    bitsets: the rows matching any term, and the first ``limit`` of the order (None when
    ``limit`` is 0). The work is a few word operations per term and counter bit (N/64 words)
    and the words that hold the rows taken, where the count array costs every posting of the
    query's terms and an N-sized pass per level (at 1M passages the Zipf queries' postings
    are ~1.7 N: ~17 ms a query on the shared machine against ~2 ms here). ``counters``:
    ``_counters(bits)`` when the caller has them already."""
    counters = _counters(bits) if counters is None else counters
    if not counters:
        return 0, np.empty(0, dtype=np.int64) if limit else None
    union = counters[0].copy()
    for counter in counters[1:]:
        union |= counter
    matching = int(np.bitwise_count(union).sum(dtype=np.int64))
    if not limit or not matching:
        return matching, None
    return matching, _bit_order(counters, levels, limit, matching)


def _bit_order(
    counters: Sequence[Bits], levels: int, limit: int, matching: int
) -> npt.NDArray[np.int64]:
    """The first ``limit`` rows of the truncation order, from ``_counters``."""
    parts: list[npt.NDArray[np.int64]] = []
    taken = 0
    for level in range(min(levels, (1 << len(counters)) - 1), 0, -1):
        if taken >= min(limit, matching):
            break
        rows = _first_rows(level_bits(counters, level), limit - taken)
        parts.append(rows)
        taken += len(rows)
    return np.concatenate(parts)


def bit_tf_columns(
    postings: Sequence[Posting], bits: Sequence[tuple[int, Bits]], selected: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """``tf_columns`` when rows are numbered in chunk-id order and ``bits`` holds (j, the rows
    of ``postings[j]`` as ``Bits``) for every non-empty posting: a row's place in a posting is
    the number of its term's bits below it (the popcounts of the words before its word, summed,
    and of its own word's lower bits), so each term's tfs are one gather, where a binary search
    or a scatter through an N-sized map per query was ~0.05-0.14 ms of a 10k-passage search
    (numpy calls per term and a pass over every posting). Only the words up to the last
    selected row's are counted: the truncation order takes the smallest ids of each level."""
    columns = np.zeros((len(postings), len(selected)), dtype=np.int64)
    if len(selected) and bits:
        low, words = selected & 63, selected >> 6
        end = (int(selected.max()) >> 6) + 1
        stacked = np.empty((len(bits), end), dtype=np.uint64)
        for t, (_, each) in enumerate(bits):
            stacked[t] = each[:end]
        counts = np.bitwise_count(stacked)
        before = np.add.accumulate(counts, axis=1, dtype=np.int64)
        before -= counts
        at = stacked.take(words, axis=1)
        place = before.take(words, axis=1)
        place += np.bitwise_count(at & _BELOW.take(low))
        held = (at & _BIT.take(low)).astype(np.bool_)
        for t, (j, _) in enumerate(bits):
            # A row the term lacks reads some tf (clipped) and is multiplied by 0.
            np.multiply(postings[j][1].take(place[t], mode="clip"), held[t], out=columns[j])
    out: npt.NDArray[np.int64] = columns.T
    return out


def dense_tf_columns(
    postings: Sequence[Posting], dense: TermTfs, selected: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """``tf_columns`` from each non-empty posting's tfs over every row (``dense``): one gather a
    term, where ``bit_tf_columns`` was ~20 numpy calls (at 10k passages 3 against 23 us a read
    at limit 100, 7 against 40 at 1,000); one step, so only where that one would be taken."""
    columns = np.zeros((len(postings), len(selected)), dtype=np.int64)
    if len(selected):
        for j, (rows, _) in enumerate(postings):
            if len(rows):  # rows are in range: "clip" takes no buffered copy, as "raise" does
                dense(j).take(selected, out=columns[j], mode="clip")
    out: npt.NDArray[np.int64] = columns.T
    return out


def in_key_order(rows: npt.NDArray[np.int64], keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``rows`` in ascending order of their ``keys`` (non-negative ints, one per row).

    Distinct keys dense enough in their range are placed by a scatter into a key-indexed
    map and read back in one scan, O(range); a sort of half a million chunk-id ranks (an
    unlimited read at 1M passages) was ~45 ms in one piece. Repeated keys (never from a
    store's id ranks, but not assumed) are sorted.
    """
    if len(rows) >= SCATTER_ORDER_ROWS:
        span = int(keys.max()) + 1
        if span <= len(rows) * SCATTER_ORDER_SPAN:
            slot = np.full(span, -1, dtype=np.int64)
            slot[keys] = rows
            placed = slot[slot >= 0]
            if len(placed) == len(rows):
                return placed
    ordered: npt.NDArray[np.int64] = rows[np.argsort(keys, kind="stable")]
    return ordered


def tf_columns(
    postings: Sequence[Posting], selected: npt.NDArray[np.int64], n_rows: int
) -> npt.NDArray[np.int64]:
    """``out[i, j]``: the tf of term ``j`` in row ``selected[i]`` (0 where absent)."""
    return finish(tf_column_steps(postings, selected, n_rows))


def tf_column_steps(
    postings: Sequence[Posting], selected: npt.NDArray[np.int64], n_rows: int
) -> Steps[npt.NDArray[np.int64]]:
    """``tf_columns`` with a step per ``COLUMN_STEP_POSTINGS`` postings read (a 1,000-term
    query's columns over Cranfield: 77k postings, 8-9 ms in one piece).

    For a few rows each posting is binary-searched; for many, the postings are scattered
    through an N-sized position map, which is linear where the searches are not. (One
    scatter per term cost a numpy call per term: 1,000 terms held the loop ~0.3 s.)
    """
    # Filled column by column and handed over transposed: each term's column is contiguous,
    # which is how scoring reads it (one column per term).
    columns = np.zeros((len(postings), len(selected)), dtype=np.int64)
    if len(selected):
        touched = sum(len(rows) for rows, _ in postings)
        if len(postings) * (len(selected) * SEARCH_COST + CALL_COST) < touched:
            read = 0
            for j, (rows, values) in enumerate(postings):
                if not len(rows):
                    continue
                # Needles of the posting's own type: int64 ones made numpy copy the whole
                # posting to int64 first (~1 ms per common term at 300k passages).
                needles = selected.astype(rows.dtype, copy=False)
                at = np.searchsorted(rows, needles)
                at[at >= len(rows)] = 0
                hit = rows[at] == needles
                columns[j, hit] = values[at[hit]]
                read += len(selected) * SEARCH_COST
                if read >= COLUMN_STEP_POSTINGS:
                    read = 0
                    yield
        else:
            # int32 halves the N-sized map; a candidate list is never 2**31 rows long.
            position = np.full(n_rows, -1, dtype=np.int32)
            position[selected] = np.arange(len(selected), dtype=np.int32)
            # Pieces of at most COLUMN_STEP_POSTINGS postings: a common term's posting is
            # cut too (one of 500k postings at 1M passages was a 50-90 ms step).
            pieces = [
                (j, start, min(start + COLUMN_STEP_POSTINGS, len(rows)))
                for j, (rows, _) in enumerate(postings)
                for start in range(0, len(rows), COLUMN_STEP_POSTINGS)
            ]
            spans = _spans([last - first for _, first, last in pieces], COLUMN_STEP_POSTINGS)
            for first, last in spans:
                yield  # the map and the pieces were a step too (~2 ms for 1,000 terms)
                block = pieces[first:last]
                where = position[np.concatenate([postings[j][0][a:b] for j, a, b in block])]
                kept = where >= 0
                term = np.repeat(
                    np.array([j for j, _, _ in block], dtype=np.int64), [b - a for _, a, b in block]
                )
                tf = np.concatenate([postings[j][1][a:b] for j, a, b in block])
                columns[term[kept], where[kept]] = tf[kept]
    out: npt.NDArray[np.int64] = columns.T
    return out


def _spans(sizes: Sequence[int], most: int) -> list[tuple[int, int]]:
    """Consecutive ``[first, last)`` spans of ``sizes``, each summing to at most ``most`` (or
    a single item that alone holds more)."""
    spans: list[tuple[int, int]] = []
    first = held = 0
    for i, size in enumerate(sizes):
        if i > first and held + size > most:
            spans.append((first, i))
            first, held = i, 0
        held += size
    if first < len(sizes):
        spans.append((first, len(sizes)))
    return spans


def postings_candidates(
    stats: CorpusStats,
    terms: Sequence[str],
    postings: Sequence[Posting],
    doc_lengths: npt.NDArray[np.int64],
    ids: npt.NDArray[np.object_],
    limit: int,
    chunks: RowChunks,
    id_rank: npt.NDArray[np.int64] | None = None,
    bits: TermBits | None = None,
    admitted: npt.NDArray[np.int64] | None = None,
    id_rows: npt.NDArray[np.int64] | None = None,
) -> LexicalCandidates:
    """The candidates of one query, in the store's truncation order, first ``limit`` of them.

    ``terms`` are the query's distinct terms, sorted (the columns of ``tfs``); ``postings[j]``
    is the posting of ``terms[j]`` (``EMPTY_POSTING`` for an unknown term). ``doc_lengths``
    and ``ids`` hold one entry per corpus row (their length is the row count); ``id_rank``
    (optional) each row's rank in chunk-id order, when rows are not numbered in that order.
    ``chunks`` turns corpus rows into passages for the k a ranking shows; it is called only
    then. ``stats`` are passed through (the store computes them from the same snapshot).
    ``bits`` (optional, rows in chunk-id order only) gives term j's rows as ``Bits`` (a store
    keeps the common terms'); without it they are packed from the postings when needed.
    ``admitted`` (optional): the rows a filter admits (``core.domain.filters``), ascending;
    only they may be candidates, and the matching rows it leaves out are ``filtered_out``.
    ``id_rows`` (with ``id_rank``): the rows in chunk-id order, for a cut read's ``places``.
    """
    steps = postings_candidate_steps(
        stats, terms, postings, doc_lengths, ids, limit, chunks, id_rank, bits, admitted,
        id_rows=id_rows,
    )  # fmt: skip
    return finish(steps)


def postings_candidate_steps(
    stats: CorpusStats,
    terms: Sequence[str],
    postings: Sequence[Posting],
    doc_lengths: npt.NDArray[np.int64],
    ids: npt.NDArray[np.object_],
    limit: int,
    chunks: RowChunks,
    id_rank: npt.NDArray[np.int64] | None = None,
    bits: TermBits | None = None,
    admitted: npt.NDArray[np.int64] | None = None,
    sources: npt.NDArray[np.object_] | None = None,
    kept_scores: dict[str, npt.NDArray[np.float64]] | None = None,
    id_rows: npt.NDArray[np.int64] | None = None,
    dense: TermTfs | None = None,
) -> Steps[LexicalCandidates]:
    """``postings_candidates`` in three steps (count, order, tf columns): for a 1,000-term
    query each is a few milliseconds of numpy over every posting. A filter's ``admitted``
    rows restrict the counts (a bitset AND, or the count array zeroed outside them) before
    the order is taken, so the limit counts admitted passages only. ``sources``: the source
    id beside each of ``ids`` (the candidates' ``source_pool``). ``kept_scores``: the store's
    cache of common terms' contributions under the default settings for ``stats``
    (``core.domain.unlimited.corpus_scores``), for a read that nothing cut. ``id_rows``: the
    rows in chunk-id order, with ``id_rank`` (a cut read's ``places`` find ids through it).
    ``dense`` (optional): term j's tf in every row (``dense_tf_columns``), for a small store."""
    if len(terms) != len(postings):
        raise ValueError(f"{len(terms)} terms but {len(postings)} postings")
    n_rows = len(doc_lengths)
    filtered_out = 0
    every_bits: list[tuple[int, Bits]] | None = None
    # Each row's level, as the selection counted it (the filter applied): a cut read's places
    # are read from the same one, the bit-sliced counter or the count array.
    levels: LevelCount
    if id_rank is None and len(terms) <= BIT_TERMS:
        every_bits = [
            (j, posting_bits(rows, n_rows) if bits is None else bits(j))
            for j, (rows, _) in enumerate(postings)
            if len(rows)
        ]
        sets = [each for _, each in every_bits]
        if admitted is not None and sets:
            allowed = posting_bits(admitted.astype(np.int32, copy=False), n_rows)
            every = np.bitwise_or.reduce(sets)
            filtered_out = int(np.bitwise_count(every & ~allowed).sum(dtype=np.int64))
            sets = [each & allowed for each in sets]
        yield
        counters = _counters(sets)
        unbounded = limit >= n_rows and admitted is None
        matching, chosen = bit_selection(sets, len(terms), 0 if unbounded else limit, counters)
        if not matching or not limit:
            return candidates_of(
                stats=stats, terms=tuple(terms), matching=matching, filtered_out=filtered_out
            )
        if unbounded:  # nothing cut: ranked from the postings, columns built if read
            return _unlimited(
                stats, terms, postings, every_bits, doc_lengths, ids, chunks, sources, matching,
                kept_scores, dense,
            )  # fmt: skip
        assert chosen is not None
        selected, levels = chosen, BitLevels(counters, matching)
    else:
        counts = matched_counts(postings, n_rows)
        if admitted is not None:
            kept = np.zeros(n_rows, dtype=np.int64)
            kept[admitted] = counts[admitted]
            filtered_out = int(np.count_nonzero(counts)) - int(np.count_nonzero(kept))
            counts = kept
        matching = n_rows - int(np.count_nonzero(counts == 0))
        if limit == 0 or not matching:
            return candidates_of(
                stats=stats, terms=tuple(terms), matching=matching, filtered_out=filtered_out
            )
        yield
        selected, levels = truncation_order(counts, len(terms), limit, id_rank), counts
    yield

    columns = yield from _column_steps(
        postings, every_bits, selected, doc_lengths, chunks, id_rank, dense
    )
    return candidates_of(
        stats=stats,
        terms=tuple(terms),
        id_pool=ids,
        source_pool=np.empty(0, dtype=object) if sources is None else sources,
        matching=matching,
        filtered_out=filtered_out,
        places=place_lookup(postings, ids, levels, id_rank, id_rows, selected),
        **columns,
    )


def _column_steps(
    postings: Sequence[Posting],
    every_bits: Sequence[tuple[int, Bits]] | None,
    selected: npt.NDArray[np.int64],
    doc_lengths: npt.NDArray[np.int64],
    chunks: RowChunks,
    id_rank: npt.NDArray[np.int64] | None = None,
    dense: TermTfs | None = None,
) -> Steps[dict[str, Any]]:
    """The columns of the ``selected`` rows (``LexicalCandidates``' fields), the tf columns
    in steps (gathered from ``dense`` when given)."""

    def lookup(rows: Sequence[int]) -> list[StoredChunk]:
        return chunks(selected[np.asarray(rows, dtype=np.int64)])

    one_step = every_bits is not None and 0 < len(selected) * len(postings) <= BIT_TF_CELLS
    if one_step and dense is not None:
        tfs = dense_tf_columns(postings, dense, selected)
    elif (
        one_step
        and every_bits is not None
        # The words it counts, against what a binary search per row and term costs.
        and int(selected.max()) >> 6 < WORDS_PER_COST * (len(selected) * SEARCH_COST + CALL_COST)
    ):
        tfs = bit_tf_columns(postings, every_bits, selected)
    else:
        tfs = yield from tf_column_steps(postings, selected, len(doc_lengths))
    return {
        "id_rows": selected,
        "id_order": selected if id_rank is None else id_rank[selected],
        "doc_lengths": doc_lengths[selected],
        "tfs": tfs,
        "lookup": lookup,
    }


def _unlimited(
    stats: CorpusStats,
    terms: Sequence[str],
    postings: Sequence[Posting],
    every_bits: list[tuple[int, Bits]],
    doc_lengths: npt.NDArray[np.int64],
    ids: npt.NDArray[np.object_],
    chunks: RowChunks,
    sources: npt.NDArray[np.object_] | None,
    matching: int,
    kept_scores: dict[str, npt.NDArray[np.float64]] | None,
    dense: TermTfs | None,
) -> UnlimitedCandidates:
    """Every matching row of an unfiltered read over rows in chunk-id order, as
    ``UnlimitedCandidates``: the columns the kernel would build, deferred, and a search's
    ranking straight from the postings."""
    pool = np.empty(0, dtype=object) if sources is None else sources
    n_rows = len(doc_lengths)

    def columns() -> Steps[dict[str, Any]]:
        sets = [each for _, each in every_bits]
        _, selected = bit_selection(sets, len(terms), n_rows)
        assert selected is not None
        yield
        found = _column_steps(postings, every_bits, selected, doc_lengths, chunks, None, dense)
        return (yield from found)

    def ranker(
        asked: Sequence[str], k: int, weights: Mapping[str, float] | None
    ) -> Steps[tuple[LexicalCandidates, npt.NDArray[np.float64]]]:
        scorer = QueryScorer(asked, stats, weights=weights)
        plain = not weights or all(w == 1.0 for w in weights.values())
        kept = kept_scores if plain else None
        scores = yield from corpus_scores(scorer, asked, terms, postings, doc_lengths, kept)
        top = top_corpus_rows(scores, k)
        found = yield from _column_steps(
            postings, every_bits, top, doc_lengths, chunks, None, dense
        )
        head = candidates_of(
            stats=stats, terms=tuple(terms), id_pool=ids, source_pool=pool, matching=matching,
            **found,
        )  # fmt: skip
        return head, scores[top]

    fields = {
        "stats": stats,
        "terms": tuple(terms),
        "id_pool": ids,
        "source_pool": pool,
        "matching": matching,
    }
    return UnlimitedCandidates.deferred(fields, columns, ranker)


__all__ = [
    "BIT_TERMS",
    "EMPTY_POSTING",
    "Bits",
    "Posting",
    "RowChunks",
    "TermBits",
    "TermTfs",
    "bit_selection",
    "bit_tf_columns",
    "dense_tf_columns",
    "matched_counts",
    "posting_bits",
    "postings_candidate_steps",
    "postings_candidates",
    "tf_column_steps",
    "tf_columns",
    "truncation_order",
]
