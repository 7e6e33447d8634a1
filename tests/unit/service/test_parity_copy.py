"""The parity check's in-memory reference: a whole copy of the workspace, read and written in
batches (one read of a batch's sources, one write).

Copied from an in-memory workspace here (the PostgreSQL copy is asked end to end by
tests/stores/test_parity_check.py); the batch is made small so a handful of sources spans
several writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from core.domain.chunks import StoredChunk
from core.domain.entities import Entity
from core.service import parity
from core.stores.memory import InMemoryChunkStore
from core.stores.port import Workspace
from tests.stores.compliance import make_chunk

#: Sources in the copied workspace, and passages in each.
SOURCES, PASSAGES = 13, 3


def _chunk(tenant: uuid.UUID, source: str, index: int, entity: Entity) -> StoredChunk:
    text = f"Flutter of wing {source} at Mach {index}, tides and {entity.name}"
    return make_chunk(tenant, source, text, index, entity_ids=[entity.entity_id])


async def test_a_parity_copy_writes_whole_sources_a_batch_at_a_time_and_misses_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tenant = uuid.uuid4()
    original = InMemoryChunkStore()
    await original.upsert_workspace(Workspace(tenant_id=tenant, name="copied"))
    entities = [Entity(name=f"Station {n}", kind="place") for n in range(SOURCES)]
    await original.upsert_entities(entities, tenant)
    for n, entity in enumerate(entities):
        await original.upsert_many([_chunk(tenant, f"s{n:02}", i, entity) for i in range(PASSAGES)])
    writes: list[int] = []  # passages per write into the copy

    async def replace_sources(
        self: InMemoryChunkStore,
        tenant_id: uuid.UUID,
        sources: Sequence[tuple[str, Sequence[StoredChunk]]],
        entities: Sequence[Entity] = (),
    ) -> list[int]:
        writes.append(sum(len(chunks) for _, chunks in sources))
        return await real_replace_sources(self, tenant_id, sources, entities)

    async def one_write(self: InMemoryChunkStore, *args: Any) -> int:
        raise AssertionError("the copy wrote passages or entities outside its batches")

    real_replace_sources = InMemoryChunkStore.replace_sources
    monkeypatch.setattr(parity, "COPY_BATCH_PASSAGES", 2 * PASSAGES)
    monkeypatch.setattr(InMemoryChunkStore, "replace_sources", replace_sources)
    monkeypatch.setattr(InMemoryChunkStore, "upsert_many", one_write)
    monkeypatch.setattr(InMemoryChunkStore, "upsert_entities", one_write)
    monkeypatch.setattr(InMemoryChunkStore, "replace_source", one_write)
    reads: list[int] = []  # sources per read of the original
    real_get_by_sources = original.get_by_sources

    async def get_by_sources(sources: Sequence[str], tenant_id: uuid.UUID) -> Any:
        reads.append(len(sources))
        return await real_get_by_sources(sources, tenant_id)

    async def one_read(*args: Any) -> Any:
        raise AssertionError("the copy read a source on its own")

    monkeypatch.setattr(original, "get_by_sources", get_by_sources)
    monkeypatch.setattr(original, "get_by_source", one_read)
    copy = await parity.copy_workspace(original, tenant)
    monkeypatch.undo()
    assert writes == [2 * PASSAGES] * (SOURCES // 2) + [PASSAGES]  # the last source alone
    assert reads == [2] * (SOURCES // 2) + [1]  # each batch's sources in one read
    assert await copy.list_sources(tenant) == await original.list_sources(tenant)
    for source in await original.list_sources(tenant):
        assert await copy.get_by_source(source.source_id, tenant) == (
            await original.get_by_source(source.source_id, tenant)
        )
    assert await copy.list_entities(tenant) == await original.list_entities(tenant)
    assert await copy.corpus_summary(tenant) == await original.corpus_summary(tenant)
    await copy.close()
    await original.close()
