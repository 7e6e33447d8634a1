"""The in-memory store's judging half: query sets, judgments and saved runs per workspace.

A mixin of ``InMemoryChunkStore`` rather than more lines in ``store.py``: it shares the
store's one lock and its workspaces (a write for an unknown workspace is refused, and
``delete_workspace`` drops a tenant's judging with its passages), and nothing else. The
models are frozen; saved runs hold dicts, so they are deep-copied in and out like chunks.
A judgment is kept as a plain tuple of atoms under its key (``KeptJudgment``), for the
reason ``kept`` gives for passages: the collector untracks such a tuple, where a model, its
dict and its fields set were three objects a judgment that every full collection walked (at
issue 49's probes 49,228 judgments were ~4/5 of the process's tracked objects, and a full
collection ~0.1 s of a diagnosis that an Evaluate never paid). A ``Judgment`` is built on the
way out.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Final
from uuid import UUID

from core.domain.judging import (
    Judgment,
    QuerySet,
    QuerySetSummary,
    SavedRun,
    SavedRunSummary,
)
from core.domain.models import built
from core.stores.checks import checked_judgments
from core.stores.port import Workspace, WorkspaceGone

#: A judgment's key within its workspace: (query, passage, rater).
JudgmentKey = tuple[str, str, str]
#: The rest of a judgment as kept: (source id, grade, judged at).
KeptJudgment = tuple[str, int, datetime]
#: The fields set every judgment read out shares (``built``; the model is frozen).
_JUDGMENT_FIELDS: Final = set(Judgment.model_fields)


class InMemoryJudging:
    """Query sets by name, judgments by (query, passage, rater), runs by id, per tenant."""

    _lock: threading.Lock
    _workspaces: dict[UUID, Workspace]
    _deleted: set[UUID]

    def __init__(self) -> None:
        self._query_sets: dict[UUID, dict[str, QuerySet]] = {}
        self._judgments: dict[UUID, dict[JudgmentKey, KeptJudgment]] = {}
        self._runs: dict[UUID, dict[UUID, SavedRun]] = {}

    def _known(self, tenant_id: UUID) -> None:
        """Under the lock: refuse a write into a workspace that does not exist (any more)."""
        if tenant_id in self._deleted:
            raise WorkspaceGone(tenant_id)
        if tenant_id not in self._workspaces:
            raise KeyError(f"no workspace with tenant id {tenant_id}")

    def _drop_judging(self, tenant_id: UUID) -> None:
        """Under the lock: forget the tenant's query sets, judgments and runs."""
        for kept in (self._query_sets, self._judgments, self._runs):
            kept.pop(tenant_id, None)

    async def save_query_set(self, query_set: QuerySet) -> None:
        with self._lock:
            self._known(query_set.tenant_id)
            self._query_sets.setdefault(query_set.tenant_id, {})[query_set.name] = query_set

    async def list_query_sets(self, tenant_id: UUID) -> list[QuerySetSummary]:
        with self._lock:
            sets = list(self._query_sets.get(tenant_id, {}).values())
        return [
            QuerySetSummary(name=s.name, queries=len(s.queries), created_at=s.created_at)
            for s in sorted(sets, key=lambda s: s.name)
        ]

    async def get_query_set(self, tenant_id: UUID, name: str) -> QuerySet | None:
        with self._lock:
            return self._query_sets.get(tenant_id, {}).get(name)

    async def delete_query_set(self, tenant_id: UUID, name: str) -> bool:
        with self._lock:
            return self._query_sets.get(tenant_id, {}).pop(name, None) is not None

    async def put_judgments(self, tenant_id: UUID, judgments: Sequence[Judgment]) -> int:
        batch = checked_judgments(tenant_id, judgments)
        with self._lock:
            self._known(tenant_id)
            kept = self._judgments.setdefault(tenant_id, {})
            for j in batch:
                kept[(j.query, j.chunk_id, j.rater)] = (j.source_id, j.grade, j.judged_at)
        return len(batch)

    async def list_judgments(
        self, tenant_id: UUID, queries: Sequence[str] | None = None
    ) -> list[Judgment]:
        wanted = None if queries is None else set(queries)
        with self._lock:
            found = [
                (key, rest)
                for key, rest in self._judgments.get(tenant_id, {}).items()
                if wanted is None or key[0] in wanted
            ]
        found.sort(key=lambda item: item[0])
        return [
            built(
                Judgment,
                {
                    "tenant_id": tenant_id,
                    "query": query,
                    "chunk_id": chunk_id,
                    "source_id": source_id,
                    "grade": grade,
                    "rater": rater,
                    "judged_at": judged_at,
                },
                _JUDGMENT_FIELDS,
            )
            for (query, chunk_id, rater), (source_id, grade, judged_at) in found
        ]

    async def delete_judgment(self, tenant_id: UUID, query: str, chunk_id: str, rater: str) -> bool:
        with self._lock:
            kept = self._judgments.get(tenant_id, {})
            return kept.pop((query, chunk_id, rater), None) is not None

    async def save_run(self, run: SavedRun) -> None:
        copied = run.model_copy(deep=True)
        with self._lock:
            self._known(run.tenant_id)
            self._runs.setdefault(run.tenant_id, {})[run.run_id] = copied

    async def list_runs(self, tenant_id: UUID) -> list[SavedRunSummary]:
        with self._lock:
            runs = list(self._runs.get(tenant_id, {}).values())
        return [
            SavedRunSummary(
                run_id=r.run_id, name=r.name, saved_at=r.saved_at, query_set=r.record.query_set
            )
            for r in sorted(runs, key=lambda r: (r.saved_at, r.run_id))
        ]

    async def get_run(self, tenant_id: UUID, run_id: UUID) -> SavedRun | None:
        with self._lock:
            found = self._runs.get(tenant_id, {}).get(run_id)
        return None if found is None else found.model_copy(deep=True)

    async def delete_run(self, tenant_id: UUID, run_id: UUID) -> bool:
        with self._lock:
            return self._runs.get(tenant_id, {}).pop(run_id, None) is not None
