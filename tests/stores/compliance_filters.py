"""The filter half of the store contract: ``lexical_candidates(..., within=PassageFilter)``.

Mixed into each adapter's compliance class beside ``ChunkStoreCompliance``, so every store
(memory, PostgreSQL 15, embedded 18, Citus) is held to one reading of a filter. Expected values
come from the domain's rule (``PassageFilter.admits`` over the written passages) and the
truncation rule (``expected_order``), never from a store.
"""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

import pytest

from core.domain.bm25 import corpus_stats
from core.domain.chunks import StoredChunk
from core.domain.filters import MetadataMatch, PassageFilter
from core.domain.ranking import rank_chunks
from core.domain.tokenize import tokenize
from core.stores.port import ChunkStore
from tests.stores.compliance import corpus_chunks, expected_order, make_chunk

#: Two entities the filtered corpus names.
WAVES, MOON = uuid.UUID(int=101), uuid.UUID(int=202)
#: What each passage of ``corpus_chunks`` names and carries, by position.
EXTRAS: tuple[tuple[tuple[UUID, ...], dict[str, Any]], ...] = (
    ((WAVES,), {"title": "Coasts", "year": 1990, "tags": ["sea", "tide"], "peer": True}),
    ((MOON, WAVES), {"title": "Moon", "year": 1991, "tags": ["moon"], "ratio": 1.5}),
    ((), {"title": "Ice", "year": 1990, "nested": {"a": 1}}),
    ((), {"title": "Ice", "tags": ["ice", 7]}),
    ((MOON,), {"title": "Rivers", "year": "1990"}),
    ((), {}),
)
TERMS = ["ocean", "coast", "tides", "rivers", "glaciers", "moon"]


def _corpus(tenant: UUID) -> list[StoredChunk]:
    return [
        make_chunk(
            tenant, c.source_id, c.text, c.chunk_index, entity_ids=entities, metadata=metadata
        )
        for c, (entities, metadata) in zip(corpus_chunks(tenant), EXTRAS, strict=True)
    ]


def _admitted(chunks: list[StoredChunk], within: PassageFilter) -> list[StoredChunk]:
    return [c for c in chunks if within.admits(c.source_id, c.entity_ids, c.metadata)]


#: Filters of every kind and their combinations, each admitting a different set.
FILTERS = (
    PassageFilter(sources=("doc-a",)),
    PassageFilter(sources=("doc-c", "doc-b")),
    PassageFilter(entities=(WAVES,)),
    PassageFilter(entities=(WAVES, MOON)),
    PassageFilter(metadata=(MetadataMatch(field="title", values=("Ice",)),)),
    PassageFilter(metadata=(MetadataMatch(field="year", values=("1990",)),)),
    PassageFilter(metadata=(MetadataMatch(field="tags", values=("tide", "7")),)),
    PassageFilter(metadata=(MetadataMatch(field="peer", values=("true",)),)),
    PassageFilter(metadata=(MetadataMatch(field="ratio", values=("1.5",)),)),
    PassageFilter(metadata=(MetadataMatch(field="nested", values=('{"a": 1}',)),)),
    PassageFilter(sources=("doc-a", "doc-c"), entities=(MOON,)),
    PassageFilter(
        sources=("doc-a", "doc-b", "doc-c"),
        metadata=(
            MetadataMatch(field="year", values=("1990", "1991")),
            MetadataMatch(field="title", values=("Coasts", "Ice", "Rivers")),
        ),
    ),
    PassageFilter(sources=("nowhere",)),
)


#: Filters naming what no store can hold, built past the model's check as a caller could.
UNSTORABLE_FILTERS = (
    PassageFilter.model_construct(sources=("doc-a\x00",), entities=(), metadata=()),
    PassageFilter.model_construct(
        sources=(),
        entities=(),
        metadata=(MetadataMatch.model_construct(field="ti\x00tle", values=("Ice",)),),
    ),
    PassageFilter.model_construct(
        sources=(),
        entities=(),
        metadata=(MetadataMatch.model_construct(field="title", values=("Ice\x00",)),),
    ),
    PassageFilter.model_construct(sources=("doc-\ud800",), entities=(), metadata=()),
)


class FilterCompliance:
    """Cases every adapter's ``lexical_candidates(..., within=...)`` must pass."""

    async def test_a_filter_naming_nul_or_a_lone_surrogate_is_refused_in_the_models_sentence(
        self, store: ChunkStore
    ) -> None:
        # PostgreSQL raised CharacterNotInRepertoireError where memory answered (issue 49).
        tenant = uuid.uuid4()
        await store.upsert_many(_corpus(tenant))
        for within in UNSTORABLE_FILTERS:
            said = within.unstorable()
            assert said is not None and said.endswith("which no store can hold")
            for limit in (0, 10):
                with pytest.raises(ValueError) as refused:
                    await store.lexical_candidates(TERMS, tenant, limit, within)
                assert str(refused.value) == said, within
        found = await store.lexical_candidates(TERMS, tenant, 10)  # the store still answers
        assert found.matching > 0

    async def test_a_filter_keeps_exactly_the_passages_it_admits_in_the_truncation_order(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = _corpus(tenant)
        await store.upsert_many(chunks)
        every = expected_order(chunks, TERMS)
        seen = set()
        for within in FILTERS:
            admitted = _admitted(chunks, within)
            order = expected_order(admitted, TERMS)
            seen.add(tuple(order))
            for limit in (0, 1, 2, 100):
                found = await store.lexical_candidates(TERMS, tenant, limit, within)
                assert [c.chunk.id for c in found.candidates] == order[:limit], within
                assert found.matching == len(order), within
                assert found.filtered_out == len(every) - len(order), within
                assert found.cut_by_limit == len(order) - min(limit, len(order))
        assert len(seen) >= 8, "the filters should admit different sets"

    async def test_statistics_stay_the_whole_workspaces_under_a_filter(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = _corpus(tenant)
        await store.upsert_many(chunks)
        expected = corpus_stats([tokenize(c.text) for c in chunks], TERMS)
        for within in FILTERS:
            found = await store.lexical_candidates(TERMS, tenant, 100, within)
            assert found.stats == expected, within

    async def test_a_filtered_ranking_is_the_unfiltered_one_without_the_excluded_passages(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = _corpus(tenant)
        await store.upsert_many(chunks)
        whole = rank_chunks(TERMS, await store.lexical_candidates(TERMS, tenant, 100), 100)
        for within in FILTERS:
            kept = {c.id for c in _admitted(chunks, within)}
            found = await store.lexical_candidates(TERMS, tenant, 100, within)
            ranked = rank_chunks(TERMS, found, 100)
            assert [(r.chunk.id, r.score) for r in ranked] == [
                (r.chunk.id, r.score) for r in whole if r.chunk.id in kept
            ], within

    async def test_an_empty_filter_is_no_filter_and_another_tenants_sources_admit_nothing(
        self, store: ChunkStore
    ) -> None:
        tenant, other = uuid.uuid4(), uuid.uuid4()
        await store.upsert_many(_corpus(tenant))
        await store.upsert_many([make_chunk(other, "theirs", "ocean coast tides", 0)])
        plain = await store.lexical_candidates(TERMS, tenant, 100)
        assert await store.lexical_candidates(TERMS, tenant, 100, PassageFilter()) == plain
        theirs = await store.lexical_candidates(
            TERMS, tenant, 100, PassageFilter(sources=("theirs",))
        )
        assert len(theirs.candidates) == 0 and theirs.filtered_out == plain.matching

    async def test_the_limit_is_spent_on_admitted_passages_only(self, store: ChunkStore) -> None:
        tenant = uuid.uuid4()
        # Ten passages of "busy" match both terms; the filtered source's match one: without
        # the filter before the limit, limit 3 would hold none of them.
        busy = [make_chunk(tenant, "busy", f"alpha beta filler{i}", i) for i in range(10)]
        quiet = [make_chunk(tenant, "quiet", f"alpha only{i}", i) for i in range(4)]
        await store.upsert_many([*busy, *quiet])
        within = PassageFilter(sources=("quiet",))
        found = await store.lexical_candidates(["alpha", "beta"], tenant, 3, within)
        assert [c.chunk.id for c in found.candidates] == sorted(c.id for c in quiet)[:3]
        assert (found.matching, found.filtered_out, found.cut_by_limit) == (4, 10, 1)
