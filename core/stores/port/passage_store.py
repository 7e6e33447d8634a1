"""The passages half of the store port: what a store does with passages and their term index.

Candidates cross the port as columns (``core.domain.ranking.LexicalCandidates``): the corpus
statistics; ``terms``, the requested terms distinct and sorted; one row per candidate in
the truncation order (distinct requested terms matched desc, then chunk id asc) with
``ids`` (chunk id, object array), ``id_order`` (integers ordered as the ids, so the
score tie-break is an integer compare), ``doc_lengths`` and ``tfs`` (rows x terms, int64);
``matching``; and ``lookup``, rows -> the caller's own ``StoredChunk`` copies from the
same snapshot, which ranking calls only for the k it returns. A store may build the
columns from per-passage rows (``LexicalCandidates(stats=..., candidates=[...])``) at the
cost of one model per row; the in-memory store builds them from arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable
from uuid import UUID

from core.domain.chunks import StoredChunk
from core.domain.entities import Entity
from core.domain.filters import PassageFilter
from core.domain.ranking import LexicalCandidates
from core.domain.tokenize import Profile
from core.stores.port.summaries import CorpusSummary, SourceSummary, TermFrequency

#: Called during a re-index with (passages done, passages in all).
ReindexProgress = Callable[[int, int], None]


@runtime_checkable
class PassageStore(Protocol):
    """Passages and their term index, per tenant: writes, reads, the candidates of a query."""

    async def upsert_many(self, chunks: Sequence[StoredChunk]) -> int:
        """Insert or replace passages by (tenant_id, id); returns how many were written."""
        ...

    async def replace_source(
        self, source_id: str, tenant_id: UUID, chunks: Sequence[StoredChunk]
    ) -> int:
        """Atomically make ``chunks`` the source's passages; returns orphans removed.

        Chunks of another source or tenant are rejected (ValueError) before anything is written.
        """
        ...

    async def replace_sources(
        self,
        tenant_id: UUID,
        sources: Sequence[tuple[str, Sequence[StoredChunk]]],
        entities: Sequence[Entity] = (),
    ) -> list[int]:
        """``replace_source`` for many sources plus ``upsert_entities``, all in one atomic
        write (bulk loading); returns the orphans removed per source, in the order given.

        Everything is checked before anything is written; a source named twice is rejected.
        """
        ...

    async def delete_by_source(self, source_id: str, tenant_id: UUID) -> int:
        """Delete a source's passages; returns how many."""
        ...

    async def delete_by_tenant(self, tenant_id: UUID) -> int:
        """Delete every passage and entity of a tenant; returns passages deleted."""
        ...

    async def get(self, chunk_id: str, tenant_id: UUID) -> StoredChunk | None: ...

    async def get_by_source(self, source_id: str, tenant_id: UUID) -> list[StoredChunk]:
        """Ordered by chunk_index, then id."""
        ...

    async def get_by_sources(
        self, source_ids: Sequence[str], tenant_id: UUID
    ) -> dict[str, list[StoredChunk]]:
        """``get_by_source`` of each of ``source_ids`` in one read: each source the tenant
        holds a passage of -> its passages (ordered by chunk_index, then id); a source it
        holds none of is left out. What an analysis of many documents a query needs, where a
        read per document was a round trip each (issue 50: ~1,100 a diagnosis on PostgreSQL)."""
        ...

    async def passage_ids_by_source(
        self, source_ids: Sequence[str], tenant_id: UUID
    ) -> dict[str, list[str]]:
        """The ids of ``get_by_sources``'s passages, in its order, and nothing else: what a
        diagnosis by document needs of a relevant document the limit cut, where a copy of
        each passage (text, metadata, entities) was ~1/4 of what it cost beyond its
        Evaluate in memory (issue 49)."""
        ...

    async def source_ids(self, chunk_ids: Sequence[str], tenant_id: UUID) -> dict[str, str]:
        """The source id of each of ``chunk_ids`` the tenant holds (an id it does not hold is
        left out), in one read: what a by-document analysis needs of every candidate, where a
        copy of each passage (``get``, a candidate lookup) cost most of its time (issue 50)."""
        ...

    async def lexical_candidates(
        self,
        terms: Sequence[str],
        tenant_id: UUID,
        limit: int,
        within: PassageFilter | None = None,
    ) -> LexicalCandidates:
        """Whole-corpus statistics and up to ``limit`` candidates, in the order this module states.

        ``within`` (``core.domain.filters``) restricts which passages may be candidates,
        before the limit; the statistics stay the whole workspace's, and the matching
        passages it excluded are counted apart (``filtered_out``). An empty filter is none.
        """
        ...

    async def list_sources(self, tenant_id: UUID) -> list[SourceSummary]:
        """Ordered by source_id."""
        ...

    async def source_passage_counts(self, tenant_id: UUID) -> dict[str, int]:
        """Each source's passages, as ``list_sources`` counts them, in no order: for a caller
        that only compares counts (an upload's report), without a model per source."""
        ...

    async def corpus_summary(self, tenant_id: UUID) -> CorpusSummary: ...

    async def passage_count(self, tenant_id: UUID) -> int:
        """How many passages the tenant holds, without reading them (0 for an unknown tenant).

        What a page asks on every run ("is this workspace empty?"); ``list_sources`` answered
        it by listing every source, about 4 s a page at a million passages.
        """
        ...

    async def generation(self, tenant_id: UUID) -> int:
        """A number that changes with every write to the tenant's passages, by any process.

        Equal numbers mean the same passages and lengths (so the same rankings), which is what
        a cache of search results keys on; 0 for an unknown tenant. Cheap: one row or a field.
        """
        ...

    async def doc_lengths(self, tenant_id: UUID) -> list[int]:
        """Every passage's token length, ascending (for a histogram)."""
        ...

    async def terms_with_prefix(
        self, prefix: str, tenant_id: UUID, limit: int
    ) -> list[TermFrequency]:
        """Terms starting with ``prefix`` (already normalised), by df descending, then term."""
        ...

    async def reindex(
        self, tenant_id: UUID, profile: Profile, on_progress: ReindexProgress | None = None
    ) -> int:
        """Re-tokenise every passage of the tenant under ``profile`` and make it the workspace's.

        Atomic: until the new index is complete, every read sees the old one, whole; then
        passages, term index, statistics and the workspace's profile change together.
        Returns the passages re-indexed. An unknown workspace raises KeyError.
        """
        ...
