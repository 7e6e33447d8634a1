"""The PostgreSQL store on a server nobody tuned for it, and what a load does when the server
cannot do a write.

Issue 20: on PostgreSQL's stock settings a load took one advisory lock per source (5,000 per
batch) and ran out of lock slots ("out of shared memory"); each failed batch was then written
again one document at a time. These tests run on a second server that scripts/test starts with
initdb's settings and max_connections 20 (1,280 lock slots in all), and plant a resource error
to check it is not answered document by document.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import asyncpg
import pytest

from core.domain.chunks import ChunkingOptions, SourceDocument, StoredChunk
from core.ingest import indexing
from core.ingest.indexing import NOT_WRITTEN, index_documents
from core.stores.postgres import PostgresChunkStore, embedded, resilience
from core.stores.postgres.embedded_store import open_embedded

#: Documents of the stock-server load (four batches of 5,000 written at once).
LOAD_DOCUMENTS = 20_000
WHOLE = ChunkingOptions(whole_documents=True)
#: Documents of the load whose server is killed, and the seconds it may take to stop after the
#: kill: the retries and the writes in flight, not a wait without end.
GONE_DOCUMENTS = 6_000
GONE_BOUND_S = 30.0
#: Seconds between two attempts of a write whose server is gone: every attempt is still made
#: and refused, but without the store's ~9 s of backoff (sleep the test spent doing nothing;
#: the pauses themselves are not what it guards).
GONE_RETRY_PAUSE_S = 0.01


def documents(count: int) -> list[SourceDocument]:
    return [
        SourceDocument(source_id=f"doc{i}", text=f"passage {i} about w{i % 997} and w{i % 13}")
        for i in range(count)
    ]


def log_errors(log: Path, since: int) -> list[str]:
    with log.open("rb") as handle:
        handle.seek(since)
        text = handle.read().decode("utf-8", errors="replace")
    return [line for line in text.splitlines() if " ERROR: " in line or " FATAL: " in line]


async def fresh_store(url: str) -> tuple[PostgresChunkStore, str]:
    schema = f"t_{uuid.uuid4().hex}"
    return await PostgresChunkStore.connect(url, schema=schema), schema


async def drop(url: str, schema: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


async def test_a_stock_server_takes_a_twenty_thousand_document_load_in_one_piece(
    stock_database_url: tuple[str, Path],
) -> None:
    url, log = stock_database_url
    since = log.stat().st_size
    store, schema = await fresh_store(url)
    tenant = uuid.uuid4()
    try:
        report = await index_documents(
            documents(LOAD_DOCUMENTS), store, tenant, chunking=WHOLE, extractor=None
        )
        assert report.ok, report.rejected[:3]
        assert report.stopped is None
        assert (await store.corpus_summary(tenant)).passages == LOAD_DOCUMENTS
    finally:
        await store.close()
        await drop(url, schema)
    assert log_errors(log, since) == []


class CountingStore(PostgresChunkStore):
    """The PostgreSQL store, counting its single-document writes (the per-document path)."""

    singles = 0

    async def replace_source(
        self, source_id: str, tenant_id: uuid.UUID, chunks: Sequence[StoredChunk]
    ) -> int:
        CountingStore.singles += 1
        return await super().replace_source(source_id, tenant_id, chunks)


async def test_a_resource_error_stops_the_load_and_is_not_retried_document_by_document(
    stock_database_url: tuple[str, Path],
) -> None:
    url, _ = stock_database_url
    schema = f"t_{uuid.uuid4().hex}"
    store = await CountingStore.connect(url, schema=schema, retries=1)
    assert isinstance(store, CountingStore)
    CountingStore.singles = 0
    tenant = uuid.uuid4()
    conn = await asyncpg.connect(url, server_settings={"search_path": schema})
    try:
        # Planted: every new segment meets the error a full lock table raises.
        await conn.execute(
            "CREATE FUNCTION no_room() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "RAISE EXCEPTION 'out of shared memory' USING ERRCODE = '53200'; END $$"
        )
        await conn.execute(
            "CREATE TRIGGER no_room BEFORE INSERT ON segments "
            "FOR EACH ROW EXECUTE FUNCTION no_room()"
        )
        started = time.monotonic()
        report = await index_documents(documents(30), store, tenant, chunking=WHOLE, extractor=None)
        assert time.monotonic() - started < 30
        assert CountingStore.singles == 0
        assert report.stopped is not None and "out of shared memory" in report.stopped
        assert [row.reason for row in report.rows] == [NOT_WRITTEN] * 30
    finally:
        await conn.close()
        await store.close()
        await drop(url, schema)


async def test_a_load_whose_server_is_killed_stops_within_seconds_with_one_reason(
    embedded_data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(indexing, "BATCH_PASSAGES", 500)
    monkeypatch.setattr(resilience, "retry_pause", lambda attempt: GONE_RETRY_PAUSE_S)
    store = await open_embedded(embedded_data_dir)
    server = embedded.running(embedded_data_dir)
    assert server is not None
    tenant = uuid.uuid4()
    # Kill once the loader itself has heard a batch committed: a committed batch seen from
    # another connection may not have reached the loader yet (then it rightly counts none).
    acknowledged: list[int] = []
    load = asyncio.create_task(
        index_documents(
            documents(GONE_DOCUMENTS),
            store,
            tenant,
            chunking=WHOLE,
            extractor=None,
            on_progress=lambda _d, _t, row: acknowledged.append(row.status == "indexed"),
        )
    )
    try:
        while not load.done() and sum(acknowledged) == 0:
            await asyncio.sleep(0.01)
        assert not load.done()
        os.kill(server.pid, signal.SIGKILL)  # the postmaster: nobody restarts it
        async with asyncio.timeout(GONE_BOUND_S):
            report = await load
    finally:
        with contextlib.suppress(Exception):
            await store.close()
    assert report.stopped is not None and "connection" in report.stopped
    assert report.documents_indexed >= 500
    # The rest are the stop's rows, not a per-document failure each.
    assert {row.reason for row in report.rows if row.status == "rejected"} == {NOT_WRITTEN}
    assert report.documents_indexed + report.not_written == GONE_DOCUMENTS
