"""A PostgreSQL write's Python work gives way in pieces: other sessions' searches never wait
for a whole write group (bench_stall upload and re-index; core.stores.postgres.pieces).

Each test installs a pause that notes every checkpoint and an instrument on the connection's
COPY (the real driver and server do the work) that notes each statement's rows, then checks
the order of the two: a COPY never follows another without a checkpoint between, and none
sends more than ``PIECE_ROWS`` rows.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Iterable
from typing import Any

import asyncpg
import pytest

from core.checkpoint import install
from core.domain.tokenize import Profile
from core.stores.memory import InMemoryChunkStore
from core.stores.port import Workspace
from core.stores.postgres import PostgresChunkStore, blocks, pieces
from core.stores.postgres import query_read as image_module
from core.stores.postgres.staging import WORKER_PASSAGES
from tests.fixtures.binary_copy import copied_rows
from tests.stores.compliance import make_chunk

#: Rows per piece in these tests: a group of a few hundred passages makes many pieces.
PIECE = 16
#: Passages of the group (one source each, a term of its own each): over the staging worker's
#: threshold, so the group is tokenised there as a real upload's is.
PASSAGES = max(WORKER_PASSAGES, 100)


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """ "pause" per checkpoint and each COPY's row count, in the order they happened."""
    seen: list[Any] = []
    monkeypatch.setattr(pieces, "PIECE_ROWS", PIECE)
    real = asyncpg.Connection.copy_records_to_table

    async def copy(
        self: asyncpg.Connection, table: str, *, records: Iterable[Any], **kw: Any
    ) -> str:
        rows = list(records)
        seen.append((table, len(rows)))
        return str(await real(self, table, records=rows, **kw))

    monkeypatch.setattr(asyncpg.Connection, "copy_records_to_table", copy)
    real_data = asyncpg.Connection.copy_to_table

    async def copy_data(self: asyncpg.Connection, table: str, *, source: Any, **kw: Any) -> str:
        seen.append((table, len(copied_rows(bytes(source)))))
        return str(await real_data(self, table, source=source, **kw))

    monkeypatch.setattr(asyncpg.Connection, "copy_to_table", copy_data)
    return seen


def assert_copies_in_pieces(events: list[Any]) -> None:
    copies = [event for event in events if event != "pause"]
    assert copies, "no COPY seen"
    too_big = [event for event in copies if event[1] > PIECE]
    assert not too_big, f"COPYs of more than {PIECE} rows: {too_big}"
    for before, after in itertools.pairwise(events):
        assert before == "pause" or after == "pause", f"{before} then {after} with no checkpoint"


async def run_long(work: Any, events: list[Any]) -> Any:
    async def pause() -> None:
        events.append("pause")

    async def long() -> Any:
        install(pause)
        return await work

    return await asyncio.create_task(long())


def group(tenant: uuid.UUID, word: str) -> list[tuple[str, list[Any]]]:
    return [
        (f"s{i}", [make_chunk(tenant, f"s{i}", f"{word} passage t{i} w{i % 7}")])
        for i in range(PASSAGES)
    ]


async def test_a_write_group_gives_way_per_source_checked_and_per_piece_of_rows_it_sends(
    pg_store: PostgresChunkStore, events: list[Any]
) -> None:
    tenant = uuid.uuid4()
    await pg_store.upsert_workspace(Workspace(tenant_id=tenant, name="give-way"))
    removed = await run_long(pg_store.replace_sources(tenant, group(tenant, "ocean")), events)
    assert removed == [0] * PASSAGES
    first_copy = next(i for i, event in enumerate(events) if event != "pause")
    assert first_copy >= PASSAGES, f"{first_copy} checkpoints for {PASSAGES} sources checked"
    tables = {event[0] for event in events if event != "pause"}
    assert tables == {"passages", "postings"}  # new sources: straight into the table
    assert_copies_in_pieces(events)
    events.clear()
    again = [
        (source, [*chunks, make_chunk(tenant, source, "more", 1)])
        for source, chunks in group(tenant, "ocean")
    ]
    assert await run_long(pg_store.replace_sources(tenant, again), events) == [0] * PASSAGES
    tables = {event[0] for event in events if event != "pause"}
    assert tables == {"stage_passages", "postings"}  # stored ones among them: staged first
    assert_copies_in_pieces(events)
    assert (await pg_store.corpus_summary(tenant)).passages == 2 * PASSAGES


async def _with_twin_in_memory(
    pg_store: PostgresChunkStore, tenant: uuid.UUID, word: str, deleted_every: int
) -> InMemoryChunkStore:
    """The same workspace written into ``pg_store`` and a new in-memory store (the reference):
    ``group``'s sources, then every ``deleted_every``-th source deleted (ordinals with gaps)."""
    memory = InMemoryChunkStore()
    for store in (pg_store, memory):
        await store.upsert_workspace(Workspace(tenant_id=tenant, name="give-way"))
        await store.replace_sources(tenant, group(tenant, word))
        for i in range(0, PASSAGES, deleted_every):
            await store.delete_by_source(f"s{i}", tenant)
    return memory


async def test_a_reindex_gives_way_per_piece_and_ranks_as_the_in_memory_store_does(
    pg_store: PostgresChunkStore, events: list[Any]
) -> None:
    """Its batches are tokenised in the staging worker and renumbered to the passages'
    ordinals (with gaps: some passages were deleted), then sent in pieces."""
    tenant = uuid.uuid4()
    memory = await _with_twin_in_memory(pg_store, tenant, "oceans", deleted_every=3)
    events.clear()
    assert await run_long(pg_store.reindex(tenant, Profile.ENGLISH, None), events) == len(
        [i for i in range(PASSAGES) if i % 3]
    )
    assert {event[0] for event in events if event != "pause"} == {"reindex_lengths", "postings"}
    assert_copies_in_pieces(events)
    await memory.reindex(tenant, Profile.ENGLISH, None)
    terms = ["ocean", "passag", "t1", "t2", "t4", "w3", "w0"]
    for limit in (0, 5, 1_000):
        assert await pg_store.lexical_candidates(
            terms, tenant, limit
        ) == await memory.lexical_candidates(terms, tenant, limit)


async def test_a_query_of_many_terms_decodes_its_blocks_in_steps(
    pg_store: PostgresChunkStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 1,000-term query decodes ~1 M postings: the read gives way between steps of
    ``STEP_POSTINGS`` (here one term a step) and ranks as in one piece."""
    tenant = uuid.uuid4()
    await pg_store.upsert_workspace(Workspace(tenant_id=tenant, name="many terms"))
    await pg_store.replace_sources(tenant, group(tenant, "ocean"))
    terms = [f"t{i}" for i in range(0, PASSAGES, 2)]
    whole = await pg_store.lexical_candidates(terms, tenant, 1_000)
    monkeypatch.setattr(blocks, "STEP_POSTINGS", 1)  # a term a step
    seen: list[Any] = []
    stepped = await run_long(pg_store.lexical_candidates(terms, tenant, 1_000), seen)
    assert len(seen) >= len(terms), f"{len(seen)} checkpoints for {len(terms)} terms decoded"
    assert stepped == whole


async def test_a_query_of_many_terms_gives_way_after_counting_its_df_and_before_decoding(
    pg_store: PostgresChunkStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting a 1,000-term query's df from its blocks, then sorting the blocks and building
    its statistics, were one ~4 ms step with the decoding's first: each is a step of its own."""
    tenant = uuid.uuid4()
    await pg_store.upsert_workspace(Workspace(tenant_id=tenant, name="many terms"))
    await pg_store.replace_sources(tenant, group(tenant, "ocean"))
    terms = [f"t{i}" for i in range(0, PASSAGES, 2)]
    whole = await pg_store.lexical_candidates(terms, tenant, 1_000)
    seen: list[Any] = []
    counted, decoded = image_module.block_df, image_module.live_posting_steps

    async def df(*args: Any) -> Any:
        seen.append("df")
        return await counted(*args)

    def decode(*args: Any) -> Any:
        seen.append("decode")
        return decoded(*args)

    made = image_module.CorpusStats

    def stats(**fields: Any) -> Any:
        seen.append("stats")
        return made(**fields)

    monkeypatch.setattr(image_module, "block_df", df)
    monkeypatch.setattr(image_module, "live_posting_steps", decode)
    monkeypatch.setattr(image_module, "CorpusStats", stats)
    stepped = await run_long(pg_store.lexical_candidates(terms, tenant, 1_000), seen)
    at_df, at_stats, at_decode = seen.index("df"), seen.index("stats"), seen.index("decode")
    assert seen[at_df + 1] == "pause", seen[: at_decode + 1]
    assert "pause" in seen[at_stats:at_decode], seen[: at_decode + 1]
    assert stepped == whole


async def test_pieces_are_smaller_where_other_sessions_wait_than_in_a_bulk_load() -> None:
    """In the service (a pause installed) a piece of 1,024 rows was 9-12 ms of the loop's CPU
    (bench_stall --steps): PIECE_ROWS there; a load, where nobody waits, keeps fewer COPYs."""
    rows = range(3 * pieces.BULK_PIECE_ROWS)
    assert {len(piece) for piece in pieces.pieces(rows)} == {pieces.BULK_PIECE_ROWS}
    sizes = await run_long(_sizes(rows), [])
    assert max(sizes) == pieces.PIECE_ROWS < pieces.BULK_PIECE_ROWS


async def _sizes(rows: range) -> list[int]:
    return [len(piece) for piece in pieces.pieces(rows)]


async def test_a_workspaces_image_read_whole_gives_way_per_fetch_and_ranks_the_same(
    database_url: str, pg_schema: str, pg_store: PostgresChunkStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first read after another process wrote reads the image whole: at 1M passages its
    arrays built from the records in one piece held the loop ~0.3-0.5 s; now LOAD_ROWS rows
    per fetch (here 16), a checkpoint after each, and the same candidates as in memory."""
    tenant = uuid.uuid4()
    memory = await _with_twin_in_memory(pg_store, tenant, "ocean", deleted_every=5)
    monkeypatch.setattr(image_module, "LOAD_ROWS", 16)
    uncached = await PostgresChunkStore.connect(database_url, schema=pg_schema)
    try:
        seen: list[Any] = []
        terms = ["ocean", "t3", "w2"]
        read = await run_long(uncached.lexical_candidates(terms, tenant, 1_000), seen)
        live = PASSAGES - len(range(0, PASSAGES, 5))
        assert len(seen) >= live // 16, f"{len(seen)} checkpoints for {live} image rows"
        assert read == await memory.lexical_candidates(terms, tenant, 1_000)
    finally:
        await uncached.close()


async def test_long_works_queries_reach_a_checkpoint_as_soon_as_their_answer_is_in(
    pg_store: PostgresChunkStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long task resumed by an answer ran on to its next checkpoint while a search that had
    arrived waited (bench_stall PostgreSQL upload: ~20 ms of other work's loop CPU in a search's
    window at p99): each query of a task that gives way pauses once its answer is in, whatever
    the statement; a search's queries (no pause installed) never do."""
    from core.stores.postgres import giving

    seen: list[str] = []

    async def queries() -> None:
        async with pg_store._pool.acquire() as conn:
            await conn.execute("CREATE TEMP TABLE answered (n int)")
            seen.append("answer")
            await conn.executemany("INSERT INTO answered VALUES ($1)", [(1,), (2,)])
            seen.append("answer")
            await conn.copy_records_to_table("answered", records=[(3,)])
            seen.append("answer")
            assert len(await conn.fetch("SELECT n FROM answered")) == 3
            seen.append("answer")
            assert (await conn.fetchrow("SELECT count(*) AS n FROM answered"))["n"] == 3
            seen.append("answer")
            assert await conn.fetchval("SELECT sum(n) FROM answered") == 6
            seen.append("answer")
            await conn.execute("DROP TABLE answered")
            seen.append("answer")

    await run_long(queries(), seen)
    assert seen.count("answer") == 7
    for before, after in itertools.pairwise(seen):
        assert before == "pause" or after == "pause", f"an answer not followed by a pause: {seen}"
    searched: list[str] = []

    async def noted() -> None:
        searched.append("checkpoint")

    monkeypatch.setattr(giving, "checkpoint", noted)
    seen.clear()
    await asyncio.create_task(queries())  # a search's task: no pause installed
    assert searched == [] and seen.count("answer") == 7
