"""Citus: every table distributed by ``tenant_id``, co-located, so a workspace lives on one node.

Distribution happens at connect, like the rest of the schema: when the database has the
``citus`` extension (a Citus coordinator), every table not yet distributed is distributed,
in the transaction and under the advisory lock that create the schema. A second connect finds
every table in ``pg_dist_partition`` and changes nothing; a database created before Citus was
installed is distributed in place (Citus copies each table's rows into its shards, then the
coordinator's local copy is truncated). The rejected alternative, a separate
``python -m core db distribute`` step, leaves an app running on half-distributed tables when
someone forgets it, and saves nothing: the check is one catalogue read per connect.

One reference table, ``workspace_names`` (a row per live workspace: id, name, name key): a
name is global by nature and the table small, and every service call that names a workspace
looks its name up (``workspaces.find``); distributed, each lookup read every shard. Every
node holds a copy, so the lookup is local; a creation, rename or deletion writes the copies
in one two-phase commit. ``workspaces`` itself stays distributed: it is read and written per
workspace (access checks, profile locks), and as a reference table each of those writes would
go to every node too, to save the one statement that must fan out anyway (the list of every
workspace, a few rows per node).
"""

from __future__ import annotations

from typing import Final

import asyncpg

#: The table every other is co-located with: its shard groups are the workspaces' placements.
ANCHOR: Final = "workspaces"
#: The distribution column of every table (every key leads with it).
COLUMN: Final = "tenant_id"
#: Tables copied whole to every node instead (small, read across workspaces).
REFERENCE: Final = ("workspace_names",)


async def is_coordinator(conn: asyncpg.Connection) -> bool:
    """Whether this database has the Citus extension (so its tables are to be distributed)."""
    return bool(
        await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')")
    )


async def store_tables(conn: asyncpg.Connection) -> list[str]:
    """The store's tables (every table of the schema has ``tenant_id``), the anchor first: the
    others reference it. Read from the catalogue, so a table added to the schema is
    distributed without a list here to keep in step."""
    rows = await conn.fetch(
        "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
        "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' "
        "AND a.attname = $1 AND NOT a.attisdropped ORDER BY c.relname <> $2, c.relname",
        COLUMN,
        ANCHOR,
    )
    return [row["relname"] for row in rows]


async def distribute(conn: asyncpg.Connection) -> list[str]:
    """Distribute every table not yet distributed (``REFERENCE`` ones to every node); the
    tables distributed now, in order.

    The caller holds the schema's transaction and lock, with ``search_path`` on the schema.
    """
    if not await is_coordinator(conn):
        return []
    rows = await conn.fetch(
        "SELECT logicalrelid::regclass::text AS name FROM pg_dist_partition "
        "WHERE logicalrelid = ANY(SELECT to_regclass(t) FROM unnest($1::text[]) AS t)",
        tables := await store_tables(conn),
    )
    done = {row["name"].rsplit(".", 1)[-1] for row in rows}
    todo = [table for table in tables if table not in done]
    for table in todo:
        if table in REFERENCE:
            await conn.execute("SELECT create_reference_table($1::text::regclass)", table)
            continue
        colocate = "default" if table == ANCHOR else ANCHOR
        await conn.execute(
            "SELECT create_distributed_table($1::text::regclass, $2, colocate_with => $3)",
            table,
            COLUMN,
            colocate,
        )
    for table in todo:
        # The coordinator kept its copy of rows that were there before: its shards have them.
        await conn.execute(
            "SELECT truncate_local_data_after_distributing_table($1::text::regclass)", table
        )
    return todo
