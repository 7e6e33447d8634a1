"""The in-memory store's workspace records: lookups, members and owners.

A mixin of ``InMemoryChunkStore`` (as ``memory.judging`` is) rather than more lines in
``store.py``: it shares the store's one lock, its workspaces and the ids of deleted ones, and
nothing of the passages. Creating a workspace (``upsert_workspace``) stays in the store: it
re-tokenises passages written before their workspace existed. Workspaces are frozen models,
copied in and out.
"""

from __future__ import annotations

import threading
from uuid import UUID

from core.domain.names import name_key
from core.stores.port import Workspace, member_email


class InMemoryWorkspaces:
    """Reads and member changes of the store's workspace records, under its lock."""

    _lock: threading.Lock
    _workspaces: dict[UUID, Workspace]
    _deleted: set[UUID]

    async def get_workspace(self, tenant_id: UUID) -> Workspace | None:
        with self._lock:
            known = self._workspaces.get(tenant_id)
            return None if known is None else known.model_copy()

    async def retired(self, tenant_id: UUID) -> bool:
        with self._lock:
            return tenant_id in self._deleted

    async def find_workspace(self, name: str) -> Workspace | None:
        key = name_key(name)
        with self._lock:
            found = next((w for w in self._workspaces.values() if name_key(w.name) == key), None)
            return None if found is None else found.model_copy()

    async def add_member(self, tenant_id: UUID, email: str) -> bool:
        email = member_email(email)
        with self._lock:
            known = self._workspaces.get(tenant_id)
            if known is None:
                raise KeyError(f"no workspace with tenant id {tenant_id}")
            if email == known.owner or email in known.members:
                return False
            members = tuple(sorted((*known.members, email)))
            self._workspaces[tenant_id] = known.model_copy(update={"members": members})
            return True

    async def set_owner(self, tenant_id: UUID, email: str) -> None:
        email = member_email(email)
        with self._lock:
            known = self._workspaces.get(tenant_id)
            if known is None:
                raise KeyError(f"no workspace with tenant id {tenant_id}")
            members = tuple(m for m in known.members if m != email)
            self._workspaces[tenant_id] = known.model_copy(
                update={"owner": email, "members": members}
            )

    async def remove_member(self, tenant_id: UUID, email: str) -> bool:
        email = member_email(email)
        with self._lock:
            known = self._workspaces.get(tenant_id)
            if known is None:
                raise KeyError(f"no workspace with tenant id {tenant_id}")
            if email == known.owner:
                raise ValueError("the owner of a workspace cannot be removed from it")
            if email not in known.members:
                return False
            members = tuple(m for m in known.members if m != email)
            self._workspaces[tenant_id] = known.model_copy(update={"members": members})
            return True

    async def list_workspaces(self) -> list[Workspace]:
        with self._lock:
            spaces = [w.model_copy() for w in self._workspaces.values()]
        return sorted(spaces, key=lambda w: (w.name, w.tenant_id))
