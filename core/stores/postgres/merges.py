"""Segment merges: adjacent segments' blocks joined in SQL, or rewritten without dead ordinals.

A merge that finds no deleted passage in its segments' ordinal range concatenates their
blocks in one statement (``string_agg``, no posting leaves the server): a load's merges are
all of this kind. One that finds some rewrites the blocks in Python without the dead ordinals
and lowers those terms' dead counts (``term_dead``), so a workspace that is re-uploaded again
and again does not carry every deleted passage's postings forever: each merge drops what is
dead in its range. The rejected alternative, dropping them in SQL, needs the blocks decoded
posting by posting there (get_byte per ordinal), slower than the round trip. The cost: the
run's blocks cross to the client and back (at a million passages a top-tier merge moves a few
hundred MB), paid only when a delete left something to drop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final
from uuid import UUID

import asyncpg
import numpy as np
import numpy.typing as npt

from core.stores.postgres.blocks import mergeable
from core.stores.postgres.frequencies import lower_dead

#: A segment is numbered by its first ordinal and holds a contiguous range of them, so blocks
#: read in segment order concatenate to ascending ordinals. The merged segment takes the first
#: one's number: the rows it replaces are deleted in the same statement (a key deleted by the
#: own transaction does not conflict).
_MERGE: Final = """
WITH gone AS (
    DELETE FROM postings WHERE tenant_id = $1 AND segment = ANY($2::bigint[])
    RETURNING term, segment, ordinals, tfs
)
INSERT INTO postings (tenant_id, term, segment, ordinals, tfs)
SELECT $1, term, $3, string_agg(ordinals, ''::bytea ORDER BY segment),
       string_agg(tfs, ''::bytea ORDER BY segment)
FROM gone GROUP BY term
"""
#: The live passages' ordinals in a run's range [$2, $3) ($3 NULL: to the end), ascending.
_LIVE_ORDINALS: Final = """
SELECT ordinal FROM passages
WHERE tenant_id = $1 AND ordinal >= $2 AND ($3::bigint IS NULL OR ordinal < $3::bigint)
ORDER BY ordinal
"""
#: How many live passages a run's range holds.
_LIVE_COUNT: Final = """
SELECT count(*) FROM passages
WHERE tenant_id = $1 AND ordinal >= $2 AND ($3::bigint IS NULL OR ordinal < $3::bigint)
"""
#: The run's blocks, taken out to be written again without their dead ordinals.
_TAKE: Final = """
DELETE FROM postings WHERE tenant_id = $1 AND segment = ANY($2::bigint[])
RETURNING term, segment, ordinals, tfs
"""


async def merge_segments(conn: asyncpg.Connection, tenant_id: UUID) -> None:
    """Merge runs of adjacent segments until none is due (see ``mergeable``)."""
    while True:
        rows = await conn.fetch(
            "SELECT segment, passages FROM segments WHERE tenant_id = $1 ORDER BY segment",
            tenant_id,
        )
        segments = [(int(r["segment"]), int(r["passages"])) for r in rows]
        run = mergeable(segments)
        if not run:
            return
        merged = [segment for segment, _ in run]
        after = [segment for segment, _ in segments if segment > merged[-1]]
        upper = after[0] if after else None
        written = sum(passages for _, passages in run)
        # Passages without a term are in the range but in no segment's count: at worst they
        # hide a dead one until a later merge.
        if await conn.fetchval(_LIVE_COUNT, tenant_id, merged[0], upper) >= written:
            await conn.execute(_MERGE, tenant_id, merged, merged[0])
        else:
            live = [r[0] for r in await conn.fetch(_LIVE_ORDINALS, tenant_id, merged[0], upper)]
            await _merge_live(conn, tenant_id, merged, np.asarray(live, dtype=np.int64))
            written = len(live)
        await conn.execute(
            "DELETE FROM segments WHERE tenant_id = $1 AND segment = ANY($2::bigint[])",
            tenant_id,
            merged,
        )
        await conn.execute(
            "INSERT INTO segments (tenant_id, segment, passages) VALUES ($1, $2, $3)",
            tenant_id,
            merged[0],
            written,
        )


async def _merge_live(
    conn: asyncpg.Connection, tenant_id: UUID, merged: Sequence[int], live: npt.NDArray[np.int64]
) -> None:
    """The run's blocks joined per term without the ordinals ``live`` lacks; the terms' dead
    counts lowered by what was dropped, a term with nothing live left without a block."""
    parts: dict[str, list[tuple[int, bytes, bytes]]] = {}
    for row in await conn.fetch(_TAKE, tenant_id, list(merged)):
        parts.setdefault(row["term"], []).append((row["segment"], row["ordinals"], row["tfs"]))
    records: list[tuple[UUID, str, int, bytes, bytes]] = []
    dropped_terms: list[str] = []
    dropped: list[int] = []
    for term in sorted(parts):
        blocks = sorted(parts[term])
        ordinals = np.frombuffer(b"".join(b[1] for b in blocks), dtype=">i4")
        tfs = np.frombuffer(b"".join(b[2] for b in blocks), dtype=">i4")
        keep = np.isin(ordinals, live, assume_unique=True)
        gone = len(keep) - int(keep.sum())
        if gone:
            dropped_terms.append(term)
            dropped.append(gone)
        if gone < len(keep):
            records.append(
                (tenant_id, term, merged[0], ordinals[keep].tobytes(), tfs[keep].tobytes())
            )
    if records:
        await conn.copy_records_to_table(
            "postings",
            records=records,
            columns=("tenant_id", "term", "segment", "ordinals", "tfs"),
        )
    await lower_dead(conn, tenant_id, dropped_terms, dropped)
