"""Passages in, one segment out: the in-memory store's write-side builder (``SegmentWriter``).

A write batch's passages become a ``image.Segment`` a piece at a time: a piece's
postings are arrays at once (a few C-level passes and one sort), and the pieces are joined by
scattering each posting to its place, a step per piece, so a write that gives way holds the
loop for one piece. Texts are tokenised a batch of ``TEXT_PIECE_CHARS`` at a time
(``tokenize_many``: each distinct word of the batch looked up and numbered once, its postings
counted by one sort), or passages added as term counts (``add``; a re-index, a profile
change). Kept apart from ``memory.index`` (the immutable images, their merges and lookups),
which it builds on; the alternative it replaces, a dict index updated per posting, cost a
third of a 100k build.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from core.domain.steps import Steps, finish
from core.domain.tokenize import Profile, tokenize_many
from core.stores.memory.index import Ints, Segment, posting_arrays

#: A passage's token count and tf per term (``port.passage_terms``).
TermCounts = tuple[int, dict[str, int]]
#: Postings a ``SegmentWriter`` holds as term counts before it turns them into arrays.
PIECE_POSTINGS: Final = 100_000
#: ``PIECE_POSTINGS`` for a write that gives way (an upload's group, a re-index): a piece's
#: arrays are C-level passes that hold the loop (and the GIL) in one go, ~1 ms for this many
#: postings where 100,000 took 60-80 ms on the shared machine (bench_stall --holds).
STEP_POSTINGS: Final = 4_096
#: Characters of passage text a write tokenises as one batch (``SegmentWriter.add_texts``):
#: its tokens and keys are ~40 bytes a token while it is built (a passage longer is alone).
#: 4 MB let a 3 MB one-line load peak at 22x its size (the bound is 12x), 512 KB 7.5x; 10 MB
#: of text tokenised in 8 KB / 512 KB / 4 MB batches: 2.63 / 0.52 / 0.47 s CPU.
TEXT_PIECE_CHARS: Final = 1 << 19
#: ``TEXT_PIECE_CHARS`` for a write that gives way: a batch is one step on the loop (32 KB of
#: Cranfield were 5-8 ms CPU steps of an upload on the loaded machine).
TEXT_STEP_CHARS: Final = 1 << 13


class _Piece(NamedTuple):
    """The postings of consecutive rows sorted by term: the distinct term slots ascending and
    how many postings each has, then the rows (local, ascending per term) and tfs."""

    terms: Ints
    counts: Ints
    rows: npt.NDArray[np.int32]
    tfs: npt.NDArray[np.int32]
    size: int


def _piece(passages: Sequence[dict[str, int]], vocabulary: defaultdict[str, int]) -> _Piece:
    """``passages``' postings, a few C-level passes and one sort; ``vocabulary`` (shared by a
    ``SegmentWriter``'s pieces) gains the new terms, each numbered next in the same C-level
    lookup that numbers a known one."""
    sizes = np.fromiter(map(len, passages), np.int64, len(passages))
    total = int(sizes.sum())
    keys = itertools.chain.from_iterable(passages)
    term = np.fromiter(map(vocabulary.__getitem__, keys), np.int32, total)
    tfs = np.fromiter(itertools.chain.from_iterable(map(dict.values, passages)), np.int32, total)
    rows = np.repeat(np.arange(len(passages), dtype=np.int32), sizes)
    # Stable: postings arrive in row order, so each term's rows stay ascending.
    order = np.argsort(term, kind="stable")
    term = term[order]
    starts = np.flatnonzero(np.concatenate(([True], term[1:] != term[:-1]))) if total else sizes[:0]
    counts = np.diff(np.append(starts, total))
    return _Piece(term[starts].astype(np.int64), counts, rows[order], tfs[order], len(passages))


def _text_piece(
    texts: Sequence[str], profile: Profile, vocabulary: defaultdict[str, int]
) -> tuple[_Piece, Ints]:
    """``texts``' postings and token counts, tokenised as one batch (``tokenize_many``: a few
    C calls, each distinct word looked up once) and counted by one sort of (slot, row) keys:
    no counter per passage and no vocabulary lookup per posting, which were ~2/3 of a bulk
    write's time (tokenising ~20 of a 100k build's 42 s profiled, the per-posting slot
    lookups ~10)."""
    tokens = tokenize_many(texts, profile)
    slots = np.fromiter(map(vocabulary.__getitem__, tokens.terms), np.int64, len(tokens.terms))
    keys = np.left_shift(slots[tokens.term_ids], 32)
    keys |= tokens.text_ids
    keys.sort()
    firsts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if len(keys) else keys
    tfs = np.diff(np.append(firsts, len(keys))).astype(np.int32)
    keys = keys[firsts]
    rows = (keys & 0xFFFFFFFF).astype(np.int32)
    keys >>= 32  # each posting's slot, ascending
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if len(keys) else keys
    counts = np.diff(np.append(starts, len(keys)))
    return _Piece(keys[starts], counts, rows, tfs, len(texts)), tokens.lengths()


def _vocabulary() -> defaultdict[str, int]:
    """Term -> slot, a new term numbered next as it is first looked up."""
    return defaultdict(itertools.count().__next__)


def joined(pieces: Sequence[_Piece], slots: dict[str, int]) -> Steps[Segment]:
    """One segment of ``pieces`` (consecutive rows, in order) numbered by ``slots``: each
    posting is scattered to its place at once, a step per piece; the work is the pieces'
    postings and terms (a piece's dense offsets cost the whole vocabulary per piece: a
    million small pieces' worth at 1M passages)."""
    counts = np.zeros(len(slots), dtype=np.int64)
    for piece in pieces:
        counts[piece.terms] += piece.counts  # a piece names each term once
    if len(pieces) == 1:
        only = pieces[0]
        offsets = np.zeros(len(slots) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return Segment(slots, offsets, only.rows, only.tfs, only.size)
    offsets, cursor, rows, tfs = posting_arrays(counts)
    base = 0
    for piece in pieces:
        yield
        firsts = np.zeros(len(piece.counts), dtype=np.int64)
        np.cumsum(piece.counts[:-1], out=firsts[1:])
        shift = cursor[piece.terms] - firsts  # block start in the output, less its own
        cursor[piece.terms] += piece.counts
        dest = np.repeat(shift, piece.counts) + np.arange(len(piece.rows), dtype=np.int64)
        rows[dest] = piece.rows + np.int32(base)
        tfs[dest] = piece.tfs
        base += piece.size
    return Segment(slots, offsets, rows, tfs, base)


class SegmentWriter:
    """Passages' term counts in, one ``Segment`` out, holding the counts of at most
    ``PIECE_POSTINGS`` postings at a time (``STEP_POSTINGS`` for a write that ``give_way``-s,
    its caller checkpointing between adds and running ``finish_steps``): the rest is arrays.
    Keeping every passage's counts until the end is a forward index as large as the postings
    (a 3 MB one-line file took 23x its size in memory that way; 58 MB, over a gigabyte)."""

    def __init__(self, give_way: bool = False) -> None:
        self._pieces: list[_Piece] = []
        self._piece: list[dict[str, int]] = []
        self._postings = 0
        self._limit = STEP_POSTINGS if give_way else PIECE_POSTINGS
        self._lengths: list[int] = []
        self._slots = _vocabulary()

    def add(self, terms: TermCounts) -> None:
        length, tfs = terms
        self._lengths.append(length)
        self._piece.append(tfs)
        self._postings += len(tfs)
        if self._postings >= self._limit:
            self._counted()

    def add_texts(self, texts: Sequence[str], profile: Profile) -> None:
        """Passages by their texts, tokenised under ``profile`` as one piece (``_text_piece``;
        the caller bounds the batch: ``TEXT_PIECE_CHARS``, ``TEXT_STEP_CHARS``)."""
        if self._piece:
            self._counted()  # rows stay in the order they were added
        piece, lengths = _text_piece(texts, profile, self._slots)
        self._pieces.append(piece)
        self._lengths += lengths.tolist()

    def _counted(self) -> None:
        self._pieces.append(_piece(self._piece, self._slots))
        self._piece, self._postings = [], 0

    def finish(self) -> tuple[Segment, Ints]:
        """The segment of every passage added, in order, and their token counts."""
        return finish(self.finish_steps())

    def finish_steps(self) -> Steps[tuple[Segment, Ints]]:
        """``finish`` with a step after the last piece is built and per piece joined."""
        if self._piece or not self._pieces:
            self._counted()
        slots = dict(self._slots)  # published: a lookup of an unknown term adds nothing
        segment = yield from joined(self._pieces, slots)
        return segment, np.asarray(self._lengths, dtype=np.int64)


def segment_of(passages: Sequence[dict[str, int]]) -> Segment:
    """The segment of rows with these tf per term, in row order (one piece)."""
    vocabulary = _vocabulary()
    return finish(joined([_piece(passages, vocabulary)], dict(vocabulary)))


__all__ = [
    "PIECE_POSTINGS",
    "STEP_POSTINGS",
    "TEXT_PIECE_CHARS",
    "TEXT_STEP_CHARS",
    "SegmentWriter",
    "TermCounts",
    "joined",
    "segment_of",
]
