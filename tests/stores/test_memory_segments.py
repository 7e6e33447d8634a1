"""The in-memory store's segments: tombstones, merges and whole swaps, against a fresh store.

A store written in many batches, with deletes and re-uploads between them (so that it holds
several segments, tombstones and merged segments), must answer every query exactly as a store
that was written its live passages in one batch.
"""

from __future__ import annotations

import asyncio
import gc
import random
import tracemalloc
import uuid

import numpy as np
import pytest

from core.checkpoint import install
from core.domain.chunks import StoredChunk
from core.domain.postings import EMPTY_POSTING
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.stores.memory import InMemoryChunkStore
from core.stores.memory import store as memory_module
from core.stores.memory.index import MERGE_FACTOR, Ints, Segment, image_of
from core.stores.memory.kept import kept_passage
from core.stores.memory.writer import SegmentWriter, segment_of
from core.stores.port import passage_terms
from tests.stores.compliance import make_chunk

WORDS = [f"w{i}" for i in range(40)]
QUERIES = [["w0"], ["w1", "w7"], ["w3", "w9", "w30"], ["w39", "w2", "w5", "w11"], WORDS[:12]]


def _text(rng: random.Random) -> str:
    # Zipf-like: low words are common, so ties and long postings both occur.
    return " ".join(WORDS[min(int(rng.expovariate(0.15)), 39)] for _ in range(rng.randint(1, 12)))


async def _same_answers(store: InMemoryChunkStore, tenant: uuid.UUID) -> None:
    """``store`` answers as a fresh store holding only its live passages, written at once."""
    live = [c for s in await store.list_sources(tenant)
            for c in await store.get_by_source(s.source_id, tenant)]  # fmt: skip
    fresh = InMemoryChunkStore()
    await fresh.upsert_many(live)
    for query in QUERIES:
        for limit in (3, 1000):
            got = await store.lexical_candidates(query, tenant, limit)
            want = await fresh.lexical_candidates(query, tenant, limit)
            assert got == want, f"{query} @ {limit}"
    assert await store.corpus_summary(tenant) == await fresh.corpus_summary(tenant)
    assert await store.doc_lengths(tenant) == await fresh.doc_lengths(tenant)
    assert await store.terms_with_prefix("w", tenant, 100) == await fresh.terms_with_prefix(
        "w", tenant, 100
    )


async def test_a_store_written_in_many_batches_with_deletes_answers_as_one_written_at_once() -> (
    None
):
    rng = random.Random(7)
    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    for batch in range(3 * MERGE_FACTOR):
        await store.upsert_many(
            [make_chunk(tenant, f"s{batch}-{i}", _text(rng), 0) for i in range(1 + batch % 4)]
        )
        if batch % 3 == 2:
            await store.delete_by_source(f"s{batch - 1}-0", tenant)
        if batch % 5 == 4:
            # A re-upload of unchanged passages keeps their rows (same id, same terms).
            kept = await store.get_by_source(f"s{batch - 2}-0", tenant)
            await store.upsert_many(kept)
        await _same_answers(store, tenant)


async def test_a_tombstoned_passage_is_never_a_candidate_nor_counted() -> None:
    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    await store.upsert_many([make_chunk(tenant, f"a{i}", "wing flutter", 0) for i in range(5)])
    await store.upsert_many([make_chunk(tenant, f"b{i}", "wing heat", 0) for i in range(5)])
    assert await store.delete_by_source("a0", tenant) == 1
    assert await store.delete_by_source("b4", tenant) == 1
    found = await store.lexical_candidates(["wing", "flutter"], tenant, 100)
    assert sorted(c.chunk.source_id for c in found.candidates) == [
        *(f"a{i}" for i in range(1, 5)),
        *(f"b{i}" for i in range(4)),
    ]
    assert found.stats.n_docs == 8
    assert found.stats.doc_frequencies == {"wing": 8, "flutter": 4}
    await _same_answers(store, tenant)


async def test_replacing_sources_in_many_rounds_merges_segments_and_keeps_every_live_posting() -> (
    None
):
    rng = random.Random(3)
    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    for round_ in range(4 * MERGE_FACTOR):
        sources = [
            (f"doc{(round_ * 3 + k) % 17}",
             [make_chunk(tenant, f"doc{(round_ * 3 + k) % 17}", _text(rng), i) for i in range(3)])
            for k in range(3)
        ]  # fmt: skip
        await store.replace_sources(tenant, sources)
    segments = store._tenants[tenant].image.segments
    assert len(segments) < 2 * MERGE_FACTOR, "segments are never merged"
    await _same_answers(store, tenant)


async def test_a_write_built_in_a_thread_lands_as_one_built_inline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(memory_module, "_THREAD_ROWS", 0)
    rng = random.Random(11)
    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    for batch in range(2 * MERGE_FACTOR):
        await store.upsert_many([make_chunk(tenant, f"t{batch}-{i}", _text(rng)) for i in range(3)])
    await store.delete_by_source("t3-1", tenant)
    await _same_answers(store, tenant)


async def test_readers_see_none_of_a_group_into_a_full_workspace_until_all_of_it() -> None:
    """A group that replaces stored sources and adds new ones is built aside: a search at any
    of its checkpoints answers as before the group, and after it as after the whole group."""
    rng = random.Random(5)
    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    await store.replace_sources(
        tenant, [(f"old{i}", [make_chunk(tenant, f"old{i}", _text(rng))]) for i in range(20)]
    )
    before = [await store.lexical_candidates(q, tenant, 1000) for q in QUERIES]
    summary = await store.corpus_summary(tenant)
    seen: list[tuple[object, object]] = []
    reading: list[bool] = []

    async def pause() -> None:
        if reading:  # the reader's own checkpoints
            return
        reading.append(True)
        now = [await store.lexical_candidates(q, tenant, 1000) for q in QUERIES]
        seen.append((now, await store.corpus_summary(tenant)))
        reading.clear()

    group = [
        (f"old{i}", [make_chunk(tenant, f"old{i}", _text(rng), k) for k in range(2)])
        for i in range(0, 20, 2)
    ] + [(f"new{i}", [make_chunk(tenant, f"new{i}", _text(rng))]) for i in range(10)]

    async def write() -> list[int]:
        install(pause)
        return await store.replace_sources(tenant, group)

    assert await asyncio.create_task(write()) == [1] * 10 + [0] * 10
    after = ([await store.lexical_candidates(q, tenant, 1000) for q in QUERIES],
             await store.corpus_summary(tenant))  # fmt: skip
    # As before the group, then (from the swap, a step of its own) as after it: never a part.
    states = [0 if state == (before, summary) else 1 if state == after else -1 for state in seen]
    assert len(states) >= 20 and states == sorted(states) and states[0] == 0, states
    assert (await store.corpus_summary(tenant)).passages == 20 + 10 + 10
    await _same_answers(store, tenant)


def _segment_of_texts(chunks: list[StoredChunk]) -> tuple[Segment, Ints]:
    writer = SegmentWriter()
    writer.add_texts([chunk.text for chunk in chunks], DEFAULT_PROFILE)
    return writer.finish()


def test_an_image_written_with_its_new_ids_places_known_is_the_one_that_searched_them() -> None:
    # A write looks its ids up first; their places then spare the image's insert a second
    # binary search of string keys, shifted by the ids the same write removes before them.
    rng = random.Random(9)
    tenant = uuid.uuid4()
    old = [make_chunk(tenant, f"s{i}", _text(rng)) for i in range(300)]
    image = image_of(DEFAULT_PROFILE, 1, [kept_passage(c) for c in old], _segment_of_texts(old))
    removed = np.asarray(sorted(rng.sample(range(300), 60)), dtype=np.int64)
    new = [make_chunk(tenant, f"n{i}", _text(rng)) for i in range(120)]
    new += [make_chunk(tenant, f"s{i}", _text(rng) + " again") for i in range(0, 300, 7)]
    _, places = image.rows_of_ids([chunk.id for chunk in new])
    _, lows = image.rows_of_sources([chunk.source_id for chunk in new])
    added, made = [kept_passage(c) for c in new], _segment_of_texts(new)
    known = image.written(2, removed, (), added, *made, True, places, lows.tolist())
    searched = image.written(2, removed, (), added, *made)
    assert known.id_keys.tolist() == searched.id_keys.tolist() == sorted(searched.id_keys)
    assert known.id_rows.tolist() == searched.id_rows.tolist()
    assert known.id_rank.tolist() == searched.id_rank.tolist()
    assert known.source_keys.tolist() == searched.source_keys.tolist()
    assert known.source_keys.tolist() == sorted(searched.source_keys)
    assert known.source_rows.tolist() == searched.source_rows.tolist()


def test_ids_sharing_their_first_sixteen_hex_digits_are_found_and_kept_in_id_order() -> None:
    # Lookups go by the ids' first 64 bits (``id_codes``); ids that share them (rare among
    # SHA-256 ids, but possible) must still be told apart by the whole id, and ordered by it.
    tenant = uuid.uuid4()
    prefix = "0123456789abcdef"
    tails = ["f" * 48, "0" * 48, "7" * 48, "a" * 47 + "b", "a" * 48]
    chunks = [make_chunk(tenant, f"s{i}", f"w{i}") for i in range(len(tails) + 2)]
    kept = [kept_passage(c) for c in chunks]
    kept[: len(tails)] = [(*k[:7], prefix + tail) for k, tail in zip(kept, tails, strict=False)]
    made = segment_of([passage_terms(k[1])[1] for k in kept[:3]])
    image = image_of(DEFAULT_PROFILE, 1, kept[:3], (made, np.ones(3, np.int64)))
    rows, places = image.rows_of_ids([k[7] for k in kept])
    assert rows[:3] == [0, 1, 2] and rows[3:] == [-1] * (len(kept) - 3)
    assert image.row_of(prefix + "a" * 48) is None and image.row_of(prefix + tails[2]) == 2
    rest = kept[3:]
    later = image.written(
        2, image.id_rows[:0], (), rest,
        segment_of([passage_terms(k[1])[1] for k in rest]), np.ones(len(rest), np.int64),
        True, places[3:],
    )  # fmt: skip
    assert later.id_keys.tolist() == sorted(k[7] for k in kept)
    assert [later.row_of(k[7]) for k in kept] == list(range(len(kept)))
    assert later.row_of("not an id") is None and later.row_of(prefix.upper() + tails[0]) is None


def test_an_image_keeps_the_number_of_segments_logarithmic() -> None:
    image = image_of(DEFAULT_PROFILE, 1, [], SegmentWriter().finish())
    tenant = uuid.uuid4()
    for batch in range(MERGE_FACTOR**2 + 3):
        chunk = make_chunk(tenant, f"s{batch}", f"w{batch % 7} w1")
        writer = SegmentWriter()
        writer.add(passage_terms(chunk.text))
        segment, lengths = writer.finish()
        kept = [kept_passage(chunk)]
        image = image.written(batch + 2, image.id_rows[:0], (), kept, segment, lengths)
    assert image.passages == MERGE_FACTOR**2 + 3
    assert len(image.segments) <= 2 * MERGE_FACTOR
    assert image.segments[0].size == MERGE_FACTOR**2


def test_a_segment_written_in_pieces_equals_one_built_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from core.stores.memory import writer as memory_writer

    rng = random.Random(2)
    counts = [passage_terms(_text(rng)) for _ in range(50)]
    monkeypatch.setattr(memory_writer, "PIECE_POSTINGS", 7)
    writer = SegmentWriter()
    for terms in counts:
        writer.add(terms)
    pieces, lengths = writer.finish()
    whole = segment_of([tfs for _, tfs in counts])
    assert lengths.tolist() == [n for n, _ in counts]
    assert set(pieces.terms) == set(whole.terms)
    for term in whole.terms:
        assert [a.tolist() for a in pieces.posting(term)] == [
            a.tolist() for a in whole.posting(term)
        ]


@pytest.mark.parametrize("profile", list(Profile))
def test_a_segment_built_from_texts_is_the_one_built_from_each_passages_term_counts(
    profile: Profile,
) -> None:
    # Texts tokenised as one batch (add_texts) must give every term the same rows and tfs,
    # and every passage the same length, as a counter per passage (add) did.
    rng = random.Random(11)
    texts = [_text(rng) + " Wings Ünïcode naïve w3" * (i % 3) for i in range(300)]
    texts[7] = "the of and"  # stopwords only: a passage with no term
    by_counts, by_texts = SegmentWriter(), SegmentWriter()
    for text in texts:
        by_counts.add(passage_terms(text, profile))
    by_texts.add_texts(texts[:120], profile)
    by_texts.add_texts(texts[120:], profile)
    (a, a_lengths), (b, b_lengths) = by_counts.finish(), by_texts.finish()
    assert a_lengths.tolist() == b_lengths.tolist() and a.size == b.size == 300
    assert set(a.terms) == set(b.terms)
    for term in a.terms:
        assert [x.tolist() for x in a.posting(term)] == [x.tolist() for x in b.posting(term)]


def test_a_segments_postings_are_rows_ascending_and_unknown_terms_are_empty() -> None:
    segment = segment_of([{"t": 1, "u": 3}, {"t": 2}, {"u": 7, "t": 5}])
    assert [a.tolist() for a in segment.posting("t")] == [[0, 1, 2], [1, 2, 5]]
    assert [a.tolist() for a in segment.posting("u")] == [[0, 2], [3, 7]]
    assert segment.posting("nope") is EMPTY_POSTING


#: Traced bytes the store may add per tiny passage it keeps (its strings are the caller's):
#: the tuple, its slots in the row lists and the index arrays. A kept pydantic model was ~1 KB.
TINY_PASSAGE_BYTES = 300


async def test_a_kept_tiny_passage_costs_a_tuple_and_index_slots_not_a_model() -> None:
    # A StoredChunk kept per passage (~1 KB: its __dict__, fields set and lists) was 1 GB of a
    # million tiny records before any index: issue 21's 1 GiB bound could not hold.
    tenant = uuid.uuid4()
    chunks = [make_chunk(tenant, f"s{i}", f"w{i % 40} w{i % 7}", 0) for i in range(20_000)]
    store = InMemoryChunkStore()
    gc.collect()
    tracemalloc.start()
    try:
        await store.upsert_many(chunks)
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held / len(chunks) < TINY_PASSAGE_BYTES
    kept = store._tenants[tenant].image.chunks  # what the store keeps
    assert all(type(k) is tuple for k in kept)


async def test_a_kept_passage_naming_no_entity_is_left_out_of_every_collection() -> None:
    # A kept NamedTuple holding the tenant's UUID and a metadata dict stayed tracked: every
    # passage written since start was walked by every full collection (25-105 ms on the loop
    # during an upload into a workspace of 12,600 passages).
    tenant = uuid.uuid4()
    chunks = [
        make_chunk(tenant, f"s{i}", f"w{i % 40}", 0, metadata={"title": f"t{i}", "n": [i]})
        for i in range(500)
    ]
    store = InMemoryChunkStore()
    await store.upsert_many(chunks)
    gc.collect()
    gc.collect()  # the rows' tuple is untracked once its passages were, one collection later
    kept = store._tenants[tenant].image.chunks
    assert not [k for k in kept if gc.is_tracked(k)]
    assert not gc.is_tracked(kept), "the row list itself is walked by every full collection"
    (out,) = await store.get_by_source("s7", tenant)
    assert out == chunks[7] and out.metadata == {"title": "t7", "n": [7]}


async def test_a_passage_read_out_shares_nothing_mutable_with_what_the_store_keeps() -> None:
    store = InMemoryChunkStore()
    tenant, entity = uuid.uuid4(), uuid.uuid4()
    given = make_chunk(tenant, "s", "w1 w2", 0, entity_ids=[entity], metadata={"m": [1]})
    await store.upsert_many([given])
    given.entity_ids.append(uuid.uuid4())
    given.metadata["m"].append(2)
    (out,) = await store.get_by_source("s", tenant)
    assert out.entity_ids == [entity] and out.metadata == {"m": [1]}
    out.entity_ids.clear()
    out.metadata["m"].append(3)
    (again,) = await store.get_by_source("s", tenant)
    assert again.entity_ids == [entity] and again.metadata == {"m": [1]}
    (plain,) = [make_chunk(tenant, "p", "w3", 0)]
    await store.upsert_many([plain])
    (read,) = await store.get_by_source("p", tenant)
    assert read == plain and read.metadata == {} and read.entity_ids == []
    read.metadata["k"] = "v"
    assert (await store.get_by_source("p", tenant))[0].metadata == {}


async def test_an_image_ranks_its_rows_in_id_order_only_when_a_read_asks() -> None:
    # Each write's new image ranked every row (~15 ms a group at 1M passages) for reads an
    # upload nobody searches never makes; the first read ranks them, and ranks them right.
    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    rng = random.Random(3)
    for batch in range(3):
        chunks = [make_chunk(tenant, f"s{batch}-{i}", _text(rng)) for i in range(40)]
        await store.replace_sources(tenant, [(c.source_id, [c]) for c in chunks])
    image = store._tenants[tenant].image
    assert "id_rank" not in image.__dict__
    await store.lexical_candidates(["w1"], tenant, 5)
    assert "id_rank" in image.__dict__
    assert image.ids[image.id_rows].tolist() == sorted(image.ids.tolist())
    assert image.id_rank[image.id_rows].tolist() == list(range(len(image.id_rows)))
    await store.delete_by_source("s1-3", tenant)
    await _same_answers(store, tenant)
