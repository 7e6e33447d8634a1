"""The in-memory chunk store: the reference every other adapter is held to.

It keeps, per tenant, an inverted index (term -> {chunk id: tf}), each passage's
token length and running totals, all updated at write time, so a query touches
only the postings of its terms and n_docs / avg_doc_length are O(1). The
alternative, re-tokenising every passage per query, is simpler but makes a query
cost the whole corpus. One ``threading.Lock`` guards everything: no method awaits
while holding it, so it serves several tasks on one loop and several threads alike;
a per-tenant lock would allow more parallelism for a cost in deadlock reasoning
that a single-machine exploration store does not need.

Every chunk is deep-copied on the way in and on the way out: callers own what
they pass and what they get back.

A big corpus is millions of long-lived objects, and Python's cyclic collector walks all of
them in every full collection: at a million passages a page run then paused ~2 s every other
time (bench_browser). So once a store holds ``freeze_above`` passages, each new columnar image
is followed by one full collection and ``gc.freeze()``: what is alive then — the corpus — is
left out of later collections; garbage cycles are still collected first, so nothing leaks.
Rejected: objects the collector does not track (a rewrite of every chunk), and raising the
collector's thresholds (process-wide, and it only spaces the pauses out).

A tenant is tokenised with its workspace's profile. ``reindex`` builds a whole new
``_Tenant`` outside the lock (yielding to the loop between batches, so searches
keep running on the old one) and swaps it in under the lock if no write touched
the tenant meanwhile, else starts again: readers see the old index or the new
one, never a mix. Patching the postings in place would need no second copy of
the index but would show readers a half-stemmed corpus.
"""

from __future__ import annotations

import copy
import gc
import heapq
import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from uuid import UUID

import numpy as np
import numpy.typing as npt

from core.checkpoint import Steps, checkpoint, stepped
from core.domain.bm25 import CorpusStats
from core.domain.chunks import StoredChunk
from core.domain.entities import Entity
from core.domain.names import name_key
from core.domain.postings import CsrPostings, Posting, postings_candidate_steps
from core.domain.ranking import LexicalCandidates
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.stores.memory_judging import InMemoryJudging
from core.stores.port import (
    CorpusSummary,
    EntitySummary,
    NameTaken,
    ReindexProgress,
    SourceSummary,
    TermFrequency,
    Workspace,
    WorkspaceGone,
    check_name,
    checked_for_write,
    distinct_terms,
    each_checked_source,
    member_email,
    passage_terms,
)

#: Tenant versions: one counter for the process, so no two versions are ever equal.
_VERSIONS = itertools.count(1)


@dataclass
class _Tenant:
    """One tenant's passages and the indexes derived from them at write time."""

    chunks: dict[str, StoredChunk] = field(default_factory=dict)
    lengths: dict[str, int] = field(default_factory=dict)
    #: term -> chunk id -> tf; len() of a posting dict is the term's df.
    postings: dict[str, dict[str, int]] = field(default_factory=dict)
    sources: dict[str, set[str]] = field(default_factory=dict)
    mentions: dict[UUID, set[str]] = field(default_factory=dict)
    entities: dict[UUID, Entity] = field(default_factory=dict)
    tokens: int = 0
    #: The tokenizer profile every passage of this index was tokenised with.
    profile: Profile = DEFAULT_PROFILE
    #: A new number (store-wide, never reused) at every passage write, so a re-index can tell
    #: whether it raced one and a recreated tenant never repeats a deleted one's generation.
    version: int = field(default_factory=lambda: next(_VERSIONS))
    #: The columnar image queries read, rebuilt on the first read after a write.
    image: _Columns | None = None

    def add(self, chunk: StoredChunk, terms: tuple[int, dict[str, int]] | None = None) -> None:
        """Index ``chunk``; ``terms`` is its ``passage_terms`` under this profile, if known."""
        self.version = next(_VERSIONS)
        previous = self.chunks.get(chunk.id)
        if previous is not None:
            # Same key means same source and text, so the terms are unchanged.
            self._unlink_entities(previous)
        else:
            length, tfs = terms or passage_terms(chunk.text, self.profile)
            self.lengths[chunk.id] = length
            self.tokens += length
            for term, tf in tfs.items():
                self.postings.setdefault(term, {})[chunk.id] = tf
            self.sources.setdefault(chunk.source_id, set()).add(chunk.id)
        self.chunks[chunk.id] = chunk
        for entity in set(chunk.entity_ids):
            self.mentions.setdefault(entity, set()).add(chunk.id)

    def remove(self, chunk_id: str) -> None:
        self.version = next(_VERSIONS)
        chunk = self.chunks.pop(chunk_id)
        self._unlink_entities(chunk)
        self.tokens -= self.lengths.pop(chunk_id)
        # The passage's terms are its text tokenised again with this index's profile, not a
        # stored forward index: that held one dict entry per (passage, term), about as much
        # memory as the postings themselves, for deletes that are rare next to reads.
        _, tfs = passage_terms(chunk.text, self.profile)
        for term in tfs:
            posting = self.postings[term]
            del posting[chunk_id]
            if not posting:
                del self.postings[term]
        ids = self.sources[chunk.source_id]
        ids.discard(chunk_id)
        if not ids:
            del self.sources[chunk.source_id]

    def _unlink_entities(self, chunk: StoredChunk) -> None:
        for entity in set(chunk.entity_ids):
            ids = self.mentions.get(entity)
            if ids is None:
                continue
            ids.discard(chunk.id)
            if not ids:
                del self.mentions[entity]

    def copy_of(self, chunk_id: str) -> StoredChunk:
        return _copy(self.chunks[chunk_id])

    def columns(self) -> _Columns:
        """The columnar image of this version (call under the store's lock)."""
        if self.image is None or self.image.version != self.version:
            self.image = _Columns.of(self)
        return self.image


@dataclass
class _Columns:
    """A read-only columnar image of one tenant version: rows are chunk ids in ascending order.

    Built on the first read after a write and kept until the next write, so the row of a
    passage is its rank in chunk-id order and ties between scores are integer compares.
    Every posting list becomes two int32 arrays (rows ascending, tf) in one pass, CSR-style
    (``core.domain.postings``, the kernel the PostgreSQL store shares). Building them lazily per
    term was tried first: the first query to touch a common word then paid for its whole
    posting list in Python (tens of ms at 100k passages), which dominated p50.
    """

    version: int
    ids: npt.NDArray[np.object_]
    lengths: npt.NDArray[np.int64]
    chunks: list[StoredChunk]
    postings: CsrPostings

    @classmethod
    def of(cls, tenant: _Tenant) -> _Columns:
        order = sorted(tenant.chunks)
        ids = np.empty(len(order), dtype=object)
        ids[:] = order
        rows = {chunk_id: row for row, chunk_id in enumerate(order)}
        return cls(
            version=tenant.version,
            ids=ids,
            lengths=np.fromiter((tenant.lengths[i] for i in order), np.int64, len(order)),
            chunks=[tenant.chunks[i] for i in order],
            postings=CsrPostings.build(tenant.postings, rows),
        )

    def candidate_steps(
        self, stats: CorpusStats, wanted: list[str], postings: list[Posting], limit: int
    ) -> Steps[LexicalCandidates]:
        """Rows matching a term, by distinct terms matched desc then id asc, first ``limit``."""
        chunks = self.chunks

        def lookup(rows: npt.NDArray[np.int64]) -> list[StoredChunk]:
            return [_copy(chunks[row]) for row in rows.tolist()]

        return postings_candidate_steps(
            stats, wanted, postings, self.lengths, self.ids, limit, lookup
        )


#: Passages re-tokenised between two progress reports (and two yields to the loop).
_REINDEX_BATCH = 500


def _rebuilt(tenant: _Tenant, profile: Profile) -> _Tenant:
    """The same passages and entities, indexed under ``profile``."""
    fresh = _Tenant(profile=profile, entities=tenant.entities)
    for chunk in tenant.chunks.values():
        fresh.add(chunk)
    return fresh


def _copy(chunk: StoredChunk) -> StoredChunk:
    """A copy sharing nothing mutable; ~10x faster than ``model_copy(deep=True)``."""
    return chunk.model_copy(
        update={
            "entity_ids": list(chunk.entity_ids),
            "metadata": copy.deepcopy(chunk.metadata) if chunk.metadata else {},
        }
    )


#: Passages in a store from which a new columnar image freezes the collector (see the docstring);
#: below it a full collection is short and freezing would not pay.
FREEZE_ABOVE = 100_000


def _settle_collector() -> None:
    """Collect garbage cycles, then leave every object alive out of later collections."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class InMemoryChunkStore(InMemoryJudging):
    """``ChunkStore`` in process memory; nothing survives the process."""

    def __init__(self, *, freeze_above: int = FREEZE_ABOVE) -> None:
        super().__init__()
        self._freeze_above = freeze_above
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
            tenant = self._tenants[tenant_id] = _Tenant(profile=self._profile(tenant_id))
        return tenant

    def _profile(self, tenant_id: UUID) -> Profile:
        workspace = self._workspaces.get(tenant_id)
        return DEFAULT_PROFILE if workspace is None else workspace.profile

    def _peek(self, tenant_id: UUID) -> _Tenant:
        """The tenant for reading: an unknown tenant reads as empty, and is not created."""
        return self._tenants.get(tenant_id) or _Tenant()

    async def upsert_many(self, chunks: Sequence[StoredChunk]) -> int:
        batch = [_copy(chunk) for chunk in checked_for_write(chunks)]
        with self._lock:
            tenants = {t: self._tenant(t) for t in dict.fromkeys(c.tenant_id for c in batch)}
            for chunk in batch:
                tenants[chunk.tenant_id].add(chunk)
        return len(batch)

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
        checked: list[tuple[str, list[StoredChunk]]] = []
        for source_id, batch in each_checked_source(tenant_id, sources):
            # A group's checks and copies (~0.25 s for 1,398 passages) gave way to no search.
            checked.append((source_id, [_copy(chunk) for chunk in batch]))
            await checkpoint()
        for entity in entities:
            check_name(entity.name, "entity")
        latest = {entity.entity_id: entity.model_copy() for entity in entities}
        # Tokenising is most of a write's time: done before the lock, giving way to searches
        # between passages (one group is up to thousands of passages; inside the lock it held
        # the service's loop for a third of a second). Used only if the profile still holds.
        # Passages already stored keep their terms (same id, same text): a re-upload of an
        # unchanged file tokenises nothing. The membership test runs without the lock; a
        # stale answer only moves a tokenisation into ``add``, under the lock.
        profile = self._profile(tenant_id)
        if await self._staged(tenant_id, profile, checked, latest):
            return [0] * len(checked)
        stored = self._peek(tenant_id).chunks
        terms: dict[str, tuple[int, dict[str, int]]] = {}
        for _, batch in checked:
            for chunk in batch:
                if chunk.id not in stored:
                    terms[chunk.id] = passage_terms(chunk.text, profile)
                    await checkpoint()
        removed = []
        with self._lock:
            tenant = self._tenant(tenant_id)
            known = tenant.profile == profile
            tenant.entities.update(latest)
            for source_id, batch in checked:
                keep = {chunk.id for chunk in batch}
                orphans = sorted(tenant.sources.get(source_id, set()) - keep)
                for orphan in orphans:
                    tenant.remove(orphan)
                for chunk in batch:
                    tenant.add(chunk, terms.pop(chunk.id, None) if known else None)
                removed.append(len(orphans))
        return removed

    async def _staged(
        self,
        tenant_id: UUID,
        profile: Profile,
        checked: list[tuple[str, list[StoredChunk]]],
        latest: dict[UUID, Entity],
    ) -> bool:
        """Write a group into an EMPTY tenant by indexing it aside, giving way per source, and
        swapping it in at once under the lock; False (nothing written) otherwise.

        Inserting a 1,398-passage group under the lock held the loop ~0.23 s (bench_stall
        upload). Into a tenant with passages this would need copy-on-write of every posting
        dict the group touches (a common word's is the corpus's size), so those groups still
        insert under the lock. A write that changed the tenant meanwhile voids the staging.
        Each passage is tokenised as it is added (no list of every passage's terms first: for
        one 58 MB document that forward index was as large as the postings themselves).
        """
        with self._lock:
            tenant = self._tenant(tenant_id)
            if tenant.chunks or tenant.profile != profile:
                return False
            version = tenant.version
        staged = _Tenant(profile=profile, entities=tenant.entities)
        for _, batch in checked:
            for chunk in batch:
                staged.add(chunk)  # tokenised here, giving way per passage as before
                await checkpoint()
            await checkpoint()
        with self._lock:
            current = self._tenants.get(tenant_id)
            if current is not tenant or tenant.chunks or tenant.version != version:
                return False
            tenant.entities.update(latest)
            self._tenants[tenant_id] = staged
        return True

    async def delete_by_source(self, source_id: str, tenant_id: UUID) -> int:
        with self._lock:
            tenant = self._tenants.get(tenant_id)
            if tenant is None:
                return 0
            ids = sorted(tenant.sources.get(source_id, set()))
            for chunk_id in ids:
                tenant.remove(chunk_id)
            return len(ids)

    async def delete_by_tenant(self, tenant_id: UUID) -> int:
        with self._lock:
            tenant = self._tenants.pop(tenant_id, None)
            return 0 if tenant is None else len(tenant.chunks)

    async def delete_workspace(self, tenant_id: UUID) -> int:
        with self._lock:
            self._workspaces.pop(tenant_id, None)
            self._drop_judging(tenant_id)
            self._deleted.add(tenant_id)
            tenant = self._tenants.pop(tenant_id, None)
            return 0 if tenant is None else len(tenant.chunks)

    async def get(self, chunk_id: str, tenant_id: UUID) -> StoredChunk | None:
        with self._lock:
            tenant = self._peek(tenant_id)
            return tenant.copy_of(chunk_id) if chunk_id in tenant.chunks else None

    async def get_by_source(self, source_id: str, tenant_id: UUID) -> list[StoredChunk]:
        with self._lock:
            tenant = self._peek(tenant_id)
            chunks = [tenant.copy_of(i) for i in tenant.sources.get(source_id, ())]
        return sorted(chunks, key=lambda chunk: (chunk.chunk_index, chunk.id))

    async def get_by_entity(self, entity_id: UUID, tenant_id: UUID) -> list[StoredChunk]:
        with self._lock:
            tenant = self._peek(tenant_id)
            chunks = [tenant.copy_of(i) for i in tenant.mentions.get(entity_id, ())]
        return sorted(chunks, key=lambda chunk: (chunk.source_id, chunk.chunk_index, chunk.id))

    async def lexical_candidates(
        self, terms: Sequence[str], tenant_id: UUID, limit: int
    ) -> LexicalCandidates:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        wanted = distinct_terms(terms)
        if not wanted:
            return LexicalCandidates(stats=CorpusStats(n_docs=0, avg_doc_length=0.0))
        with self._lock:
            tenant = self._peek(tenant_id)
            n_docs = len(tenant.chunks)
            stats = CorpusStats(
                n_docs=n_docs,
                avg_doc_length=tenant.tokens / n_docs if n_docs else 0.0,
                doc_frequencies={t: len(tenant.postings.get(t, ())) for t in wanted},
            )
            before = tenant.image
            columns = tenant.columns()
            if columns is not before and self._passages() >= self._freeze_above:
                _settle_collector()
            postings = [columns.postings.posting(term) for term in wanted]
        return await stepped(columns.candidate_steps(stats, wanted, postings, limit))

    def _passages(self) -> int:
        return sum(len(tenant.chunks) for tenant in self._tenants.values())

    async def list_sources(self, tenant_id: UUID) -> list[SourceSummary]:
        with self._lock:
            sources = self._peek(tenant_id).sources
            return [SourceSummary(source_id=s, passages=len(sources[s])) for s in sorted(sources)]

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
            passages = len(tenant.chunks)
            return CorpusSummary(
                sources=len(tenant.sources),
                passages=passages,
                tokens=tenant.tokens,
                avg_doc_length=tenant.tokens / passages if passages else 0.0,
                vocabulary=len(tenant.postings),
            )

    async def passage_count(self, tenant_id: UUID) -> int:
        with self._lock:
            return len(self._peek(tenant_id).chunks)

    async def generation(self, tenant_id: UUID) -> int:
        with self._lock:
            tenant = self._tenants.get(tenant_id)
            return 0 if tenant is None else tenant.version

    async def doc_lengths(self, tenant_id: UUID) -> list[int]:
        with self._lock:
            return sorted(self._peek(tenant_id).lengths.values())

    async def terms_with_prefix(
        self, prefix: str, tenant_id: UUID, limit: int
    ) -> list[TermFrequency]:
        if limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        with self._lock:
            postings = self._peek(tenant_id).postings
            found = [(-len(p), t) for t, p in postings.items() if t.startswith(prefix)]
        return [TermFrequency(term=t, df=-df) for df, t in heapq.nsmallest(limit, found)]

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
            if tenant is not None and tenant.profile != workspace.profile:
                # Passages written before their workspace existed were tokenised as plain.
                self._tenants[workspace.tenant_id] = _rebuilt(tenant, workspace.profile)

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
                chunks = list(old.chunks.values()) if old is not None else []
                version = old.version if old is not None else 0
            fresh = _Tenant(profile=profile)
            for done, chunk in enumerate(chunks, start=1):
                fresh.add(chunk)
                # Searches (any session's) go first, on the old index: a checkpoint per chunk
                # (cheap: it yields only when a call waits or every GIVE_WAY_EVERY_S).
                await checkpoint()
                if done % _REINDEX_BATCH == 0 and on_progress is not None:
                    on_progress(done, len(chunks))
            with self._lock:
                current = self._tenants.get(tenant_id)
                if current is not old or (old is not None and old.version != version):
                    continue  # a write changed the tenant while we built: build again
                if old is not None:
                    fresh.entities = old.entities
                    fresh.version = next(_VERSIONS)
                self._tenants[tenant_id] = fresh
                self._workspaces[tenant_id] = workspace.model_copy(update={"profile": profile})
            if on_progress is not None:
                on_progress(len(chunks), len(chunks))
            return len(chunks)

    async def get_workspace(self, tenant_id: UUID) -> Workspace | None:
        with self._lock:
            known = self._workspaces.get(tenant_id)
            return None if known is None else known.model_copy()

    async def retired(self, tenant_id: UUID) -> bool:
        with self._lock:
            return tenant_id in self._deleted

    async def find_workspace(self, name: str) -> Workspace | None:
        key = name_key(name)
        with self._lock:
            found = next((w for w in self._workspaces.values() if name_key(w.name) == key), None)
            return None if found is None else found.model_copy()

    async def add_member(self, tenant_id: UUID, email: str) -> bool:
        email = member_email(email)
        with self._lock:
            known = self._workspaces.get(tenant_id)
            if known is None:
                raise KeyError(f"no workspace with tenant id {tenant_id}")
            if email == known.owner or email in known.members:
                return False
            members = tuple(sorted((*known.members, email)))
            self._workspaces[tenant_id] = known.model_copy(update={"members": members})
            return True

    async def set_owner(self, tenant_id: UUID, email: str) -> None:
        email = member_email(email)
        with self._lock:
            known = self._workspaces.get(tenant_id)
            if known is None:
                raise KeyError(f"no workspace with tenant id {tenant_id}")
            members = tuple(m for m in known.members if m != email)
            self._workspaces[tenant_id] = known.model_copy(
                update={"owner": email, "members": members}
            )

    async def remove_member(self, tenant_id: UUID, email: str) -> bool:
        email = member_email(email)
        with self._lock:
            known = self._workspaces.get(tenant_id)
            if known is None:
                raise KeyError(f"no workspace with tenant id {tenant_id}")
            if email == known.owner:
                raise ValueError("the owner of a workspace cannot be removed from it")
            if email not in known.members:
                return False
            members = tuple(m for m in known.members if m != email)
            self._workspaces[tenant_id] = known.model_copy(update={"members": members})
            return True

    async def list_workspaces(self) -> list[Workspace]:
        with self._lock:
            spaces = [w.model_copy() for w in self._workspaces.values()]
        return sorted(spaces, key=lambda w: (w.name, w.tenant_id))

    async def close(self) -> None:
        """Nothing to release; the data stays readable until the store is dropped."""
