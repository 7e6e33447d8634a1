"""The store contract as one test class; each adapter's tests subclass it once.

One suite for every adapter, rather than one per adapter, is what keeps them
identical: a case added here binds all stores at once. Expected values are
computed independently from the texts (``tokenize``, ``corpus_stats``), never
read back from a store. Subclasses provide an async ``store`` fixture yielding an
empty store; ``fresh_store`` must give a second, independent empty store.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from typing import Any
from uuid import UUID

import pytest
from pydantic import ValidationError

from core.domain.bm25 import CorpusStats, corpus_stats
from core.domain.chunks import MAX_SOURCE_ID_CHARS, StoredChunk, chunk_id
from core.domain.entities import Entity, EntityCorrection
from core.domain.places import Place
from core.domain.ranking import rank_chunks
from core.domain.tokenize import MAX_TERM_CHARS, Profile, tokenize
from core.service.access import WorkspaceGuard
from core.stores.port import (
    ChunkStore,
    NameTaken,
    Workspace,
    WorkspaceGone,
    open_workspace,
    tenant_of,
)

PLAIN, ENGLISH = Profile.PLAIN, Profile.ENGLISH
#: Both profiles, plain first.
PROFILES = (PLAIN, ENGLISH)
#: Passages in the re-index race: enough that a re-index yields to readers several times.
REINDEX_PASSAGES = 3_000

#: Passages of a source long enough that an index compared as text would put 10 before 2.
MANY = 12
#: A corpus whose terms have different document frequencies and passages of different lengths.
CORPUS: tuple[tuple[str, str], ...] = (
    ("doc-a", "Ocean waves and ocean tides shape the coast, year after year"),
    ("doc-a", "Tides follow the moon; the moon pulls the ocean"),
    ("doc-b", "Mountain glaciers carve valleys"),
    ("doc-b", "Glaciers melt; meltwater feeds rivers and the ocean"),
    ("doc-c", "Rivers rivers rivers"),
    ("doc-c", "A coast of cliffs, a coast of sand, a coast of mud and tides"),
)


def make_chunk(
    tenant_id: UUID,
    source_id: str,
    text: str,
    chunk_index: int = 0,
    *,
    entity_ids: Sequence[UUID] = (),
    metadata: dict[str, Any] | None = None,
) -> StoredChunk:
    return StoredChunk(
        tenant_id=tenant_id,
        source_id=source_id,
        text=text,
        chunk_index=chunk_index,
        start_char=chunk_index * 1000,
        end_char=chunk_index * 1000 + len(text),
        entity_ids=list(entity_ids),
        metadata={} if metadata is None else metadata,
    )


def corpus_chunks(tenant_id: UUID) -> list[StoredChunk]:
    indexes: Counter[str] = Counter()
    chunks = []
    for source, text in CORPUS:
        chunks.append(make_chunk(tenant_id, source, text, indexes[source]))
        indexes[source] += 1
    return chunks


async def snapshot(store: ChunkStore, tenant_id: UUID) -> dict[str, Any]:
    """Everything a tenant's read methods show, to compare before and after a failed write."""
    sources = await store.list_sources(tenant_id)
    prefix_terms = await store.terms_with_prefix("", tenant_id, 1_000_000)
    terms = [t.term for t in prefix_terms]
    return {
        "sources": sources,
        "summary": await store.corpus_summary(tenant_id),
        "lengths": await store.doc_lengths(tenant_id),
        "terms": prefix_terms,
        "chunks": {s.source_id: await store.get_by_source(s.source_id, tenant_id) for s in sources},
        "entities": await store.list_entities(tenant_id),
        "candidates": await store.lexical_candidates(terms, tenant_id, 1_000_000),
    }


def expected_order(
    chunks: Sequence[StoredChunk], terms: Sequence[str], profile: Profile = PLAIN
) -> list[str]:
    """Ids by distinct requested terms contained, descending, then id: the truncation rule."""
    wanted = set(terms)
    matched = {c.id: len(wanted & set(tokenize(c.text, profile))) for c in chunks}
    return sorted((i for i, n in matched.items() if n > 0), key=lambda i: (-matched[i], i))


class ChunkStoreCompliance:
    """The whole ``ChunkStore`` contract. Subclass and provide ``store``."""

    @pytest.fixture
    async def store(self) -> AsyncIterator[ChunkStore]:
        raise NotImplementedError("a subclass provides the store under test")
        yield  # pragma: no cover

    # -- writes read back --------------------------------------------------------

    async def test_a_written_passage_reads_back_equal_by_every_read_method(
        self, store: ChunkStore
    ) -> None:
        tenant, entity = uuid.uuid4(), Entity(name="Ada Lovelace", kind="person")
        chunk = make_chunk(
            tenant,
            "notes",
            "Ada Lovelace wrote the first program",
            entity_ids=[entity.entity_id],
            metadata={"page": 3, "tags": ["history", "ünïcode"], "nested": {"x": 0.1}},
        )
        assert await store.upsert_many([chunk]) == 1
        assert await store.get(chunk.id, tenant) == chunk
        assert await store.get_by_source("notes", tenant) == [chunk]
        assert await store.get_by_entity(entity.entity_id, tenant) == [chunk]
        found = await store.lexical_candidates(["program"], tenant, 10)
        assert [c.chunk for c in found.candidates] == [chunk]

    async def test_an_unknown_passage_reads_as_none_and_empty_lists(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_many(corpus_chunks(tenant))
        assert await store.get("0" * 64, tenant) is None
        assert await store.get_by_source("no-such-source", tenant) == []
        assert await store.get_by_entity(uuid.uuid4(), tenant) == []

    async def test_get_by_sources_and_their_ids_read_each_held_source_and_leave_out_the_rest(
        self, store: ChunkStore
    ) -> None:
        tenant, other = uuid.uuid4(), uuid.uuid4()
        long = [make_chunk(tenant, "long", f"ocean passage {i}", i) for i in (2, 0, 1)]
        theirs = make_chunk(other, "theirs", "Ocean waves and ocean tides")
        await store.upsert_many([*corpus_chunks(tenant), *long, theirs])
        await store.delete_by_source("doc-c", tenant)
        held = ["doc-a", "doc-b", "long"]
        asked = ["long", "doc-c", "theirs", "doc-a", "long", "doc-b", "no-such-source"]
        asked += ["nul\x00", "\ud800", ""]
        expected = {source: await store.get_by_source(source, tenant) for source in held}
        assert [c.chunk_index for c in expected["long"]] == [0, 1, 2]
        found = await store.get_by_sources(asked, tenant)
        assert found == expected and sorted(found) == held
        assert await store.get_by_sources(["doc-b"], tenant) == {"doc-b": expected["doc-b"]}
        assert await store.get_by_sources(["theirs"], other) == {"theirs": [theirs]}
        assert await store.get_by_sources([], tenant) == {}
        assert await store.get_by_sources(asked, uuid.uuid4()) == {}
        # Their ids alone, in the same order, under the same rules.
        ids = {source: [c.id for c in held] for source, held in found.items()}
        assert await store.passage_ids_by_source(asked, tenant) == ids
        assert await store.passage_ids_by_source(["theirs"], other) == {"theirs": [theirs.id]}
        assert await store.passage_ids_by_source([], tenant) == {}
        assert await store.passage_ids_by_source(asked, uuid.uuid4()) == {}

    async def test_source_ids_name_the_source_of_each_held_passage_and_leave_out_the_rest(
        self, store: ChunkStore
    ) -> None:
        tenant, other = uuid.uuid4(), uuid.uuid4()
        chunks = corpus_chunks(tenant)
        theirs = make_chunk(other, "theirs", "Ocean waves and ocean tides")
        await store.upsert_many([*chunks, theirs])
        await store.delete_by_source("doc-c", tenant)
        held = {c.id: c.source_id for c in chunks if c.source_id != "doc-c"}
        asked = [*reversed([c.id for c in chunks]), chunks[0].id, theirs.id, "0" * 64]
        asked += ["not an id", "nul\x00", "\ud800", "", chunks[1].id.upper(), " " * 64, "g" * 64]
        assert await store.source_ids(asked, tenant) == held
        assert await store.source_ids([chunks[2].id], tenant) == {chunks[2].id: "doc-b"}
        for odd in ([chunks[1].id.upper(), "0" * 64], [" " * 64], ["é" * 64]):  # all 64 long
            assert await store.source_ids([*odd, chunks[0].id], tenant) == {chunks[0].id: "doc-a"}
        assert await store.source_ids([theirs.id], other) == {theirs.id: "theirs"}
        assert await store.source_ids([], tenant) == {}
        assert await store.source_ids(asked, uuid.uuid4()) == {}

    async def test_upserting_a_known_passage_again_updates_it_without_counting_it_twice(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = corpus_chunks(tenant)
        await store.upsert_many(chunks)
        before = await store.lexical_candidates(["ocean", "tides"], tenant, 100)
        moved = chunks[0].model_copy(update={"chunk_index": 7, "metadata": {"v": 2}})
        assert await store.upsert_many([moved, moved]) == 1
        after = await store.lexical_candidates(["ocean", "tides"], tenant, 100)
        assert after.stats == before.stats
        assert await store.get(moved.id, tenant) == moved
        assert (await store.corpus_summary(tenant)).passages == len(chunks)

    async def test_duplicates_within_one_batch_keep_the_last_version(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        first = make_chunk(tenant, "s", "same words", metadata={"version": 1})
        last = first.model_copy(update={"metadata": {"version": 2}})
        assert await store.upsert_many([first, last]) == 1
        assert await store.get(first.id, tenant) == last
        assert await store.doc_lengths(tenant) == [len(tokenize("same words"))]

    # -- isolation ---------------------------------------------------------------

    async def test_mutating_a_returned_object_never_changes_the_store(
        self, store: ChunkStore
    ) -> None:
        tenant, entity = uuid.uuid4(), Entity(name="Acme Corp", kind="organisation")
        chunk = make_chunk(
            tenant, "s", "Acme Corp sells ocean tides", entity_ids=[entity.entity_id],
            metadata={"k": [1, 2]},
        )  # fmt: skip
        await store.upsert_many([chunk])
        await store.upsert_entities([entity], tenant)
        reads: list[StoredChunk] = [
            c
            for c in [
                await store.get(chunk.id, tenant),
                *(await store.get_by_source("s", tenant)),
                *(await store.get_by_entity(entity.entity_id, tenant)),
            ]
            if c is not None
        ]
        found = await store.lexical_candidates(["ocean", "absent"], tenant, 10)
        reads.append(found.candidates[0].chunk)
        assert len(reads) == 4
        for read in reads:
            read.metadata["k"].append(3)
            read.metadata["new"] = True
            read.entity_ids.append(uuid.uuid4())
        found.candidates[0].term_frequencies["ocean"] = 99
        found.candidates[0].doc_length = 0
        found.stats.doc_frequencies["absent"] = 1
        found.candidates.clear()
        assert await store.get(chunk.id, tenant) == chunk
        again = await store.lexical_candidates(["ocean", "absent"], tenant, 10)
        assert again.stats.doc_frequencies == {"ocean": 1, "absent": 0}
        assert again.candidates[0].term_frequencies == {"ocean": 1}
        assert again.candidates[0].doc_length == len(tokenize(chunk.text))
        assert await store.get_by_entity(entity.entity_id, tenant) == [chunk]

    async def test_mutating_a_passage_after_writing_it_never_changes_the_store(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunk = make_chunk(tenant, "s", "ocean tides", metadata={"k": [1]})
        pristine = chunk.model_copy(deep=True)
        await store.upsert_many([chunk])
        chunk.metadata["k"].append(2)
        chunk.entity_ids.append(uuid.uuid4())
        assert await store.get(pristine.id, tenant) == pristine

    async def test_every_read_method_sees_only_its_own_tenant(self, store: ChunkStore) -> None:
        mine, theirs = uuid.uuid4(), uuid.uuid4()
        shared = Entity(name="Shared Entity", kind="other")
        their_only = Entity(name="Their Entity", kind="other")
        my_chunk = make_chunk(mine, "mine", "ocean tides", entity_ids=[shared.entity_id])
        their_chunks = [
            make_chunk(theirs, "mine", "ocean glaciers rivers", entity_ids=[shared.entity_id]),
            make_chunk(theirs, "theirs", "oceanic trench", 1, entity_ids=[their_only.entity_id]),
        ]
        await store.upsert_many([my_chunk, *their_chunks])
        await store.upsert_entities([shared], mine)
        await store.upsert_entities([shared, their_only], theirs)
        for other in their_chunks:
            assert await store.get(other.id, mine) is None
        assert await store.get_by_source("mine", mine) == [my_chunk]
        assert await store.get_by_source("theirs", mine) == []
        assert await store.get_by_entity(shared.entity_id, mine) == [my_chunk]
        assert await store.get_by_entity(their_only.entity_id, mine) == []
        found = await store.lexical_candidates(["ocean", "glaciers", "trench"], mine, 10)
        assert found.stats.n_docs == 1
        assert found.stats.doc_frequencies == {"ocean": 1, "glaciers": 0, "trench": 0}
        assert [c.chunk for c in found.candidates] == [my_chunk]
        assert [s.source_id for s in await store.list_sources(mine)] == ["mine"]
        assert [(e.entity, e.passages) for e in await store.list_entities(mine)] == [(shared, 1)]
        summary = await store.corpus_summary(mine)
        assert (summary.sources, summary.passages, summary.vocabulary) == (1, 1, 2)
        assert await store.doc_lengths(mine) == [2]
        assert [t.term for t in await store.terms_with_prefix("ocean", mine, 10)] == ["ocean"]
        assert await store.get_entities([shared.entity_id, their_only.entity_id], mine) == [shared]

    async def test_the_same_passage_under_two_tenants_is_two_independent_rows(
        self, store: ChunkStore
    ) -> None:
        first, second = uuid.uuid4(), uuid.uuid4()
        a = make_chunk(first, "s", "ocean tides", metadata={"owner": "first"})
        b = make_chunk(second, "s", "ocean tides", metadata={"owner": "second"})
        assert a.id == b.id
        await store.upsert_many([a, b])
        assert await store.get(a.id, first) == a
        assert await store.get(b.id, second) == b
        assert await store.delete_by_source("s", first) == 1
        assert await store.get(a.id, first) is None
        assert await store.get(b.id, second) == b
        assert (await store.lexical_candidates(["ocean"], second, 5)).stats.n_docs == 1

    async def test_deleting_a_tenant_removes_its_passages_and_entities_only(
        self, store: ChunkStore
    ) -> None:
        gone, kept = uuid.uuid4(), uuid.uuid4()
        entity = Entity(name="Ocean", kind="place")
        await store.upsert_many(corpus_chunks(gone) + corpus_chunks(kept))
        await store.upsert_entities([entity], gone)
        await store.upsert_entities([entity], kept)
        before = await snapshot(store, kept)
        assert await store.delete_by_tenant(gone) == len(CORPUS)
        assert await store.get_entities([entity.entity_id], gone) == []
        assert (await store.corpus_summary(gone)).passages == 0
        assert await store.passage_count(gone) == 0
        assert await store.passage_count(kept) == len(CORPUS)
        assert (await store.lexical_candidates(["ocean"], gone, 10)).stats.n_docs == 0
        assert await snapshot(store, kept) == before
        assert await store.delete_by_tenant(gone) == 0

    # -- statistics and candidates -------------------------------------------------

    async def test_statistics_describe_the_whole_corpus_whatever_the_limit(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = corpus_chunks(tenant)
        await store.upsert_many(chunks)
        terms = ["ocean", "coast", "rivers", "glaciers", "unseen", "ocean"]
        expected = corpus_stats([tokenize(c.text) for c in chunks], terms)
        assert len(set(expected.doc_frequencies.values())) > 2
        assert len({len(tokenize(c.text)) for c in chunks}) > 3
        for limit in (0, 1, 2, len(chunks), 1000):
            found = await store.lexical_candidates(terms, tenant, limit)
            assert found.stats == expected
            assert len(found.candidates) == min(limit, len(expected_order(chunks, terms)))

    async def test_the_matching_count_is_every_passage_with_a_term_whatever_the_limit(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = corpus_chunks(tenant)
        await store.upsert_many(chunks)
        terms = ["ocean", "coast", "unseen"]
        matching = len(expected_order(chunks, terms))
        assert 1 < matching < len(chunks)
        for limit in (0, 1, matching, 1000):
            found = await store.lexical_candidates(terms, tenant, limit)
            assert found.matching == matching
            assert found.cut_by_limit == matching - min(limit, matching)
        assert (await store.lexical_candidates(["unseen"], tenant, 10)).matching == 0
        assert (await store.lexical_candidates([], tenant, 10)).matching == 0

    async def test_an_absent_term_is_in_the_document_frequencies_with_zero(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_many(corpus_chunks(tenant))
        found = await store.lexical_candidates(["zeppelin", "ocean", "zeppelin"], tenant, 10)
        assert found.stats.doc_frequencies == {"ocean": 3, "zeppelin": 0}

    async def test_each_candidate_carries_its_length_and_the_tf_of_the_requested_terms(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = corpus_chunks(tenant)
        await store.upsert_many(chunks)
        terms = ["rivers", "coast", "ocean", "nowhere"]
        found = await store.lexical_candidates(terms, tenant, 100)
        by_id = {c.id: c for c in chunks}
        assert found.candidates
        for candidate in found.candidates:
            tokens = tokenize(by_id[candidate.chunk.id].text)
            counts = Counter(tokens)
            assert candidate.doc_length == len(tokens)
            assert candidate.term_frequencies == {t: counts[t] for t in terms if counts[t]}

    async def test_each_candidate_carries_its_source_in_the_columns_through_writes(
        self, store: ChunkStore
    ) -> None:
        """The source column (``source_pool``) is filled from the store's image, and follows
        its writes: a source added, one deleted, one replaced, each read after the last."""
        tenant = uuid.uuid4()
        held = {c.id: c.source_id for c in corpus_chunks(tenant)}
        await store.upsert_many(corpus_chunks(tenant))

        async def read(limit: int) -> None:
            found = await store.lexical_candidates(["ocean", "rivers", "coast"], tenant, limit)
            assert len(found.source_pool), "the store left the source column empty"
            rows = list(range(len(found)))
            assert found.sources_at(rows).tolist() == [held[i] for i in found.ids.tolist()]
            assert found.sources_at(rows[::-1]).tolist() == [held[i] for i in found.ids[::-1]]
            head = found.head(2)
            assert head.sources_at(range(len(head))).tolist() == [
                held[i] for i in head.ids.tolist()
            ]

        await read(100)
        added = make_chunk(tenant, "doc-new", "Ocean rivers meet the coast")
        await store.upsert_many([added])
        held[added.id] = "doc-new"
        await read(100)
        await store.delete_by_source("doc-a", tenant)
        held = {i: s for i, s in held.items() if s != "doc-a"}
        await read(100)
        moved = make_chunk(tenant, "doc-b", "The coast of an ocean", 7)
        await store.replace_source("doc-b", tenant, [moved])
        held = {i: s for i, s in held.items() if s != "doc-b"} | {moved.id: "doc-b"}
        await read(100)
        await read(1)

    async def test_candidates_are_ordered_by_matched_terms_then_id_and_cut_at_the_limit(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        texts = [
            "alpha beta gamma",
            "alpha beta",
            "beta gamma",
            "alpha gamma",
            "gamma gamma gamma gamma",
            "alpha",
            "delta",
        ]
        chunks = [make_chunk(tenant, "t", text, i) for i, text in enumerate(texts)]
        # Arrival in descending id order, so a tie broken by arrival would show.
        await store.upsert_many(sorted(chunks, key=lambda c: c.id, reverse=True))
        terms = ["alpha", "beta", "gamma"]
        order = expected_order(chunks, terms)
        assert len(order) == 6
        for limit in range(len(order) + 2):
            found = await store.lexical_candidates(terms, tenant, limit)
            assert [c.chunk.id for c in found.candidates] == order[:limit]

    async def test_a_cut_read_places_each_matching_passage_where_the_uncut_order_has_it(
        self, store: ChunkStore
    ) -> None:
        # A diagnosis reads "cut by the limit: position 5" off the read at its limit
        # (``LexicalCandidates.places``): every store's cut read places each matching passage
        # at its place in the order of every matching one, with its tf of each term, also
        # once a passage is deleted (a tombstone in PostgreSQL's image).
        tenant = uuid.uuid4()
        texts = ["alpha beta gamma", "alpha beta", "beta gamma", "alpha gamma alpha"]
        texts += ["gamma gamma", "alpha", "delta", "beta"]
        chunks = [
            make_chunk(tenant, "gone" if i == 1 else "t", text, i) for i, text in enumerate(texts)
        ]
        await store.upsert_many(sorted(chunks, key=lambda c: c.id, reverse=True))
        terms = ["alpha", "beta", "gamma"]
        asked = [c.id for c in chunks] + ["0" * 64, "not a passage"]
        for deleted in (None, chunks[1]):
            if deleted is not None:
                await store.delete_by_source("gone", tenant)
                chunks.remove(deleted)
            order = expected_order(chunks, terms)
            counts = {c.id: Counter(tokenize(c.text)) for c in chunks}
            for limit in range(1, len(order)):
                found = await store.lexical_candidates(terms, tenant, limit)
                assert found.places is not None, "a cut read places what it cut"
                assert found.places(asked) == {
                    chunk: Place(at, tuple(counts[chunk][t] for t in found.terms))
                    for at, chunk in enumerate(order)
                }

    async def test_a_passage_cut_by_the_limit_is_not_scored(self, store: ChunkStore) -> None:
        tenant = uuid.uuid4()
        # Three passages match the common term twice over; one matches only the rare term,
        # and so is cut at limit 3 although it would score best.
        common = [make_chunk(tenant, "s", f"common filler{i} common shared", i) for i in range(3)]
        rare = make_chunk(tenant, "s", "rare", 3)
        filler = [make_chunk(tenant, "s", f"common other{i}", 4 + i) for i in range(6)]
        await store.upsert_many([rare, *common, *filler])
        terms = ["common", "shared", "rare"]
        full = rank_chunks(terms, await store.lexical_candidates(terms, tenant, 100), 10)
        assert full[0].chunk.id == rare.id
        cut = rank_chunks(terms, await store.lexical_candidates(terms, tenant, 3), 10)
        assert rare.id not in [r.chunk.id for r in cut]
        assert {r.chunk.id for r in cut} == {c.id for c in common}

    async def test_empty_terms_give_zero_statistics_and_no_candidates(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_many(corpus_chunks(tenant))
        found = await store.lexical_candidates([], tenant, 10)
        assert (found.stats.n_docs, found.stats.avg_doc_length) == (0, 0.0)
        assert found.stats.doc_frequencies == {}
        assert found.candidates == []

    async def test_empty_terms_and_a_negative_limit_need_no_store_access(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.close()
        found = await store.lexical_candidates([], tenant, 10)
        assert found.candidates == [] and found.stats.n_docs == 0
        with pytest.raises(ValueError, match="limit"):
            await store.lexical_candidates(["ocean"], tenant, -1)

    async def test_limit_zero_fills_the_statistics_and_returns_no_candidates(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = corpus_chunks(tenant)
        await store.upsert_many(chunks)
        found = await store.lexical_candidates(["ocean", "tides"], tenant, 0)
        assert found.candidates == []
        assert found.stats == corpus_stats([tokenize(c.text) for c in chunks], ["ocean", "tides"])

    async def test_a_negative_limit_is_rejected(self, store: ChunkStore) -> None:
        tenant = uuid.uuid4()
        await store.upsert_many(corpus_chunks(tenant))
        with pytest.raises(ValueError, match="limit"):
            await store.lexical_candidates(["ocean"], tenant, -1)
        with pytest.raises(ValueError, match="limit"):
            await store.lexical_candidates([], tenant, -5)
        with pytest.raises(ValueError, match="limit"):
            await store.terms_with_prefix("o", tenant, -1)

    async def test_an_empty_corpus_has_zero_statistics(self, store: ChunkStore) -> None:
        found = await store.lexical_candidates(["ocean"], uuid.uuid4(), 10)
        assert (found.stats.n_docs, found.stats.avg_doc_length) == (0, 0.0)
        assert found.stats.doc_frequencies == {"ocean": 0}
        assert found.candidates == []

    async def test_passages_without_any_term_count_in_n_and_average_length(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = [make_chunk(tenant, "s", "the and of", 0), make_chunk(tenant, "s", "ocean", 1)]
        await store.upsert_many(chunks)
        found = await store.lexical_candidates(["ocean"], tenant, 10)
        assert (found.stats.n_docs, found.stats.avg_doc_length) == (2, 0.5)
        assert await store.doc_lengths(tenant) == [0, 1]

    # -- orders --------------------------------------------------------------------

    async def test_a_source_lists_its_passages_by_numeric_index_not_text(
        self, store: ChunkStore
    ) -> None:
        tenant, entity = uuid.uuid4(), Entity(name="Ocean", kind="place")
        chunks = [
            make_chunk(
                tenant, "long", f"passage number {i} ocean", i, entity_ids=[entity.entity_id]
            )
            for i in range(MANY)
        ]
        other = make_chunk(tenant, "another", "ocean elsewhere", 5, entity_ids=[entity.entity_id])
        await store.upsert_many([*chunks[::-1][::2], other, *chunks[::-1][1::2]])
        indexes = [c.chunk_index for c in await store.get_by_source("long", tenant)]
        assert indexes == list(range(MANY))
        by_entity = await store.get_by_entity(entity.entity_id, tenant)
        assert by_entity == [other, *chunks]

    async def test_passages_at_the_same_index_are_ordered_by_id(self, store: ChunkStore) -> None:
        tenant = uuid.uuid4()
        chunks = [make_chunk(tenant, "s", f"twin {word}", 0) for word in ("one", "two", "six")]
        await store.upsert_many(sorted(chunks, key=lambda c: c.id, reverse=True))
        listed = await store.get_by_source("s", tenant)
        assert [c.id for c in listed] == sorted(c.id for c in chunks)

    # -- replace and delete ----------------------------------------------------------

    async def test_replacing_a_source_removes_its_orphans_and_their_terms(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        old = [make_chunk(tenant, "s", f"version one part{i} ocean", i) for i in range(4)]
        new = [old[0], make_chunk(tenant, "s", "version two glacier", 1)]
        other = make_chunk(tenant, "t", "untouched ocean", 0)
        await store.upsert_many([*old, other])
        assert await store.replace_source("s", tenant, new) == 3
        assert await store.get_by_source("s", tenant) == new
        assert await store.get(other.id, tenant) == other
        remaining = [*new, other]
        terms = ["ocean", "part1", "glacier", "version", "one", "two"]
        found = await store.lexical_candidates(terms, tenant, 100)
        assert found.stats == corpus_stats([tokenize(c.text) for c in remaining], terms)
        summary = await store.corpus_summary(tenant)
        vocabulary = {t for c in remaining for t in tokenize(c.text)}
        assert (summary.passages, summary.vocabulary) == (3, len(vocabulary))
        assert [t.term for t in await store.terms_with_prefix("part", tenant, 10)] == ["part0"]

    async def test_replacing_many_sources_at_once_equals_replacing_them_one_by_one(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_many(corpus_chunks(tenant))
        ocean = Entity(name="Ocean", kind="place")
        a = [make_chunk(tenant, "doc-a", "new ocean words", 0, entity_ids=[ocean.entity_id])]
        new = [make_chunk(tenant, "doc-new", f"fresh part{i} glacier", i) for i in range(3)]
        removed = await store.replace_sources(tenant, [("doc-a", a), ("doc-new", new)], [ocean])
        assert removed == [2, 0]
        assert await store.get_by_source("doc-a", tenant) == a
        assert await store.get_by_source("doc-new", tenant) == new
        assert await store.get_entities([ocean.entity_id], tenant) == [ocean]
        remaining = [c for c in corpus_chunks(tenant) if c.source_id != "doc-a"] + a + new
        terms = ["ocean", "glacier", "part2", "words"]
        found = await store.lexical_candidates(terms, tenant, 100)
        assert found.stats == corpus_stats([tokenize(c.text) for c in remaining], terms)

    async def test_a_batch_with_one_bad_source_writes_nothing_of_any(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_many(corpus_chunks(tenant))
        before = await snapshot(store, tenant)
        good = [make_chunk(tenant, "doc-a", "replacement ocean", 0)]
        misfiled = [make_chunk(tenant, "doc-b", "filed under the wrong source", 0)]
        for batch in ([("doc-a", good), ("doc-c", misfiled)], [("doc-a", good), ("doc-a", good)]):
            with pytest.raises(ValueError, match="source"):
                await store.replace_sources(tenant, batch)
            assert await snapshot(store, tenant) == before

    async def test_replacing_a_source_with_nothing_empties_it(self, store: ChunkStore) -> None:
        tenant = uuid.uuid4()
        await store.upsert_many(corpus_chunks(tenant))
        assert await store.replace_source("doc-a", tenant, []) == 2
        assert await store.get_by_source("doc-a", tenant) == []
        assert [s.source_id for s in await store.list_sources(tenant)] == ["doc-b", "doc-c"]

    async def test_replacing_a_source_with_a_foreign_chunk_writes_nothing(
        self, store: ChunkStore
    ) -> None:
        tenant, stranger = uuid.uuid4(), uuid.uuid4()
        await store.upsert_many(corpus_chunks(tenant))
        before = await snapshot(store, tenant)
        fresh = make_chunk(tenant, "doc-a", "brand new ocean text", 9)
        for foreign in (
            make_chunk(tenant, "doc-b", "another source's passage", 0),
            make_chunk(stranger, "doc-a", "another tenant's passage", 0),
        ):
            with pytest.raises(ValueError, match=r"source|tenant"):
                await store.replace_source("doc-a", tenant, [fresh, foreign])
            assert await snapshot(store, tenant) == before
        assert (await store.corpus_summary(stranger)).passages == 0

    async def test_deleting_a_source_leaves_statistics_as_if_it_never_existed(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = corpus_chunks(tenant)
        await store.upsert_many(chunks)
        assert await store.delete_by_source("doc-b", tenant) == 2
        assert await store.delete_by_source("doc-b", tenant) == 0
        remaining = [c for c in chunks if c.source_id != "doc-b"]
        terms = ["glaciers", "ocean", "rivers", "meltwater"]
        found = await store.lexical_candidates(terms, tenant, 100)
        assert found.stats == corpus_stats([tokenize(c.text) for c in remaining], terms)
        assert [c.chunk.id for c in found.candidates] == expected_order(remaining, terms)
        assert await store.terms_with_prefix("melt", tenant, 10) == []

    async def test_rewriting_one_passage_sources_with_their_passages_keeps_them(
        self, store: ChunkStore
    ) -> None:
        # A tiny document is one passage: a store may take a short path for it, which must
        # still tell the passage kept from the one replaced.
        tenant = uuid.uuid4()
        first = [("a", [make_chunk(tenant, "a", "ocean glaciers")])]
        first.append(("b", [make_chunk(tenant, "b", "rivers meltwater")]))
        assert await store.replace_sources(tenant, first) == [0, 0]
        second = [("a", first[0][1]), ("b", [make_chunk(tenant, "b", "rivers delta")])]
        assert await store.replace_sources(tenant, second) == [0, 1]
        assert [c.text for c in await store.get_by_source("a", tenant)] == ["ocean glaciers"]
        assert [c.text for c in await store.get_by_source("b", tenant)] == ["rivers delta"]
        found = await store.lexical_candidates(["ocean", "rivers"], tenant, 10)
        assert found.stats.n_docs == 2

    async def test_readers_never_see_a_half_replaced_source(self, store: ChunkStore) -> None:
        tenant = uuid.uuid4()
        # The versions differ in every statistic: N, total length, and the df of each term.
        versions = [
            [
                make_chunk(tenant, "s", f"ocean v{v} part{i} " + "word " * (i + 5 * v), i)
                for i in range(40 + 10 * v)
            ]
            for v in range(2)
        ]
        terms = ["ocean", "v0", "v1", "part3", "word"]
        allowed = [corpus_stats([tokenize(c.text) for c in v], terms) for v in versions]
        allowed_ids = [{c.id for c in v} for v in versions]
        await store.replace_source("s", tenant, versions[0])
        done = asyncio.Event()

        async def writer() -> None:
            for round_ in range(40):
                await store.replace_source("s", tenant, versions[(round_ + 1) % 2])
                await asyncio.sleep(0)
            done.set()

        async def reader() -> int:
            seen = 0
            while not done.is_set():
                found = await store.lexical_candidates(terms, tenant, 100)
                assert found.stats in allowed
                ids = {c.chunk.id for c in found.candidates}
                assert ids in allowed_ids
                assert allowed.index(found.stats) == allowed_ids.index(ids)
                seen += 1
                await asyncio.sleep(0)
            return seen

        _, *seen = await asyncio.gather(writer(), reader(), reader())
        assert min(seen) > 0

    # -- what cannot be stored, and what is large ------------------------------------

    @pytest.mark.parametrize(
        ("text", "problem"),
        [("ocean\x00tides", "NUL"), ("ocean \ud800 tides", "unicode")],
    )
    async def test_unstorable_text_is_rejected_with_a_clear_error_and_nothing_is_stored(
        self, store: ChunkStore, text: str, problem: str
    ) -> None:
        tenant = uuid.uuid4()
        with pytest.raises(ValidationError, match=problem):
            make_chunk(tenant, "s", text)
        good = make_chunk(tenant, "s", "fine ocean text", 0)
        # model_construct skips the model's checks: the store must not rely on them alone.
        smuggled = StoredChunk.model_construct(
            **{
                **good.model_dump(),
                "text": text,
                "id": chunk_id("s", "a placeholder"),
                "chunk_index": 1,
            }
        )
        with pytest.raises(ValueError, match="unstorable"):
            await store.upsert_many([good, smuggled])
        with pytest.raises(ValueError, match="unstorable"):
            await store.replace_source("s", tenant, [good, smuggled])
        assert await store.get(good.id, tenant) is None
        assert (await store.corpus_summary(tenant)).passages == 0

    async def test_entity_and_workspace_names_with_nul_are_rejected_and_not_stored(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        good, bad = Entity(name="Good Name"), Entity(name="Bad\x00Name")
        with pytest.raises(ValueError, match="NUL"):
            await store.upsert_entities([good, bad], tenant)
        assert await store.get_entities([good.entity_id, bad.entity_id], tenant) == []
        with pytest.raises(ValueError, match="NUL"):
            await store.upsert_workspace(Workspace(tenant_id=tenant, name="Bad\x00Space"))
        assert await store.list_workspaces() == []

    async def test_a_passage_whose_id_does_not_match_its_text_is_rejected(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        good = make_chunk(tenant, "s", "fine ocean text")
        forged = StoredChunk.model_construct(**{**good.model_dump(), "text": "other words"})
        with pytest.raises(ValueError, match="id"):
            await store.upsert_many([forged])
        assert await store.get(good.id, tenant) is None

    async def test_unstorable_lookups_find_nothing_instead_of_failing(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_many(corpus_chunks(tenant))
        assert await store.get("a\x00b", tenant) is None
        assert await store.get_by_source("doc-a\x00", tenant) == []
        found = await store.lexical_candidates(["ocean", "oc\x00ean", "\udc00"], tenant, 10)
        assert found.stats.doc_frequencies == {"ocean": 3, "oc\x00ean": 0, "\udc00": 0}
        assert len(found.candidates) == 3
        assert await store.terms_with_prefix("\x00", tenant, 10) == []
        assert await store.delete_by_source("doc-a\x00", tenant) == 0

    async def test_text_that_looks_like_sql_is_stored_and_found_verbatim(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        source = "x'); DROP TABLE passages; --"
        chunk = make_chunk(tenant, source, "robert'); DELETE FROM passages; -- %s $1 \\",
                           metadata={"q": "' OR 1=1 --"})  # fmt: skip
        await store.upsert_many([chunk])
        assert await store.get_by_source(source, tenant) == [chunk]
        found = await store.lexical_candidates(["robert", "delete"], tenant, 10)
        assert [c.chunk for c in found.candidates] == [chunk]
        assert [s.source_id for s in await store.list_sources(tenant)] == [source]
        assert await store.delete_by_source(source, tenant) == 1

    async def test_a_100_kb_passage_is_stored_indexed_and_read_back_whole(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        words = [f"w{i % 5000} ünïcode" for i in range(10_000)]
        text = " ".join(words)[:100_000] + " needle"
        assert len(text.encode("utf-8")) > 100_000
        chunk = make_chunk(tenant, "big", text)
        await store.upsert_many([chunk])
        assert await store.get(chunk.id, tenant) == chunk
        found = await store.lexical_candidates(["needle", "ünïcode"], tenant, 10)
        assert found.candidates[0].chunk == chunk
        counts = Counter(tokenize(text))
        assert found.candidates[0].doc_length == sum(counts.values())
        assert found.candidates[0].term_frequencies == {
            "needle": 1,
            "ünïcode": counts["ünïcode"],
        }

    @pytest.mark.parametrize(
        "token",
        ["x" * 3000, "字" * 1000, "ünïcode" * 200],
        ids=["3000-letters", "1000-cjk", "1400-accented"],
    )
    async def test_an_over_long_token_is_stored_and_found_as_its_255_character_pieces(
        self, store: ChunkStore, token: str
    ) -> None:
        tenant = uuid.uuid4()
        chunk = make_chunk(tenant, "long", f"before {token} after")
        await store.upsert_many([chunk])
        pieces = tokenize(token)
        assert len(pieces) > 1 and max(len(piece) for piece in pieces) == MAX_TERM_CHARS
        found = await store.lexical_candidates(pieces, tenant, 10)
        assert [c.chunk for c in found.candidates] == [chunk]
        assert found.candidates[0].doc_length == len(pieces) + 2
        assert found.candidates[0].term_frequencies == dict(Counter(pieces))
        listed = await store.terms_with_prefix(pieces[0][:10], tenant, 10)
        assert {t.term for t in listed} == {p for p in pieces if p.startswith(pieces[0][:10])}

    async def test_a_source_id_of_the_longest_length_is_kept_and_one_more_refused_everywhere(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        longest = "é" * MAX_SOURCE_ID_CHARS
        chunk = make_chunk(tenant, longest, "ocean tides")
        assert await store.replace_source(longest, tenant, [chunk]) == 0
        assert await store.get_by_source(longest, tenant) == [chunk]
        too_long = "é" * (MAX_SOURCE_ID_CHARS + 1)
        with pytest.raises(ValidationError, match="longest kept is 512"):
            make_chunk(tenant, too_long, "ocean tides")
        smuggled = StoredChunk.model_construct(
            **{**chunk.model_dump(), "source_id": too_long, "id": chunk_id(too_long, chunk.text)}
        )
        with pytest.raises(ValueError, match="longest kept is 512"):
            await store.upsert_many([smuggled])
        with pytest.raises(ValueError, match="longest kept is 512"):
            await store.replace_source(too_long, tenant, [smuggled])
        with pytest.raises(ValueError, match="longest kept is 512"):
            await store.replace_source("x" * 10_000, tenant, [])
        assert [s.source_id for s in await store.list_sources(tenant)] == [longest]
        assert (await store.corpus_summary(tenant)).passages == 1

    # -- the read-outs the screens need ----------------------------------------------

    async def test_sources_are_listed_by_id_with_their_passage_counts(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_many(corpus_chunks(tenant))
        await store.upsert_many([make_chunk(tenant, "Doc-Z", "capital source", 0)])
        sources = await store.list_sources(tenant)
        assert [(s.source_id, s.passages) for s in sources] == [
            ("Doc-Z", 1),
            ("doc-a", 2),
            ("doc-b", 2),
            ("doc-c", 2),
        ]

    async def test_the_source_counts_an_upload_compares_are_the_listed_counts(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        assert await store.source_passage_counts(tenant) == {}
        await store.upsert_many(corpus_chunks(tenant))
        await store.upsert_many([make_chunk(tenant, "Doc-Z", "capital source", 0)])
        await store.delete_by_source("doc-b", tenant)
        await store.replace_source("doc-c", tenant, [make_chunk(tenant, "doc-c", "one left", 0)])
        listed = {s.source_id: s.passages for s in await store.list_sources(tenant)}
        assert listed == {"Doc-Z": 1, "doc-a": 2, "doc-c": 1}
        assert await store.source_passage_counts(tenant) == listed

    async def test_entities_are_listed_by_passage_count_then_name_then_id(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        often = Entity(name="Zed", kind="person")
        tie_a = Entity(name="Alpha", kind="place")
        tie_b = Entity(name="Beta", kind="place")
        same_name = Entity(name="Beta", kind="organisation")
        unnamed = uuid.uuid4()
        unmentioned = Entity(name="Nobody", kind="person")
        ids = [often.entity_id, tie_b.entity_id, same_name.entity_id, tie_a.entity_id]
        chunks = [
            make_chunk(tenant, "s", "one", 0, entity_ids=[*ids, unnamed, often.entity_id]),
            make_chunk(tenant, "s", "two", 1, entity_ids=[often.entity_id]),
        ]
        await store.upsert_many(chunks)
        assert (
            await store.upsert_entities([tie_b, often, tie_a, same_name, unmentioned], tenant) == 5
        )
        listed = [(s.entity, s.passages) for s in await store.list_entities(tenant)]
        betas = sorted([tie_b, same_name], key=lambda e: e.entity_id)
        assert listed == [(often, 2), (tie_a, 1), (betas[0], 1), (betas[1], 1)]
        await store.upsert_many([chunks[1].model_copy(update={"entity_ids": []})])
        counts = {s.entity: s.passages for s in await store.list_entities(tenant)}
        assert counts[often] == 1

    async def test_entities_are_returned_in_the_order_asked_without_unknown_ids(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        people = [Entity(name=n, kind="person") for n in ("Cleo", "Abe", "Bo")]
        await store.upsert_entities(people, tenant)
        renamed = Entity(name="abe", kind="person")
        assert renamed.entity_id == people[1].entity_id
        await store.upsert_entities([renamed], tenant)
        asked = [people[2].entity_id, uuid.uuid4(), people[1].entity_id, people[2].entity_id]
        assert await store.get_entities(asked, tenant) == [people[2], renamed]
        assert await store.get_entities([], tenant) == []

    async def test_an_entity_correction_is_kept_replaced_and_removed_per_workspace(
        self, store: ChunkStore
    ) -> None:
        first = (await open_workspace(store, f"corrections {uuid.uuid4().hex[:8]}")).tenant_id
        second = (await open_workspace(store, f"corrections {uuid.uuid4().hex[:8]}")).tenant_id
        warhol = Entity(name="Warhol", kind="person").entity_id
        andy = Entity(name="Andy Warhol", kind="person").entity_id
        moma = Entity(name="MoMA", kind="other").entity_id
        merge = EntityCorrection(entity_id=warhol, merged_into=andy)
        await store.correct_entity(merge, first)
        await store.correct_entity(EntityCorrection(entity_id=moma, merged_into=warhol), first)
        want = sorted(
            [merge, EntityCorrection(entity_id=moma, merged_into=warhol)],
            key=lambda c: c.entity_id,
        )
        assert await store.entity_corrections(first) == want
        assert await store.entity_corrections(second) == []
        # A second correction of one entity replaces the first; an empty one removes it.
        hide = EntityCorrection(entity_id=moma, hidden=True)
        await store.correct_entity(hide, first)
        assert await store.entity_corrections(first) == sorted(
            [merge, hide], key=lambda c: c.entity_id
        )
        await store.correct_entity(EntityCorrection(entity_id=warhol), first)
        assert await store.entity_corrections(first) == [hide]
        await store.correct_entity(EntityCorrection(entity_id=uuid.uuid4()), first)
        assert await store.entity_corrections(first) == [hide]

    async def test_entity_corrections_go_with_their_workspace_and_need_one(
        self, store: ChunkStore
    ) -> None:
        correction = EntityCorrection(entity_id=uuid.uuid4(), hidden=True)
        with pytest.raises(KeyError):
            await store.correct_entity(correction, uuid.uuid4())
        gone = (await open_workspace(store, f"corrections {uuid.uuid4().hex[:8]}")).tenant_id
        kept = (await open_workspace(store, f"corrections {uuid.uuid4().hex[:8]}")).tenant_id
        for tenant in (gone, kept):
            await store.correct_entity(correction, tenant)
        await store.delete_workspace(gone)
        assert await store.entity_corrections(gone) == []
        assert await store.entity_corrections(kept) == [correction]
        with pytest.raises((WorkspaceGone, KeyError)):
            await store.correct_entity(correction, gone)
        assert await store.entity_corrections(gone) == []

    async def test_the_corpus_summary_counts_sources_passages_tokens_and_vocabulary(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = corpus_chunks(tenant)
        await store.upsert_many(chunks)
        tokens = [tokenize(c.text) for c in chunks]
        summary = await store.corpus_summary(tenant)
        total = sum(len(t) for t in tokens)
        assert summary.sources == len({c.source_id for c in chunks})
        assert (summary.passages, summary.tokens) == (len(chunks), total)
        assert summary.avg_doc_length == total / len(chunks)
        assert summary.vocabulary == len({t for ts in tokens for t in ts})
        assert await store.doc_lengths(tenant) == sorted(len(t) for t in tokens)
        empty = await store.corpus_summary(uuid.uuid4())
        assert (empty.passages, empty.tokens, empty.avg_doc_length) == (0, 0, 0.0)

    async def test_terms_with_a_prefix_come_by_df_then_term(self, store: ChunkStore) -> None:
        tenant = uuid.uuid4()
        chunks = corpus_chunks(tenant)
        await store.upsert_many(chunks)
        df = Counter(t for c in chunks for t in set(tokenize(c.text)))
        for prefix in ("", "m", "co", "ocean", "zz", "coastline"):
            expected = sorted((t for t in df if t.startswith(prefix)), key=lambda t: (-df[t], t))
            for limit in (0, 1, 3, 100):
                got = await store.terms_with_prefix(prefix, tenant, limit)
                assert [(t.term, t.df) for t in got] == [(t, df[t]) for t in expected[:limit]]

    async def test_terms_with_a_prefix_handle_the_edges_of_the_alphabet(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        # U+D7FB is the last letter before the surrogates; U+10FFFF is the last code point.
        text = "z zz zzz ÿ ÿa \ud7fb \ud7fbx \ud7fb\ud7fb \uffdc"
        await store.upsert_many([make_chunk(tenant, "s", text)])
        terms = set(tokenize(text))
        for prefix in ("z", "ÿ", "\ud7fb", "\ud7ff", "\uffdc", "\U0010ffff", "zz", "z\U0010ffff"):
            got = [t.term for t in await store.terms_with_prefix(prefix, tenant, 100)]
            assert got == sorted(t for t in terms if t.startswith(prefix))

    async def test_workspaces_are_listed_by_name_and_renamed_in_place(
        self, store: ChunkStore
    ) -> None:
        first, second = uuid.uuid4(), uuid.uuid4()
        await store.upsert_workspace(Workspace(tenant_id=first, name="Zulu"))
        await store.upsert_workspace(Workspace(tenant_id=second, name="Alpha"))
        assert [w.name for w in await store.list_workspaces()] == ["Alpha", "Zulu"]
        await store.upsert_workspace(Workspace(tenant_id=first, name="Aardvark"))
        assert await store.list_workspaces() == [
            Workspace(tenant_id=first, name="Aardvark"),
            Workspace(tenant_id=second, name="Alpha"),
        ]

    async def test_deleting_a_workspace_removes_it_with_its_passages_and_nothing_else(
        self, store: ChunkStore
    ) -> None:
        doomed, kept = uuid.uuid4(), uuid.uuid4()
        await store.upsert_workspace(Workspace(tenant_id=doomed, name="doomed"))
        await store.upsert_workspace(Workspace(tenant_id=kept, name="kept"))
        await store.upsert_many([make_chunk(doomed, "a", f"alpha wing {i}", i) for i in range(3)])
        await store.upsert_many([make_chunk(kept, "a", "alpha wing kept")])
        assert await store.delete_workspace(doomed) == 3
        assert [w.name for w in await store.list_workspaces()] == ["kept"]
        assert (await store.corpus_summary(doomed)).passages == 0
        assert (await store.lexical_candidates(["alpha"], doomed, 10)).candidates == []
        assert (await store.corpus_summary(kept)).passages == 1
        assert await store.delete_workspace(uuid.uuid4()) == 0

    async def test_concurrent_writes_of_one_tenant_keep_the_statistics_exact(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        batches = [
            [make_chunk(tenant, f"src{b}", f"shared term{b} word{i} ocean", i) for i in range(15)]
            for b in range(6)
        ]
        await asyncio.gather(*(store.upsert_many(batch) for batch in batches))
        await asyncio.gather(*(store.delete_by_source(f"src{b}", tenant) for b in (1, 4)))
        remaining = [c for b in (0, 2, 3, 5) for c in batches[b]]
        terms = ["shared", "ocean", "term1", "term2", "word3"]
        found = await store.lexical_candidates(terms, tenant, 1000)
        assert found.stats == corpus_stats([tokenize(c.text) for c in remaining], terms)
        assert [c.chunk.id for c in found.candidates] == expected_order(remaining, terms)

    # -- tokenizer profiles -------------------------------------------------------------

    async def test_a_workspace_keeps_the_profile_it_was_created_with(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_workspace(Workspace(tenant_id=tenant, name="e", profile=ENGLISH))
        await store.upsert_workspace(Workspace(tenant_id=tenant, name="renamed"))
        assert await store.list_workspaces() == [
            Workspace(tenant_id=tenant, name="renamed", profile=ENGLISH)
        ]

    async def test_an_english_workspace_indexes_stemmed_terms_on_every_write_path(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_workspace(Workspace(tenant_id=tenant, name="e", profile=ENGLISH))
        chunks = corpus_chunks(tenant)
        await store.upsert_many(chunks[:3])
        await store.replace_source("doc-b", tenant, [c for c in chunks if c.source_id == "doc-b"])
        await store.upsert_many(chunks[3:])
        terms = tokenize("glaciers tides rivers coasts oceans", ENGLISH)
        assert terms == ["glacier", "tide", "river", "coast", "ocean"]
        found = await store.lexical_candidates(terms, tenant, 1000)
        stemmed = [tokenize(c.text, ENGLISH) for c in chunks]
        assert found.stats == corpus_stats(stemmed, terms)
        assert [c.chunk.id for c in found.candidates] == expected_order(chunks, terms, ENGLISH)
        for candidate in found.candidates:
            counts = Counter(tokenize(candidate.chunk.text, ENGLISH))
            assert candidate.term_frequencies == {t: counts[t] for t in terms if counts[t]}
            assert candidate.doc_length == len(tokenize(candidate.chunk.text, ENGLISH))
        assert [t.term for t in await store.terms_with_prefix("glac", tenant, 10)] == ["glacier"]
        summary = await store.corpus_summary(tenant)
        assert summary.vocabulary == len({t for tokens in stemmed for t in tokens})

    async def test_passages_written_before_their_english_workspace_exists_are_reindexed(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = corpus_chunks(tenant)
        await store.upsert_many(chunks)
        await store.upsert_workspace(Workspace(tenant_id=tenant, name="late", profile=ENGLISH))
        terms = ["tide", "glacier"]
        found = await store.lexical_candidates(terms, tenant, 1000)
        assert found.stats == corpus_stats([tokenize(c.text, ENGLISH) for c in chunks], terms)

    async def test_reindexing_moves_every_statistic_to_the_new_profile_and_back(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_workspace(Workspace(tenant_id=tenant, name="w"))
        chunks = corpus_chunks(tenant)
        await store.upsert_many(chunks)
        before = await snapshot(store, tenant)
        progress: list[tuple[int, int]] = []
        reindexed = await store.reindex(
            tenant, ENGLISH, lambda done, total: progress.append((done, total))
        )
        assert reindexed == len(chunks) and progress[-1] == (len(chunks), len(chunks))
        assert [w.profile for w in await store.list_workspaces()] == [ENGLISH]
        terms = ["tide", "tides", "glacier", "river"]
        found = await store.lexical_candidates(terms, tenant, 1000)
        assert found.stats == corpus_stats([tokenize(c.text, ENGLISH) for c in chunks], terms)
        assert [c.chunk.id for c in found.candidates] == expected_order(chunks, terms, ENGLISH)
        assert await store.doc_lengths(tenant) == sorted(
            len(tokenize(c.text, ENGLISH)) for c in chunks
        )
        # A write after the re-index uses the new profile.
        extra = make_chunk(tenant, "doc-d", "Rivers and glaciers", 0)
        await store.upsert_many([extra])
        found = await store.lexical_candidates(terms, tenant, 1000)
        every = [*chunks, extra]
        assert found.stats == corpus_stats([tokenize(c.text, ENGLISH) for c in every], terms)
        await store.delete_by_source("doc-d", tenant)
        await store.reindex(tenant, PLAIN)
        assert await snapshot(store, tenant) == before

    async def test_the_generation_moves_with_every_passage_write_and_only_then(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_workspace(Workspace(tenant_id=tenant, name="g"))
        empty = await store.generation(tenant)
        seen = []

        async def moved() -> int:
            now = await store.generation(tenant)
            assert now not in seen and now != empty
            seen.append(now)
            return now

        await store.upsert_many(corpus_chunks(tenant))
        written = await moved()
        await store.lexical_candidates(["ocean", "tides"], tenant, 10)
        await store.corpus_summary(tenant)
        await store.upsert_entities([Entity(name="Ocean", kind="place")], tenant)
        assert await store.generation(tenant) == written  # reads leave it where it was
        await store.replace_source("doc-c", tenant, [make_chunk(tenant, "doc-c", "Rivers meet")])
        await moved()
        await store.delete_by_source("doc-b", tenant)
        await moved()
        await store.reindex(tenant, ENGLISH)
        await moved()
        await store.delete_workspace(tenant)
        gone = await store.generation(tenant)
        assert gone not in seen
        with pytest.raises(WorkspaceGone):  # its id is never used again
            await store.upsert_workspace(Workspace(tenant_id=tenant, name="g"))

    async def test_reindexing_an_unknown_workspace_raises_key_error(
        self, store: ChunkStore
    ) -> None:
        with pytest.raises(KeyError, match="no workspace"):
            await store.reindex(uuid.uuid4(), ENGLISH)

    async def test_readers_never_see_a_half_reindexed_workspace(self, store: ChunkStore) -> None:
        # A read must overlap the re-index for the test to say anything; on a loaded machine the
        # re-index once finished before either reader's first read (a fresh-clone CI, Citus), so
        # a workspace without any overlap is tried again, a new one each time (at most three).
        overlapped = False
        terms = ["wave", "waves", "tide", "tides", "ocean"]
        for attempt in range(3):
            tenant = uuid.uuid4()
            await store.upsert_workspace(Workspace(tenant_id=tenant, name=f"big{attempt}"))
            chunks = [
                make_chunk(tenant, f"s{i % 7}", f"waves tides part{i} " + "ocean " * (i % 5), i)
                for i in range(REINDEX_PASSAGES)
            ]
            await store.upsert_many(chunks)
            allowed = [corpus_stats([tokenize(c.text, p) for c in chunks], terms) for p in PROFILES]
            assert allowed[0] != allowed[1]
            done = asyncio.Event()

            async def reindex(tenant: uuid.UUID = tenant, done: asyncio.Event = done) -> None:
                await store.reindex(tenant, ENGLISH)
                done.set()

            async def reader(
                tenant: uuid.UUID = tenant,
                done: asyncio.Event = done,
                allowed: list[CorpusStats] = allowed,
            ) -> list[int]:
                seen: list[int] = []
                while not done.is_set():
                    found = await store.lexical_candidates(terms, tenant, 10)
                    assert found.stats in allowed
                    seen.append(allowed.index(found.stats))
                    await asyncio.sleep(0)
                return seen

            _, *seen = await asyncio.gather(reindex(), reader(), reader())
            assert all(s == sorted(s) for s in seen), "a reader saw the old index after the new one"
            found = await store.lexical_candidates(terms, tenant, 10)
            assert found.stats == allowed[1]
            if any(0 in s for s in seen):
                overlapped = True
                break
        assert overlapped, "no read ran while the re-index was building (three workspaces)"

    # -- owners and members (sign-in) -----------------------------------------------------

    async def test_a_new_workspace_keeps_its_owner_and_members_as_given_normalised(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_workspace(
            Workspace(
                tenant_id=tenant,
                name="shared",
                owner=" Ada@Example.org ",
                members=("zoe@example.org", "BOB@example.org", "ada@example.org"),
            )
        )
        expected = Workspace(
            tenant_id=tenant,
            name="shared",
            owner="ada@example.org",
            members=("bob@example.org", "zoe@example.org"),
        )
        assert await store.get_workspace(tenant) == expected
        assert await store.list_workspaces() == [expected]
        assert await store.get_workspace(uuid.uuid4()) is None
        assert expected.admits("ADA@example.org") and expected.admits("zoe@example.org")
        assert not expected.admits("eve@example.org") and not expected.admits(None)

    async def test_creating_an_existing_workspace_again_never_changes_its_owner_or_members(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_workspace(
            Workspace(tenant_id=tenant, name="mine", owner="ada@example.org")
        )
        await store.upsert_workspace(
            Workspace(
                tenant_id=tenant,
                name="mine",
                owner="eve@example.org",
                members=("eve@example.org", "mallory@example.org"),
            )
        )
        await store.upsert_workspace(Workspace(tenant_id=tenant, name="mine"))
        found = await store.get_workspace(tenant)
        assert found is not None and (found.owner, found.members) == ("ada@example.org", ())

    async def test_members_are_added_and_removed_once_each_and_the_owner_stays(
        self, store: ChunkStore
    ) -> None:
        tenant, other = uuid.uuid4(), uuid.uuid4()
        await store.upsert_workspace(Workspace(tenant_id=tenant, name="t", owner="ada@example.org"))
        await store.upsert_workspace(Workspace(tenant_id=other, name="o", owner="bob@example.org"))
        assert await store.add_member(tenant, "Bob@Example.org") is True
        assert await store.add_member(tenant, "bob@example.org") is False
        assert await store.add_member(tenant, "ada@example.org") is False  # the owner
        assert await store.add_member(tenant, "cy@example.org") is True
        found = await store.get_workspace(tenant)
        assert found is not None and found.members == ("bob@example.org", "cy@example.org")
        other_found = await store.get_workspace(other)
        assert other_found is not None and other_found.members == ()
        assert await store.remove_member(tenant, "BOB@example.org") is True
        assert await store.remove_member(tenant, "bob@example.org") is False
        with pytest.raises(ValueError, match="owner"):
            await store.remove_member(tenant, "ada@example.org")
        found = await store.get_workspace(tenant)
        assert found is not None
        assert (found.owner, found.members) == ("ada@example.org", ("cy@example.org",))

    async def test_membership_of_an_unknown_workspace_raises_key_error_and_stores_nothing(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        with pytest.raises(KeyError, match="no workspace"):
            await store.add_member(tenant, "ada@example.org")
        with pytest.raises(KeyError, match="no workspace"):
            await store.remove_member(tenant, "ada@example.org")
        assert await store.list_workspaces() == []

    async def test_an_address_that_is_not_an_e_mail_is_refused_and_not_stored(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_workspace(Workspace(tenant_id=tenant, name="t", owner="ada@example.org"))
        for bad in ("", "ada", "a b@example.org", "a@b@c", "ada\x00@example.org", "x" * 300 + "@e"):
            with pytest.raises(ValueError, match="not an e-mail address"):
                await store.add_member(tenant, bad)
        with pytest.raises(ValidationError):
            Workspace(tenant_id=tenant, name="t", owner="not-an-address")
        found = await store.get_workspace(tenant)
        assert found is not None and found.members == ()

    async def test_a_deleted_workspace_takes_its_members_along_and_its_name_starts_afresh(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_workspace(
            Workspace(tenant_id=tenant, name="t", owner="ada@example.org", members=("bob@x.org",))
        )
        await store.delete_workspace(tenant)
        assert await store.get_workspace(tenant) is None
        assert await store.find_workspace("t") is None
        with pytest.raises(WorkspaceGone):  # a deleted id is never used again
            await store.upsert_workspace(Workspace(tenant_id=tenant, name="t"))
        fresh = await open_workspace(store, "t")
        assert fresh.tenant_id != tenant and (fresh.owner, fresh.members) == (None, ())

    # -- a workspace is an identity ---------------------------------------------------

    async def test_a_write_to_a_deleted_workspace_is_refused_and_stores_nothing(
        self, store: ChunkStore
    ) -> None:
        old = (await open_workspace(store, "gone soon")).tenant_id
        await store.replace_sources(old, [("a", [make_chunk(old, "a", "alpha wing")])])
        await store.delete_workspace(old)
        writes = [
            lambda: store.replace_sources(old, [("b", [make_chunk(old, "b", "beta wing")])]),
            lambda: store.replace_source("c", old, [make_chunk(old, "c", "gamma wing")]),
            lambda: store.upsert_many([make_chunk(old, "d", "delta wing")]),
            lambda: store.upsert_entities([Entity(name="Ada", kind="person")], old),
        ]
        for write in writes:
            with pytest.raises(WorkspaceGone, match="deleted while this was being written"):
                await write()
        assert await store.passage_count(old) == 0
        assert await store.list_sources(old) == []
        assert (await store.corpus_summary(old)).vocabulary == 0
        assert await store.list_entities(old) == []

    async def test_a_name_created_again_after_a_deletion_is_a_new_empty_workspace(
        self, store: ChunkStore
    ) -> None:
        first = await open_workspace(store, "Reports")
        await store.replace_sources(
            first.tenant_id, [("a", [make_chunk(first.tenant_id, "a", "alpha wing")])]
        )
        await store.delete_workspace(first.tenant_id)
        second = await open_workspace(store, "Reports")
        assert second.tenant_id != first.tenant_id
        assert await open_workspace(store, "reports") == second  # one name, by what people see
        assert await store.passage_count(second.tenant_id) == 0
        assert (await store.lexical_candidates(["alpha"], second.tenant_id, 10)).candidates == []
        with pytest.raises(NameTaken):
            await store.upsert_workspace(Workspace(tenant_id=uuid.uuid4(), name="REPORTS"))

    @pytest.mark.parametrize("moment", [0, 1, 2, 5])
    async def test_deleting_a_workspace_during_an_upload_leaves_no_orphans(
        self, store: ChunkStore, moment: int
    ) -> None:
        """An upload writes groups while the owner deletes the workspace after ``moment``
        groups, racing the group in flight: every group either lands before the deletion
        (and is deleted with it) or is refused whole; the name created again is empty."""
        old = (await open_workspace(store, "uploading")).tenant_id
        refused: list[BaseException] = []

        async def group(g: int) -> None:
            sources = [
                (f"doc{g}-{d}", [make_chunk(old, f"doc{g}-{d}", f"wing{g} flow{d} drag", i)
                                 for i in range(4)])
                for d in range(5)
            ]  # fmt: skip
            try:
                await store.replace_sources(old, sources)
            except WorkspaceGone as exc:
                refused.append(exc)

        for g in range(moment):
            await group(g)
        await asyncio.gather(group(moment), store.delete_workspace(old), group(moment + 1))
        for g in range(moment + 2, moment + 4):
            await group(g)
        assert len(refused) >= 2  # at least the groups after the deletion
        assert await store.passage_count(old) == 0
        assert await store.list_sources(old) == []
        summary = await store.corpus_summary(old)
        assert (summary.passages, summary.tokens, summary.vocabulary) == (0, 0, 0)
        assert (await store.lexical_candidates(["wing0", "drag"], old, 10)).candidates == []
        again = await open_workspace(store, "uploading")
        assert again.tenant_id != old and await store.passage_count(again.tenant_id) == 0
        await store.replace_sources(
            again.tenant_id, [("x", [make_chunk(again.tenant_id, "x", "wing drag")])]
        )
        found = await store.lexical_candidates(["drag"], again.tenant_id, 10)
        assert found.stats.n_docs == 1 and found.stats.doc_frequencies == {"drag": 1}

    async def test_a_stranger_who_creates_a_deleted_name_sees_nothing_of_its_members_uploads(
        self, store: ChunkStore
    ) -> None:
        """Alice owns "Secret", Bob (a member) uploads, Alice deletes it, Carol creates
        "Secret": Carol's is a new workspace, and Bob's upload still going can only fail."""
        alice = WorkspaceGuard(store, "alice@example.org")
        bob = WorkspaceGuard(store, "bob@example.org")
        carol = WorkspaceGuard(store, "carol@example.org")
        secret = await open_workspace(alice, "Secret")
        await alice.add_member(secret.tenant_id, "bob@example.org")
        bobs = await tenant_of(bob, "Secret")
        assert bobs == secret.tenant_id
        await bob.replace_sources(bobs, [("plans", [make_chunk(bobs, "plans", "bob plans")])])
        await alice.delete_workspace(secret.tenant_id)
        carols = await open_workspace(carol, "Secret")
        assert carols.tenant_id != secret.tenant_id and carols.owner == "carol@example.org"
        with pytest.raises(WorkspaceGone):
            await bob.replace_sources(bobs, [("more", [make_chunk(bobs, "more", "bob more")])])
        assert await carol.list_sources(carols.tenant_id) == []
        assert await carol.passage_count(carols.tenant_id) == 0
        assert (await carol.lexical_candidates(["bob"], carols.tenant_id, 10)).candidates == []
        assert await store.passage_count(bobs) == 0
        assert await bob.find_workspace("Secret") is None  # Carol's is not his

    async def test_an_ownerless_workspace_is_given_an_owner_and_a_member_promoted_leaves_members(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        await store.upsert_workspace(Workspace(tenant_id=tenant, name="old"))
        await store.add_member(tenant, "bob@example.org")
        await store.add_member(tenant, "cy@example.org")
        await store.set_owner(tenant, "Bob@Example.org")
        assert await store.get_workspace(tenant) == Workspace(
            tenant_id=tenant, name="old", owner="bob@example.org", members=("cy@example.org",)
        )
        with pytest.raises(KeyError, match="no workspace"):
            await store.set_owner(uuid.uuid4(), "bob@example.org")
        with pytest.raises(ValueError, match="not an e-mail address"):
            await store.set_owner(tenant, "bob")
        found = await store.get_workspace(tenant)
        assert found is not None and found.owner == "bob@example.org"
        # Handed over again: the previous owner keeps no access (was never left a member).
        await store.set_owner(tenant, "cy@example.org")
        assert await store.get_workspace(tenant) == Workspace(
            tenant_id=tenant, name="old", owner="cy@example.org"
        )
