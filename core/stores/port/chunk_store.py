"""``ChunkStore``: the whole port, the union of its capabilities; what the service holds.

A Protocol rather than an abstract base class: adapters need no import of each other's base,
and mypy checks conformance structurally. The contract that types cannot say (orders,
truncation, statistics over the whole corpus, isolation of returned objects) is held by
``tests.stores.compliance``, one suite for all.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from core.stores.port.entity_store import EntityStore
from core.stores.port.judging_store import JudgingStore
from core.stores.port.passage_store import PassageStore
from core.stores.port.workspace_store import WorkspaceStore


@runtime_checkable
class ChunkStore(PassageStore, EntityStore, WorkspaceStore, JudgingStore, Protocol):
    """Passages, their term index, entities, workspaces and judging, per tenant."""

    async def close(self) -> None: ...
