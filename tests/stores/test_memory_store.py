"""The in-memory reference under the compliance suite, plus its thread safety."""

from __future__ import annotations

import asyncio
import sys
import threading
import uuid
from collections.abc import AsyncIterator

import pytest

from core.domain.bm25 import corpus_stats
from core.domain.chunks import StoredChunk, was_cut
from core.domain.tokenize import tokenize
from core.stores.memory import InMemoryChunkStore
from core.stores.port import ChunkStore
from tests.stores.compliance import ChunkStoreCompliance, make_chunk
from tests.stores.compliance_analysis import AnalysisCompliance
from tests.stores.compliance_filters import FilterCompliance
from tests.stores.compliance_judging import JudgingCompliance


class TestInMemoryChunkStore(
    ChunkStoreCompliance, JudgingCompliance, FilterCompliance, AnalysisCompliance
):
    @pytest.fixture
    async def store(self) -> AsyncIterator[ChunkStore]:
        yield InMemoryChunkStore()


def test_the_in_memory_store_satisfies_the_port() -> None:
    assert isinstance(InMemoryChunkStore(), ChunkStore)


def test_writers_in_several_threads_keep_the_statistics_exact() -> None:
    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    batches = [
        [
            make_chunk(tenant, f"src{t}", f"shared thread{t} item{i} " * (1 + i % 3), i)
            for i in range(200)
        ]
        for t in range(4)
    ]
    errors: list[BaseException] = []

    async def write(index: int) -> None:
        for chunk in batches[index]:
            await store.upsert_many([chunk])
        if index == 0:
            await store.delete_by_source("src0", tenant)

    def work(index: int) -> None:
        try:
            asyncio.run(write(index))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(batches))]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, to expose races
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    remaining = [c for batch in batches[1:] for c in batch]
    terms = ["shared", "thread0", "thread1", "item7"]
    found = asyncio.run(store.lexical_candidates(terms, tenant, 10_000))
    assert found.stats == corpus_stats([tokenize(c.text) for c in remaining], terms)
    assert len(found.candidates) == len(remaining)


def test_threads_replacing_one_source_leave_exactly_one_version_whole() -> None:
    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    versions = [
        [make_chunk(tenant, "s", f"version{v} part{i} shared", i) for i in range(30)]
        for v in range(4)
    ]
    errors: list[BaseException] = []

    async def write(index: int) -> None:
        for _ in range(100):
            await store.replace_source("s", tenant, versions[index])

    def work(index: int) -> None:
        try:
            asyncio.run(write(index))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(versions))]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible, to expose races
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    final = asyncio.run(store.get_by_source("s", tenant))
    assert final in versions
    terms = ["shared", "version0", "version1", "version2", "version3", "part7"]
    found = asyncio.run(store.lexical_candidates(terms, tenant, 1000))
    assert found.stats == corpus_stats([tokenize(c.text) for c in final], terms)


async def test_a_big_stores_passages_add_nothing_a_full_collection_walks() -> None:
    """At a million passages every full collection walked the corpus (~2 s page pauses); the
    store then froze it once per new image (~30 ms on the loop per write at 300k). Now nothing
    it keeps per passage is tracked: 20,000 passages, with metadata, add a handful of objects."""
    import gc

    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    chunks = [make_chunk(tenant, f"s{i}", f"wing {i}", 0, metadata={"n": i}) for i in range(20_000)]
    gc.collect()
    before = len(gc.get_objects())
    for at in range(0, len(chunks), 5_000):
        await store.upsert_many(chunks[at : at + 5_000])
    await store.lexical_candidates(["wing"], tenant, 10)
    gc.collect()
    gc.collect()  # a tuple is untracked once its items were, the collection after
    added = len(gc.get_objects()) - before  # the caller's chunks alive throughout
    assert added < 200, f"{added} objects more for every full collection to walk"


async def test_a_stores_judgments_add_nothing_a_full_collection_walks() -> None:
    """49,228 judgments (a model, its dict and its fields set each) were ~4/5 of issue 49's
    probe process's tracked objects, walked by every full collection; kept as tuples of
    atoms they add none, and read out equal to what was written."""
    import gc

    from core.domain.judging import Judgment
    from core.stores.port import Workspace
    from tests.stores.compliance_judging import judgment

    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="judged"))

    def written() -> list[Judgment]:
        return [judgment(tenant, f"q{i}", f"c{i % 97}", i % 4) for i in range(5_000)]

    gc.collect()
    before = len(gc.get_objects())
    await store.put_judgments(tenant, written())  # the caller keeps none of them
    gc.collect()
    gc.collect()  # a tuple is untracked once its items were, the collection after
    added = len(gc.get_objects()) - before
    assert added < 50, f"{added} objects more for every full collection to walk"
    expected = sorted(written(), key=lambda j: (j.query, j.chunk_id, j.rater))
    assert await store.list_judgments(tenant) == expected


async def test_a_small_store_leaves_the_collector_alone() -> None:
    import gc

    gc.unfreeze()
    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    await store.upsert_many([make_chunk(tenant, "s", "wing flutter", 0)])
    await store.lexical_candidates(["wing"], tenant, 10)
    assert gc.get_freeze_count() == 0


async def test_passage_copies_count_every_field_set_and_carry_no_chunkers_mark() -> None:
    """Copies share one fields set (``kept._COPY``'s): it must name every field, never be
    the chunker's mark (a copy written back is hashed again), and a copy changed with
    ``model_copy`` gets a set of its own."""
    store, tenant = InMemoryChunkStore(), uuid.uuid4()
    chunk = make_chunk(tenant, "src", "wing flutter", metadata={"year": 1962})
    await store.upsert_many([chunk])
    first, again = await store.get(chunk.id, tenant), await store.get(chunk.id, tenant)
    assert first is not None and again is not None and first == again == chunk
    every = set(StoredChunk.model_fields)
    assert first.model_fields_set == every and not was_cut(first)
    changed = first.model_copy(update={"metadata": {"year": 1963}})
    changed.model_fields_set.add("planted")
    assert again.model_fields_set == every
