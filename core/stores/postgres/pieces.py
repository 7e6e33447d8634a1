"""A write's Python work in pieces of ``PIECE_ROWS`` rows, each ended by a checkpoint.

The service runs every session on one loop (``core.checkpoint``); a write group's Python work
(its sources checked, its staged passage rows, each block row, asyncpg encoding them for
COPY) ran in pieces of a whole group: 1,398 Cranfield passages held the loop for tens of
milliseconds at a time, and another session's 15 ms search waited for it (bench_stall upload
5.8x idle p99). Rows are built lazily and sent as one COPY per piece, with a checkpoint
before each; pieces are smaller where a checkpoint gives way to other sessions. Rejected: an
async iterable of rows into one COPY (asyncpg supports it), at ~1.6 us of ``__anext__`` per
row: a 100k load sends ~0.8 M rows, a second more; a COPY statement per piece is one round
trip (~0.3 ms) per piece.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, Final, TypeVar
from uuid import UUID

import asyncpg
import numpy as np
import numpy.typing as npt

from core.checkpoint import checkpoint, giving_way, turn_due
from core.domain.chunks import StoredChunk
from core.stores.checks import each_checked_source

T = TypeVar("T")

#: Rows (a passage staged, a block row) of Python work between two checkpoints where other
#: sessions wait on them (the service): 1,024 were 9-12 ms of the loop thread's CPU at load 8
#: (bench_stall --steps: a piece of staged rows, and building + encoding a COPY's).
PIECE_ROWS: Final = 256
#: The same where nobody waits (``load``: no pause installed): fewer COPY round trips (~0.3 ms
#: each; 256-row pieces would add ~1 s to a 100k-passage load).
BULK_PIECE_ROWS: Final = 1_024


def piece_rows(bulk: int | None = BULK_PIECE_ROWS) -> int:
    """Rows a piece holds: ``PIECE_ROWS`` in the service, else ``bulk`` (None: no bound)."""
    return PIECE_ROWS if giving_way() else bulk or 1 << 62


def pieces(rows: Iterable[T], size: int | None = None) -> Iterator[list[T]]:
    """``rows`` in lists of ``size`` (unless given, ``piece_rows()``; the last shorter), built
    as they are asked for."""
    size = size or piece_rows()
    items = iter(rows)
    while piece := list(islice(items, size)):
        yield piece


async def listed(rows: Iterable[T]) -> list[T]:
    """``list(rows)``, with a checkpoint after each piece of ``PIECE_ROWS``."""
    whole: list[T] = []
    for piece in pieces(rows):
        whole.extend(piece)
        if turn_due():
            await checkpoint()
    return whole


async def checked_in_pieces(
    tenant_id: UUID, sources: Sequence[tuple[str, Sequence[StoredChunk]]]
) -> list[tuple[str, list[StoredChunk]]]:
    """``checks.checked_sources`` with a checkpoint after each source (a passage's check hashes
    its text: ~10-50 us; a group of 1,398 sources was ~15-100 ms in one piece) when one is due
    (``turn_due``: always where other sessions wait; in ``load``, an await per tiny source
    was ~1 us of its ~40)."""
    checked: list[tuple[str, list[StoredChunk]]] = []
    for source in each_checked_source(tenant_id, sources):
        checked.append(source)
        if turn_due():
            await checkpoint()
    return checked


async def copy_in_pieces(
    conn: asyncpg.Connection,
    table: str,
    records: Iterable[tuple[Any, ...]],
    columns: Sequence[str] | None = None,
) -> None:
    """COPY ``records`` into ``table``, one statement per piece, a checkpoint before each."""
    for piece in pieces(records):
        await checkpoint()
        await conn.copy_records_to_table(table, records=piece, columns=columns)


async def copy_data_in_pieces(
    conn: asyncpg.Connection,
    table: str,
    pieces: Iterable[npt.NDArray[np.uint8]],
    columns: Sequence[str],
) -> None:
    """COPY each piece (a whole binary COPY, ``Blocks.copy_data``) into ``table``, a checkpoint
    before each."""
    for piece in pieces:
        await checkpoint()
        await conn.copy_to_table(table, source=piece.data, columns=columns, format="binary")
