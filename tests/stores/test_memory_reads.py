"""The in-memory store's read view: each image's live postings in chunk-id order, built once.

Searches read the view, not the segments, so the view must hold exactly the live postings of
its image (tombstones and merges included), rows numbered by chunk id, whichever way it was
sorted; and a write must never leave a reader on the view of an older image.
"""

from __future__ import annotations

import random
import threading
import uuid

import numpy as np
import pytest

from core.domain.postings import posting_bits
from core.stores.memory import InMemoryChunkStore
from core.stores.memory import reads as memory_reads
from core.stores.memory.index import MERGE_FACTOR, Image, Since
from core.stores.memory.reads import View, view_of
from core.stores.port import passage_terms
from tests.stores.compliance import make_chunk

WORDS = [f"w{i}" for i in range(30)]


def _text(rng: random.Random) -> str:
    return " ".join(WORDS[min(int(rng.expovariate(0.2)), 29)] for _ in range(rng.randint(1, 10)))


async def _written(seed: int) -> tuple[InMemoryChunkStore, uuid.UUID]:
    """A store holding several segments, merged ones and tombstones, ids not in write order."""
    rng = random.Random(seed)
    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    for batch in range(2 * MERGE_FACTOR + 3):
        chunks = [make_chunk(tenant, f"s{rng.randrange(1000)}-{batch}", _text(rng), i)
                  for i in range(1 + batch % 3)]  # fmt: skip
        await store.upsert_many(chunks)
        if batch % 4 == 3:
            await store.delete_by_source(chunks[0].source_id, tenant)
        if batch == 0:
            first = chunks[0].source_id
    await store.delete_by_source(first, tenant)  # a tombstone in a merged segment
    return store, tenant


def _image(store: InMemoryChunkStore, tenant: uuid.UUID) -> Image:
    return store._tenants[tenant].image


def _arrays(view: View) -> list[list[object]]:
    terms = sorted(view.postings.terms)
    return [terms, *(a.tolist() for t in terms for a in view.posting(t)),
            view.lengths.tolist(), view.ids.tolist(), view.image_rows.tolist()]  # fmt: skip


async def test_a_views_postings_are_each_terms_live_passages_in_chunk_id_order() -> None:
    store, tenant = await _written(1)
    image = _image(store, tenant)
    assert len(image.segments) > 1 and any(image.dead), "the store should hold tombstones"
    live = [c for s in await store.list_sources(tenant)
            for c in await store.get_by_source(s.source_id, tenant)]  # fmt: skip
    live.sort(key=lambda c: c.id)
    view = view_of(image)
    assert view.ids.tolist() == [c.id for c in live]
    counted = [passage_terms(c.text) for c in live]
    assert view.lengths.tolist() == [n for n, _ in counted]
    for term in WORDS:
        rows, tfs = view.posting(term)
        want = [(r, tf[term]) for r, (_, tf) in enumerate(counted) if term in tf]
        assert list(zip(rows.tolist(), tfs.tolist(), strict=True)) == want, term
    assert [len(a) for a in view.posting("absent")] == [0, 0]


@pytest.mark.parametrize("bits", [memory_reads.KEY_BITS, 1])
async def test_a_view_built_in_small_pieces_or_without_packed_keys_is_the_same_view(
    monkeypatch: pytest.MonkeyPatch, bits: int
) -> None:
    store, tenant = await _written(2)
    image = _image(store, tenant)
    whole = View.of(image)
    monkeypatch.setattr(memory_reads, "KEY_BITS", bits)
    monkeypatch.setattr(memory_reads, "PIECE", 5)
    assert _arrays(View.of(image)) == _arrays(whole)


async def test_a_view_is_made_once_per_image_and_a_write_or_delete_starts_a_new_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[Image] = []
    update = memory_reads._updated

    def counted(before: View, image: Image, since: Since) -> View:
        built.append(image)
        return update(before, image, since)

    monkeypatch.setattr(memory_reads, "_updated", counted)
    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    await store.upsert_many([make_chunk(tenant, f"a{i}", "wing flutter", 0) for i in range(4)])
    for _ in range(3):
        assert (await store.lexical_candidates(["wing"], tenant, 10)).matching == 4
    assert not built  # the first view is built, not updated
    await store.upsert_many([make_chunk(tenant, "b", "wing heat", 0)])
    assert (await store.lexical_candidates(["wing"], tenant, 10)).matching == 5
    assert await store.delete_by_source("a1", tenant) == 1
    found = await store.lexical_candidates(["wing", "flutter"], tenant, 10)
    assert sorted(c.chunk.source_id for c in found.candidates) == ["a0", "a2", "a3", "b"]
    assert found.stats.doc_frequencies == {"flutter": 3, "wing": 4}
    assert len(built) == 2 and built[-1] is _image(store, tenant)  # the first one was built


async def test_a_view_built_in_a_thread_answers_as_one_built_inline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, tenant = await _written(3)
    inline = [await store.lexical_candidates([w, "w1"], tenant, 7) for w in WORDS[:8]]
    await store.upsert_many([make_chunk(tenant, "late", "w0 w1 w2", 0)])
    await store.delete_by_source("late", tenant)
    monkeypatch.setattr(memory_reads, "THREAD_POSTINGS", 0)
    assert not _image(store, tenant).views
    threaded = [await store.lexical_candidates([w, "w1"], tenant, 7) for w in WORDS[:8]]
    assert threaded == inline
    assert np.array_equal(view_of(_image(store, tenant)).ids, _image(store, tenant).id_keys)


async def test_a_small_workspaces_search_never_waits_for_a_big_ones_view_being_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Held:
        """``_BUILDING`` held by a big image's build: taking it on the loop would block."""

        def __enter__(self) -> None:
            if threading.current_thread() is threading.main_thread():
                raise AssertionError("the event loop waited for another image's view")

        def __exit__(self, *_: object) -> None:
            return None

    monkeypatch.setattr(memory_reads, "_BUILDING", Held())
    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    await store.upsert_many([make_chunk(tenant, "a", "wing flutter", 0)])
    assert (await store.lexical_candidates(["wing"], tenant, 10)).matching == 1
    monkeypatch.setattr(memory_reads, "THREAD_POSTINGS", 0)
    await store.upsert_many([make_chunk(tenant, "b", "wing", 0)])
    assert (await store.lexical_candidates(["wing"], tenant, 10)).matching == 2


async def test_a_view_keeps_the_bitsets_of_common_terms_only_and_they_are_their_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(memory_reads, "KEEP_BITS", 4)  # a quarter of ~40 rows: some terms
    store, tenant = await _written(4)
    for word in WORDS:
        await store.lexical_candidates([word, "absent"], tenant, 3)
    view = view_of(_image(store, tenant))
    n = len(view.lengths)
    common = {w for w in WORDS if len(view.posting(w)[0]) * memory_reads.KEEP_BITS >= n}
    rare = {w for w in WORDS if len(view.posting(w)[0])} - common
    assert view.kept_bits.keys() == common and common and rare
    for word, bits in view.kept_bits.items():
        assert bits.tolist() == posting_bits(view.posting(word)[0], n).tolist(), word


async def test_a_small_views_reads_take_their_tf_columns_from_each_terms_tfs_over_every_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tf columns gathered from ``View.dense`` are the ones read off the bitsets (a view
    past ``DENSE_ROWS``), and the view keeps the dense tfs of common terms only, as many as a
    row holds postings on average, each read-only and its posting's tfs in its rows."""
    monkeypatch.setattr(memory_reads, "KEEP_BITS", 4)
    dense_rows = memory_reads.DENSE_ROWS
    store, tenant = await _written(4)
    # Rare words first: a view keeping any term it is asked for would fill up with them.
    queries = [[w] for w in reversed(WORDS)] + [["w0", "w3", "w9"], ["w1", "w2", "absent"]]
    for limit in (0, 1, 3, 2**40):
        for terms in queries:
            dense = await store.lexical_candidates(terms, tenant, limit)
            monkeypatch.setattr(memory_reads, "DENSE_ROWS", 0)
            bits = await store.lexical_candidates(terms, tenant, limit)
            monkeypatch.setattr(memory_reads, "DENSE_ROWS", dense_rows)
            assert dense.tfs.tolist() == bits.tfs.tolist() and list(dense.ids) == list(bits.ids)
    view = view_of(_image(store, tenant))
    n = len(view.lengths)
    common = {w for w in WORDS if len(view.posting(w)[0]) * memory_reads.KEEP_BITS >= n}
    most = len(view.postings.rows) // n
    assert view.kept_tfs.keys() <= common and len(view.kept_tfs) == min(len(common), most) > 0
    for word, tfs in view.kept_tfs.items():
        rows, values = view.posting(word)
        assert not tfs.flags.writeable and len(tfs) == n, word
        assert tfs[rows].tolist() == values.tolist() and int(np.count_nonzero(tfs)) == len(rows)


def _live_arrays(view: View) -> list[object]:
    """``_arrays`` over the terms some live passage has (an updated view may keep a term
    whose passages are all gone, with an empty posting)."""
    terms = sorted(t for t in view.postings.terms if len(view.posting(t)[0]))
    return [terms, *(a.tolist() for t in terms for a in view.posting(t)),
            view.lengths.tolist(), view.ids.tolist(), view.image_rows.tolist()]  # fmt: skip


@pytest.mark.parametrize("seed", [5, 6, 7])
async def test_a_view_updated_after_writes_and_deletes_is_the_view_built_fresh(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    built: list[Image] = []
    build = View.of.__func__  # type: ignore[attr-defined]

    def counted(cls: type[View], image: Image) -> View:
        built.append(image)
        view: View = build(cls, image)
        return view

    rng = random.Random(seed)
    store = InMemoryChunkStore()
    tenant = uuid.uuid4()
    sources: list[str] = []
    for step in range(4 * MERGE_FACTOR):
        draw = rng.random()
        if sources and draw < 0.3:
            await store.delete_by_source(sources.pop(rng.randrange(len(sources))), tenant)
        elif sources and draw < 0.5:  # a source rewritten: removed and added in one write
            source = rng.choice(sources)
            chunks = [make_chunk(tenant, source, _text(rng), i) for i in range(rng.randint(1, 4))]
            await store.replace_sources(tenant, [(source, chunks)])
        else:  # new sources, their ids among the others'
            news = [f"s{rng.randrange(10_000)}-{step}" for _ in range(rng.randint(1, 3))]
            sizes = [rng.randint(1, 4) for _ in news]
            await store.upsert_many(
                [
                    make_chunk(tenant, s, _text(rng), i)
                    for s, n in zip(news, sizes, strict=True)
                    for i in range(n)
                ]
            )
            sources += news
        await store.lexical_candidates(["w0", "w3"], tenant, 5)
        if step == 0:
            monkeypatch.setattr(View, "of", classmethod(counted))
        image = _image(store, tenant)
        assert _live_arrays(view_of(image)) == _live_arrays(build(View, image)), step
    assert not built, "every view after the first was updated, none built"
