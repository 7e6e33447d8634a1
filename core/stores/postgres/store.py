"""The store's public face: ``PostgresChunkStore``, each port method one bounded call that
hands its SQL to the module owning it (``writes``, ``image``, ``lookups``, ``workspaces``).
Kept thin; the rejected alternative, one module doing all seven jobs, had 1,725 lines."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar
from uuid import UUID

import asyncpg

from core.domain.bm25 import CorpusStats
from core.domain.chunks import StoredChunk
from core.domain.entities import Entity
from core.domain.filters import PassageFilter
from core.domain.ranking import LexicalCandidates
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.settings import DEFAULT_IMAGE_CACHE_PASSAGES
from core.stores.checks import checked_for_write
from core.stores.port import (
    ConnectionLost,
    CorpusSummary,
    EntitySummary,
    ReindexProgress,
    SourceSummary,
    TermFrequency,
    Workspace,
    check_filter,
    check_name,
    distinct_terms,
    is_storable,
    member_email,
)
from core.stores.postgres import listings, lookups
from core.stores.postgres.blocks import prefix_upper_bound, stage
from core.stores.postgres.corrections import PostgresCorrections
from core.stores.postgres.frequencies import top_terms
from core.stores.postgres.giving import GivingWayConnection
from core.stores.postgres.judging import PostgresJudging
from core.stores.postgres.lookups import CHUNK_COLUMNS, SideReader, chunk_from_row
from core.stores.postgres.pieces import checked_in_pieces
from core.stores.postgres.query_read import ImageCache, ImageChanges, read_candidates
from core.stores.postgres.repairs import repair_all
from core.stores.postgres.resilience import (
    CALL_TIMEOUT_S,
    CONNECT_TIMEOUT_S,
    CONNECTION_LOST,
    DEFAULT_RETRIES,
    SESSION_SETTINGS,
    STATEMENT_TIMEOUT_S,
    Backends,
    Calls,
)
from core.stores.postgres.schema import IDENTIFIER, connection_settings, create_schema
from core.stores.postgres.staging import stage_batch
from core.stores.postgres.workspaces import (
    RETIRED,
    WORKSPACE,
    WORKSPACES,
    find,
    locked_owner,
    tombstone,
    upsert,
    workspace_from_row,
)
from core.stores.postgres.writes import (
    delete_source_rows,
    delete_tenant_rows,
    locked_profiles,
    read_profiles,
    reindex_rows,
    replace_rows,
    upsert_entity_rows,
    write_new,
)

T = TypeVar("T")


def _passages(count: int) -> str:
    return f"{count} passage{'s' if count != 1 else ''}"


def _check_limit(limit: int) -> None:
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")


class PostgresChunkStore(PostgresJudging, PostgresCorrections):
    """``ChunkStore`` on PostgreSQL; create with ``await PostgresChunkStore.connect(dsn)``."""

    _backends: Backends

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        retries: int = DEFAULT_RETRIES,
        call_timeout: float = CALL_TIMEOUT_S,
        dsn: str | None = None,
        settings: dict[str, str] | None = None,
        image_cache_passages: int = DEFAULT_IMAGE_CACHE_PASSAGES,
    ) -> None:
        self._pool = pool
        self._calls = Calls(pool, retries=retries, call_timeout=call_timeout)
        #: tenant -> its live passages by ordinal, as of one generation (see ``Image``).
        self._images = ImageCache(image_cache_passages)
        self._side = SideReader(dsn, settings or {})
        self._backends = Backends()

    @classmethod
    async def connect(
        cls,
        dsn: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 8,
        retries: int = DEFAULT_RETRIES,
        call_timeout: float = CALL_TIMEOUT_S,
        image_cache_passages: int = DEFAULT_IMAGE_CACHE_PASSAGES,
    ) -> PostgresChunkStore:
        """Open a pool (owned by the store; ``close()`` closes it) and create the schema."""
        settings = {"application_name": "lexplain", **SESSION_SETTINGS}
        if schema is not None:
            if IDENTIFIER.fullmatch(schema) is None:
                raise ValueError(f"schema must match {IDENTIFIER.pattern}, got {schema!r}")
            settings["search_path"] = schema
        settings = await connection_settings(dsn, settings, CONNECT_TIMEOUT_S)
        backends = Backends()
        pool = await asyncpg.create_pool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            server_settings=settings,
            timeout=CONNECT_TIMEOUT_S,
            command_timeout=STATEMENT_TIMEOUT_S,
            setup=backends.acquired,
            connection_class=GivingWayConnection,
        )
        store = cls(
            pool,
            retries=retries,
            call_timeout=call_timeout,
            dsn=dsn,
            settings=settings,
            image_cache_passages=image_cache_passages,
        )
        store._backends = backends
        try:
            await store._run(lambda conn: create_schema(conn, schema))
        except BaseException:
            await pool.close()
            raise
        return store

    def lower_backend_priority(self, niceness: int) -> None:
        """Run the server processes serving this store's connections at ``niceness`` (as
        ``nice``), from their next use on: for bulk work on a server that runs on this machine
        for us alone (the embedded one), so it leaves the cores to interactive sessions. A
        backend that may not be reniced (another user's) keeps its priority."""
        self._backends.niceness = niceness

    async def close(self) -> None:
        try:
            await self._side.aclose()
        finally:
            await self._pool.close()

    async def _run(
        self,
        operation: Callable[[asyncpg.Connection], Awaitable[T]],
        *,
        writing: str | None = None,
    ) -> T:
        """``operation`` on a pooled connection, bounded and retried (see ``resilience``)."""
        return await self._calls.run(operation, writing=writing)

    # -- writes ---------------------------------------------------------------

    async def upsert_many(self, chunks: Sequence[StoredChunk]) -> int:
        batch = checked_for_write(chunks)
        if not batch:
            return 0
        tenants = sorted({chunk.tenant_id for chunk in batch})
        profiles = await self._profiles(tenants)
        staging = await stage_batch(batch, profiles)

        async def write(conn: asyncpg.Connection, changes: ImageChanges) -> bool:
            nonlocal profiles, staging
            now = await locked_profiles(conn, tenants)
            if now != profiles:  # a re-index committed since we staged: stage again
                profiles, staging = now, stage(batch, now)
            return await write_new(conn, staging, {}, changes)

        if await self._write(write, _passages(len(batch))):
            await self._refresh_statistics()
        return len(batch)

    async def _write(
        self, operation: Callable[[asyncpg.Connection, ImageChanges], Awaitable[T]], writing: str
    ) -> T:
        """``operation`` in one transaction; once committed, the cached images it touched are
        updated from what it changed (``ImageCache.update``), not read again whole."""
        done: list[ImageChanges] = []

        async def attempt(conn: asyncpg.Connection) -> T:
            changes = ImageChanges()  # a retried attempt starts afresh
            async with conn.transaction():
                result = await operation(conn, changes)
            done[:] = [changes]
            return result

        result = await self._run(attempt, writing=writing)
        self._images.update(done[0])
        return result

    async def _profiles(self, tenants: Sequence[UUID]) -> dict[UUID, Profile]:
        async def read(conn: asyncpg.Connection) -> dict[UUID, Profile]:
            return await read_profiles(conn, tenants, lock=False)

        return await self._run(read)

    async def replace_source(
        self, source_id: str, tenant_id: UUID, chunks: Sequence[StoredChunk]
    ) -> int:
        removed = await self._replace(tenant_id, [(source_id, chunks)], (), f"source {source_id!r}")
        return removed[0]

    async def replace_sources(
        self,
        tenant_id: UUID,
        sources: Sequence[tuple[str, Sequence[StoredChunk]]],
        entities: Sequence[Entity] = (),
    ) -> list[int]:
        what = f"{len(sources)} source{'s' if len(sources) != 1 else ''}"
        return await self._replace(tenant_id, sources, entities, what)

    async def _replace(
        self,
        tenant_id: UUID,
        sources: Sequence[tuple[str, Sequence[StoredChunk]]],
        entities: Sequence[Entity],
        what: str,
    ) -> list[int]:
        """One transaction: lock the sources, upsert the entities, delete the orphans, then
        stage every passage and term row with COPY and move them in set-based statements."""
        checked = await checked_in_pieces(tenant_id, sources)  # giving way between sources
        for entity in entities:
            check_name(entity.name, "entity")
        latest = list({entity.entity_id: entity for entity in entities}.values())
        batch = [chunk for _, chunks in checked for chunk in chunks]
        keep = {chunk.id for chunk in batch}
        source_ids = [source_id for source_id, _ in checked]
        profiles = await self._profiles([tenant_id])
        # A big batch in the worker process, not a thread (see core.stores.postgres.staging).
        staging = await stage_batch(batch, profiles)

        async def write(conn: asyncpg.Connection, changes: ImageChanges) -> tuple[list[int], bool]:
            nonlocal profiles, staging
            now = await locked_profiles(conn, [tenant_id])
            if now != profiles:  # a re-index committed since we staged: stage again
                profiles, staging = now, stage(batch, now)
            profile = profiles.get(tenant_id, DEFAULT_PROFILE)
            return await replace_rows(
                conn, tenant_id, source_ids, keep, latest, staging, profile, changes
            )

        removed, bulk = await self._write(write, what)
        if bulk:
            await self._refresh_statistics()
        return removed

    async def _refresh_statistics(self) -> None:
        """ANALYZE after a bulk load, so the next query is not planned for the empty table.

        Autovacuum would get there within a minute or so; until then the candidate query
        measured 2-5x slower on a freshly loaded Cranfield. Sampling costs ~0.1-0.3 s. It is
        an optimisation after a committed write, so its failure is not the write's failure.
        """

        async def analyze(conn: asyncpg.Connection) -> None:
            await conn.execute("ANALYZE passages")
            await conn.execute("ANALYZE postings")

        with contextlib.suppress(asyncpg.PostgresError, ConnectionLost, *CONNECTION_LOST):
            await self._run(analyze)

    async def delete_by_source(self, source_id: str, tenant_id: UUID) -> int:
        if not is_storable(source_id):
            return 0

        async def write(conn: asyncpg.Connection, changes: ImageChanges) -> int:
            return await delete_source_rows(conn, tenant_id, source_id, changes)

        return await self._write(write, f"the deletion of source {source_id!r}")

    async def delete_by_tenant(self, tenant_id: UUID) -> int:
        async def write(conn: asyncpg.Connection) -> int:
            async with conn.transaction():
                return await delete_tenant_rows(conn, tenant_id)

        return await self._run(write, writing="the deletion of the workspace's passages")

    async def delete_workspace(self, tenant_id: UUID) -> int:
        async def write(conn: asyncpg.Connection) -> int:
            async with conn.transaction():
                await tombstone(conn, tenant_id)
                return await delete_tenant_rows(conn, tenant_id)

        return await self._run(write, writing="the deletion of the workspace")

    async def upsert_entities(self, entities: Sequence[Entity], tenant_id: UUID) -> int:
        for entity in entities:
            check_name(entity.name, "entity")
        latest = {entity.entity_id: entity for entity in entities}
        if not latest:
            return 0

        async def write(conn: asyncpg.Connection) -> None:
            async with conn.transaction():
                await upsert_entity_rows(conn, tenant_id, list(latest.values()))

        await self._run(write, writing=f"{len(latest)} entities")
        return len(latest)

    async def upsert_workspace(self, workspace: Workspace) -> None:
        check_name(workspace.name, "workspace")

        async def write(conn: asyncpg.Connection) -> bool:
            # Created as plain: passages written before the workspace existed were tokenised
            # so; a new workspace of another profile is then re-indexed to it, below.
            async with conn.transaction():
                return await upsert(conn, workspace)

        if (
            await self._run(write, writing=f"workspace {workspace.name!r}")
            and workspace.profile is not DEFAULT_PROFILE
        ):
            await self.reindex(workspace.tenant_id, workspace.profile)

    async def reindex(
        self, tenant_id: UUID, profile: Profile, on_progress: ReindexProgress | None = None
    ) -> int:
        profile = Profile(profile)

        async def write(conn: asyncpg.Connection) -> int:
            async with conn.transaction():
                found = await conn.fetchval(
                    "SELECT 1 FROM workspaces WHERE tenant_id = $1 AND NOT deleted FOR UPDATE",
                    tenant_id,
                )
                if found is None:
                    raise KeyError(f"no workspace with tenant id {tenant_id}")
                count = await reindex_rows(conn, tenant_id, profile, on_progress)
                await conn.execute(
                    "UPDATE workspaces SET profile = $2 WHERE tenant_id = $1",
                    tenant_id,
                    profile.value,
                )
                return count

        count = await self._run(write, writing="the re-indexed workspace")
        await self._refresh_statistics()
        return count

    async def repair(self) -> list[str]:
        """``python -m core db repair``: one line per workspace fixed (``repairs.repair_all``)."""
        return await repair_all(self._calls)

    # -- reads ----------------------------------------------------------------

    async def get(self, chunk_id: str, tenant_id: UUID) -> StoredChunk | None:
        if not is_storable(chunk_id):
            return None

        async def read(conn: asyncpg.Connection) -> StoredChunk | None:
            row = await conn.fetchrow(
                f"SELECT {CHUNK_COLUMNS} FROM passages p WHERE p.tenant_id = $1 AND p.id = $2",  # noqa: S608
                tenant_id,
                chunk_id,
            )
            return None if row is None else chunk_from_row(row)

        return await self._run(read)

    async def get_by_source(self, source_id: str, tenant_id: UUID) -> list[StoredChunk]:
        return (await self.get_by_sources([source_id], tenant_id)).get(source_id, [])

    async def get_by_sources(
        self, source_ids: Sequence[str], tenant_id: UUID
    ) -> dict[str, list[StoredChunk]]:
        wanted = lookups.storable_only(source_ids)
        found: dict[str, list[StoredChunk]] = {}
        query = (  # one round trip, where one a source was ~1,100 a diagnosis (issue 50)
            f"SELECT {CHUNK_COLUMNS} FROM passages p WHERE p.tenant_id = $1 "  # noqa: S608
            "AND p.source_id = ANY($2::text[]) ORDER BY p.source_id, p.chunk_index, p.id"
        )
        for chunk in await self._chunks(query, tenant_id, wanted) if wanted else []:
            found.setdefault(chunk.source_id, []).append(chunk)
        return found

    async def passage_ids_by_source(
        self, source_ids: Sequence[str], tenant_id: UUID
    ) -> dict[str, list[str]]:
        wanted = lookups.storable_only(source_ids)
        if not wanted:
            return {}
        return await self._run(lambda conn: lookups.passage_ids_by_source(conn, tenant_id, wanted))

    async def source_ids(self, chunk_ids: Sequence[str], tenant_id: UUID) -> dict[str, str]:
        ids = lookups.storable_only(chunk_ids)
        return await self._run(lambda conn: lookups.source_ids(conn, tenant_id, ids)) if ids else {}

    async def get_by_entity(self, entity_id: UUID, tenant_id: UUID) -> list[StoredChunk]:
        return await self._chunks(
            f"SELECT {CHUNK_COLUMNS} FROM passages p "  # noqa: S608
            "WHERE p.tenant_id = $1 AND p.entity_ids @> ARRAY[$2::uuid] "
            "ORDER BY p.source_id, p.chunk_index, p.id",
            tenant_id,
            entity_id,
        )

    async def _chunks(self, query: str, *args: Any) -> list[StoredChunk]:
        async def read(conn: asyncpg.Connection) -> list[StoredChunk]:
            return [chunk_from_row(row) for row in await conn.fetch(query, *args)]

        return await self._run(read)

    async def lexical_candidates(
        self,
        terms: Sequence[str],
        tenant_id: UUID,
        limit: int,
        within: PassageFilter | None = None,
    ) -> LexicalCandidates:
        _check_limit(limit)
        check_filter(within)
        wanted = distinct_terms(terms)
        if not wanted:
            return LexicalCandidates(stats=CorpusStats(n_docs=0, avg_doc_length=0.0))
        # A term no store can hold (NUL, lone surrogate) is in no passage: df 0, no query.
        askable = [term for term in wanted if is_storable(term)]

        async def read(conn: asyncpg.Connection) -> LexicalCandidates:
            return await read_candidates(
                conn, self._images, self._side, tenant_id, terms, wanted, askable, limit,
                None if within is None or within.empty else within,
            )  # fmt: skip

        return await self._run(read)

    async def list_sources(self, tenant_id: UUID) -> list[SourceSummary]:
        return await self._run(lambda conn: listings.source_summaries(conn, tenant_id))

    async def source_passage_counts(self, tenant_id: UUID) -> dict[str, int]:
        return await self._run(lambda conn: listings.source_passage_counts(conn, tenant_id))

    async def list_entities(self, tenant_id: UUID) -> list[EntitySummary]:
        return await self._run(lambda conn: listings.entity_summaries(conn, tenant_id))

    async def corpus_summary(self, tenant_id: UUID) -> CorpusSummary:
        return await self._run(lambda conn: listings.corpus_summary(conn, tenant_id))

    async def passage_count(self, tenant_id: UUID) -> int:
        async def read(conn: asyncpg.Connection) -> int:
            count = await conn.fetchval(
                "SELECT passages FROM tenant_counters WHERE tenant_id = $1", tenant_id
            )
            return 0 if count is None else int(count)

        return await self._run(read)

    async def generation(self, tenant_id: UUID) -> int:
        async def read(conn: asyncpg.Connection) -> int:
            found = await conn.fetchval(
                "SELECT generation FROM tenant_counters WHERE tenant_id = $1", tenant_id
            )
            return 0 if found is None else int(found)

        return await self._run(read)

    async def doc_lengths(self, tenant_id: UUID) -> list[int]:
        async def read(conn: asyncpg.Connection) -> list[int]:
            rows = await conn.fetch(
                "SELECT doc_length FROM passages WHERE tenant_id = $1 ORDER BY doc_length",
                tenant_id,
            )
            return [int(r["doc_length"]) for r in rows]

        return await self._run(read)

    async def terms_with_prefix(
        self, prefix: str, tenant_id: UUID, limit: int
    ) -> list[TermFrequency]:
        _check_limit(limit)
        if limit == 0 or not is_storable(prefix):
            return []
        upper = prefix_upper_bound(prefix)

        async def read(conn: asyncpg.Connection) -> list[TermFrequency]:
            rows = await top_terms(conn, tenant_id, prefix, upper, limit)
            return [TermFrequency(term=term, df=df) for term, df in rows]

        return await self._run(read)

    async def get_entities(self, entity_ids: Sequence[UUID], tenant_id: UUID) -> list[Entity]:
        asked = list(dict.fromkeys(entity_ids))
        if not asked:
            return []

        async def read(conn: asyncpg.Connection) -> list[Entity]:
            rows = await conn.fetch(
                "SELECT id, name, kind FROM entities WHERE tenant_id = $1 AND id = ANY($2::uuid[])",
                tenant_id,
                asked,
            )
            known = {r["id"]: Entity(id=r["id"], name=r["name"], kind=r["kind"]) for r in rows}
            return [known[e] for e in asked if e in known]

        return await self._run(read)

    async def list_workspaces(self) -> list[Workspace]:
        async def read(conn: asyncpg.Connection) -> list[Workspace]:
            rows = await conn.fetch(WORKSPACES + " ORDER BY w.name, w.tenant_id")
            return [workspace_from_row(r) for r in rows]

        return await self._run(read)

    async def get_workspace(self, tenant_id: UUID) -> Workspace | None:
        async def read(conn: asyncpg.Connection) -> Workspace | None:
            row = await conn.fetchrow(WORKSPACE, tenant_id)
            return None if row is None else workspace_from_row(row)

        return await self._run(read)

    async def retired(self, tenant_id: UUID) -> bool:
        async def read(conn: asyncpg.Connection) -> bool:
            return bool(await conn.fetchval(RETIRED, tenant_id))

        return await self._run(read)

    async def find_workspace(self, name: str) -> Workspace | None:
        return await self._run(lambda conn: find(conn, name))

    async def add_member(self, tenant_id: UUID, email: str) -> bool:
        email = member_email(email)

        async def write(conn: asyncpg.Connection) -> bool:
            async with conn.transaction():
                owner = await locked_owner(conn, tenant_id)
                if email == owner:
                    return False
                status = await conn.execute(
                    "INSERT INTO workspace_members (tenant_id, email) VALUES ($1, $2) "
                    "ON CONFLICT DO NOTHING",
                    tenant_id,
                    email,
                )
                return bool(str(status).endswith(" 1"))

        return await self._run(write, writing=f"the member {email!r}")

    async def set_owner(self, tenant_id: UUID, email: str) -> None:
        email = member_email(email)

        async def write(conn: asyncpg.Connection) -> None:
            async with conn.transaction():
                await locked_owner(conn, tenant_id)
                await conn.execute(
                    "UPDATE workspaces SET owner = $2 WHERE tenant_id = $1", tenant_id, email
                )
                await conn.execute(
                    "DELETE FROM workspace_members WHERE tenant_id = $1 AND email = $2",
                    tenant_id,
                    email,
                )

        await self._run(write, writing=f"the owner {email!r}")

    async def remove_member(self, tenant_id: UUID, email: str) -> bool:
        email = member_email(email)

        async def write(conn: asyncpg.Connection) -> bool:
            async with conn.transaction():
                if email == await locked_owner(conn, tenant_id):
                    raise ValueError("the owner of a workspace cannot be removed from it")
                status = await conn.execute(
                    "DELETE FROM workspace_members WHERE tenant_id = $1 AND email = $2",
                    tenant_id,
                    email,
                )
                return bool(str(status).endswith(" 1"))

        return await self._run(write, writing=f"the removal of the member {email!r}")
