"""A batch's passage rows as one binary COPY built in numpy, a field at a time, for asyncpg.

Why: ``copy_records_to_table`` encodes each row's eleven values in turn (and asks an abstract
base class whether each list is a sequence): for a million tiny records it was ~8% of the
loader's event-loop time, with the row tuples it needed beside it. Here each column is
joined and placed whole, as ``blocks.Blocks.copy_data`` does for the posting blocks.
Only for the common rows: no entity and no metadata (a tiny record, a text file's
passages); any other batch goes through asyncpg as before (``passages_copy`` answers None),
so the uuid[] and jsonb encodings stay asyncpg's. Rejected: a row packed by ``struct`` per
passage (Python per row again, no faster than asyncpg's Cython).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from core.stores.postgres.blocks import copy_frame, placed

#: An empty uuid[] in binary: no dimensions, no NULL, elements of type uuid (oid 2950).
_EMPTY_UUIDS: Final = (0).to_bytes(4, "big") * 2 + (2950).to_bytes(4, "big")
#: The metadata of a passage that has none, as jsonb (version 1, then the text) or as text.
_NO_METADATA: Final = {True: b"\x01{}", False: b"{}"}

#: Most characters of passage text a COPY is built from here: placing the bytes takes an int64
#: index per byte (8x the text), so a batch of bigger passages (bench_load's 100k: loader 309
#: -> 468 MB when they came here; a 42 MB document's) goes through asyncpg in pieces as before.
MOST_TEXT_CHARS: Final = 4 << 20

#: A column in the COPY: fixed bytes per row (rows x width), or varying (bytes, lengths).
_Field = npt.NDArray[np.uint8] | tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]


def passages_copy(
    rows: Sequence[tuple[Any, ...]], ordinals: npt.NDArray[np.int64], *, jsonb: bool
) -> npt.NDArray[np.uint8] | None:
    """The binary COPY of ``rows`` (``blocks.staged_row``: tenant, id, source, index, start,
    end, text, entity ids, metadata as JSON, length) with ``ordinals`` appended, metadata as
    jsonb (``passages``) or text (``stage_passages``); None unless every row has no entity
    and no metadata, and their texts hold at most ``MOST_TEXT_CHARS`` (then asyncpg encodes
    them)."""
    n = len(rows)
    if not n:
        return None
    tenants, ids, sources, indexes, starts, ends, texts, entities, metadata, lengths = zip(
        *rows, strict=True
    )
    if any(entities) or metadata.count("{}") != n or len(set(tenants)) != 1:
        return None
    if sum(map(len, texts)) > MOST_TEXT_CHARS:
        return None
    fields: list[_Field] = [_repeated(b"\x00\x0b" + _sized(tenants[0].bytes), n)]
    for column in (ids, sources):
        fields += _varying(column)
    for numbers in (indexes, starts, ends):
        fields.append(_numbers(numbers, ">i8"))
    fields += _varying(texts)
    fields.append(_repeated(_sized(_EMPTY_UUIDS) + _sized(_NO_METADATA[jsonb]), n))
    fields.append(_numbers(lengths, ">i4"))
    fields.append(_numbers(ordinals, ">i8"))
    return _assembled(fields, n)


def _sized(value: bytes) -> bytes:
    return len(value).to_bytes(4, "big") + value


def _repeated(value: bytes, n: int) -> npt.NDArray[np.uint8]:
    return np.broadcast_to(np.frombuffer(value, np.uint8), (n, len(value)))


def _numbers(values: Any, kind: str) -> npt.NDArray[np.uint8]:
    """Each number as its length (4 or 8) then itself, big-endian: rows x (4 + width)."""
    width = np.dtype(kind).itemsize
    out = np.empty((len(values), 4 + width), np.uint8)
    out[:, :4] = np.frombuffer(width.to_bytes(4, "big"), np.uint8)
    out[:, 4:] = np.asarray(values, dtype=np.int64).astype(kind).view(np.uint8).reshape(-1, width)
    return out


def _varying(values: Sequence[str]) -> list[_Field]:
    """A text column: each value's byte length (a fixed field), then its UTF-8 bytes. Values
    hold no NUL (checked before any write: ``checks.checked_for_write``), so they are joined
    by it and cut where it falls."""
    joined = np.frombuffer("\x00".join(values).encode("utf-8"), np.uint8)
    cuts = np.flatnonzero(joined == 0)
    if len(cuts) != len(values) - 1:
        raise ValueError("a passage's text or id holds a NUL character")
    bounds = np.concatenate(([-1], cuts, [len(joined)]))
    sizes = np.diff(bounds) - 1
    return [_numbers(sizes, ">i4")[:, 4:].copy(), (joined[joined != 0], sizes)]


def _assembled(fields: Sequence[_Field], n: int) -> npt.NDArray[np.uint8]:
    """The COPY: its header, each row's fields in order, its trailer."""
    widths = [f.shape[1] if isinstance(f, np.ndarray) else f[1] for f in fields]
    sizes = np.zeros(n, np.int64)
    for width in widths:
        sizes += width
    out, at = copy_frame(sizes)
    for field in fields:
        if isinstance(field, np.ndarray):
            width = field.shape[1]
            block = np.ascontiguousarray(field).view(f"V{width}").reshape(n)
            placed(out, f"V{width}")[at] = block
            at = at + width
        else:
            data, lengths = field
            skip = np.concatenate(([0], np.cumsum(lengths)[:-1]))
            out[np.repeat(at - skip, lengths) + np.arange(len(data))] = data
            at = at + lengths
    return out
