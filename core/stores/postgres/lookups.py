"""Passage text for ranking's synchronous lookup: prefetched in the read, read ahead, else a side
connection.

Ranking calls ``LexicalCandidates.lookup`` for the passages it shows after the read has
returned, often on the very event loop the pool lives on, where no pooled call can be
awaited. The read prefetches the likeliest shown; an analysis's steps yield
``chunks_ahead(rows)`` before a lookup past them (Truncation's scatter, Evaluate's documents),
which the steps' runner awaits: one read of those passages, in the read's held snapshot when
it has one (``snapshots``). What is still missing is read on a connection of its own, on a
thread of its own (``SideReader``), while the loop waits. The rejected alternative, fetching
the text of every candidate up front, costs a row of text per candidate.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Generator, Sequence
from typing import Any, Final
from uuid import UUID

import asyncpg
import numpy as np
import numpy.typing as npt

from core.domain.chunks import StoredChunk
from core.domain.postings import RowChunks
from core.domain.ranking import LexicalCandidates, RowsAhead
from core.stores.port import is_storable
from core.stores.postgres.resilience import (
    CALL_TIMEOUT_S,
    CONNECT_TIMEOUT_S,
    DEFAULT_RETRIES,
    STATEMENT_TIMEOUT_S,
    broken,
    closed,
    lost,
    retry_pause,
    retryable,
    timed_out,
)
from core.stores.postgres.snapshots import HeldSnapshot, Snapshots

#: The columns of a passage row, as ``chunk_from_row`` reads them (``p`` is passages).
CHUNK_COLUMNS: Final = (
    "p.id, p.tenant_id, p.source_id, p.chunk_index, p.start_char, p.end_char, p.text, "
    "p.entity_ids, p.metadata::text AS metadata"
)
#: Each entity of a tenant with the passages mentioning it, most mentioned first.
ENTITY_COUNTS: Final = """
SELECT e.id, e.name, e.kind, m.n
FROM (
    SELECT u.entity_id, count(DISTINCT p.id) AS n
    FROM passages p CROSS JOIN LATERAL unnest(p.entity_ids) AS u(entity_id)
    WHERE p.tenant_id = $1
    GROUP BY u.entity_id
) m
JOIN entities e ON e.tenant_id = $1 AND e.id = m.entity_id
ORDER BY m.n DESC, e.name, e.id
"""
#: The k shown, by id (the lookup's only read of passage text).
_SHOWN: Final = f"""
SELECT {CHUNK_COLUMNS} FROM passages p WHERE p.tenant_id = $1 AND p.id = ANY($2::text[])
"""  # noqa: S608 - only the fixed column list is interpolated

#: The source of each id (``PostgresChunkStore.source_ids``): no text, metadata nor entities.
_SOURCES: Final = "SELECT id, source_id FROM passages WHERE tenant_id = $1 AND id = ANY($2::text[])"
#: Each source's passage ids (``PostgresChunkStore.passage_ids_by_source``), in
#: ``get_by_sources``' order: no text, metadata nor entities.
_PASSAGE_IDS: Final = (
    "SELECT source_id, id FROM passages WHERE tenant_id = $1 AND source_id = ANY($2::text[]) "
    "ORDER BY source_id, chunk_index, id"
)


def storable_only(values: Sequence[str]) -> list[str]:
    """``values`` once each, less any no row can hold (NUL, a lone surrogate): what a read by
    many ids or names asks for, where such a value would fail the whole statement."""
    wanted = list(dict.fromkeys(values))
    return wanted if is_storable("".join(wanted)) else [v for v in wanted if is_storable(v)]


async def passage_ids_by_source(
    conn: asyncpg.Connection, tenant_id: UUID, source_ids: list[str]
) -> dict[str, list[str]]:
    """Each of ``source_ids`` the tenant holds -> its passage ids (one round trip)."""
    found: dict[str, list[str]] = {}
    for row in await conn.fetch(_PASSAGE_IDS, tenant_id, source_ids):
        found.setdefault(row["source_id"], []).append(row["id"])
    return found


async def source_ids(
    conn: asyncpg.Connection, tenant_id: UUID, chunk_ids: list[str]
) -> dict[str, str]:
    """The source of each of ``chunk_ids`` the tenant holds (one round trip)."""
    return {row["id"]: row["source_id"] for row in await conn.fetch(_SOURCES, tenant_id, chunk_ids)}


def chunk_from_row(row: asyncpg.Record) -> StoredChunk:
    """A stored row back to the model; it was validated on the way in, so skip re-hashing."""
    return StoredChunk.model_construct(
        tenant_id=row["tenant_id"],
        source_id=row["source_id"],
        text=row["text"],
        chunk_index=row["chunk_index"],
        start_char=row["start_char"],
        end_char=row["end_char"],
        entity_ids=list(row["entity_ids"]),
        metadata=json.loads(row["metadata"]),
        id=row["id"],
    )


class Texts:
    """Passages of one read: those prefetched in its snapshot, those read ahead of a lookup
    (in the read's held snapshot when there is one, awaited), the rest from the side reader."""

    def __init__(self, side: SideReader, tenant_id: UUID) -> None:
        self._side = side
        self._tenant_id = tenant_id
        self._known: dict[str, asyncpg.Record] = {}
        #: The read's snapshot, held for lookups after it returned (see ``snapshots``).
        self.held: HeldSnapshot | None = None

    async def prefetch(self, conn: asyncpg.Connection, ids: list[str]) -> None:
        self._known.update((r["id"], r) for r in await conn.fetch(_SHOWN, self._tenant_id, ids))

    def rows(self, ids: npt.NDArray[np.object_]) -> RowChunks:
        """Ordinals -> passages, for ``postings_candidates``."""
        return lambda ordinals: self.chunks([str(i) for i in ids[ordinals]])

    def ahead(self, columns: LexicalCandidates) -> RowsAhead:
        """Rows of ``columns`` -> an awaitable that reads their passages ahead (``_Ahead``)."""

        def rows_ahead(rows: Sequence[int]) -> object:
            return _Ahead(self, [str(i) for i in columns.ids_at(rows)])

        return rows_ahead

    async def read_ahead(self, ids: list[str]) -> None:
        """Read the passages of ``ids`` not known yet, in one awaited round trip; one that is
        gone is left for ``chunks`` to report."""
        missing = [i for i in dict.fromkeys(ids) if i not in self._known]
        if not missing:
            return
        rows = None
        if self.held is not None:
            rows = await self.held.fetch(_SHOWN, self._tenant_id, missing)
        if rows is None:
            rows = await self._side.fetch_rows(self._tenant_id, missing)
        self._known.update((r["id"], r) for r in rows)

    def chunks(self, ids: list[str]) -> list[StoredChunk]:
        missing = [i for i in ids if i not in self._known]
        fetched = {c.id: c for c in self._side.fetch(self._tenant_id, missing)}
        return [fetched[i] if i in fetched else chunk_from_row(self._known[i]) for i in ids]


class _Ahead:
    """Passages to read before a lookup, awaited by the steps' runner; making one starts
    nothing (``finish`` drops it unawaited, and the lookup reads them itself)."""

    __slots__ = ("_ids", "_texts")

    def __init__(self, texts: Texts, ids: list[str]) -> None:
        self._texts = texts
        self._ids = ids

    def __await__(self) -> Generator[Any, None, None]:
        return self._texts.read_ahead(self._ids).__await__()


class SideReader:
    """Passage text for ``LexicalCandidates.lookup``, which is synchronous.

    Ranking calls the lookup for the k it shows, after the read returned, often on the very
    event loop the pool lives on (the service runs ranking inside its coroutine), where no
    pooled call can be awaited. So the lookup reads on its own connection, on its own thread
    and loop, and waits for that. It serves only rows the read did not prefetch (an
    analysis's scatter, a what-if ranker's other top rows). The rejected alternative,
    fetching the text of every candidate up front, costs a row of text per candidate (at
    limit 1000 most of the read; at no limit, every matching passage). A passage is looked
    up by id, so its text (part of the id) is the snapshot's; one deleted since the read is
    reported as such (LookupError: search again).
    """

    def __init__(self, dsn: str | None, settings: dict[str, str]) -> None:
        self._dsn = dsn
        self._settings = dict(settings)
        self._guard = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._conn: asyncpg.Connection | None = None
        self._busy: asyncio.Lock | None = None
        #: Reads' snapshots held for their later lookups (on the store's loop, not this thread).
        self.snapshots = Snapshots(dsn, settings)

    def fetch(self, tenant_id: UUID, ids: list[str]) -> list[StoredChunk]:
        """The passages of ``ids``, read on the side thread while this one waits."""
        if not ids:
            return []
        future = asyncio.run_coroutine_threadsafe(self._fetch(tenant_id, ids), self._side_loop())
        try:
            rows = future.result(timeout=CALL_TIMEOUT_S)
        except TimeoutError as exc:
            future.cancel()
            raise timed_out(None, CALL_TIMEOUT_S) from exc
        by_id = {row["id"]: row for row in rows}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise LookupError(
                f"passage {missing[0]!r} was deleted after this search read it; search again"
            )
        return [chunk_from_row(by_id[i]) for i in ids]

    async def fetch_rows(self, tenant_id: UUID, ids: list[str]) -> list[asyncpg.Record]:
        """The rows of ``ids`` still stored, read on the side thread and awaited."""
        future = asyncio.run_coroutine_threadsafe(self._fetch(tenant_id, ids), self._side_loop())
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), CALL_TIMEOUT_S)
        except TimeoutError as exc:
            raise timed_out(None, CALL_TIMEOUT_S) from exc

    def _side_loop(self) -> asyncio.AbstractEventLoop:
        if self._dsn is None:
            raise RuntimeError("this store was opened without a DSN: it cannot look passages up")
        with self._guard:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="lexplain-passage-lookup", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    async def _fetch(self, tenant_id: UUID, ids: list[str]) -> list[asyncpg.Record]:
        if self._busy is None:
            self._busy = asyncio.Lock()
        async with self._busy:
            for attempt in range(DEFAULT_RETRIES + 1):
                try:
                    if self._conn is None or closed(self._conn):
                        self._conn = await asyncpg.connect(
                            self._dsn,
                            server_settings={"application_name": "lexplain", **self._settings},
                            timeout=CONNECT_TIMEOUT_S,
                            command_timeout=STATEMENT_TIMEOUT_S,
                        )
                    return list(await self._conn.fetch(_SHOWN, tenant_id, ids))
                except Exception as exc:
                    if not (retryable(exc) or broken(exc)) or attempt == DEFAULT_RETRIES:
                        if retryable(exc) or broken(exc):
                            raise lost(None, attempt + 1) from exc
                        raise
                    if self._conn is not None:
                        with contextlib.suppress(Exception):
                            self._conn.terminate()
                    self._conn = None
                    await asyncio.sleep(retry_pause(attempt))
            raise AssertionError("unreachable")

    async def aclose(self) -> None:
        """Give the held snapshots up, then ``close``."""
        try:
            await self.snapshots.close()
        finally:
            self.close()

    def close(self) -> None:
        with self._guard:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return

        async def shut() -> None:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._conn.close(), CONNECT_TIMEOUT_S)
                self._conn = None

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shut(), loop).result(timeout=2 * CONNECT_TIMEOUT_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=CONNECT_TIMEOUT_S)
        loop.close()
