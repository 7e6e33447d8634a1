"""The in-memory store's entity corrections: what an analyst said about an entity, per workspace.

A mixin of ``InMemoryChunkStore`` (as ``memory.judging`` is) rather than more lines in
``store.py``, which is at its size bound: it shares the store's one lock and its workspaces (a
correction for an unknown or deleted workspace is refused, and ``delete_workspace`` drops a
tenant's corrections), and nothing of the passages. Corrections are frozen models, so they are
kept and handed out as they are.
"""

from __future__ import annotations

import threading
from uuid import UUID

from core.domain.entities import EntityCorrection
from core.stores.port import Workspace, WorkspaceGone


class InMemoryCorrections:
    """Corrections by entity id, per tenant, under the store's lock."""

    _lock: threading.Lock
    _workspaces: dict[UUID, Workspace]
    _deleted: set[UUID]

    def __init__(self) -> None:
        self._corrections: dict[UUID, dict[UUID, EntityCorrection]] = {}
        super().__init__()

    def _drop_corrections(self, tenant_id: UUID) -> None:
        """Under the lock: forget the tenant's corrections."""
        self._corrections.pop(tenant_id, None)

    async def correct_entity(self, correction: EntityCorrection, tenant_id: UUID) -> None:
        with self._lock:
            if tenant_id in self._deleted:
                raise WorkspaceGone(tenant_id)
            if tenant_id not in self._workspaces:
                raise KeyError(f"no workspace with tenant id {tenant_id}")
            kept = self._corrections.setdefault(tenant_id, {})
            if correction.empty:
                kept.pop(correction.entity_id, None)
            else:
                kept[correction.entity_id] = correction

    async def entity_corrections(self, tenant_id: UUID) -> list[EntityCorrection]:
        with self._lock:
            kept = self._corrections.get(tenant_id, {})
            return [kept[e] for e in sorted(kept)]
