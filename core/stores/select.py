"""Open the store the settings name: one definition for the app's service and the ``load`` command.

Why one function: the promise "a terminal load shows up in the app" holds only if both open
the very same store from the very same settings; two copies of this choice would drift.

The embedded store is the PostgreSQL adapter on the embedded server, not a separate adapter:
its only difference is the server's lifecycle, so closing it releases this process's use of
the server (and the last user's release stops it). Rejected: a wrapper delegating every port
method, which would have to follow every change of the port by hand.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from core.settings import DEFAULT_IMAGE_CACHE_PASSAGES, Settings
from core.stores import embedded
from core.stores.port import ChunkStore
from core.stores.postgres import PostgresChunkStore


class EmbeddedPostgresStore(PostgresChunkStore):
    """The PostgreSQL store on the embedded server; ``close()`` also releases the server."""

    _data_dir: Path | None = None

    async def close(self) -> None:
        data_dir, self._data_dir = self._data_dir, None
        try:
            await super().close()
        finally:
            # Directly, not in a worker thread: at interpreter exit (the service's atexit
            # close) the default executor no longer takes work; a stop takes ~0.1 s.
            if data_dir is not None:
                embedded.release(data_dir)


async def open_embedded(
    data_dir: Path,
    *,
    schema: str | None = None,
    image_cache_passages: int = DEFAULT_IMAGE_CACHE_PASSAGES,
) -> EmbeddedPostgresStore:
    """Start (or reuse) the embedded server on ``data_dir`` and open the store on it."""
    server = await asyncio.to_thread(embedded.acquire, data_dir)
    try:
        store = await EmbeddedPostgresStore.connect(
            server.url, schema=schema, image_cache_passages=image_cache_passages
        )
    except BaseException:
        await asyncio.to_thread(embedded.release, data_dir)
        raise
    assert isinstance(store, EmbeddedPostgresStore)  # connect() builds ``cls``
    store._data_dir = data_dir
    return store


async def open_store(settings: Settings) -> ChunkStore:
    """The store ``settings`` select: in memory, a PostgreSQL server, or the embedded one.

    Raises ``embedded.EmbeddedServerError`` (plain words) when the embedded server cannot
    start, and asyncpg/OS errors when a configured server cannot be reached.
    """
    kind = settings.store_kind
    if kind == "memory":
        from core.stores.memory import InMemoryChunkStore

        return InMemoryChunkStore()
    if kind == "postgres":
        assert settings.database_url is not None  # Settings validates it
        return await PostgresChunkStore.connect(
            settings.database_url.get_secret_value(),
            schema=settings.database_schema,
            image_cache_passages=settings.image_cache_passages,
        )
    return await open_embedded(
        settings.data_dir,
        schema=settings.database_schema,
        image_cache_passages=settings.image_cache_passages,
    )
