"""The entities part of the store port: entities and the passages that mention them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable
from uuid import UUID

from core.domain.chunks import StoredChunk
from core.domain.entities import Entity
from core.stores.port.summaries import EntitySummary


@runtime_checkable
class EntityStore(Protocol):
    """The entities passages mention, per tenant."""

    async def get_by_entity(self, entity_id: UUID, tenant_id: UUID) -> list[StoredChunk]:
        """Ordered by source_id, chunk_index, id."""
        ...

    async def list_entities(self, tenant_id: UUID) -> list[EntitySummary]:
        """Entities mentioned by at least one passage; passages descending, then name, id."""
        ...

    async def upsert_entities(self, entities: Sequence[Entity], tenant_id: UUID) -> int: ...

    async def get_entities(self, entity_ids: Sequence[UUID], tenant_id: UUID) -> list[Entity]:
        """The known entities among ``entity_ids``, in the order asked; unknown ids omitted."""
        ...
