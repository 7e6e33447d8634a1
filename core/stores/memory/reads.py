"""The in-memory store's read view: an image's live postings as one CSR in chunk-id order.

An ``Image`` (``memory.index``) keeps its rows in write order, in segments. Searched as they
are, a term's posting is a slice per segment, concatenated with the segment's base added (a
copy of every posting of every query term), and since rows are not in chunk-id order the
kernel gathers ``id_rank`` for every matched row (the chunk-id tie-break) and binary-searches
postings with needles out of row order: at 1M passages a search took 4x as long as over the
single CSR in chunk-id order the store had before the segments (24 vs 6.2 ms p50 @100).

So reads go through a ``View`` of the image, built on its first read and dropped with it:
every live posting renumbered to its passage's rank in chunk-id order and sorted, so a term's
posting is a slice (no copy), row r is the r-th live chunk id, and the kernel needs no
``id_rank``. Its cost is one pass and one sort over the image's postings per image version
(packed into one int64 key each and sorted in place by numpy's SIMD sort: about 3 s at 1M,
in a thread) and its own copy of the postings (8 bytes each) beside the segments'. Rejected:
searching segment by segment and merging the candidates (Lucene's way): the truncation order
and the tf columns cross segments by chunk id, so the ``id_rank`` gathers stay; and keeping
the image's own rows in chunk-id order, which would renumber rows on every write (the write
path's and the passage storage's work, paid by every upload).

A write's image carries how it was written from the one before (``image.Since``: that
image's views, the live ranks it removed, the rows it appended), so the first read after a
write updates the older view rather than building one: surviving postings renumbered, the
appended rows' merged in, no sort (at 100k passages, CPU on the shared machine: one source
added 674 -> 135 ms, one deleted 790 -> 215, 5,000 passages added 761 -> 646: that one is the
binary searches placing 400k postings). The older view is kept until then (8 bytes a posting).

Rows in chunk-id order also let the kernel count a query's rows on bitsets; the view keeps a
common term's bitset once asked (``KEEP_BITS``: at most twice its rows' bytes; ~6 MB at 300k
passages for the bench's queries) rather than packing every term's when it is built. A view
of at most ``DENSE_ROWS`` rows also keeps such a term's tfs over every row (``View.dense``), so
a small store's tf columns are one gather a term rather than read off the bitsets.
"""

from __future__ import annotations

import asyncio
import itertools
import operator
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final, cast
from uuid import UUID

import numpy as np
import numpy.typing as npt

from core.checkpoint import checkpoint, giving_way, stepped
from core.domain.bm25 import CorpusStats
from core.domain.chunks import StoredChunk
from core.domain.filters import PassageFilter
from core.domain.models import built
from core.domain.postings import (
    Bits,
    Posting,
    RowChunks,
    TermBits,
    TermTfs,
    posting_bits,
    postings_candidate_steps,
)
from core.domain.ranking import LexicalCandidates
from core.domain.steps import Steps, finish
from core.stores.memory.index import CHUNK_ID, Image, Ints, Objects, Segment, Since, shared_slots
from core.stores.memory.kept import CHUNK_INDEX, ID, SOURCE_ID, Kept, kept_metadata, passage_copy

#: Passages a metadata filter reads between two checkpoints (~1 us each).
LOOKUP_ROWS: Final = 4_096
#: Bits a packed sort key (slot, rank, tf) may use: a non-negative int64.
KEY_BITS: Final = 63
#: Postings from which a view is built in a thread (the loop serves other calls meanwhile).
THREAD_POSTINGS: Final = 200_000
#: Postings packed or unpacked per numpy pass: bounds the temporaries to a few times this.
PIECE: Final = 1 << 22
#: A term whose posting holds at least 1/this of the rows keeps its rows' bitset once a query
#: asked for it: N/8 bytes, at most twice its rows' own 4 bytes a posting.
KEEP_BITS: Final = 64
#: A view of at most this many rows hands the kernel each query term's tfs over every row
#: (``View.dense``): the tf columns are one gather a term, where reading them off the bitsets
#: was ~20 numpy calls (10k Zipf passages: 3 against 23 us a read at limit 100). Built per read
#: (a zeroed array and a scatter, ~1 us at 10k rows), and kept for a term ``KEEP_BITS`` keeps.
DENSE_ROWS: Final = 1 << 14
#: A read of at most this many rows x query terms runs its steps in one piece, with no
#: checkpoint between them (``View.read``): a 10k-passage, 6-term read's are ~0.1 ms in all.
ONE_PIECE_CELLS: Final = 120_000

Int32s = npt.NDArray[np.int32]
Floats = npt.NDArray[np.float64]
#: One view built in a thread at a time: two readers of a new image wait for one build.
_BUILDING = threading.Lock()


@dataclass(frozen=True)
class View:
    """An image's live postings as one ``Segment`` whose row r is the r-th live chunk id
    ascending (each term's rows ascending), and per row what the kernel reads."""

    postings: Segment
    #: Per row: the passage's token count, its chunk id, and its row in the image.
    lengths: Ints
    ids: Objects
    image_rows: Ints
    #: Per row: the passage's source id (the candidates' ``source_pool``: a diagnosis by
    #: document reads every candidate's; two gathers of references per view, ~1/100 of it).
    sources: Objects
    #: Common terms' rows as bitsets (``KEEP_BITS``), packed on a query's first ask: readers
    #: on the loop and in threads may race to pack one, and only pack it twice.
    kept_bits: dict[str, Bits] = field(default_factory=dict, compare=False, repr=False)
    #: Common terms' score contributions under the default settings, kept by an unlimited
    #: search for the next (``core.domain.unlimited.corpus_scores``: at most 128 B a row).
    kept_scores: dict[str, Floats] = field(default_factory=dict, compare=False, repr=False)
    #: A small view's common terms' tfs over every row (``dense``): 8 bytes a row each, as many
    #: terms as a row holds postings on average (the view's postings' own bytes at most).
    kept_tfs: dict[str, Ints] = field(default_factory=dict, compare=False, repr=False)

    def posting(self, term: str) -> Posting:
        return self.postings.posting(term)

    def candidate_steps(
        self,
        stats: CorpusStats,
        terms: Sequence[str],
        postings: Sequence[Posting],
        limit: int,
        chunks: RowChunks,
        admitted: Ints | None = None,
    ) -> Steps[LexicalCandidates]:
        """The kernel's candidates of ``terms`` (``postings``: theirs, from this view; only
        the ``admitted`` rows of a filter, when given)."""
        return postings_candidate_steps(
            stats, terms, postings, self.lengths, self.ids, limit, chunks,
            bits=self.bits(terms, postings), admitted=admitted, sources=self.sources,
            kept_scores=self.kept_scores, dense=self.dense(terms, postings),
        )  # fmt: skip

    async def read(
        self,
        image: Image,
        terms: Sequence[str],
        postings: Sequence[Posting],
        limit: int,
        chunks: RowChunks,
        admitted: Ints | None = None,
    ) -> LexicalCandidates:
        """``candidate_steps`` run with a checkpoint between two steps, the statistics from
        ``image`` (this view's), or in one piece when the read is tiny (``ONE_PIECE_CELLS``):
        each step is then far below a loop turn's 1 ms, and the turns taken between them were
        a fixed ~10-20 us of a 10k-passage search. Rejected: a bound on postings (a bitset
        read costs its rows' words, not its postings)."""
        stats = read_stats(image, terms, postings)
        steps = self.candidate_steps(stats, terms, postings, limit, chunks, admitted)
        if len(self.lengths) * len(terms) <= ONE_PIECE_CELLS:
            return finish(steps)
        return await stepped(steps)

    def bits(self, terms: Sequence[str], postings: Sequence[Posting]) -> TermBits:
        """``terms[j]`` (``postings[j]``: its posting) -> its rows as a bitset (the kernel's
        ``bits``)."""
        n_rows = len(self.lengths)

        def of(j: int) -> Bits:
            found = self.kept_bits.get(terms[j])
            if found is None:
                rows = postings[j][0]
                found = posting_bits(rows, n_rows)
                if len(rows) * KEEP_BITS >= n_rows:
                    self.kept_bits[terms[j]] = found
            return found

        return of

    def dense(self, terms: Sequence[str], postings: Sequence[Posting]) -> TermTfs | None:
        """``terms[j]`` (``postings[j]``: its posting) -> its tf in every row (the kernel's
        ``dense``), or None for a view of more than ``DENSE_ROWS`` rows (an N-sized array a
        rare term would cost every read)."""
        n_rows = len(self.lengths)
        if n_rows > DENSE_ROWS:
            return None
        most = len(self.postings.rows) // max(1, n_rows)

        def of(j: int) -> Ints:
            found = self.kept_tfs.get(terms[j])
            if found is None:
                rows, tfs = postings[j]
                found = np.zeros(n_rows, dtype=np.int64)
                found[rows] = tfs
                found.flags.writeable = False
                if len(rows) * KEEP_BITS >= n_rows and len(self.kept_tfs) < most:
                    self.kept_tfs[terms[j]] = found
            return found

        return of

    @classmethod
    def of(cls, image: Image) -> View:
        slots, maps = shared_slots(image.segments)
        width = len(slots)
        tf_bits = max((int(s.tfs.max()).bit_length() for s in image.segments if len(s.tfs)),
                      default=1)  # fmt: skip
        rank_bits = max(1, (image.passages - 1).bit_length())
        slot_bits = max(1, (width - 1).bit_length())
        shift = rank_bits + tf_bits
        rows, tfs, counts = (
            _packed(image, maps, width, shift, tf_bits)
            if slot_bits + shift <= KEY_BITS
            else _sorted(image, maps, width)
        )
        offsets = np.zeros(width + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        lengths = image.lengths[image.id_rows]
        postings = Segment(slots, offsets, rows, tfs, image.passages)
        return cls(postings, lengths, image.id_keys, image.id_rows, _sources(image))


def _sources(image: Image) -> Objects:
    """The source id of each live row in chunk-id order (the view's rows)."""
    by_row = np.empty(len(image.chunks), dtype=object)
    by_row[image.source_rows] = image.source_keys
    sources: Objects = by_row[image.id_rows]
    return sources


def _pieces(image: Image, maps: list[Ints]) -> Iterator[tuple[Ints, Ints, Int32s]]:
    """Every live posting of ``image`` as (slot, rank in chunk-id order, tf), about ``PIECE``
    postings (whole terms) at a time; the slots and ranks are fresh arrays."""
    for segment, base, dead, mapped in zip(
        image.segments, image.bases, image.dead, maps, strict=True
    ):
        offsets = segment.offsets
        cuts = np.searchsorted(offsets, np.arange(PIECE, int(offsets[-1]), PIECE)).tolist()
        for lo, hi in itertools.pairwise(sorted({0, *cuts, len(offsets) - 1})):
            start, end = int(offsets[lo]), int(offsets[hi])
            slot = np.repeat(mapped[lo:hi], np.diff(offsets[lo : hi + 1]))
            rows = segment.rows[start:end] + np.int32(base) if base else segment.rows[start:end]
            tf = segment.tfs[start:end]
            if dead:
                alive = image.live[rows]
                slot, rows, tf = slot[alive], rows[alive], tf[alive]
            yield slot, image.id_rank[rows], tf


def _packed(
    image: Image, maps: list[Ints], width: int, shift: int, tf_bits: int
) -> tuple[Int32s, Int32s, Ints]:
    """Rows and tfs in (slot, rank) order, and the postings per slot: each posting packed into
    one int64 (slot, rank, tf from the high bits down) and the keys sorted in place, 8 bytes a
    posting where an argsort and two gathers held ~32 and took 8x as long."""
    key = np.empty(sum(len(s.rows) for s in image.segments), dtype=np.int64)
    size = 0
    for slot, rank, tf in _pieces(image, maps):
        part = key[size : size + len(slot)]
        np.left_shift(slot, shift, out=slot)
        np.left_shift(rank, tf_bits, out=rank)
        np.bitwise_or(slot, rank, out=part)
        part |= tf
        size += len(slot)
    key = key[:size]
    key.sort()
    rows = np.empty(size, dtype=np.int32)
    tfs = np.empty(size, dtype=np.int32)
    spare = np.empty(min(size, PIECE), dtype=np.int64)
    rank_mask, tf_mask = (1 << (shift - tf_bits)) - 1, (1 << tf_bits) - 1
    for start in range(0, size, PIECE):
        part = key[start : start + PIECE]
        high = np.right_shift(part, tf_bits, out=spare[: len(part)])
        np.bitwise_and(high, rank_mask, out=rows[start : start + PIECE], casting="unsafe")
        np.bitwise_and(part, tf_mask, out=tfs[start : start + PIECE], casting="unsafe")
    counts = np.diff(np.searchsorted(key, np.arange(width, dtype=np.int64) << shift), append=size)
    return rows, tfs, counts


def _sorted(image: Image, maps: list[Ints], width: int) -> tuple[Int32s, Int32s, Ints]:
    """``_packed``'s result when a key would not fit 63 bits (a vocabulary, corpus and tf all
    huge): one lexsort of the postings."""
    parts = list(_pieces(image, maps))
    slot, rank, tf = (np.concatenate([p[i] for p in parts]) for i in range(3))
    order = np.lexsort((rank, slot))
    counts = np.bincount(slot, minlength=width)
    return rank[order].astype(np.int32), tf[order].astype(np.int32), counts


def _updated(before: View, image: Image, since: Since) -> View:
    """``image``'s view from ``before``, the view of the image it was written from: every
    surviving posting renumbered to its passage's new rank, and the appended rows' postings
    put in their places; passes over the postings, no sort and no vocabulary merge (~2/3 of a
    build's time). Holds the postings twice at most while it runs, as a build does."""
    first = len(image.ids) - since.added  # the appended rows are the image's last
    added_ranks = image.id_rank[first:]
    taken = np.zeros(len(image.id_rows), dtype=np.bool_)
    taken[added_ranks] = True
    alive = np.ones(len(before.ids), dtype=np.bool_)
    alive[since.removed] = False
    remap = np.full(len(before.ids), -1, dtype=np.int32)
    remap[alive] = np.flatnonzero(~taken)
    old = before.postings
    rows, tfs, counts = remap[old.rows], old.tfs, np.diff(old.offsets)
    if len(since.removed):
        kept = rows >= 0
        gone = np.flatnonzero(~kept)  # a few: the removed passages' postings
        terms = np.searchsorted(old.offsets, gone, side="right") - 1
        counts = counts - np.bincount(terms, minlength=len(counts))
        rows, tfs = rows[kept], tfs[kept]
    slots = dict(old.terms)
    slot, rank, tf = _appended(image, first, slots)
    width = len(slots)
    counts = np.concatenate((counts, np.zeros(width - len(counts), dtype=np.int64)))
    starts = np.zeros(width + 1, dtype=np.int64)  # survivors' first posting of each term
    np.cumsum(counts, out=starts[1:])
    extra = np.bincount(slot, minlength=width)
    offsets = starts.copy()
    offsets[1:] += np.cumsum(extra)
    # An appended posting's place: the survivors before it (its term's earlier terms' and
    # those of its term ranked before it, binary-searched in every term's slice at once) and
    # the appended postings before it.
    lo, hi = starts[slot], starts[slot + 1]
    last = max(len(rows) - 1, 0)
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) >> 1
        less = rows[np.minimum(mid, last)] < rank if len(rows) else active
        lo = np.where(active & less, mid + 1, lo)
        hi = np.where(active & ~less, mid, hi)
    place = lo + np.arange(len(slot), dtype=np.int64)
    new = np.zeros(len(rows) + len(slot), dtype=np.bool_)
    new[place] = True
    out_rows = np.empty(len(new), dtype=np.int32)
    out_tfs = np.empty(len(new), dtype=np.int32)
    out_rows[~new], out_rows[place] = rows, rank
    out_tfs[~new], out_tfs[place] = tfs, tf
    postings = Segment(slots, offsets, out_rows, out_tfs, image.passages)
    return View(
        postings, image.lengths[image.id_rows], image.id_keys, image.id_rows, _sources(image)
    )


def _appended(image: Image, first: int, slots: dict[str, int]) -> tuple[Ints, Int32s, Int32s]:
    """The postings of ``image``'s rows from ``first`` on as (slot, rank, tf), sorted by slot
    then rank; ``slots`` gains their new terms. Reads the segments that hold those rows."""
    parts: list[tuple[Ints, Int32s, Int32s]] = []
    for segment, base in zip(image.segments, image.bases, strict=True):
        if base + segment.size <= first:
            continue
        keep = segment.rows >= first - base
        term = np.repeat(np.arange(len(segment.terms)), np.diff(segment.offsets))[keep]
        names = list(segment.terms)
        used = np.flatnonzero(np.bincount(term, minlength=len(names)))  # np.unique: 3x slower
        mapped = np.zeros(len(names), dtype=np.int64)
        for i in used.tolist():
            mapped[i] = slots.setdefault(names[i], len(slots))
        rank = image.id_rank[segment.rows[keep] + base].astype(np.int32)
        parts.append((mapped[term], rank, segment.tfs[keep]))
    if not parts:
        return np.empty(0, np.int64), np.empty(0, np.int32), np.empty(0, np.int32)
    slot, rank, tf = (np.concatenate([p[i] for p in parts]) for i in range(3))
    order = np.lexsort((rank, slot))
    return slot[order], rank[order], tf[order]


def view_of(image: Image) -> View:
    """``image``'s view, made once per image (kept in ``image.views``): updated from the view
    of the image it was written from when that one was made, else built."""
    if not image.views:
        since = image.since
        before = since.views if since is not None else None
        if since is not None:
            since.views = None  # the older view is let go once this one exists
        if since is not None and before:
            view = _updated(cast(View, before[0]), image, since)
        else:
            view = View.of(image)
        image.views.append(view)
    return cast(View, image.views[0])  # the only kind ``views`` holds


def _view_in_thread(image: Image) -> View:
    with _BUILDING:
        return view_of(image)


async def read_view(image: Image) -> View:
    """``view_of``, built in a thread when the image is big. Only those builds take
    ``_BUILDING``: a small image's view is built on the loop, which must never wait for a big
    one's (an image is small or big for good, so both never build one image)."""
    if not image.views and sum(len(s.rows) for s in image.segments) >= THREAD_POSTINGS:
        return await asyncio.to_thread(_view_in_thread, image)
    return view_of(image)


def _as_stored(chunk_ids: list[str]) -> bool:
    """Whether every one of ``chunk_ids`` is 64 hex digits (upper case passes: such an id is
    found nowhere), checked on them joined in C: a regex over the join was ~0.3 ms a query."""
    joined = "".join(chunk_ids)
    if not set(map(len, chunk_ids)) <= {64} or not (joined.isascii() and joined.isalnum()):
        return False
    try:
        bytes.fromhex(joined)
    except ValueError:
        return False
    return True


def sources_of(image: Image, chunk_ids: Sequence[str]) -> dict[str, str]:
    """The source id of each of ``chunk_ids`` ``image`` holds live (``PassageStore.source_ids``):
    one binary search of them all, no passage copied, no step per id in Python (a thousand
    candidates' ids a query: a regex and a dict entry each were half its time)."""
    wanted = list(dict.fromkeys(chunk_ids))
    if not _as_stored(wanted):  # not every one as stored: only those that are
        wanted = [i for i in wanted if CHUNK_ID.fullmatch(i)]
    rows, _ = image.rows_of_ids(wanted)
    found = [at for at, row in enumerate(rows) if row >= 0]
    if len(found) < len(wanted):
        wanted, rows = [wanted[at] for at in found], [rows[at] for at in found]
    if not rows:
        return {}
    kept = operator.itemgetter(*rows)(image.chunks)
    if len(rows) == 1:
        kept = (kept,)
    return dict(zip(wanted, map(operator.itemgetter(SOURCE_ID), kept), strict=True))


def _held_in_order(image: Image, source_ids: Sequence[str]) -> dict[str, list[Kept]]:
    """Each of ``source_ids`` ``image`` holds live -> its kept passages by chunk_index, then id:
    the sources found in one pass of the image's source keys."""
    wanted = list(dict.fromkeys(source_ids))
    found, _ = image.rows_of_sources(wanted)
    order, chunks = operator.itemgetter(CHUNK_INDEX, ID), image.chunks
    return {
        source: sorted((chunks[row] for row in rows), key=order)
        for source, rows in zip(wanted, found, strict=True)
        if rows
    }


def passages_of(
    image: Image, source_ids: Sequence[str], tenant_id: UUID
) -> dict[str, list[StoredChunk]]:
    """Copies of ``_held_in_order``'s passages (``PassageStore.get_by_sources``;
    ``get_by_source`` is one)."""
    return {
        source: [passage_copy(kept, tenant_id) for kept in held]
        for source, held in _held_in_order(image, source_ids).items()
    }


def passage_ids(image: Image, source_ids: Sequence[str]) -> dict[str, list[str]]:
    """``passages_of``'s passages' ids alone (``PassageStore.passage_ids_by_source``): no copy."""
    return {
        source: [kept[ID] for kept in held]
        for source, held in _held_in_order(image, source_ids).items()
    }


def read_stats(image: Image, terms: Sequence[str], postings: Sequence[Posting]) -> CorpusStats:
    """The statistics of a read of ``terms`` (``postings``: theirs, from ``image``'s view),
    not validated again: counted from the image (a df is a posting's length, at most N), and
    the model's check was ~8 us of a 10k-passage search's ~0.3 ms."""
    n_docs = image.passages
    return built(
        CorpusStats,
        {
            "n_docs": n_docs,
            "avg_doc_length": image.tokens / n_docs if n_docs else 0.0,
            "doc_frequencies": {t: len(p[0]) for t, p in zip(terms, postings, strict=True)},
        },
    )


__all__ = [
    "DENSE_ROWS",
    "KEEP_BITS",
    "KEY_BITS",
    "ONE_PIECE_CELLS",
    "PIECE",
    "THREAD_POSTINGS",
    "View",
    "passages_of",
    "read_stats",
    "read_view",
    "sources_of",
    "view_of",
]


async def admitted_rows(
    image: Image, view: View, within: PassageFilter, mentioned: Sequence[str] | None
) -> Ints:
    """The view's rows (ascending) whose passages ``within`` admits (``mentioned``: the ids of
    the passages naming one of its entities, from the store's mentions; None without entities).

    Sources and entities are looked up in the image's indexes; metadata is read from each
    remaining passage (unpickled), a step per ``LOOKUP_ROWS``: a filter on metadata alone
    costs a pass over the workspace's passages, ~1 us each.
    """
    rows = np.ones(len(image.chunks), dtype=np.bool_)
    if within.sources:
        by_source = np.zeros(len(image.chunks), dtype=np.bool_)
        for source in within.sources:
            by_source[image.rows_of_source(source)] = True
        rows &= by_source
    if mentioned is not None:
        by_entity = np.zeros(len(image.chunks), dtype=np.bool_)
        found = [image.row_of(chunk_id) for chunk_id in mentioned]
        by_entity[[row for row in found if row is not None]] = True
        rows &= by_entity
    live = rows[view.image_rows]
    if within.metadata:
        candidates = np.flatnonzero(live)
        for at in range(0, len(candidates), LOOKUP_ROWS):
            piece = candidates[at : at + LOOKUP_ROWS]
            for row in piece.tolist():
                kept = image.chunks[int(view.image_rows[row])]
                if not within.admits(kept[SOURCE_ID], (), kept_metadata(kept)):
                    live[row] = False
            if giving_way():
                await checkpoint()
    admitted: Ints = np.flatnonzero(live).astype(np.int64)
    return admitted
