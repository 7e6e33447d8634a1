"""``python -m core db repair``: each workspace's counters checked against its passages, and
what a deleted workspace left behind removed.

Apart from ``core.stores.postgres.writes`` (the write SQL it reuses), which was at 566 of its
600 lines; the repair is its own job, run by an operator, not by any write.
"""

from __future__ import annotations

from typing import Final
from uuid import UUID

import asyncpg

from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.stores.postgres.resilience import Calls
from core.stores.postgres.writes import ENSURE_COUNTERS, delete_tenant_rows, reindex_rows

#: Every tenant with any row, for ``repair_all``.
_REPAIR_TENANTS: Final = """
SELECT tenant_id FROM tenant_counters UNION SELECT DISTINCT tenant_id FROM passages
UNION SELECT DISTINCT tenant_id FROM term_dead UNION SELECT DISTINCT tenant_id FROM entities
ORDER BY 1
"""


async def repair_tenant(conn: asyncpg.Connection, tenant_id: UUID) -> str | None:
    """Inside the caller's transaction: a deleted workspace's rows removed, or a tenant whose
    counters disagree with its passages given counters and an index rebuilt from them (the
    passages are the truth: the rest derives from their text). None when nothing was wrong."""
    row = await conn.fetchrow(
        "SELECT profile, deleted FROM workspaces WHERE tenant_id = $1 FOR UPDATE", tenant_id
    )
    if row is not None and row["deleted"]:
        removed = await delete_tenant_rows(conn, tenant_id)
        return f"{tenant_id}: removed what a deleted workspace left behind ({removed} passages)"
    actual = await conn.fetchrow(
        "SELECT count(*) AS n, coalesce(max(ordinal) + 1, 0) AS next FROM passages "
        "WHERE tenant_id = $1",
        tenant_id,
    )
    await conn.execute(ENSURE_COUNTERS, tenant_id)
    said = await conn.fetchrow(
        "SELECT passages, next_ordinal FROM tenant_counters WHERE tenant_id = $1", tenant_id
    )
    if said["passages"] == actual["n"] and said["next_ordinal"] >= actual["next"]:
        return None
    await conn.execute(
        "UPDATE tenant_counters SET passages = $2, next_ordinal = greatest(next_ordinal, $3) "
        "WHERE tenant_id = $1",
        tenant_id,
        actual["n"],
        actual["next"],
    )
    profile = DEFAULT_PROFILE if row is None else Profile(row["profile"])
    await reindex_rows(conn, tenant_id, profile, None)
    return (
        f"{tenant_id}: {actual['n']:,} passages (the counters said {said['passages']:,}); "
        "counters, df and posting blocks rebuilt from them"
    )


async def repair_all(calls: Calls) -> list[str]:
    """Each tenant checked and fixed in a transaction of its own (``repair_tenant``); one
    line per tenant fixed."""

    async def tenants(conn: asyncpg.Connection) -> list[UUID]:
        return [r[0] for r in await conn.fetch(_REPAIR_TENANTS)]

    fixed: list[str] = []
    for tenant_id in await calls.run(tenants):

        async def write(conn: asyncpg.Connection, tenant_id: UUID = tenant_id) -> str | None:
            async with conn.transaction():
                return await repair_tenant(conn, tenant_id)

        said = await calls.run(write, writing="the repair")
        if said is not None:
            fixed.append(said)
    return fixed
