"""An analysis's lookups after its read see the read's snapshot and are awaited (issue 20 item 5):
a rewrite committed between the read and the lookups does not fail a Truncation, and the
store's loop never waits on the side connection for them (core.stores.postgres.snapshots)."""

from __future__ import annotations

import uuid

import pytest

from core.analysis.truncation import UNLIMITED, top_document_steps, truncation_steps
from core.checkpoint import stepped
from core.stores.postgres import PostgresChunkStore, lookups
from core.stores.postgres.query_read import PREFETCH_ROWS
from tests.stores.compliance import make_chunk

pytestmark = pytest.mark.postgres

#: Passages matching the query: more than the read prefetches, so most are looked up later.
PASSAGES = 3 * PREFETCH_ROWS
TERMS = ["ocean", "wave"]


@pytest.fixture
def side_fetches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many passages each synchronous side-connection lookup asked for."""
    asked: list[int] = []
    real = lookups.SideReader.fetch

    def counted(self: lookups.SideReader, tenant_id: uuid.UUID, ids: list[str]) -> object:
        if ids:
            asked.append(len(ids))
        return real(self, tenant_id, ids)

    monkeypatch.setattr(lookups.SideReader, "fetch", counted)
    return asked


async def _rewrite_every_source(store: PostgresChunkStore, tenant: uuid.UUID) -> None:
    """Another session's upload: every source gets new text, so every passage read is deleted."""
    await store.replace_sources(
        tenant,
        [(f"doc-{i}", [make_chunk(tenant, f"doc-{i}", f"river {i}")]) for i in range(PASSAGES)],
    )


async def _workspace(store: PostgresChunkStore) -> uuid.UUID:
    tenant = uuid.uuid4()
    await store.upsert_many(
        [
            make_chunk(tenant, f"doc-{i}", f"ocean {'wave ' * (i % 7)}tide{i}")
            for i in range(PASSAGES)
        ]
    )
    return tenant


async def test_a_truncation_read_before_a_rewrite_finds_every_passage_it_read(
    pg_store: PostgresChunkStore, side_fetches: list[int]
) -> None:
    tenant = await _workspace(pg_store)
    full = await pg_store.lexical_candidates(TERMS, tenant, UNLIMITED)
    assert len(full) == PASSAGES
    await _rewrite_every_source(pg_store, tenant)
    report = await stepped(truncation_steps(TERMS, full, 10, 50))
    assert [row.chunk_id for row in report.candidates] == list(full.ids)
    assert {row.source_id for row in report.candidates} == {f"doc-{i}" for i in range(PASSAGES)}
    assert report.cut and report.unlimited
    assert side_fetches == []  # every lookup was read ahead and awaited


async def test_an_evaluate_read_before_a_rewrite_finds_every_document_it_ranked(
    pg_store: PostgresChunkStore, side_fetches: list[int]
) -> None:
    tenant = await _workspace(pg_store)
    full = await pg_store.lexical_candidates(TERMS, tenant, UNLIMITED)
    await _rewrite_every_source(pg_store, tenant)
    found = await stepped(top_document_steps(TERMS, full, 50, [100, UNLIMITED]))
    assert [len(documents) for documents in found] == [50, 50]
    assert side_fetches == []


async def test_a_held_snapshot_is_given_up_for_newer_reads(pg_store: PostgresChunkStore) -> None:
    """At most HELD_SNAPSHOTS reads keep theirs; an older read's lookups then read a fresh
    snapshot (and still find passages nobody deleted)."""
    from core.stores.postgres.snapshots import HELD_SNAPSHOTS

    tenant = await _workspace(pg_store)
    reads = [
        await pg_store.lexical_candidates(TERMS, tenant, UNLIMITED)
        for _ in range(HELD_SNAPSHOTS + 1)
    ]
    snapshots = pg_store._side.snapshots
    assert len(snapshots._held) == HELD_SNAPSHOTS
    report = await stepped(truncation_steps(TERMS, reads[0], 10, 50))
    assert [row.chunk_id for row in report.candidates] == list(reads[0].ids)
