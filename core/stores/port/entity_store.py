"""The entities part of the store port: entities, the passages that mention them, corrections.

Corrections (``core.domain.entities.corrections``) are kept by the store and applied by the
service: the store only keeps what the analyst said, per workspace, and forgets it with the
workspace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable
from uuid import UUID

from core.domain.chunks import StoredChunk
from core.domain.entities import Entity, EntityCorrection
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

    async def correct_entity(self, correction: EntityCorrection, tenant_id: UUID) -> None:
        """Keep ``correction`` as the tenant's one correction of its entity, replacing any
        before; an empty one removes it. ``KeyError`` for a workspace that does not exist,
        ``WorkspaceGone`` (or ``KeyError``) for one deleted."""
        ...

    async def entity_corrections(self, tenant_id: UUID) -> list[EntityCorrection]:
        """The tenant's corrections, by entity id; none for an unknown workspace."""
        ...
