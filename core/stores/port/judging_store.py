"""The judging part of the store port: what an analyst's grades and runs need kept."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable
from uuid import UUID

from core.domain.judging import (
    Judgment,
    QuerySet,
    QuerySetSummary,
    SavedRun,
    SavedRunSummary,
)


@runtime_checkable
class JudgingStore(Protocol):
    """Query sets, judgments and saved runs (see ``core.domain.judging``).

    Each belongs to a workspace: writing one for an unknown workspace raises KeyError (so
    nothing can be written into a deleted one), and ``delete_workspace`` deletes them all."""

    async def save_query_set(self, query_set: QuerySet) -> None:
        """Create the set, or replace the one of the same name in its workspace."""
        ...

    async def list_query_sets(self, tenant_id: UUID) -> list[QuerySetSummary]:
        """Ordered by name."""
        ...

    async def get_query_set(self, tenant_id: UUID, name: str) -> QuerySet | None: ...

    async def delete_query_set(self, tenant_id: UUID, name: str) -> bool:
        """Returns False when there was no such set. Its queries' judgments stay."""
        ...

    async def put_judgments(self, tenant_id: UUID, judgments: Sequence[Judgment]) -> int:
        """Insert or replace by (query, passage, rater), all or nothing; returns how many.

        A judgment of another tenant is rejected (ValueError) before anything is written;
        a key named twice in one call keeps the last.
        """
        ...

    async def list_judgments(
        self, tenant_id: UUID, queries: Sequence[str] | None = None
    ) -> list[Judgment]:
        """The workspace's judgments (of ``queries`` only, when given), ordered by query,
        passage, rater."""
        ...

    async def delete_judgment(
        self, tenant_id: UUID, query: str, chunk_id: str, rater: str
    ) -> bool: ...

    async def save_run(self, run: SavedRun) -> None:
        """Keep a saved run (a run id saved again replaces it)."""
        ...

    async def list_runs(self, tenant_id: UUID) -> list[SavedRunSummary]:
        """Ordered by when they were saved, then run id."""
        ...

    async def get_run(self, tenant_id: UUID, run_id: UUID) -> SavedRun | None: ...

    async def delete_run(self, tenant_id: UUID, run_id: UUID) -> bool: ...
