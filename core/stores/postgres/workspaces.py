"""Workspace rows: name, profile, owner and members, read and locked for writes.

Membership changes hold the workspace row FOR KEY SHARE (profiles, in ``writes``, FOR SHARE
or FOR UPDATE). Apart from the store class so that class stays a thin face; the rejected
alternative, this SQL inline in each store method, made the class the largest module.
"""

from __future__ import annotations

from typing import Final
from uuid import UUID

import asyncpg

from core.stores.port import Workspace

#: A workspace row with its members (sorted), for ``workspace_from_row``; add WHERE/ORDER BY.
WORKSPACES: Final = """
SELECT w.tenant_id, w.name, w.profile, w.owner,
       ARRAY(SELECT m.email FROM workspace_members m
             WHERE m.tenant_id = w.tenant_id ORDER BY m.email) AS members
FROM workspaces w
"""
#: One workspace row with its members: the members' subquery names the tenant itself, so Citus
#: routes the statement to the tenant's node (correlated with ``w.tenant_id`` alone, it ran
#: on every shard).
WORKSPACE: Final = """
SELECT w.tenant_id, w.name, w.profile, w.owner,
       ARRAY(SELECT m.email FROM workspace_members m
             WHERE m.tenant_id = $1 ORDER BY m.email) AS members
FROM workspaces w WHERE w.tenant_id = $1
"""


def workspace_from_row(row: asyncpg.Record) -> Workspace:
    return Workspace(
        tenant_id=row["tenant_id"],
        name=row["name"],
        profile=row["profile"],
        owner=row["owner"],
        members=tuple(row["members"]),
    )


async def locked_owner(conn: asyncpg.Connection, tenant_id: UUID) -> str | None:
    """The workspace's owner, its row held until commit; KeyError for an unknown workspace."""
    row = await conn.fetchrow(
        "SELECT owner FROM workspaces WHERE tenant_id = $1 FOR KEY SHARE", tenant_id
    )
    if row is None:
        raise KeyError(f"no workspace with tenant id {tenant_id}")
    owner: str | None = row["owner"]
    return owner
