"""Posting blocks built and read in numpy, with no database: the pure half of the store.

A batch's postings become one row per distinct term (ordinals and tf as big-endian int32,
Lucene-style) before its transaction opens, and a query's rows are decoded back into
ascending ordinals here; segment merging is decided here too. Kept apart from the SQL so
it is unit-tested without a server (tests/unit/stores/test_postgres_blocks.py); the rejected
alternative, building blocks in SQL (string_agg of int4send per posting), sends a row per
posting to the server, the write's former cost centre (docs/scaling.md).
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain
from typing import Any, Final, NamedTuple
from uuid import UUID

import numpy as np
import numpy.typing as npt

from core.domain.chunks import StoredChunk
from core.domain.postings import EMPTY_POSTING, Posting
from core.domain.steps import Steps, finish
from core.domain.tokenize import DEFAULT_PROFILE, Profile, TokenizedTexts, tokenize_many
from core.stores.port import passage_terms
from core.stores.postgres.frequencies import ORDINAL_BYTES

#: Adjacent segments merged as one, Lucene-style (log merge), when this many in a row are of
#: one size tier (tier = decimal digits of their passage count): a term has at most ~9 rows
#: per tier to read, and each posting is rewritten about once per tier over a workspace's life.
MERGE_FACTOR: Final = 10
#: More segments than this (a mix of tiers that never lines up) merges the smallest run anyway.
MAX_SEGMENTS: Final = 64
#: One passage staged for COPY: its row (without ordinal) and its tf per term (None when the
#: batch's blocks were built in the worker: they hold the tf, see ``Blocks.only``).
Staged = tuple[tuple[Any, ...], Counter[str] | None]
#: Postings in one COPY of a batch's blocks at most (~8 MB of ordinals and tf; one term's at
#: least): the COPY is built in arrays of a few bytes a posting.
COPY_POSTINGS: Final = 1 << 20
#: PostgreSQL's binary COPY header (signature, no flags, no extension) and trailer.
_COPY_HEADER: Final = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_COPY_TRAILER: Final = b"\xff\xff"
#: What a batch's terms are joined with where they are held as one string (no term holds it).
_JOIN: Final = "\x00"
#: Largest ordinal a block can hold (int32).
_MAX_ORDINAL: Final = 2**31 - 1
#: Characters of a batch tokenised whole when its blocks are built. Not less: slices repeat the
#: work per distinct word (a load's 20k-passage batch of the bench corpus, 10.8M characters and
#: 134k terms, took 1.3 s whole, 2.1 s in 8M-character slices).
WHOLE_CHARS: Final = 1 << 24
#: Characters tokenised at once in a batch over ``WHOLE_CHARS`` (one huge document): a 42 MB
#: document's passages tokenised whole took the staging worker to 767 MiB (arrays of every
#: token, sorted twice), in 16M-character slices 425 MiB (CPU 2.1-2.3 s either way); a 58 MB
#: one-line document through the Upload path into embedded, worker 464 -> 397 MiB in 8M slices
#: (the app's tree 1,024 -> 929 MiB summed peaks, session 11).
SLICE_CHARS: Final = 1 << 23


class Staging(NamedTuple):
    """A batch made ready outside the transaction: its rows, and for a one-tenant batch its
    posting blocks with ordinals counted from 0 (moved to the reserved ones at COPY)."""

    rows: list[Staged]
    blocks: Blocks | None


def stage(batch: Sequence[StoredChunk], profiles: dict[UUID, Profile]) -> Staging:
    """Tokenise and build the blocks: the batch's Python work, done before its transaction so
    the transaction holds the tenant's counters row only for database work (a batch's
    transactions queue on that row; blocks built inside it kept the next batch waiting)."""
    tenants = {chunk.tenant_id for chunk in batch}
    if len(tenants) != 1:
        return Staging(list[Staged](_stage_rows(batch, profiles)), None)
    profile = profiles.get(next(iter(tenants)), DEFAULT_PROFILE)
    lengths, blocks = terms_and_blocks([chunk.text for chunk in batch], profile)
    rows: list[Staged] = [
        (staged_row(chunk, length), None) for chunk, length in zip(batch, lengths, strict=True)
    ]
    return Staging(rows, blocks)


def terms_and_blocks(texts: Sequence[str], profile: Profile) -> tuple[list[int], Blocks]:
    """Each text's length, and the batch's blocks with ordinals from 0 (pure: what the staging
    worker runs). Tokenised whole up to ``WHOLE_CHARS``, else ``SLICE_CHARS`` of text at a time
    (``tokenize_many``), the slices'
    blocks then joined; no tf counter per passage is made, or sent back from the worker
    (pickling them cost the loop ~0.25 s per 5,000 passages): the blocks hold the tf."""
    lengths: list[int] = []
    pieces: list[Blocks] = []
    for start, end in _slices(texts):
        tokens = tokenize_many(texts[start:end], profile)
        lengths += tokens.lengths().tolist()
        pieces.append(Blocks.of_texts(tokens, offset=start))
    return lengths, Blocks.joined(pieces) if len(pieces) != 1 else pieces[0]


def _slices(texts: Sequence[str]) -> Iterator[tuple[int, int]]:
    """The whole of ``texts`` if it holds ``WHOLE_CHARS`` characters or fewer, else consecutive
    (start, end) ranges of about ``SLICE_CHARS`` characters each (at least one text a range)."""
    if sum(map(len, texts)) <= WHOLE_CHARS:
        yield 0, len(texts)
        return
    start, held = 0, 0
    for end, text in enumerate(texts, start=1):
        held += len(text)
        if held >= SLICE_CHARS:
            yield start, end
            start, held = end, 0
    if start < len(texts) or not texts:
        yield start, len(texts)


def _stage_rows(
    batch: Iterable[StoredChunk], profiles: dict[UUID, Profile]
) -> list[tuple[tuple[Any, ...], Counter[str]]]:
    """Tokenise each passage once, with its tenant's profile, outside any transaction."""
    staged: list[tuple[tuple[Any, ...], Counter[str]]] = []
    for chunk in batch:
        length, tfs = passage_terms(chunk.text, profiles.get(chunk.tenant_id, DEFAULT_PROFILE))
        staged.append((staged_row(chunk, length), tfs))
    return staged


def staged_row(chunk: StoredChunk, length: int) -> tuple[Any, ...]:
    """A passage's row for the staging COPY (its ordinal is appended once reserved)."""
    return (
        chunk.tenant_id,
        chunk.id,
        chunk.source_id,
        chunk.chunk_index,
        chunk.start_char,
        chunk.end_char,
        chunk.text,
        list(chunk.entity_ids),
        json.dumps(chunk.metadata, ensure_ascii=False, allow_nan=False) if chunk.metadata else "{}",
        length,
    )


class Blocks:
    """A batch's postings grouped by term: one block (ordinals, tf as big-endian int32) each.

    Built in Python from the tf counters tokenising already produced, so a batch sends one
    row per distinct term instead of one per posting (at 100k Zipf passages ~60 postings per
    passage but ~0.3 new terms): the row-per-posting COPY and its index were the write's
    cost centre (docs/scaling.md).
    """

    def __init__(self, passages: Iterable[tuple[int, Counter[str]]]) -> None:
        numbers: list[int] = []
        counters: list[Counter[str]] = []
        for ordinal, counts in passages:
            if ordinal > _MAX_ORDINAL:
                raise ValueError(f"a workspace holds at most {_MAX_ORDINAL} passage ordinals")
            numbers.append(ordinal)
            counters.append(counts)
        # Every loop below runs in C (map, chain, dict.fromkeys): a Python loop per posting
        # was the load's largest Python cost after tokenising (cProfile, 50k passages).
        words = list(chain.from_iterable(counters))
        terms = sorted(dict.fromkeys(words))
        rank = {term: i for i, term in enumerate(terms)}
        keys = np.fromiter(map(rank.__getitem__, words), np.int64, len(words))
        sizes = np.fromiter(map(len, counters), np.int64, len(counters))
        ordinals = np.repeat(np.asarray(numbers, dtype=np.int64), sizes)
        tfs = np.fromiter(chain.from_iterable(c.values() for c in counters), np.int64, len(words))
        # Stable: within a term the ordinals stay in the (ascending) order they came in.
        order = np.argsort(keys, kind="stable")
        df = np.bincount(keys, minlength=len(terms)).astype(np.int64)
        self._hold(terms, df, ordinals[order], tfs[order].astype(">i4").tobytes())

    def _hold(
        self,
        terms: list[str],
        df: npt.NDArray[np.int64],
        ordinals: npt.NDArray[np.integer[Any]],
        tfs: bytes,
    ) -> None:
        """The postings grouped by term (``terms``, sorted): each term's df, then every
        posting's ordinal and tf (big-endian int32) term after term. The ordinals are held in
        4 bytes each (every one fits, ``_MAX_ORDINAL``): in 8, a 42 MB document's 5.2 M
        postings were 21 MB more in the staging worker, in its answer and here. The terms are
        held as one string of UTF-8 joined by NUL (no term holds one): a list of a batch's
        134k str was most of the staging worker's answer to pickle and unpickle (~180 ms a
        20k-passage batch), and the COPY sends their bytes as they are (``copy_data``)."""
        #: df of each term within the batch.
        self.df = df
        self._last = int(ordinals.max()) if len(ordinals) else 0
        if self._last > _MAX_ORDINAL:
            raise ValueError(f"a workspace holds at most {_MAX_ORDINAL} passage ordinals")
        self._ordinals = ordinals.astype(np.int32, copy=False)
        self._tfs = tfs
        self._names = _JOIN.join(terms).encode("utf-8")
        self._count = len(terms)

    @property
    def terms(self) -> list[str]:
        """Distinct terms, sorted."""
        return self._names.decode("utf-8").split(_JOIN) if self._count else []

    @classmethod
    def of_texts(cls, tokens: TokenizedTexts, offset: int = 0) -> Blocks:
        """The blocks of a batch tokenised at once (``tokenize_many``), text i as ordinal
        ``offset + i``: equal to ``Blocks`` of each text's tf counter
        (tests/unit/stores/test_postgres_blocks.py), built with one sort of (term, text) keys
        instead of a counter per passage."""
        if offset + tokens.size > _MAX_ORDINAL + 1:
            raise ValueError(f"a workspace holds at most {_MAX_ORDINAL} passage ordinals")
        texts = max(tokens.size, 1)
        keys, tfs = _counted(tokens.term_ids * texts + tokens.text_ids)
        held = np.bincount(keys // texts, minlength=len(tokens.terms)).astype(np.int64)
        blocks = cls(())
        # Every term came from a token, so each holds a posting (the filter kept, in case).
        terms = tokens.terms
        if not held.all():
            terms = [term for term, n in zip(terms, held.tolist(), strict=True) if n]
        blocks._hold(terms, held[held > 0], keys % texts + offset, tfs.astype(">i4").tobytes())
        return blocks

    @classmethod
    def joined(cls, pieces: list[Blocks]) -> Blocks:
        """Blocks of ordinal ranges that follow one another (each piece's ordinals above the
        one's before) as one: each term's postings piece after piece, so still ascending.

        Each piece's postings are placed straight where they go in the whole (its term's block,
        after the earlier pieces' postings of that term), and ``pieces`` is emptied as they are
        placed, so a piece is freed once placed. Rejected: a stable argsort of every posting's
        term (the keys, the order and the postings taken in it: four arrays the size of the
        whole besides the pieces; the staging worker peaked at 411-476 MiB on the 58 MB
        one-line document, 7x its size)."""
        named = [piece.terms for piece in pieces]
        terms = sorted(set().union(*named))
        rank = {term: i for i, term in enumerate(terms)}
        ranks = [np.fromiter(map(rank.__getitem__, own), np.int64, len(own)) for own in named]
        del named, rank
        df = np.zeros(len(terms), dtype=np.int64)
        for own, piece in zip(ranks, pieces, strict=True):
            df[own] += piece.df
        # Where the next posting of each term goes in the whole.
        free = np.zeros(len(terms), dtype=np.int64)
        np.cumsum(df[:-1], out=free[1:])
        ordinals = np.empty(int(df.sum()), dtype=np.int32)
        tfs = np.empty(len(ordinals), dtype=">i4")
        pieces.reverse()
        for own in ranks:
            piece = pieces.pop()
            # Each posting's place in its piece's block of its term, then in the whole.
            within = np.arange(len(piece._ordinals), dtype=np.int64)
            within -= np.repeat(np.cumsum(piece.df) - piece.df, piece.df)
            at = np.repeat(free[own], piece.df) + within
            ordinals[at] = piece._ordinals
            tfs[at] = np.frombuffer(piece._tfs, dtype=">i4")
            free[own] += piece.df
            del piece, within, at
        whole = cls(())
        whole._hold(terms, df, ordinals, tfs.tobytes())
        return whole

    def only(self, ordinals: Sequence[int]) -> Blocks:
        """These ordinals' postings alone (a batch some of whose passages were already stored),
        a term none of them holds dropped: the tf stays in the blocks, so a batch staged in the
        worker needs no tf counter per passage (pickling them back cost more than the blocks)."""
        terms = np.repeat(np.arange(self._count, dtype=np.int64), self.df)
        keep = np.isin(self._ordinals, np.asarray(ordinals, dtype=np.int64))
        counts = np.bincount(terms[keep], minlength=self._count).astype(np.int64)
        held = counts > 0
        subset = Blocks(())
        named = [term for term, h in zip(self.terms, held.tolist(), strict=True) if h]
        tfs = np.frombuffer(self._tfs, dtype=">i4")[keep].tobytes()
        subset._hold(named, counts[held], self._ordinals[keep], tfs)
        return subset

    def renumbered(self, ordinals: Sequence[int]) -> Blocks:
        """These blocks with ordinal i made ``ordinals[i]`` (ascending, so each block stays
        ascending): a batch tokenised as texts 0..n-1 whose passages already have ordinals."""
        numbers = np.asarray(ordinals, dtype=np.int64)
        if len(numbers) and int(numbers.max()) > _MAX_ORDINAL:
            raise ValueError(f"a workspace holds at most {_MAX_ORDINAL} passage ordinals")
        moved = Blocks(())
        moved._hold(self.terms, self.df, numbers[self._ordinals], self._tfs)
        return moved

    def copy_data(
        self, tenant_id: UUID, segment: int, offset: int = 0, rows: int = 1 << 30
    ) -> Iterator[npt.NDArray[np.uint8]]:
        """The rows (tenant_id, term, segment, ordinals, tfs), one per term, as PostgreSQL's
        binary COPY, every ordinal moved by ``offset`` (blocks built before the batch's
        ordinals were reserved count from 0): a COPY each of at most ``rows`` terms and about
        ``COPY_POSTINGS`` postings (one term at least), built in numpy as it is taken.

        Rejected: a tuple per row for asyncpg to encode (``copy_records_to_table``): ~2.3 us a
        row built and ~2 encoded, 1.3 M rows (~3 s of the loader's CPU) at 100k passages."""
        if self._last + offset > _MAX_ORDINAL:
            raise ValueError(f"a workspace holds at most {_MAX_ORDINAL} passage ordinals")
        return self._copied(tenant_id.bytes, segment, offset, max(rows, 1))

    def _copied(
        self, tenant: bytes, segment: int, offset: int, rows: int
    ) -> Iterator[npt.NDArray[np.uint8]]:
        names = np.frombuffer(self._names, np.uint8)
        ends = np.append(np.flatnonzero(names == 0), len(names))[: self._count]
        starts = np.concatenate(([0], ends[:-1] + 1))
        firsts = np.concatenate(([0], np.cumsum(self.df)))
        tfs = np.frombuffer(self._tfs, np.uint8)
        head = np.frombuffer(
            struct.pack(">hi16si", 5, 16, tenant, 0) + struct.pack(">iqi", 8, segment, 0), np.uint8
        )
        low = 0
        while low < self._count:
            fits = int(np.searchsorted(firsts, firsts[low] + COPY_POSTINGS, "right")) - 1
            high = max(low + 1, min(low + rows, self._count, fits))
            posting = firsts[low : high + 1]
            ordinals = self._ordinals[posting[0] : posting[-1]].astype(np.int64) + offset
            yield _copy_rows(
                head,
                names[starts[low] : ends[high - 1]],
                ends[low:high] - starts[low:high],
                self.df[low:high],
                ordinals.astype(">i4").view(np.uint8),
                tfs[posting[0] * 4 : posting[-1] * 4],
            )
            low = high


def _copy_rows(
    head: npt.NDArray[np.uint8],
    names: npt.NDArray[np.uint8],
    lengths: npt.NDArray[np.int64],
    df: npt.NDArray[np.int64],
    ordinals: npt.NDArray[np.uint8],
    tfs: npt.NDArray[np.uint8],
) -> npt.NDArray[np.uint8]:
    """One binary COPY of rows of five fields: a field count, then each field's length and
    bytes (uuid 16, term, bigint 8, ordinals and tfs 4 a posting). ``head`` holds the fixed
    bytes (the count, the uuid's length and bytes, the term's length; the segment's length
    and value, the ordinals' length); ``names`` the terms' UTF-8 joined by NUL; ``lengths``
    each term's bytes; ``ordinals`` and ``tfs`` every posting's, big-endian, term after term."""
    n = len(lengths)
    block = df * 4
    out, at = copy_frame(46 + lengths + 2 * block)
    fixed = np.broadcast_to(head[:26], (n, 26)).copy()
    fixed[:, 22:26] = lengths.astype(">i4").view(np.uint8).reshape(n, 4)
    placed(out, "V26")[at] = fixed.view("V26").reshape(n)
    letters = names[names != 0]
    skip = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    out[np.repeat(at + 26 - skip, lengths) + np.arange(len(letters))] = letters
    middle = at + 26 + lengths
    fixed = np.broadcast_to(head[26:], (n, 16)).copy()
    fixed[:, 12:16] = block.astype(">i4").view(np.uint8).reshape(n, 4)
    placed(out, "V16")[middle] = fixed.view("V16").reshape(n)
    words = placed(out, "V4")
    words[middle + 16 + block] = fixed[:, 12:16].copy().view("V4").reshape(n)
    passed = np.concatenate(([0], np.cumsum(block)[:-1]))
    places = np.repeat(middle + 16 - passed, df) + np.arange(0, len(ordinals), 4)
    words[places] = ordinals.view("V4")
    places += np.repeat(block + 4, df)
    words[places] = tfs.view("V4")
    return out


def copy_frame(sizes: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """A binary COPY of rows of ``sizes`` bytes (at least one), its header and trailer in
    place, and where each row starts."""
    at = np.empty(len(sizes), np.int64)
    at[0] = len(_COPY_HEADER)
    np.cumsum(sizes[:-1], out=at[1:])
    at[1:] += len(_COPY_HEADER)
    out = np.empty(int(at[-1] + sizes[-1]) + len(_COPY_TRAILER), np.uint8)
    out[: len(_COPY_HEADER)] = np.frombuffer(_COPY_HEADER, np.uint8)
    out[len(out) - len(_COPY_TRAILER) :] = np.frombuffer(_COPY_TRAILER, np.uint8)
    return out, at


def placed(data: npt.NDArray[np.uint8], field: str) -> npt.NDArray[np.void]:
    """``data`` as fields of ``field`` bytes ("V4": four) starting at every offset, to place
    each by its offset (an index per field, not per byte: 2-3x faster for 4 bytes)."""
    size = np.dtype(field).itemsize
    return np.ndarray((len(data) - size + 1,), dtype=field, buffer=data, strides=(1,))


def _counted(keys: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``np.unique(keys, return_counts=True)``, sorting ``keys`` in place: the copy ``np.unique``
    sorts and its index arrays were most of a big batch's peak (a 46 MB document's 6 M tokens:
    +229 MiB over the tokens held; here +183)."""
    keys.sort()
    if not len(keys):
        return keys, np.zeros(0, np.int64)
    firsts = np.empty(len(keys), np.bool_)
    firsts[0] = True
    np.not_equal(keys[1:], keys[:-1], out=firsts[1:])
    starts = np.flatnonzero(firsts)
    del firsts
    counts = np.diff(starts, append=len(keys))
    return keys[starts], counts


def _tier(passages: int) -> int:
    return len(str(max(passages, 1)))


def mergeable(segments: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A run of adjacent segments to merge, or none: ``MERGE_FACTOR`` of one tier in a row,
    else (past ``MAX_SEGMENTS``) the run with the fewest passages."""
    for start in range(len(segments) - MERGE_FACTOR + 1):
        run = segments[start : start + MERGE_FACTOR]
        if len({_tier(passages) for _, passages in run}) == 1:
            return run
    if len(segments) <= MAX_SEGMENTS:
        return []
    runs = [segments[i : i + MERGE_FACTOR] for i in range(len(segments) - MERGE_FACTOR + 1)]
    return min(runs, key=lambda run: sum(passages for _, passages in run))


#: Postings decoded in one step of a query's read at most (at least one term's; ~1 ms).
STEP_POSTINGS: Final = 2**18
#: Terms decoded in one step at most: a term costs ~5-10 us of Python and numpy calls whatever
#: its size, so a 1,000-term query of small postings was ~10-20 ms in one step.
STEP_TERMS: Final = 128


def live_postings(
    wanted: list[str], blocks: Iterable[Mapping[str, Any]], id_rank: npt.NDArray[np.int64]
) -> list[Posting]:
    """``live_posting_steps`` in one piece."""
    return finish(live_posting_steps(wanted, blocks, id_rank))


def live_posting_steps(
    wanted: list[str], blocks: Iterable[Mapping[str, Any]], id_rank: npt.NDArray[np.int64]
) -> Steps[list[Posting]]:
    """Each wanted term's blocks (rows of term, ordinals, tfs in segment order) decoded and
    concatenated (ascending ordinals), keeping only ordinals ``id_rank`` knows as live.

    Decoded a group of terms at a time (one join, one gather, then a view per term), a step
    per ``STEP_TERMS`` terms or ``STEP_POSTINGS`` postings: term by term in one piece, a
    1,000-term query held the loop ~20-50 ms (bench_stall search --holds, loaded machine).
    """
    parts: dict[str, tuple[list[bytes], list[bytes]]] = {}
    for block in blocks:
        ordinals, tfs = parts.setdefault(block["term"], ([], []))
        ordinals.append(block["ordinals"])
        tfs.append(block["tfs"])
    postings: list[Posting] = [EMPTY_POSTING] * len(wanted)
    held = [(i, parts[term]) for i, term in enumerate(wanted) if term in parts]
    start = 0
    while start < len(held):
        group: list[tuple[int, tuple[list[bytes], list[bytes]]]] = []
        sizes: list[int] = []
        for item in held[start : start + STEP_TERMS]:
            size = sum(map(len, item[1][0])) // ORDINAL_BYTES
            if group and sum(sizes) + size > STEP_POSTINGS:
                break
            group.append(item)
            sizes.append(size)
        start += len(group)
        rows = np.frombuffer(
            b"".join(chain.from_iterable(ordinals for _, (ordinals, _) in group)), dtype=">i4"
        ).astype(np.int32)
        values = np.frombuffer(
            b"".join(chain.from_iterable(tfs for _, (_, tfs) in group)), dtype=">i4"
        ).astype(np.int32)
        ends = np.cumsum(sizes)
        live = id_rank[rows] >= 0
        if not live.all():
            kept = np.concatenate(([0], np.cumsum(live)))
            ends = kept[ends]
            rows, values = rows[live], values[live]
        lower = 0
        for (i, _), upper in zip(group, ends.tolist(), strict=True):
            postings[i] = (rows[lower:upper], values[lower:upper])
            lower = upper
        if start < len(held):
            yield
    return postings


def prefix_upper_bound(prefix: str) -> str | None:
    """The least string greater than every string starting with ``prefix`` (code point order)."""
    chars = list(prefix)
    while chars:
        last = ord(chars.pop()) + 1
        if last == 0xD800:
            last = 0xE000
        if last <= 0x10FFFF:
            return "".join(chars) + chr(last)
    return None
