"""The PostgreSQL store's entity corrections: merges, kinds and hidden entities.

A mixin of ``PostgresChunkStore`` (like ``judging``): it needs only the store's bounded,
retried ``_run``. One row per corrected entity, keyed (tenant_id, entity_id) and referring to
its workspace (``ON DELETE CASCADE``, and deleted with the tombstone), so Citus co-locates it
with the workspace and a correction for an unknown workspace fails on the key (a KeyError
here). Rejected: a column on ``entities``, whose rows are written by every upload (an upsert
would have to leave the analyst's columns alone) and can be orphaned while a correction must
outlive a source's deletion and come back with its next upload.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, TypeVar
from uuid import UUID

import asyncpg

from core.domain.entities import EntityCorrection
from core.stores.postgres.writes import locked_profiles

T = TypeVar("T")

#: One entity's correction, written over the one before.
_UPSERT: Final = """
INSERT INTO entity_corrections (tenant_id, entity_id, merged_into, hidden)
VALUES ($1, $2, $3, $4)
ON CONFLICT (tenant_id, entity_id) DO UPDATE
SET merged_into = EXCLUDED.merged_into, hidden = EXCLUDED.hidden
"""


class PostgresCorrections:
    """Entity corrections in ``entity_corrections``."""

    if TYPE_CHECKING:

        async def _run(
            self,
            operation: Callable[[asyncpg.Connection], Awaitable[T]],
            *,
            writing: str | None = None,
        ) -> T: ...

    async def correct_entity(self, correction: EntityCorrection, tenant_id: UUID) -> None:
        async def write(conn: asyncpg.Connection) -> None:
            try:
                async with conn.transaction():
                    await locked_profiles(conn, [tenant_id])  # not a deleted workspace
                    if correction.empty:
                        await conn.execute(
                            "DELETE FROM entity_corrections WHERE tenant_id = $1 "
                            "AND entity_id = $2",
                            tenant_id,
                            correction.entity_id,
                        )
                        return
                    await conn.execute(
                        _UPSERT,
                        tenant_id,
                        correction.entity_id,
                        correction.merged_into,
                        correction.hidden,
                    )
            except asyncpg.ForeignKeyViolationError:
                raise KeyError(f"no workspace with tenant id {tenant_id}") from None

        await self._run(write, writing="an entity correction")

    async def entity_corrections(self, tenant_id: UUID) -> list[EntityCorrection]:
        async def read(conn: asyncpg.Connection) -> list[EntityCorrection]:
            rows = await conn.fetch(
                "SELECT entity_id, merged_into, hidden FROM entity_corrections "
                "WHERE tenant_id = $1 ORDER BY entity_id",
                tenant_id,
            )
            return [EntityCorrection(**dict(r)) for r in rows]

        return await self._run(read)
