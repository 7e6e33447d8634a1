"""The in-memory chunk store: the reference every other adapter is held to.

Per tenant it holds one immutable ``Image`` (``memory.index``): segments of CSR posting
arrays, one per write batch, merged by size, with tombstones for deletes; the arrays are the
only index. A query touches only the postings of its terms, and n_docs / avg_doc_length are
O(1). The alternative, re-tokenising every passage per query, is simpler but makes a query
cost the whole corpus.

Every write builds the next image aside — outside the lock, giving way per few thousand
characters tokenised (``memory.writer``: a batch's texts at once), per few hundred lookups and
per piece of arrays joined, the next image's arrays in a thread once the image holds
passages — and swaps it in under one ``threading.Lock`` if no other write replaced it meanwhile
(else it builds again, reusing its tokens). Readers take the current image under the lock and
read it without it: they see the old version or the new one, never a mix, and an upload into a
full workspace holds the lock only for the swap. No method awaits holding the lock, so it serves
tasks on one loop and threads alike (a per-tenant lock: more parallelism, harder deadlocks).

Every chunk is copied on the way in and on the way out: callers own what they pass and what
they get back. The store keeps a passage as a plain tuple (``memory.kept.Kept``: ~1/8 of the
pydantic model's memory, and untracked by the cyclic collector) and builds a ``StoredChunk``
only for a read.

A big corpus is millions of long-lived passages, and Python's cyclic collector walks every
object it tracks in every full collection: at a million passages a page run then paused ~2 s
every other time (bench_browser). So nothing the store keeps per passage is tracked: a passage
is an untracked tuple (``memory.kept``), an image's rows of them a tuple (untracked in turn),
ids and keys numpy arrays; a full collection of a process holding a million tiny passages is
~14 ms, its own other objects. Rejected: one full collection and ``gc.freeze()`` at the first
read of each new image above 100k passages (this store's answer before): ~30 ms on the loop
per write into a 300k workspace, and a garbage cycle alive at that moment was kept for good;
raising the collector's thresholds (process-wide, and it only spaces the pauses out).

A tenant is tokenised with its workspace's profile. ``reindex`` builds a whole new image
aside the same way and swaps it in if no write touched the tenant meanwhile, else starts
again: readers never see a half-stemmed corpus.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass, field
from uuid import UUID

import numpy as np
import numpy.typing as npt

from core.checkpoint import checkpoint, giving_way, stepped, turn_due
from core.domain.bm25 import CorpusStats
from core.domain.chunks import StoredChunk
from core.domain.entities import Entity
from core.domain.filters import PassageFilter
from core.domain.names import name_key
from core.domain.postings import Posting
from core.domain.ranking import LexicalCandidates
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.stores.checks import checked_for_write, each_checked_source
from core.stores.memory.corrections import InMemoryCorrections
from core.stores.memory.index import Image, Segment, image_of
from core.stores.memory.judging import InMemoryJudging
from core.stores.memory.kept import (
    ENTITY_IDS,
    ID,
    SOURCE_ID,
    TEXT,
    Kept,
    kept_passage,
    passage_copy,
)
from core.stores.memory.reads import admitted_rows, passage_ids, passages_of, read_view, sources_of
from core.stores.memory.workspaces import InMemoryWorkspaces
from core.stores.memory.writer import TEXT_PIECE_CHARS, TEXT_STEP_CHARS, SegmentWriter
from core.stores.port import (
    CorpusSummary,
    EntitySummary,
    NameTaken,
    ReindexProgress,
    SourceSummary,
    TermFrequency,
    Workspace,
    WorkspaceGone,
    check_filter,
    check_name,
    distinct_terms,
    passage_terms,
)

Ints = npt.NDArray[np.int64]
#: Tenant versions: one counter for the process, so no two versions are ever equal.
_VERSIONS = itertools.count(1)
#: Passages re-tokenised between two progress reports of a re-index.
_REINDEX_BATCH = 500
#: Rows (stored plus written) from which a write builds its image in a thread (a re-index always
#: does; numpy's work on numbers lets go of the GIL): on the loop 14k rows held it 10-100 ms.
_THREAD_ROWS = 2_000
#: Sources, and passages, a write that gives way looks up in the image between two checkpoints:
#: 1,398 of each among 12,600 string keys were ~8 ms in one piece on the loop.
LOOKUP_STEP = 256


def _runs(chunks: Sequence[Kept], chars: int) -> Iterator[Sequence[Kept]]:
    """``chunks`` in consecutive runs of at most ``chars`` characters of text (a longer
    passage is a run of its own)."""
    start = size = 0
    for end, chunk in enumerate(chunks):
        if size and size + len(chunk[TEXT]) > chars:
            yield chunks[start:end]
            start, size = end, 0
        size += len(chunk[TEXT])
    if start < len(chunks):
        yield chunks[start:]


@dataclass
class _Tenant:
    """One tenant: its current image and the entity maps, swapped and updated under the lock."""

    image: Image
    entities: dict[UUID, Entity] = field(default_factory=dict)
    #: entity -> ids of the live passages naming it.
    mentions: dict[UUID, set[str]] = field(default_factory=dict)
    #: The image version ``frequencies`` is of, and its df per term.
    frequencies: tuple[int, dict[str, int]] | None = None

    def link(self, chunk: Kept) -> None:
        for entity in set(chunk[ENTITY_IDS]) if chunk[ENTITY_IDS] else ():
            self.mentions.setdefault(entity, set()).add(chunk[ID])

    def unlink(self, chunk: Kept) -> None:
        for entity in set(chunk[ENTITY_IDS]) if chunk[ENTITY_IDS] else ():
            ids = self.mentions.get(entity)
            if ids is None:
                continue
            ids.discard(chunk[ID])
            if not ids:
                del self.mentions[entity]

    def copy_of(self, row: int, tenant_id: UUID) -> StoredChunk:
        return passage_copy(self.image.chunks[row], tenant_id)

    def doc_frequencies(self, image: Image) -> dict[str, int]:
        """Every live term of ``image`` (this tenant's, now or lately) and its df, computed
        once per image. Called without the lock: an image never changes, and two readers
        racing only compute it twice."""
        known = self.frequencies
        if known is None or known[0] != image.version:
            known = self.frequencies = (image.version, image.doc_frequencies())
        return known[1]


@dataclass
class _Write:
    """One tenant's part of a write: the image it was built on and the image that follows."""

    tenant: _Tenant
    before: Image
    after: Image
    #: Chunk objects that leave the image (removed, or replaced by a new object) and arrive.
    leaving: list[Kept]
    arriving: list[Kept]
    #: Passages removed per source replaced.
    removed: list[int]


class InMemoryChunkStore(InMemoryCorrections, InMemoryJudging, InMemoryWorkspaces):
    """``ChunkStore`` in process memory; nothing survives the process."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._tenants: dict[UUID, _Tenant] = {}
        self._workspaces: dict[UUID, Workspace] = {}
        #: Ids of deleted workspaces: never used again, so a late write cannot land in one.
        self._deleted: set[UUID] = set()

    def _tenant(self, tenant_id: UUID) -> _Tenant:
        """The tenant for writing (created if new), under the lock; a deleted workspace's
        id raises ``WorkspaceGone`` before anything changes."""
        if tenant_id in self._deleted:
            raise WorkspaceGone(tenant_id)
        tenant = self._tenants.get(tenant_id)
        if tenant is None:
            image = Image.empty(self._profile(tenant_id), next(_VERSIONS))
            tenant = self._tenants[tenant_id] = _Tenant(image)
        return tenant

    def _profile(self, tenant_id: UUID) -> Profile:
        workspace = self._workspaces.get(tenant_id)
        return DEFAULT_PROFILE if workspace is None else workspace.profile

    def _peek(self, tenant_id: UUID) -> _Tenant:
        """The tenant for reading: an unknown tenant reads as empty, and is not created."""
        return self._tenants.get(tenant_id) or _Tenant(Image.empty(DEFAULT_PROFILE, 0))

    def _image(self, tenant_id: UUID) -> Image:
        """The tenant's image for reading: it never changes, so it is read without the lock."""
        with self._lock:
            return self._peek(tenant_id).image

    # -- writing --------------------------------------------------------------------------

    async def _planned(
        self,
        tenant: _Tenant,
        batch: Sequence[Kept],
        sources: Sequence[tuple[str, Container[str]]],
        built: dict[tuple[Profile, tuple[str, ...]], tuple[Segment, Ints]],
        give_way: bool,
    ) -> _Write:
        """The write of ``batch`` (one chunk per id) into ``tenant``'s current image, built
        aside; ``sources``' other passages are removed. ``built`` keeps the new passages' segment
        across attempts (by profile and ids: what it was built from); ``give_way`` reaches a
        checkpoint per ``LOOKUP_STEP`` lookups, per ``TEXT_STEP_CHARS`` characters tokenised
        and per piece joined."""
        before = tenant.image
        removed_rows: list[int] = []
        removed: list[int] = []
        source_places: dict[str, int] = {}  # each source's place in the image's source order
        # Sources and passages looked up LOOKUP_STEP at a time when giving way, else in one pass
        # (a lookup per source was ~10 us of a tiny document's write).
        step = LOOKUP_STEP if give_way else max(len(sources), len(batch), 1)
        for at in range(0, len(sources), step):
            group = sources[at : at + step]
            each, lows = before.rows_of_sources([source_id for source_id, _ in group])
            source_places.update(zip([s for s, _ in group], lows.tolist(), strict=True))
            for (_, keep), rows in zip(group, each, strict=True):
                if not rows:  # a new source (most of a bulk load's)
                    removed.append(0)
                    continue
                orphans = [row for row in rows if before.ids[row] not in keep]
                removed_rows += orphans
                removed.append(len(orphans))
                await checkpoint()
            await checkpoint()
        replaced: list[tuple[int, Kept]] = []
        added: list[Kept] = []
        places: list[int] = []  # each added id's place in the image's id order
        for at in range(0, len(batch), step):
            part = batch[at : at + step]
            rows, found = before.rows_of_ids([chunk[ID] for chunk in part])
            for chunk, row, place in zip(part, rows, found, strict=True):
                if row >= 0:
                    # Same key means same source and text, so the terms are unchanged.
                    replaced.append((row, chunk))
                else:
                    added.append(chunk)
                    places.append(place)
            await checkpoint()
        key = (before.profile, tuple(chunk[ID] for chunk in added))
        if added and key not in built:
            writer = SegmentWriter(give_way)
            for run in _runs(added, TEXT_STEP_CHARS if give_way else TEXT_PIECE_CHARS):
                writer.add_texts([chunk[TEXT] for chunk in run], before.profile)
                if give_way:
                    await checkpoint()
            built.clear()
            built[key] = await stepped(writer.finish_steps()) if give_way else writer.finish()
        segment, lengths = built[key] if added else (None, None)
        leaving = [before.chunks[row] for row in removed_rows]
        leaving += [before.chunks[row] for row, _ in replaced]
        arriving = [chunk for _, chunk in replaced] + added
        if not (removed_rows or replaced or added):
            return _Write(tenant, before, before, [], [], removed)

        # Each added passage's source's place, when the write looked every source up (a
        # replace; ``upsert_many`` names none): the image's insert then searches no strings.
        known = [source_places.get(c[SOURCE_ID], -1) for c in added] if source_places else []
        sources_at = known if known and min(known) >= 0 else None

        def build() -> Image:
            rows = np.asarray(removed_rows, dtype=np.int64)
            version = next(_VERSIONS)
            return before.written(
                version, rows, replaced, added, segment, lengths, True, places, sources_at
            )

        if len(before.ids) + len(added) >= _THREAD_ROWS:
            after = await asyncio.to_thread(build)
        else:
            after = build()
        return _Write(tenant, before, after, leaving, arriving, removed)

    async def _write(
        self,
        groups: dict[UUID, tuple[list[Kept], list[tuple[str, Container[str]]]]],
        entities: dict[UUID, Entity],
        give_way: bool = True,
    ) -> dict[UUID, list[int]]:
        """Write each tenant's (chunks, sources replaced) aside, then swap every image in at
        once under the lock; start again if another write swapped one meanwhile."""
        built: dict[UUID, dict[tuple[Profile, tuple[str, ...]], tuple[Segment, Ints]]] = {
            t: {} for t in groups
        }
        while True:
            with self._lock:
                tenants = {t: self._tenant(t) for t in groups}
            writes: dict[UUID, _Write] = {}
            for tenant_id, (batch, sources) in groups.items():
                writes[tenant_id] = await self._planned(
                    tenants[tenant_id], batch, sources, built[tenant_id], give_way
                )
            with self._lock:
                current = {t: self._tenant(t) for t in groups}
                if any(
                    current[t] is not w.tenant or w.tenant.image is not w.before
                    for t, w in writes.items()
                ):
                    continue
                for write in writes.values():
                    tenant = write.tenant
                    tenant.image = write.after
                    for chunk in write.leaving:
                        tenant.unlink(chunk)
                    for chunk in write.arriving:
                        tenant.link(chunk)
                    tenant.entities.update(entities)
            if give_way:  # the swap a step of its own, apart from the caller's next work
                await checkpoint()
            return {t: w.removed for t, w in writes.items()}

    async def upsert_many(self, chunks: Sequence[StoredChunk]) -> int:
        checked = checked_for_write(chunks)
        groups: dict[UUID, dict[str, Kept]] = {}
        for chunk in checked:
            groups.setdefault(chunk.tenant_id, {})[chunk.id] = kept_passage(chunk)
        # A bulk write (bench, parity, the CLI's batches) tokenises without giving way per
        # passage, as it did under the lock; uploads come through ``replace_sources``.
        await self._write(
            {t: (list(byid.values()), []) for t, byid in groups.items()}, {}, give_way=False
        )
        return len(checked)

    async def replace_source(
        self, source_id: str, tenant_id: UUID, chunks: Sequence[StoredChunk]
    ) -> int:
        return (await self.replace_sources(tenant_id, [(source_id, chunks)]))[0]

    async def replace_sources(
        self,
        tenant_id: UUID,
        sources: Sequence[tuple[str, Sequence[StoredChunk]]],
        entities: Sequence[Entity] = (),
    ) -> list[int]:
        byid: dict[str, Kept] = {}
        kept: list[tuple[str, Container[str]]] = []
        for source_id, batch in each_checked_source(tenant_id, sources):
            # A group's checks and copies (~0.25 s for 1,398 passages) gave way to no search.
            if len(batch) == 1:  # a tiny document's one passage: no dict, no set (~1 us)
                only = batch[0]
                byid[only.id] = kept_passage(only)
                kept.append((source_id, (only.id,)))
            else:
                copies = {chunk.id: kept_passage(chunk) for chunk in batch}
                byid.update(copies)
                kept.append((source_id, set(copies)))
            if turn_due():  # no coroutine per source between two turns (a million at 1M)
                await checkpoint()
        for entity in entities:
            check_name(entity.name, "entity")
        latest = {entity.entity_id: entity.model_copy() for entity in entities}
        # In steps only where a session may wait (the service installs a pause): a load cut into
        # 8 KB batches paid each batch's tokenising setup (six 42 MB files: 107 -> 33 s CPU).
        written = await self._write(
            {tenant_id: (list(byid.values()), kept)}, latest, give_way=giving_way()
        )
        return written[tenant_id]

    async def delete_by_source(self, source_id: str, tenant_id: UUID) -> int:
        with self._lock:
            tenant = self._tenants.get(tenant_id)
            if tenant is None:
                return 0
            image = tenant.image
            rows = image.rows_of_source(source_id)
            if not len(rows):
                return 0
            # Tombstones only: merging is left to the next write, which builds aside.
            tenant.image = image.written(next(_VERSIONS), rows, (), (), merge=False)
            for row in rows.tolist():
                tenant.unlink(image.chunks[row])
            return len(rows)

    async def delete_by_tenant(self, tenant_id: UUID) -> int:
        with self._lock:
            tenant = self._tenants.pop(tenant_id, None)
            return 0 if tenant is None else tenant.image.passages

    async def delete_workspace(self, tenant_id: UUID) -> int:
        with self._lock:
            self._workspaces.pop(tenant_id, None)
            self._drop_judging(tenant_id)
            self._drop_corrections(tenant_id)
            self._deleted.add(tenant_id)
            tenant = self._tenants.pop(tenant_id, None)
            return 0 if tenant is None else tenant.image.passages

    # -- reading --------------------------------------------------------------------------

    async def get(self, chunk_id: str, tenant_id: UUID) -> StoredChunk | None:
        image = self._image(tenant_id)
        row = image.row_of(chunk_id)
        return None if row is None else passage_copy(image.chunks[row], tenant_id)

    async def get_by_source(self, source_id: str, tenant_id: UUID) -> list[StoredChunk]:
        return passages_of(self._image(tenant_id), [source_id], tenant_id).get(source_id, [])

    async def get_by_sources(
        self, source_ids: Sequence[str], tenant_id: UUID
    ) -> dict[str, list[StoredChunk]]:
        return passages_of(self._image(tenant_id), source_ids, tenant_id)

    async def passage_ids_by_source(
        self, source_ids: Sequence[str], tenant_id: UUID
    ) -> dict[str, list[str]]:
        return passage_ids(self._image(tenant_id), source_ids)

    async def source_ids(self, chunk_ids: Sequence[str], tenant_id: UUID) -> dict[str, str]:
        return sources_of(self._image(tenant_id), chunk_ids)

    async def get_by_entity(self, entity_id: UUID, tenant_id: UUID) -> list[StoredChunk]:
        with self._lock:
            tenant = self._peek(tenant_id)
            image = tenant.image
            rows = [image.row_of(i) for i in tenant.mentions.get(entity_id, ())]
            chunks = [tenant.copy_of(row, tenant_id) for row in rows if row is not None]
        return sorted(chunks, key=lambda chunk: (chunk.source_id, chunk.chunk_index, chunk.id))

    async def lexical_candidates(
        self,
        terms: Sequence[str],
        tenant_id: UUID,
        limit: int,
        within: PassageFilter | None = None,
    ) -> LexicalCandidates:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        check_filter(within)
        wanted = distinct_terms(terms)
        if not wanted:
            return LexicalCandidates(stats=CorpusStats(n_docs=0, avg_doc_length=0.0))
        with self._lock:
            tenant = self._peek(tenant_id)
            image = tenant.image
            mentioned = (
                [i for e in within.entities for i in tenant.mentions.get(e, ())]
                if within is not None and within.entities
                else None
            )
        # The image never changes: the rest reads it (its view) without the lock.
        view = await read_view(image)
        postings: list[Posting] = []
        for at in range(0, len(wanted), LOOKUP_STEP):  # 1,000 terms' lookups were ~2 ms
            postings += [view.posting(term) for term in wanted[at : at + LOOKUP_STEP]]
            if giving_way():
                await checkpoint()
        chunks = image.chunks

        def lookup(rows: Ints) -> list[StoredChunk]:
            return [passage_copy(chunks[row], tenant_id) for row in view.image_rows[rows].tolist()]

        admitted = None
        if within is not None and not within.empty:
            admitted = await admitted_rows(image, view, within, mentioned)
        return await view.read(image, wanted, postings, limit, lookup, admitted)

    async def list_sources(self, tenant_id: UUID) -> list[SourceSummary]:
        return await stepped(self._image(tenant_id).source_summary_steps())

    async def source_passage_counts(self, tenant_id: UUID) -> dict[str, int]:
        return await stepped(self._image(tenant_id).source_count_steps())

    async def list_entities(self, tenant_id: UUID) -> list[EntitySummary]:
        with self._lock:
            tenant = self._peek(tenant_id)
            summaries = [
                EntitySummary(entity=tenant.entities[e].model_copy(), passages=len(ids))
                for e, ids in tenant.mentions.items()
                if e in tenant.entities
            ]
        return sorted(summaries, key=lambda s: (-s.passages, s.entity.name, s.entity.entity_id))

    async def corpus_summary(self, tenant_id: UUID) -> CorpusSummary:
        with self._lock:
            tenant = self._peek(tenant_id)
            image = tenant.image
        vocabulary = len(tenant.doc_frequencies(image))
        passages = image.passages
        return CorpusSummary(
            sources=len(image.source_counts()[0]),
            passages=passages,
            tokens=image.tokens,
            avg_doc_length=image.tokens / passages if passages else 0.0,
            vocabulary=vocabulary,
        )

    async def passage_count(self, tenant_id: UUID) -> int:
        return self._image(tenant_id).passages

    async def generation(self, tenant_id: UUID) -> int:
        with self._lock:
            tenant = self._tenants.get(tenant_id)
            return 0 if tenant is None else tenant.image.version

    async def doc_lengths(self, tenant_id: UUID) -> list[int]:
        image = self._image(tenant_id)
        lengths: list[int] = np.sort(image.lengths[image.id_rows]).tolist()
        return lengths

    async def terms_with_prefix(
        self, prefix: str, tenant_id: UUID, limit: int
    ) -> list[TermFrequency]:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        with self._lock:
            tenant = self._peek(tenant_id)
            image = tenant.image
        df = tenant.doc_frequencies(image)
        found = [(-n, t) for t, n in df.items() if t.startswith(prefix)]
        return [TermFrequency(term=t, df=-n) for n, t in heapq.nsmallest(limit, found)]

    async def upsert_entities(self, entities: Sequence[Entity], tenant_id: UUID) -> int:
        for entity in entities:
            check_name(entity.name, "entity")
        latest = {entity.entity_id: entity.model_copy() for entity in entities}
        with self._lock:
            self._tenant(tenant_id).entities.update(latest)
        return len(latest)

    async def get_entities(self, entity_ids: Sequence[UUID], tenant_id: UUID) -> list[Entity]:
        with self._lock:
            known = self._peek(tenant_id).entities
            return [known[e].model_copy() for e in dict.fromkeys(entity_ids) if e in known]

    async def upsert_workspace(self, workspace: Workspace) -> None:
        check_name(workspace.name, "workspace")
        key = name_key(workspace.name)
        with self._lock:
            if workspace.tenant_id in self._deleted:
                raise WorkspaceGone(workspace.tenant_id)
            for other in self._workspaces.values():
                if other.tenant_id != workspace.tenant_id and name_key(other.name) == key:
                    raise NameTaken(f"the workspace name “{workspace.name}” is taken")
            known = self._workspaces.get(workspace.tenant_id)
            if known is not None:
                workspace = workspace.model_copy(
                    update={
                        "profile": known.profile,
                        "owner": known.owner,
                        "members": known.members,
                    }
                )
            self._workspaces[workspace.tenant_id] = workspace.model_copy()
            tenant = self._tenants.get(workspace.tenant_id)
            if tenant is not None and tenant.image.profile != workspace.profile:
                # Passages written before their workspace existed were tokenised as plain.
                chunks = tenant.image.live_chunks()
                writer = SegmentWriter()
                for chunk in chunks:
                    writer.add(passage_terms(chunk[TEXT], workspace.profile))
                tenant.image = image_of(workspace.profile, next(_VERSIONS), chunks, writer.finish())

    async def reindex(
        self, tenant_id: UUID, profile: Profile, on_progress: ReindexProgress | None = None
    ) -> int:
        profile = Profile(profile)
        while True:
            with self._lock:
                workspace = self._workspaces.get(tenant_id)
                if workspace is None:
                    raise KeyError(f"no workspace with tenant id {tenant_id}")
                old = self._tenants.get(tenant_id)
                image = old.image if old is not None else None
            chunks = image.live_chunks() if image is not None else []
            writer = SegmentWriter(give_way=True)
            for done, chunk in enumerate(chunks, start=1):
                writer.add(passage_terms(chunk[TEXT], profile))
                await checkpoint()  # searches (any session's) go first, on the old image
                if done % _REINDEX_BATCH == 0 and on_progress is not None:
                    on_progress(done, len(chunks))
            made = await stepped(writer.finish_steps())
            fresh = await asyncio.to_thread(image_of, profile, next(_VERSIONS), chunks, made)
            with self._lock:
                current = self._tenants.get(tenant_id)
                if current is not old or (old is not None and old.image is not image):
                    continue  # a write changed the tenant while we built: build again
                if old is None:
                    self._tenants[tenant_id] = _Tenant(fresh)
                else:
                    old.image = fresh
                self._workspaces[tenant_id] = workspace.model_copy(update={"profile": profile})
            if on_progress is not None:
                on_progress(len(chunks), len(chunks))
            return len(chunks)

    async def close(self) -> None:
        """Nothing to release; the data stays readable until the store is dropped."""
