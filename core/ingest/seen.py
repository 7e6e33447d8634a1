"""The source ids a read has met, kept compact, so a later duplicate is named.

Why: a JSONL of a million tiny records kept two dicts of its million ids for the whole read:
the reader's (id -> the line it was first on, ``beir``) and the indexer's (id -> the file it was
first in, ``indexing.prepare``), each id a str object kept alive by them: ~140 MiB of the reading
worker's ~240 at the Upload page's summed peak (944-983 MiB of issue 21's one GiB). Here the
last ``RECENT_IDS`` ids are a plain dict; older ones are folded into runs of numpy columns: each
id's hash (sorted), its UTF-8 bytes in one buffer and its mark (a line, a file's code), ~36
bytes an id, plus a bitmap of the hashes that answers most "never met" at once. A hash found in
a run is checked against the id's own bytes, so two ids never count as one. Runs merge like a
binary counter (a run merges into the one before it once as long): ~log2 of the ids over
``RECENT_IDS`` runs, 7 for a million.
Rejected: a set of 64-bit hashes alone (less memory again, but a collision would refuse a
document that is no duplicate: rare, and wrong); a part's ids looked up at once at its end (no
per-id search, but the reader decides what a line is as it reads it: a deferred duplicate
would change which notes and problems a part reports).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

#: Ids kept as a plain dict before they are folded into a run (a few thousand dict entries
#: cost less than numpy calls: a folder of small files, or a small JSONL, never folds).
RECENT_IDS: Final = 8192
#: Bits of the bitmap of folded ids' hashes (8 MiB: ~1.5% of never-met ids searched in the
#: runs at a million ids, ~14% at ten million).
_SPOTS: Final = (1 << 26) - 1
#: The hash of an id (Python's, salted per process: nothing here leaves it). A name of its own
#: so a test can make every id collide.
_hash = hash

Ints = npt.NDArray[np.int64]


def _encoded(source_id: str) -> bytes:
    return source_id.encode("utf-8", "surrogatepass")


@dataclass(frozen=True, slots=True)
class _Run:
    """Folded ids: ``hashes`` sorted, ``rows`` their ids' places in ``blob``'s order."""

    hashes: Ints
    rows: npt.NDArray[np.int32]
    blob: bytes
    #: Where each id's bytes start in ``blob`` (one more than there are ids: the end).
    starts: Ints
    #: Each id's mark, in ``blob``'s order.
    marks: Ints

    @classmethod
    def of(cls, ids: Sequence[str], marks: Ints) -> _Run:
        blob = _encoded("".join(ids))
        lengths = np.fromiter(map(len, ids), np.int64, len(ids))
        starts = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        if starts[-1] != len(blob):  # not all ASCII: each id's own length in bytes
            encoded = [_encoded(each) for each in ids]
            np.cumsum(np.fromiter(map(len, encoded), np.int64, len(ids)), out=starts[1:])
        hashes = np.fromiter(map(_hash, ids), np.int64, len(ids))
        order = np.argsort(hashes, kind="stable")
        return cls(hashes[order], order.astype(np.int32), blob, starts, marks)

    @classmethod
    def merged(cls, older: _Run, newer: _Run) -> _Run:
        hashes = np.concatenate((older.hashes, newer.hashes))
        rows = np.concatenate((older.rows, newer.rows + np.int32(len(older))))
        order = np.argsort(hashes, kind="stable")
        starts = np.concatenate((older.starts[:-1], newer.starts + older.starts[-1]))
        marks = np.concatenate((older.marks, newer.marks))
        return cls(hashes[order], rows[order], older.blob + newer.blob, starts, marks)

    def __len__(self) -> int:
        return len(self.rows)

    def mark(self, source_id: str, hashed: int) -> int | None:
        """``source_id``'s mark, if this run holds it."""
        hashes, wanted = self.hashes, None
        place = int(np.searchsorted(hashes, hashed))
        while place < len(hashes) and hashes[place] == hashed:
            row = int(self.rows[place])
            wanted = wanted or _encoded(source_id)
            if self.blob[self.starts[row] : self.starts[row + 1]] == wanted:
                return int(self.marks[row])
            place += 1
        return None


class SeenIds:
    """The ids met so far in one read, each with a mark (an int: where it was first met)."""

    def __init__(self) -> None:
        self._recent: dict[str, int] = {}
        self._runs: list[_Run] = []
        #: A bit per ``_SPOTS`` value, set for each folded id's hash (made at the first fold).
        self._bits: bytearray | None = None

    def __len__(self) -> int:
        return len(self._recent) + sum(map(len, self._runs))

    def get(self, source_id: str) -> int | None:
        """The mark ``source_id`` was added with, or None if it never was."""
        mark = self._recent.get(source_id)
        if mark is not None or self._bits is None:
            return mark
        hashed = _hash(source_id)  # a str caches its hash: the dict's lookup computed it
        spot = hashed & _SPOTS
        if not (self._bits[spot >> 3] >> (spot & 7)) & 1:
            return None
        for run in self._runs:
            mark = run.mark(source_id, hashed)
            if mark is not None:
                return mark
        return None

    def add(self, source_id: str, mark: int) -> None:
        """Note ``source_id`` (not met before: ``get`` said None) with ``mark``."""
        self._recent[source_id] = mark
        if len(self._recent) >= RECENT_IDS:
            self._fold()

    def _fold(self) -> None:
        ids = list(self._recent)
        run = _Run.of(ids, np.fromiter(self._recent.values(), np.int64, len(ids)))
        self._recent = {}
        if self._bits is None:
            self._bits = bytearray((_SPOTS + 1) >> 3)
        spots = run.hashes & _SPOTS
        bits = np.frombuffer(self._bits, dtype=np.uint8)
        np.bitwise_or.at(bits, spots >> 3, np.left_shift(1, spots & 7).astype(np.uint8))
        self._runs.append(run)
        while len(self._runs) > 1 and len(self._runs[-2]) <= len(self._runs[-1]):
            newer = self._runs.pop()
            self._runs[-1] = _Run.merged(self._runs[-1], newer)


class FirstFiles:
    """The ids met so far in one upload, each with where it was first met (a file's name, or
    the id itself for a document given without one): ``prepare``'s label in "same source id
    as ...". The labels are a few distinct names, kept once each."""

    #: The code of a label that is the id itself.
    _ITSELF: Final = -1

    def __init__(self) -> None:
        self._ids = SeenIds()
        self._labels: list[str] = []
        self._codes: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def get(self, source_id: str) -> str | None:
        """Where ``source_id`` was first met, or None if it never was."""
        code = self._ids.get(source_id)
        if code is None:
            return None
        return source_id if code == self._ITSELF else self._labels[code]

    def add(self, source_id: str, label: str) -> None:
        """Note ``source_id`` (not met before) as first met in ``label``."""
        code = self._ITSELF if label == source_id else self._codes.get(label)
        if code is None:
            code = self._codes[label] = len(self._labels)
            self._labels.append(label)
        self._ids.add(source_id, code)


class OneFile(FirstFiles):
    """``FirstFiles`` for a read of one JSONL file: its reader refuses an id it met before in
    it ("duplicate _id"), so no document can repeat an earlier one's and none is kept (at a
    million ids, ~44 MiB of the reading worker and ~0.8 s of its CPU)."""

    def get(self, source_id: str) -> str | None:
        return None

    def add(self, source_id: str, label: str) -> None:
        pass


__all__ = ["RECENT_IDS", "FirstFiles", "OneFile", "SeenIds"]
