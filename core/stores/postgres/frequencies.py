"""Document frequencies derived from the posting blocks, not kept in a table of their own.

A term's df is the ordinals its blocks hold (``octet_length(ordinals) / 4``: read from the
block's header, the bytes are stored uncompressed) less those of deleted passages, counted in
``term_dead`` by the delete that left them. A load writes no df at all: its blocks are the
count. The rejected alternative, a ``term_df`` row per term upserted by every write, was a
load's largest database cost (~6.3 s per 100k passages: each 5,000-passage batch touched
~56k of its ~65k terms' rows with ``ON CONFLICT DO UPDATE``); what it saved, a df read by key,
costs a query one short aggregate over its terms' few block rows instead, and the vocabulary
count and prefix listing an aggregate over the tenant's block rows (one per term and segment).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final
from uuid import UUID

import asyncpg

#: Bytes of one ordinal in a block (big-endian int32, core.stores.postgres.blocks).
ORDINAL_BYTES: Final = 4

#: Each term's live df among those in a range of terms (``$3`` NULL: no upper bound).
_LIVE: Final = """
SELECT b.term, (b.n - coalesce(d.dead, 0))::integer AS df
FROM (SELECT term, sum(octet_length(ordinals)) / 4 AS n FROM postings
      WHERE tenant_id = $1 AND term >= $2 AND ($3::text IS NULL OR term < $3::text)
      GROUP BY term) b
LEFT JOIN term_dead d ON d.tenant_id = $1 AND d.term = b.term
WHERE b.n > coalesce(d.dead, 0)
"""
#: The terms with a live passage, counted.
_VOCABULARY: Final = f"SELECT count(*) FROM ({_LIVE}) live"  # noqa: S608 - fixed text only
#: The most frequent terms of a range, then by term.
_TOP: Final = f"{_LIVE} ORDER BY df DESC, b.term LIMIT $4"
#: Dead ordinals of some terms.
_DEAD: Final = "SELECT term, dead FROM term_dead WHERE tenant_id = $1 AND term = ANY($2::text[])"
#: Deleted passages' terms: their ordinals stay in the blocks, now counted as dead.
_ADD_DEAD: Final = """
INSERT INTO term_dead (tenant_id, term, dead)
SELECT $1, u.term, u.n FROM unnest($2::text[], $3::integer[]) AS u(term, n)
ON CONFLICT (tenant_id, term) DO UPDATE SET dead = term_dead.dead + EXCLUDED.dead
"""


async def vocabulary(conn: asyncpg.Connection, tenant_id: UUID) -> int:
    """How many distinct terms the tenant's live passages hold."""
    return int(await conn.fetchval(_VOCABULARY, tenant_id, "", None))


async def top_terms(
    conn: asyncpg.Connection, tenant_id: UUID, lower: str, upper: str | None, limit: int
) -> list[tuple[str, int]]:
    """The ``limit`` terms in [lower, upper) with the highest df, ties by term."""
    rows = await conn.fetch(_TOP, tenant_id, lower, upper, limit)
    return [(str(r["term"]), int(r["df"])) for r in rows]


async def block_df(
    conn: asyncpg.Connection, tenant_id: UUID, blocks: Iterable[Mapping[str, Any]]
) -> dict[str, int]:
    """The df of each term of ``blocks`` (rows of term and ordinals) with a live passage."""
    held: Counter[str] = Counter()
    for block in blocks:
        held[block["term"]] += len(block["ordinals"]) // ORDINAL_BYTES
    if not held:
        return {}
    dead = {r["term"]: int(r["dead"]) for r in await conn.fetch(_DEAD, tenant_id, list(held))}
    return {term: n - dead.get(term, 0) for term, n in held.items() if n > dead.get(term, 0)}


async def add_dead(
    conn: asyncpg.Connection, tenant_id: UUID, terms: Sequence[str], counts: Sequence[int]
) -> None:
    """Count deleted passages' postings as dead (``terms`` distinct)."""
    if terms:
        await conn.execute(_ADD_DEAD, tenant_id, list(terms), list(counts))


#: Terms whose every dead posting was dropped (by a merge): their row goes.
_DROP_DEAD: Final = """
DELETE FROM term_dead d USING unnest($2::text[], $3::integer[]) AS g(term, n)
WHERE d.tenant_id = $1 AND d.term = g.term AND d.dead <= g.n
"""
#: The other terms' dead counts lowered by what was dropped.
_LOWER_DEAD: Final = """
UPDATE term_dead d SET dead = d.dead - g.n FROM unnest($2::text[], $3::integer[]) AS g(term, n)
WHERE d.tenant_id = $1 AND d.term = g.term
"""


async def lower_dead(
    conn: asyncpg.Connection, tenant_id: UUID, terms: Sequence[str], counts: Sequence[int]
) -> None:
    """Dead postings dropped from the blocks (``terms`` distinct) no longer counted."""
    if terms:
        await conn.execute(_DROP_DEAD, tenant_id, list(terms), list(counts))
        await conn.execute(_LOWER_DEAD, tenant_id, list(terms), list(counts))
