"""The PostgreSQL adapter under the compliance suite, against a real server."""

from __future__ import annotations

import uuid

import pytest

from core.stores.compliance import ChunkStoreCompliance, corpus_chunks
from core.stores.port import ChunkStore
from core.stores.postgres import PostgresChunkStore


@pytest.fixture(scope="module")
def database_url(both_database_urls: str) -> str:
    """This module runs on the CI's PostgreSQL 15 and on the embedded PostgreSQL 18."""
    return both_database_urls


class TestPostgresChunkStore(ChunkStoreCompliance):
    @pytest.fixture
    async def store(self, pg_store: PostgresChunkStore) -> ChunkStore:
        return pg_store


async def test_the_postgres_store_satisfies_the_port(pg_store: PostgresChunkStore) -> None:
    assert isinstance(pg_store, ChunkStore)


async def test_a_schema_name_that_is_not_an_identifier_is_refused(database_url: str) -> None:
    with pytest.raises(ValueError, match="schema"):
        await PostgresChunkStore.connect(database_url, schema='x"; DROP TABLE passages; --')


async def test_connecting_twice_to_one_schema_keeps_its_data(
    database_url: str, pg_schema: str, pg_store: PostgresChunkStore
) -> None:
    tenant = uuid.uuid4()
    await pg_store.upsert_many(corpus_chunks(tenant))
    again = await PostgresChunkStore.connect(database_url, schema=pg_schema)
    try:
        assert (await again.corpus_summary(tenant)).passages == len(corpus_chunks(tenant))
    finally:
        await again.close()
