"""The parity check a user runs (``db parity``, the Corpus page): identical on Cranfield in
PostgreSQL, and a length planted in PostgreSQL behind the store's back is the first
difference it reports, with both explanations."""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg

from core.domain.chunks import workspace_tenant_id
from core.domain.judging import QuerySet, SetQuery
from core.service.common import UNLIMITED
from core.service.parity import PARITY_QUERIES, check_parity, sample_queries
from core.stores.port import Workspace
from core.stores.postgres import PostgresChunkStore
from tests.stores.test_parity import cranfield_chunks, cranfield_queries

WORKSPACE = "cranfield-parity"


async def _cranfield(store: PostgresChunkStore) -> None:
    tenant = workspace_tenant_id(WORKSPACE)
    await store.upsert_workspace(Workspace(tenant_id=tenant, name=WORKSPACE))
    await store.upsert_many(cranfield_chunks(tenant))


async def test_cranfield_in_postgresql_answers_every_sampled_term_query_identically(
    pg_store: PostgresChunkStore,
) -> None:
    await _cranfield(pg_store)
    report = await check_parity(pg_store, workspace_tenant_id(WORKSPACE))
    assert report.drawn_from == "terms"
    assert report.difference is None
    assert report.summary().startswith(f"{PARITY_QUERIES}/{PARITY_QUERIES} identical")


async def test_a_workspace_with_a_query_set_is_asked_its_queries(
    pg_store: PostgresChunkStore,
) -> None:
    await _cranfield(pg_store)
    tenant = workspace_tenant_id(WORKSPACE)
    texts = [" ".join(terms) for terms in cranfield_queries()[:30]]
    queries = tuple(SetQuery(query_id=str(i), text=t) for i, t in enumerate(texts))
    await pg_store.save_query_set(
        QuerySet(tenant_id=tenant, name="q", queries=queries, created_at=datetime.now(UTC))
    )
    report = await check_parity(pg_store, tenant)
    assert report.drawn_from == "query sets"
    assert sorted(q.text for q in report.queries) == sorted(set(texts))
    assert report.summary().startswith("30/30 identical")


async def test_a_passage_length_altered_in_postgresql_is_the_first_difference_reported(
    pg_store: PostgresChunkStore, database_url: str, pg_schema: str
) -> None:
    await _cranfield(pg_store)
    tenant = workspace_tenant_id(WORKSPACE)
    # The check's first query, drawn as it draws it (no check before the plant: its in-memory
    # copy of Cranfield is most of a check's time, and the check after it asks the same).
    _, (first, *_) = await sample_queries(pg_store, tenant, 20)
    top = (await pg_store.lexical_candidates(first.terms, tenant, UNLIMITED)).ids[0]
    conn = await asyncpg.connect(database_url, server_settings={"search_path": pg_schema})
    try:
        await conn.execute(
            "UPDATE passages SET doc_length = doc_length + 1 WHERE tenant_id = $1 AND id = $2",
            tenant,
            top,
        )
    finally:
        await conn.close()
    store = await PostgresChunkStore.connect(database_url, schema=pg_schema)
    try:
        report = await check_parity(store, tenant, queries=20)
    finally:
        await store.close()
    difference = report.difference
    assert difference is not None
    assert report.identical == 0
    assert (difference.query_number, difference.chunk_id) == (1, top)
    assert "in memory but" in difference.what
    reference, checked = difference.reference.explanation, difference.checked.explanation
    assert reference is not None and checked is not None
    assert checked.doc_length == reference.doc_length + 1
    assert report.summary().startswith("differs at query 1/20")
