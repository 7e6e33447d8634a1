"""What a workspace holds, listed or counted: its sources, its entities, its summary.

Apart from ``store`` (kept to one bounded call per port method, and at the 600-line bound). The
sources' passage counts come two ways: as ``SourceSummary`` models for a page that shows them
in order, and as a plain dict for an upload that only compares them with what it wrote (a model
per source and the sort are most of the call at 12,600 sources; the query is the same).
"""

from __future__ import annotations

from typing import Final
from uuid import UUID

import asyncpg

from core.domain.entities import Entity
from core.stores.port import CorpusSummary, EntitySummary, SourceSummary
from core.stores.postgres.frequencies import vocabulary
from core.stores.postgres.lookups import ENTITY_COUNTS

#: Each source of a workspace and its passages.
SOURCE_COUNTS: Final = (
    "SELECT source_id, count(*) AS n FROM passages WHERE tenant_id = $1 GROUP BY source_id"
)


async def source_summaries(conn: asyncpg.Connection, tenant_id: UUID) -> list[SourceSummary]:
    rows = await conn.fetch(SOURCE_COUNTS + " ORDER BY source_id", tenant_id)
    return [SourceSummary(source_id=r["source_id"], passages=r["n"]) for r in rows]


async def source_passage_counts(conn: asyncpg.Connection, tenant_id: UUID) -> dict[str, int]:
    return dict(await conn.fetch(SOURCE_COUNTS, tenant_id))


async def entity_summaries(conn: asyncpg.Connection, tenant_id: UUID) -> list[EntitySummary]:
    rows = await conn.fetch(ENTITY_COUNTS, tenant_id)
    return [
        EntitySummary(entity=Entity(id=r["id"], name=r["name"], kind=r["kind"]), passages=r["n"])
        for r in rows
    ]


async def corpus_summary(conn: asyncpg.Connection, tenant_id: UUID) -> CorpusSummary:
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        totals = await conn.fetchrow(
            "SELECT passages, tokens FROM tenant_counters WHERE tenant_id = $1", tenant_id
        )
        sources = await conn.fetchval(
            "SELECT count(DISTINCT source_id) FROM passages WHERE tenant_id = $1", tenant_id
        )
        terms = await vocabulary(conn, tenant_id)
    passages = 0 if totals is None else int(totals["passages"])
    tokens = 0 if totals is None else int(totals["tokens"])
    return CorpusSummary(
        sources=int(sources),
        passages=passages,
        tokens=tokens,
        avg_doc_length=tokens / passages if passages else 0.0,
        vocabulary=terms,
    )
