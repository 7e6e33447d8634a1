"""The in-memory store's index: immutable images made of segments of CSR arrays.

Each write batch becomes a ``Segment``: its postings as three numpy arrays (term slot
offsets, rows, tfs) built straight from the passages' term counts, rows local to the
segment. An ``Image`` is one tenant version: its segments, one row per passage ever written
to them (ids, chunks, token lengths, a live mask), and two sorted indexes (chunk id -> row
as numbers, ``id_codes``; source id -> row). A delete is a tombstone (a new live mask); segments
merge by size as Lucene's log merge policy does (``MERGE_FACTOR`` trailing segments of one
size level become one, dropping their dead rows), so a workspace holds O(log n) segments.

Nothing here is mutated once built: a write makes a new ``Image`` beside the old one and the
store swaps it in under its lock, so a reader holds the old version or the new one, never a
mix, and the build itself needs no lock. The alternative it replaces kept a dict index (term
-> {chunk id: tf}) updated per passage beside a CSR image rebuilt on the first read after a
write: a dict entry per posting cost a third of a 100k build (and the rebuild another
sixth), and a write into a full workspace had to mutate it under the lock.

Rows are not in chunk-id order (a batch appends): queries read a view of the image with its
postings in chunk-id order, built once per version (``memory.reads``).

A big image is built in a worker thread beside the service's loop, a few C calls at a time that
each hold the GIL: between them it calls ``thread_checkpoint``, where it sleeps while another
session's call waits (an upload into a workspace of nine Cranfields: 7-21 ms of the build's CPU
in the slowest searches' windows).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

import numpy as np
import numpy.typing as npt

from core.checkpoint import thread_checkpoint
from core.domain.models import built
from core.domain.postings import EMPTY_POSTING, Posting
from core.domain.steps import Steps
from core.domain.tokenize import Profile
from core.stores.memory.kept import ID, SOURCE_ID, Kept
from core.stores.port import SourceSummary

#: Segments of one size level (powers of this factor) that are merged into one.
MERGE_FACTOR: Final = 10
#: Source summaries built between two steps of ``Image.source_summary_steps`` (1,024 were a
#: 4-6 ms CPU step of an upload into a 12,600-passage workspace, loaded machine).
SUMMARY_STEP: Final = 256
#: Passages' source ids counted between two steps of ``Image.source_count_steps`` (~0.5 ms;
#: 12,600 in one piece were ~2 ms CPU, quiet machine).
COUNT_KEYS: Final = 4_096
#: The fields set every source summary shares (``built``): a set per summary was a second
#: tracked object each, 12,600 more for the collector while an upload lists its workspace.
_SUMMARY_FIELDS: Final = set(SourceSummary.model_fields)
#: Terms of a segment given slots in a shared vocabulary per piece (``shared_slots``): a piece
#: holds the GIL ~0.5 ms, where a Cranfield segment's ~10k terms at once held it ~5 ms.
SLOT_PIECE: Final = 1_024
#: A segment with more than this share of dead rows is rewritten without them.
DEAD_SHARE: Final = 0.5

Ints = npt.NDArray[np.int64]
Objects = npt.NDArray[np.object_]
Codes = npt.NDArray[np.uint64]
#: Hex digits of a chunk id read as its code (``id_codes``): 64 bits.
CODE_DIGITS: Final = 16
#: What every stored chunk id is (``checks.checked_for_write``: SHA-256 hex, derived).
CHUNK_ID = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Segment:
    """The postings of one batch of rows: term ``t`` has rows ``rows[offsets[i]:offsets[i+1]]``
    (ascending, local to the segment) with tf in the same slice of ``tfs``, ``i = terms[t]``."""

    terms: dict[str, int]
    offsets: Ints
    rows: npt.NDArray[np.int32]
    tfs: npt.NDArray[np.int32]
    size: int

    @classmethod
    def merged(cls, segments: Sequence[Segment], lives: Sequence[npt.NDArray[np.bool_]]) -> Segment:
        """One segment of ``segments``' live rows, in order (``lives[k]``: segment k's mask).

        No sort: each segment's postings are already grouped by term, so every live posting
        is scattered straight to its place (its term's start, plus what earlier segments put
        there, plus its rank in its own block), a few bytes per posting of one segment at a
        time. Concatenating and sorting by term held ~36 bytes per posting of the whole merge
        (a 3 MB one-line file peaked at 15x its size, over the 12x bound).
        """
        slots, maps = shared_slots(segments)
        counts = np.zeros(len(slots), dtype=np.int64)
        plans = []
        for segment, live, mapped in zip(segments, lives, maps, strict=True):
            thread_checkpoint()
            alive = live[segment.rows]
            before = np.zeros(len(alive) + 1, dtype=np.int64)
            np.cumsum(alive, out=before[1:])
            # Live postings of each of the segment's terms, and how many precede each block.
            firsts = before[segment.offsets[:-1]]
            sizes = before[segment.offsets[1:]] - firsts
            counts[mapped] += sizes  # a segment names each term once: no repeated index
            plans.append((mapped, alive, firsts, sizes))
        offsets, cursor, rows, tfs = posting_arrays(counts)
        base = 0
        for segment, live, (mapped, alive, firsts, sizes) in zip(
            segments, lives, plans, strict=True
        ):
            thread_checkpoint()
            shift = cursor[mapped] - firsts  # block start in the output, less its live rank
            cursor[mapped] += sizes
            rank = np.cumsum(alive) - 1
            per_term = np.diff(segment.offsets)
            dest = np.repeat(shift, per_term)[alive] + rank[alive]
            renumber = (np.cumsum(live, dtype=np.int64) - 1).astype(np.int32)
            rows[dest] = renumber[segment.rows[alive]] + np.int32(base)
            tfs[dest] = segment.tfs[alive]
            base += int(np.count_nonzero(live))
        return cls(slots, offsets, rows, tfs, base)

    def posting(self, term: str) -> Posting:
        i = self.terms.get(term)
        if i is None:
            return EMPTY_POSTING
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.rows[start:end], self.tfs[start:end]


def shared_slots(segments: Sequence[Segment]) -> tuple[dict[str, int], list[Ints]]:
    """One vocabulary for ``segments`` and, per segment, its terms' slots in it (by its own
    slot). The first (oldest, usually largest) segment's vocabulary is copied as it is (a dict
    copy does not rehash) and keeps its slots; the others add the terms it lacks.

    The others' terms go ``SLOT_PIECE`` at a time: each piece is a few C calls that hold the
    GIL, and a merge runs in a thread beside the service's loop (one ``fromiter`` over a
    Cranfield segment's vocabulary held a search off the GIL ~5 ms, nine of them per merge)."""
    slots = dict(segments[0].terms) if segments else {}
    maps = [np.arange(len(segment.terms), dtype=np.int64) for segment in segments[:1]]
    for segment in segments[1:]:
        terms = list(segment.terms)  # in slot order
        pieces = []
        for at in range(0, len(terms), SLOT_PIECE):
            thread_checkpoint()
            piece = terms[at : at + SLOT_PIECE]
            new = set(piece).difference(slots)  # C-level; slot order is immaterial
            slots.update(zip(new, itertools.count(len(slots)), strict=False))
            pieces.append(np.fromiter(map(slots.__getitem__, piece), np.int64, len(piece)))
        maps.append(np.concatenate(pieces) if pieces else np.empty(0, dtype=np.int64))
    return slots, maps


def _level(rows: int) -> int:
    return int(math.log(max(rows, 1), MERGE_FACTOR))


def _sorted_insert(
    keys: Objects,
    rows: Ints,
    new_keys: Objects,
    new_rows: Ints,
    places: Sequence[int] | None = None,
) -> tuple[Objects, Ints]:
    """``keys`` (sorted) and their rows with ``new_keys`` put in place: m log n compares, or
    none if each new key's place in ``keys`` is known (``places``, in ``new_keys``' order)."""
    if not len(new_keys):
        return keys, rows
    order = np.argsort(new_keys, kind="stable")
    new_keys, new_rows = new_keys[order], new_rows[order]
    if places is None:
        at = np.searchsorted(keys, new_keys)
    else:  # sorted keys have ascending places; equal places keep the keys' order
        at = np.asarray(places, dtype=np.int64)[order]
    return np.insert(keys, at, new_keys), np.insert(rows, at, new_rows)


def _ids_inserted(
    codes: Codes, rows: Ints, ids: Objects, fresh: Ints, places: Sequence[int] | None
) -> tuple[Codes, Ints]:
    """``codes`` and their ``rows`` with the rows ``fresh`` of ``ids`` put in place (``places``:
    each one's place, in ``fresh``'s order, when the write looked them up already)."""
    new_ids = ids[fresh]
    new_codes = id_codes(new_ids.tolist())
    ordered = new_codes[order := np.argsort(new_codes, kind="stable")]
    if len(ordered) > 1 and bool((ordered[1:] == ordered[:-1]).any()):
        order = np.argsort(new_ids, kind="stable")  # two new ids share a code: by the ids
    if places is None:
        at, _ = _placed(codes, ids, rows, new_ids[order].tolist())
    else:  # sorted ids have ascending places; equal places keep the ids' order
        at = np.asarray(places, dtype=np.int64)[order]
    return np.insert(codes, at, new_codes[order]), np.insert(rows, at, fresh[order])


def _shifted(places: Sequence[int] | None, kept: npt.NDArray[np.bool_]) -> Sequence[int] | None:
    """``places`` among sorted keys less the keys not ``kept`` before each."""
    if places is None:
        return None
    before, at = np.concatenate(([0], np.cumsum(~kept))), np.asarray(places, dtype=np.int64)
    return list((at - before[at]).tolist())


def _found(keys: Objects, wanted: Sequence[str]) -> tuple[Ints, npt.NDArray[np.bool_]]:
    """Where each of ``wanted`` is or would go in ``keys`` (sorted), and whether it is there."""
    needles = _objects(wanted, len(wanted))
    at = np.searchsorted(keys, needles)
    hits = np.zeros(len(at), dtype=np.bool_)
    inside = at < len(keys)
    hits[inside] = keys[at[inside]] == needles[inside]
    return at, hits


def id_codes(chunk_ids: Sequence[str]) -> Codes:
    """Each chunk id's first ``CODE_DIGITS`` hex digits as a number: lowercase hex compares as
    its value, so codes ascending are the ids ascending (ties: ids sharing those digits, put
    in order by ``_placed``). Ids as stored (``CHUNK_ID``); one ``fromhex`` for them all."""
    digits = "".join([chunk_id[:CODE_DIGITS] for chunk_id in chunk_ids])
    return np.frombuffer(bytes.fromhex(digits), dtype=">u8").astype(np.uint64)


def _placed(
    codes: Codes, ids: Objects, rows: Ints, wanted: Sequence[str]
) -> tuple[Ints, npt.NDArray[np.bool_]]:
    """Where each of ``wanted`` (stored-form ids) is or would go among ids ascending, held as
    their ``codes`` and their ``rows`` in ``ids``, and whether it is there: a binary search of
    numbers, then a string compare only where a code matched (an id already stored, or two
    ids sharing their first 64 bits, walked in order)."""
    needles = id_codes(wanted)
    at = np.searchsorted(codes, needles)
    hits = np.zeros(len(at), dtype=np.bool_)
    inside = np.flatnonzero(at < len(codes))
    same = inside[codes[at[inside]] == needles[inside]]
    if len(same):
        stored = ids[rows[at[same]]]
        hits[same] = stored == _objects((wanted[i] for i in same.tolist()), len(same))
        for i in same[~hits[same]].tolist():  # a code shared by different ids: walk them
            place, code, key = int(at[i]), needles[i], wanted[i]
            while place < len(codes) and codes[place] == code and ids[rows[place]] < key:
                place += 1
            at[i] = place
            hits[i] = place < len(codes) and codes[place] == code and ids[rows[place]] == key
    return at, hits


def posting_arrays(counts: Ints) -> tuple[Ints, Ints, npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """A segment's arrays to scatter into, for ``counts`` postings per term: the offsets, a
    write cursor per term (its block's start) and the empty rows and tfs."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    total = int(offsets[-1])
    return offsets, offsets[:-1].copy(), np.empty(total, np.int32), np.empty(total, np.int32)


def _key_runs(keys: Objects) -> tuple[list[str], list[int]]:
    """Each distinct key of sorted ``keys`` and how many times it appears."""
    if not len(keys):
        return [], []
    starts = np.concatenate(([0], np.flatnonzero(keys[1:] != keys[:-1]) + 1))
    counts = np.diff(np.append(starts, len(keys)))
    return keys[starts].tolist(), counts.tolist()


def _objects(values: Iterable[object], size: int) -> Objects:
    out = np.empty(size, dtype=object)
    out[:] = list(values)
    return out


@dataclass
class Since:
    """How an image was written from the one before it, so the read view is updated from that
    one's (``memory.reads``) rather than built: its ``views`` (let go once read), the live ranks
    it removed in its chunk-id order, and how many rows it appended (the image's last rows)."""

    views: list[object] | None
    removed: Ints
    added: int


@dataclass(frozen=True)
class Image:
    """One tenant version, never mutated: readers keep using it while a write builds the next."""

    profile: Profile
    version: int
    segments: tuple[Segment, ...]
    #: The first row of each segment.
    bases: tuple[int, ...]
    #: Dead rows per segment.
    dead: tuple[int, ...]
    ids: Objects
    #: Each row's passage (dead rows' too, until a merge drops them). A tuple: the collector
    #: untracks it once it has seen it (its passages are untracked tuples), where a list was
    #: walked by every full collection (a million passages: 47 against 14 ms a collection).
    chunks: tuple[Kept, ...]
    lengths: Ints
    live: npt.NDArray[np.bool_]
    passages: int
    tokens: int
    #: Live chunk ids ascending as their codes (``id_codes``) and the row of each: numbers,
    #: where the ids themselves (an object array) cost a write a copy of a million references
    #: and its lookups string compares (~1/4 of an upload's write into 1M, loaded machine).
    id_codes: Codes
    id_rows: Ints
    #: Live source ids ascending (one per passage) and the row of each.
    source_keys: Objects
    source_rows: Ints
    #: How this version was written from the one before (None: built whole).
    since: Since | None = field(default=None, repr=False, compare=False)
    #: The read view of this version (a ``reads.View``, which imports this module),
    #: built on its first read; a new version starts without one (``replace`` carries no
    #: field that is not in init, nor ``id_rank``).
    views: list[object] = field(default_factory=list, init=False, repr=False, compare=False)

    @classmethod
    def empty(cls, profile: Profile, version: int) -> Image:
        none = np.empty(0, dtype=object)
        ints = np.empty(0, dtype=np.int64)
        return cls(
            profile, version, (), (), (), none, (), ints, np.empty(0, np.bool_), 0, 0,
            np.empty(0, np.uint64), ints, none, ints,
        )  # fmt: skip

    # -- reading ------------------------------------------------------------------------

    @property
    def id_keys(self) -> Objects:
        """Live chunk ids ascending (a gather: for a read view, built once per version)."""
        return self.ids[self.id_rows]

    def row_of(self, chunk_id: str) -> int | None:
        if not CHUNK_ID.fullmatch(chunk_id):  # no stored id looks otherwise
            return None
        at, hits = _placed(self.id_codes, self.ids, self.id_rows, [chunk_id])
        return int(self.id_rows[at[0]]) if hits[0] else None

    def rows_of_source(self, source_id: str) -> Ints:
        lo = int(np.searchsorted(self.source_keys, source_id, side="left"))
        hi = int(np.searchsorted(self.source_keys, source_id, side="right"))
        return self.source_rows[lo:hi]

    def rows_of_sources(self, source_ids: Sequence[str]) -> tuple[list[Sequence[int]], Ints]:
        """``rows_of_source`` of each of ``source_ids``, found in one pass (the end of a
        source's rows searched only for a source the image holds: most an upload writes are
        new, and each search is string compares); a source the image lacks has the shared
        empty tuple, not a list each (a million new sources: a million lists). Also each
        one's place in the source order (``written``'s ``sources_at``)."""
        lows, hits = _found(self.source_keys, source_ids)
        found: list[Sequence[int]] = [()] * len(source_ids)
        places = np.flatnonzero(hits)
        if len(places):
            starts = lows[places]
            ends = np.searchsorted(self.source_keys, self.source_keys[starts], "right")
            rows = self.source_rows
            for at, lo, hi in zip(places.tolist(), starts.tolist(), ends.tolist(), strict=True):
                found[at] = rows[lo:hi].tolist()
        return found, lows

    def rows_of_ids(self, chunk_ids: Sequence[str]) -> tuple[list[int], list[int]]:
        """The live row of each of ``chunk_ids`` (-1 for an id the image has not) and its place
        in the id order (where a new one goes: ``written``'s ``added_at``), found in one pass."""
        at, hits = _placed(self.id_codes, self.ids, self.id_rows, chunk_ids)
        rows = np.full(len(at), -1, dtype=np.int64)
        rows[hits] = self.id_rows[at[hits]]
        return rows.tolist(), at.tolist()

    def source_counts(self) -> tuple[list[str], list[int]]:
        """Each live source id ascending and its passages."""
        return _key_runs(self.source_keys)

    def source_count_steps(self) -> Steps[dict[str, int]]:
        """``source_counts`` as a dict, ``COUNT_KEYS`` passages' source ids a step (an upload
        asks before it writes, as long work; no model per source, which ``list_sources`` makes)."""
        keys = self.source_keys
        out: dict[str, int] = {}
        for at in range(0, len(keys), COUNT_KEYS):
            sources, counts = _key_runs(keys[at : at + COUNT_KEYS])
            carried = out.get(sources[0], 0)  # keys are sorted: only a piece's first source
            out.update(zip(sources, counts, strict=True))  # may go on from the piece before
            out[sources[0]] += carried
            yield
        return out

    def source_summary_steps(self) -> Steps[list[SourceSummary]]:
        """Each live source id ascending and its passages, a step per ``SUMMARY_STEP`` (the
        Library page's listing: 12,600 held the loop 136 ms in one piece, loaded machine; an
        upload only counts them, ``source_count_steps``)."""
        keys, counts = self.source_counts()
        out: list[SourceSummary] = []
        for at in range(0, len(keys), SUMMARY_STEP):
            end = at + SUMMARY_STEP
            pairs = zip(keys[at:end], counts[at:end], strict=True)
            out += [
                built(SourceSummary, {"source_id": s, "passages": n}, _SUMMARY_FIELDS)
                for s, n in pairs
            ]
            yield
        return out

    def doc_frequencies(self) -> dict[str, int]:
        """Every term with a live posting and its df (walks the whole vocabulary)."""
        df: dict[str, int] = {}
        for segment, base, dead in zip(self.segments, self.bases, self.dead, strict=True):
            if dead:
                alive = np.zeros(len(segment.rows) + 1, dtype=np.int64)
                np.cumsum(self.live[base:][segment.rows], out=alive[1:])
                sizes = (alive[segment.offsets[1:]] - alive[segment.offsets[:-1]]).tolist()
            else:
                sizes = np.diff(segment.offsets).tolist()
            for term, size in zip(segment.terms, sizes, strict=True):
                if size:
                    df[term] = df.get(term, 0) + size
        return df

    def live_rows(self) -> Ints:
        return self.id_rows

    def live_chunks(self) -> list[Kept]:
        """The live passages (the kept tuples themselves) in chunk-id order."""
        return [self.chunks[row] for row in self.id_rows.tolist()]

    # -- writing ------------------------------------------------------------------------

    def written(
        self,
        version: int,
        removed: Ints,
        replaced: Sequence[tuple[int, Kept]],
        added: Sequence[Kept],
        written: Segment | None = None,
        written_lengths: Ints | None = None,
        merge: bool = True,
        added_at: Sequence[int] | None = None,
        sources_at: Sequence[int] | None = None,
    ) -> Image:
        """The next version: rows ``removed`` dead, ``replaced`` rows holding new chunk objects
        (same id, same text), ``added`` appended as the new segment ``written`` (its rows in
        order, ``written_lengths`` their token counts; from a ``SegmentWriter``); then, if
        ``merge``, segments merged by size. ``added_at``: each added id's place in this image's
        id order, if the write looked it up already (``rows_of_ids``): a second binary search
        of string keys, ~35 ms of a 5,000-passage write into 300,000, is then not made.
        ``sources_at``: the same for each added passage's source id (``rows_of_sources``)."""
        live = self.live
        chunks = self.chunks
        tokens, passages = self.tokens, self.passages
        dead = list(self.dead)
        id_codes, id_rows = self.id_codes, self.id_rows
        source_keys, source_rows = self.source_keys, self.source_rows
        if len(removed):
            live = live.copy()
            live[removed] = False
            tokens -= int(self.lengths[removed].sum())
            passages -= len(removed)
            for k, base in enumerate(self.bases):
                end = base + self.segments[k].size
                dead[k] += int(np.count_nonzero((removed >= base) & (removed < end)))
            keep = live[id_rows]
            id_codes, id_rows = id_codes[keep], id_rows[keep]
            added_at = _shifted(added_at, keep)  # the places less the removed ids before each
            keep = live[source_rows]
            source_keys, source_rows = source_keys[keep], source_rows[keep]
            sources_at = _shifted(sources_at, keep)
        thread_checkpoint()
        if replaced:
            rewritten = list(chunks)
            for row, chunk in replaced:
                rewritten[row] = chunk
            chunks = tuple(rewritten)
        segments, bases = self.segments, self.bases
        ids, lengths = self.ids, self.lengths
        if added:
            start = len(ids)
            fresh = np.arange(start, start + len(added), dtype=np.int64)
            new_ids = _objects((c[ID] for c in added), len(added))
            if written is None or written_lengths is None or written.size != len(added):
                raise ValueError("the added passages need their segment and lengths")
            new_lengths = written_lengths
            segments = (*segments, written)
            bases = (*bases, start)
            dead.append(0)
            ids = np.concatenate((ids, new_ids))
            lengths = np.concatenate((lengths, new_lengths))
            live = np.concatenate((live, np.ones(len(added), np.bool_)))
            chunks = chunks + tuple(added)  # one copy (an unpacking display: 2-3x that)
            tokens += int(new_lengths.sum())
            passages += len(added)
            id_codes, id_rows = _ids_inserted(id_codes, id_rows, ids, fresh, added_at)
            thread_checkpoint()
            source_keys, source_rows = _sorted_insert(
                source_keys, source_rows, _objects((c[SOURCE_ID] for c in added), len(added)),
                fresh, sources_at,
            )  # fmt: skip
        ranks = self.id_rank[removed] if len(removed) else removed  # made only if needed
        image = replace(
            self, version=version, segments=segments, bases=bases, dead=tuple(dead), ids=ids,
            chunks=chunks, lengths=lengths, live=live, passages=passages, tokens=tokens,
            id_codes=id_codes, id_rows=id_rows, source_keys=source_keys, source_rows=source_rows,
            since=Since(self.views, ranks, len(added)),
        )  # fmt: skip
        if merge:
            image = image._merged()
        thread_checkpoint()
        return image

    @functools.cached_property
    def id_rank(self) -> Ints:
        """Each row's rank in chunk-id order (dead: any), on a read's first ask (not per write:
        ~15 ms a group at 1M passages, which an upload nobody searches never read)."""
        rank = np.zeros(len(self.ids), dtype=np.int64)
        rank[self.id_rows] = np.arange(len(self.id_rows), dtype=np.int64)
        return rank

    def _merged(self) -> Image:
        """Merge trailing segments of one size level, and rewrite mostly dead ones, until
        neither applies."""
        image = self
        while True:
            span = image._merge_span()
            if span is None:
                return image
            thread_checkpoint()
            image = image._merge(*span)

    def _merge_span(self) -> tuple[int, int] | None:
        sizes = [s.size - d for s, d in zip(self.segments, self.dead, strict=True)]
        for k, (segment, dead) in enumerate(zip(self.segments, self.dead, strict=True)):
            if dead and dead > DEAD_SHARE * segment.size:
                return k, k + 1
        if len(sizes) >= MERGE_FACTOR:
            tail = sizes[-MERGE_FACTOR:]
            if len({_level(size) for size in tail}) == 1:
                return len(sizes) - MERGE_FACTOR, len(sizes)
        return None

    def _merge(self, first: int, last: int) -> Image:
        """Segments ``first..last-1`` as one, their dead rows dropped and later rows renumbered."""
        start = self.bases[first]
        end = self.bases[last - 1] + self.segments[last - 1].size
        lives = [
            self.live[self.bases[k] : self.bases[k] + self.segments[k].size]
            for k in range(first, last)
        ]
        segment = Segment.merged(self.segments[first:last], lives)
        kept = self.live[start:end]
        dropped = (end - start) - segment.size
        remap = np.arange(len(self.ids), dtype=np.int64)
        remap[start:end] = start + np.cumsum(kept) - 1
        remap[end:] -= dropped
        keep = np.ones(len(self.ids), dtype=np.bool_)
        keep[start:end] = kept
        where = np.flatnonzero(kept).tolist()
        chunks = (*self.chunks[:start], *(self.chunks[start + i] for i in where),
                  *self.chunks[end:])  # fmt: skip
        # A segment left with no row is dropped rather than kept as an empty level.
        middle = (segment,) if segment.size else ()
        return replace(
            self,
            segments=(*self.segments[:first], *middle, *self.segments[last:]),
            bases=(
                *self.bases[:first],
                *((start,) if segment.size else ()),
                *(b - dropped for b in self.bases[last:]),
            ),
            dead=(*self.dead[:first], *((0,) if segment.size else ()), *self.dead[last:]),
            ids=self.ids[keep],
            chunks=chunks,
            lengths=self.lengths[keep],
            live=self.live[keep],
            id_rows=remap[self.id_rows],
            source_rows=remap[self.source_rows],
        )


def image_of(
    profile: Profile, version: int, chunks: Sequence[Kept], made: tuple[Segment, Ints]
) -> Image:
    """A new image of ``chunks`` from ``made``, their segment and lengths in order
    (``SegmentWriter.finish``)."""
    segment, lengths = made
    none = np.empty(0, np.int64)
    return Image.empty(profile, version).written(version, none, (), chunks, segment, lengths)


__all__ = [
    "COUNT_KEYS",
    "DEAD_SHARE",
    "MERGE_FACTOR",
    "SLOT_PIECE",
    "SUMMARY_STEP",
    "Image",
    "Ints",
    "Objects",
    "Segment",
    "Since",
    "image_of",
    "posting_arrays",
    "shared_slots",
]
