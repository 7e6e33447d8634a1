"""Open the store the settings name: one definition for the app's service and the ``load`` command.

Why one function: the promise "a terminal load shows up in the app" holds only if both open
the very same store from the very same settings; two copies of this choice would drift.

The embedded server's lifecycle (``core.stores.postgres.embedded``) and its store
(``core.stores.postgres.embedded_store``) live with the PostgreSQL adapter.

``python -m core.stores.select`` (``scripts/run``, in the background beside Streamlit's start)
makes the embedded server's cluster ahead of the first page (``prepare_store``), quietly: the app
opening the store says in plain words whatever went wrong.
"""

from __future__ import annotations

import contextlib

from pydantic import ValidationError

from core.settings import Settings
from core.stores.port import ChunkStore
from core.stores.postgres import PostgresChunkStore, embedded
from core.stores.postgres.embedded_store import open_embedded


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


def prepare_store(settings: Settings | None = None) -> bool:
    """The embedded server's cluster made now if the settings select it (initdb, no start).

    True if a cluster was made; False for the other stores, settings that do not validate
    (the app reports them), or a cluster already there.
    """
    try:
        settings = settings or Settings()
    except ValidationError:
        return False
    if settings.store_kind != "embedded":
        return False
    return embedded.prepare(settings.data_dir)


if __name__ == "__main__":
    with contextlib.suppress(Exception):  # the app says what is wrong when it opens the store
        prepare_store()
