"""The PostgreSQL store on the embedded server: the adapter with the server's lifecycle attached.

The embedded store is the PostgreSQL adapter on the embedded server (``embedded``), not a
separate adapter: its only difference is the server's lifecycle, so closing it releases this
process's use of the server (and the last user's release stops it). Rejected: a wrapper
delegating every port method, which would have to follow every change of the port by hand.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from core.settings import DEFAULT_IMAGE_CACHE_PASSAGES
from core.stores.postgres import embedded
from core.stores.postgres.store import PostgresChunkStore


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
