"""Workspace rows: name, profile, owner and members, read and locked for writes.

Membership changes hold the workspace row FOR KEY SHARE (profiles, in ``writes``, FOR SHARE
or FOR UPDATE). Apart from the store class so that class stays a thin face; the rejected
alternative, this SQL inline in each store method, made the class the largest module.

Names are found through ``workspace_names`` (tenant id, name, name key; one row per live
workspace), written in the transaction that creates, renames or deletes the workspace. On a
Citus cluster it is a reference table (``citus.REFERENCE``): a name is global by nature (a
look-alike of ANY workspace's name is taken) and the table is a small row per workspace, so
each node (the coordinator too) holds all of it and a lookup by name reads it locally, then
the workspace's own shard group. Read from ``workspaces`` (distributed by tenant), every
``find_workspace`` -- every service call that names a workspace -- and every name check ran
on every shard. The cost moved to the rare writes: creating, renaming or deleting a
workspace writes its name row on every node in one two-phase commit.
"""

from __future__ import annotations

import hashlib
from typing import Final
from uuid import UUID

import asyncpg

from core.domain.names import name_key
from core.domain.tokenize import DEFAULT_PROFILE
from core.stores.port import NameTaken, Workspace, WorkspaceGone

#: Live workspace rows with their members (sorted), for ``workspace_from_row``; add AND/ORDER BY.
WORKSPACES: Final = """
SELECT w.tenant_id, w.name, w.profile, w.owner,
       ARRAY(SELECT m.email FROM workspace_members m
             WHERE m.tenant_id = w.tenant_id ORDER BY m.email) AS members
FROM workspaces w
WHERE NOT w.deleted
"""
#: The live workspace a person knows by a name: its exact name first (two old look-alikes
#: from before name keys keep one key between them), else the same ``name_key``.
FIND: Final = (
    "SELECT tenant_id FROM workspace_names WHERE name = $1 OR name_key = $2 "
    "ORDER BY (name = $1) DESC LIMIT 1"
)
#: The name row of a live workspace, written beside its ``workspaces`` row.
_NAME: Final = """
INSERT INTO workspace_names (tenant_id, name, name_key) VALUES ($1, $2, $3)
ON CONFLICT (tenant_id) DO UPDATE SET name = EXCLUDED.name, name_key = EXCLUDED.name_key
"""
#: A database from before the name table: every live workspace's name, with the key
#: ``schema`` gave it (NULL for the second of two old look-alikes).
FILL_NAMES: Final = """
INSERT INTO workspace_names (tenant_id, name, name_key)
SELECT tenant_id, name, name_key FROM workspaces WHERE NOT deleted
ON CONFLICT (tenant_id) DO NOTHING
"""
#: Whether a deleted workspace had the id (true, or no row: NULL).
RETIRED: Final = "SELECT deleted FROM workspaces WHERE tenant_id = $1"
#: Mark a workspace deleted; a tenant without a row gets a tombstone row.
_TOMBSTONE: Final = """
INSERT INTO workspaces (tenant_id, name, deleted) VALUES ($1, '', true)
ON CONFLICT (tenant_id) DO UPDATE SET deleted = true, name_key = NULL
"""
#: A new workspace, or the new name of a live one; no row back for a deleted one.
_UPSERT: Final = """
INSERT INTO workspaces (tenant_id, name, name_key, profile, owner) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (tenant_id) DO UPDATE SET name = EXCLUDED.name, name_key = EXCLUDED.name_key
    WHERE NOT workspaces.deleted
RETURNING (xmax = 0)
"""
#: One workspace row with its members: the members' subquery names the tenant itself, so Citus
#: routes the statement to the tenant's node (correlated with ``w.tenant_id`` alone, it ran
#: on every shard).
WORKSPACE: Final = """
SELECT w.tenant_id, w.name, w.profile, w.owner,
       ARRAY(SELECT m.email FROM workspace_members m
             WHERE m.tenant_id = $1 ORDER BY m.email) AS members
FROM workspaces w WHERE w.tenant_id = $1 AND NOT w.deleted
"""


def workspace_from_row(row: asyncpg.Record) -> Workspace:
    return Workspace(
        tenant_id=row["tenant_id"],
        name=row["name"],
        profile=row["profile"],
        owner=row["owner"],
        members=tuple(row["members"]),
    )


async def find(conn: asyncpg.Connection, name: str) -> Workspace | None:
    """The live workspace a person knows by ``name``: its id from the name table, then its
    row (None when it was deleted between the two reads)."""
    tenant_id = await conn.fetchval(FIND, name.strip(), name_key(name))
    if tenant_id is None:
        return None
    row = await conn.fetchrow(WORKSPACE, tenant_id)
    return None if row is None else workspace_from_row(row)


async def locked_owner(conn: asyncpg.Connection, tenant_id: UUID) -> str | None:
    """The workspace's owner, its row held until commit; KeyError for an unknown workspace."""
    row = await conn.fetchrow(
        "SELECT owner FROM workspaces WHERE tenant_id = $1 AND NOT deleted FOR KEY SHARE",
        tenant_id,
    )
    if row is None:
        raise KeyError(f"no workspace with tenant id {tenant_id}")
    owner: str | None = row["owner"]
    return owner


async def upsert(conn: asyncpg.Connection, workspace: Workspace) -> bool:
    """Create ``workspace`` (as plain; the caller re-indexes to its profile) or rename it,
    inside the caller's transaction; True when created. ``WorkspaceGone`` for a deleted id,
    ``NameTaken`` when another live workspace has the name's key.

    Unique by a lock on the key and a look, not by a unique index: every key and unique
    index leads with tenant_id, so Citus can distribute the tables by it.
    """
    key = name_key(workspace.name)
    await conn.execute("SELECT pg_advisory_xact_lock($1)", _name_lock_key(key))
    holder = await conn.fetchval(
        "SELECT tenant_id FROM workspace_names WHERE name_key = $1 AND tenant_id <> $2",
        key,
        workspace.tenant_id,
    )
    if holder is not None:
        raise NameTaken(f"the workspace name “{workspace.name}” is taken")
    inserted = await conn.fetchval(
        _UPSERT,
        workspace.tenant_id,
        workspace.name,
        key,
        DEFAULT_PROFILE.value,
        workspace.owner,
    )
    if inserted is None:
        raise WorkspaceGone(workspace.tenant_id)
    await conn.execute(_NAME, workspace.tenant_id, workspace.name, key)
    if inserted and workspace.members:
        await conn.executemany(
            "INSERT INTO workspace_members (tenant_id, email) VALUES ($1, $2)",
            [(workspace.tenant_id, m) for m in workspace.members],
        )
    return bool(inserted)


def _name_lock_key(key: str) -> int:
    """A signed 64-bit advisory lock key for one workspace name key."""
    digest = hashlib.sha256(b"workspace name\0" + key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def tombstone(conn: asyncpg.Connection, tenant_id: UUID) -> None:
    """Inside the deletion's transaction, FIRST: the workspace row locked and marked deleted,
    its members gone. Every write locks that row first too (``writes.locked_profiles``), so
    the two take turns and cannot deadlock; a write waiting for it then finds it deleted."""
    await conn.execute(_TOMBSTONE, tenant_id)
    await conn.execute("DELETE FROM workspace_names WHERE tenant_id = $1", tenant_id)
    # The row stays (a tombstone), so ON DELETE CASCADE does not fire: its rows go here.
    for table in (
        "workspace_members",
        "query_sets",
        "judgments",
        "saved_runs",
        "entity_corrections",
    ):
        await conn.execute(f"DELETE FROM {table} WHERE tenant_id = $1", tenant_id)  # noqa: S608
