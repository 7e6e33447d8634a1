"""The PostgreSQL store's judging half: query sets, judgments and saved runs.

A mixin of ``PostgresChunkStore`` (like the in-memory store's ``InMemoryJudging``): it needs
only the store's bounded, retried ``_run``. Each table's key leads with tenant_id and each
refers to its workspace (``ON DELETE CASCADE``), so Citus can co-locate them with the
workspace, a write for an unknown or just-deleted workspace fails on the key (a KeyError
here) rather than leaving rows nobody can reach, and deleting the workspace deletes them
in the same statement. A query set and a saved run are one jsonb document each: they are
read whole, never queried inside, and a saved run must outlive the rows it was measured on.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

import asyncpg

from core.domain.judging import (
    Judgment,
    QuerySet,
    QuerySetSummary,
    RunRecord,
    SavedRun,
    SavedRunSummary,
    SetQuery,
)
from core.stores.checks import checked_judgments
from core.stores.port import is_storable
from core.stores.postgres.writes import locked_profiles

T = TypeVar("T")

#: A rater's grade of a pair, written again over their earlier one.
_UPSERT_JUDGMENT = """
INSERT INTO judgments (tenant_id, query, chunk_id, rater, source_id, grade, judged_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (tenant_id, query, chunk_id, rater) DO UPDATE
SET source_id = EXCLUDED.source_id, grade = EXCLUDED.grade, judged_at = EXCLUDED.judged_at
"""
#: A workspace's judgments, of the queries in $2 unless it is NULL.
_JUDGMENTS = """
SELECT tenant_id, query, chunk_id, rater, source_id, grade, judged_at FROM judgments
WHERE tenant_id = $1 AND ($2::text[] IS NULL OR query = ANY($2::text[]))
ORDER BY query, chunk_id, rater
"""


def _unknown(tenant_id: UUID) -> KeyError:
    return KeyError(f"no workspace with tenant id {tenant_id}")


def _judgment(row: asyncpg.Record) -> Judgment:
    return Judgment(**dict(row))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


class PostgresJudging:
    """Query sets, judgments and saved runs in three tables keyed by tenant first."""

    if TYPE_CHECKING:

        async def _run(
            self,
            operation: Callable[[asyncpg.Connection], Awaitable[T]],
            *,
            writing: str | None = None,
        ) -> T: ...

    async def save_query_set(self, query_set: QuerySet) -> None:
        queries = _json([[q.query_id, q.text] for q in query_set.queries])

        async def write(conn: asyncpg.Connection) -> None:
            try:
                async with conn.transaction():
                    await locked_profiles(conn, [query_set.tenant_id])  # not a deleted workspace
                    await conn.execute(
                        "INSERT INTO query_sets (tenant_id, name, queries, created_at)"
                        " VALUES ($1, $2, $3::jsonb, $4) ON CONFLICT (tenant_id, name) DO UPDATE"
                        " SET queries = EXCLUDED.queries, created_at = EXCLUDED.created_at",
                        query_set.tenant_id,
                        query_set.name,
                        queries,
                        query_set.created_at,
                    )
            except asyncpg.ForeignKeyViolationError:
                raise _unknown(query_set.tenant_id) from None

        await self._run(write, writing=f"the query set “{query_set.name}”")

    async def list_query_sets(self, tenant_id: UUID) -> list[QuerySetSummary]:
        async def read(conn: asyncpg.Connection) -> list[QuerySetSummary]:
            rows = await conn.fetch(
                "SELECT name, jsonb_array_length(queries) AS queries, created_at"
                " FROM query_sets WHERE tenant_id = $1 ORDER BY name",
                tenant_id,
            )
            return [QuerySetSummary(**dict(r)) for r in rows]

        return await self._run(read)

    async def get_query_set(self, tenant_id: UUID, name: str) -> QuerySet | None:
        if not is_storable(name):  # NUL or a lone surrogate: no set is so named, as in memory
            return None

        async def read(conn: asyncpg.Connection) -> QuerySet | None:
            row = await conn.fetchrow(
                "SELECT queries, created_at FROM query_sets WHERE tenant_id = $1 AND name = $2",
                tenant_id,
                name,
            )
            if row is None:
                return None
            queries = tuple(SetQuery(query_id=i, text=t) for i, t in json.loads(row["queries"]))
            return QuerySet(
                tenant_id=tenant_id, name=name, queries=queries, created_at=row["created_at"]
            )

        return await self._run(read)

    async def delete_query_set(self, tenant_id: UUID, name: str) -> bool:
        if not is_storable(name):
            return False

        async def write(conn: asyncpg.Connection) -> bool:
            status = await conn.execute(
                "DELETE FROM query_sets WHERE tenant_id = $1 AND name = $2", tenant_id, name
            )
            return bool(status != "DELETE 0")

        return await self._run(write, writing=f"the deletion of the query set “{name}”")

    async def put_judgments(self, tenant_id: UUID, judgments: Sequence[Judgment]) -> int:
        batch = checked_judgments(tenant_id, judgments)
        if not batch:
            return 0
        rows = [
            (tenant_id, j.query, j.chunk_id, j.rater, j.source_id, j.grade, j.judged_at)
            for j in batch
        ]

        async def write(conn: asyncpg.Connection) -> None:
            try:
                async with conn.transaction():
                    await locked_profiles(conn, [tenant_id])  # not a deleted workspace
                    await conn.executemany(_UPSERT_JUDGMENT, rows)
            except asyncpg.ForeignKeyViolationError:
                raise _unknown(tenant_id) from None

        await self._run(write, writing=f"{len(batch)} judgments")
        return len(batch)

    async def list_judgments(
        self, tenant_id: UUID, queries: Sequence[str] | None = None
    ) -> list[Judgment]:
        async def read(conn: asyncpg.Connection) -> list[Judgment]:
            # A query no store can hold has no judgment (PostgreSQL would refuse the read).
            wanted = None if queries is None else [q for q in queries if is_storable(q)]
            rows = await conn.fetch(_JUDGMENTS, tenant_id, wanted)
            return [_judgment(r) for r in rows]

        return await self._run(read)

    async def delete_judgment(self, tenant_id: UUID, query: str, chunk_id: str, rater: str) -> bool:
        if not all(is_storable(text) for text in (query, chunk_id, rater)):
            return False

        async def write(conn: asyncpg.Connection) -> bool:
            status = await conn.execute(
                "DELETE FROM judgments WHERE tenant_id = $1 AND query = $2 AND chunk_id = $3"
                " AND rater = $4",
                tenant_id,
                query,
                chunk_id,
                rater,
            )
            return bool(status != "DELETE 0")

        return await self._run(write, writing="the deletion of a judgment")

    async def save_run(self, run: SavedRun) -> None:
        record = _json(run.record.model_dump(mode="json"))

        async def write(conn: asyncpg.Connection) -> None:
            try:
                async with conn.transaction():
                    await locked_profiles(conn, [run.tenant_id])  # not a deleted workspace
                    await conn.execute(
                        "INSERT INTO saved_runs"
                        " (tenant_id, run_id, name, saved_at, query_set, record)"
                        " VALUES ($1, $2, $3, $4, $5, $6::jsonb) ON CONFLICT (tenant_id, run_id)"
                        " DO UPDATE SET name = EXCLUDED.name, saved_at = EXCLUDED.saved_at,"
                        " query_set = EXCLUDED.query_set, record = EXCLUDED.record",
                        run.tenant_id,
                        run.run_id,
                        run.name,
                        run.saved_at,
                        run.record.query_set,
                        record,
                    )
            except asyncpg.ForeignKeyViolationError:
                raise _unknown(run.tenant_id) from None

        await self._run(write, writing=f"the saved run “{run.name}”")

    async def list_runs(self, tenant_id: UUID) -> list[SavedRunSummary]:
        async def read(conn: asyncpg.Connection) -> list[SavedRunSummary]:
            rows = await conn.fetch(
                "SELECT run_id, name, saved_at, query_set FROM saved_runs"
                " WHERE tenant_id = $1 ORDER BY saved_at, run_id",
                tenant_id,
            )
            return [SavedRunSummary(**dict(r)) for r in rows]

        return await self._run(read)

    async def get_run(self, tenant_id: UUID, run_id: UUID) -> SavedRun | None:
        async def read(conn: asyncpg.Connection) -> SavedRun | None:
            row = await conn.fetchrow(
                "SELECT name, saved_at, record FROM saved_runs"
                " WHERE tenant_id = $1 AND run_id = $2",
                tenant_id,
                run_id,
            )
            if row is None:
                return None
            return SavedRun(
                tenant_id=tenant_id,
                run_id=run_id,
                name=row["name"],
                saved_at=row["saved_at"],
                record=RunRecord.model_validate(json.loads(row["record"])),
            )

        return await self._run(read)

    async def delete_run(self, tenant_id: UUID, run_id: UUID) -> bool:
        async def write(conn: asyncpg.Connection) -> bool:
            status = await conn.execute(
                "DELETE FROM saved_runs WHERE tenant_id = $1 AND run_id = $2", tenant_id, run_id
            )
            return bool(status != "DELETE 0")

        return await self._run(write, writing="the deletion of a saved run")
