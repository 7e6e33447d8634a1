"""The PostgreSQL store's workspace images are bounded in passages, least recently used first."""

from __future__ import annotations

import hashlib
import random
import uuid

import numpy as np
import pytest

from core.domain.steps import finish
from core.settings import Settings
from core.stores.postgres import query_read as image_module
from core.stores.postgres.query_read import Image, ImageCache, ImageChanges


def image(slots: int) -> Image:
    return Image(
        generation=1,
        id_rank=np.arange(slots, dtype=np.int64),
        ids=np.array([f"c{i}" for i in range(slots)], dtype=object),
        lengths=np.ones(slots, dtype=np.int64),
    )


def test_images_past_the_bound_are_dropped_least_recently_used_first() -> None:
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    cache = ImageCache(capacity=100)
    cache[a] = image(40)
    cache[b] = image(60)
    assert cache.held == 100 and a in cache and b in cache  # exactly at the bound: all kept
    assert cache.get(a) is not None  # a is now the most recently used
    cache[c] = image(30)
    assert b not in cache and a in cache and c in cache
    assert cache.held == 70


def test_a_new_image_of_a_workspace_replaces_its_old_one_in_the_count() -> None:
    a = uuid.uuid4()
    cache = ImageCache(capacity=100)
    cache[a] = image(60)
    cache[a] = image(80)
    assert cache.held == 80 and cache.get(a) is not None


def test_an_image_larger_than_the_bound_is_kept_alone() -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    cache = ImageCache(capacity=10)
    cache[a] = image(5)
    cache[b] = image(50)
    assert a not in cache and cache.get(b) is not None and cache.held == 50
    with pytest.raises(ValueError, match="capacity"):
        ImageCache(capacity=-1)


def test_the_bound_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEXPLAIN_IMAGE_CACHE_PASSAGES", "1234")
    assert Settings().image_cache_passages == 1234


def test_an_image_updated_by_a_write_stays_counted_and_within_the_bound() -> None:
    a, b = uuid.uuid4(), uuid.uuid4()
    cache = ImageCache(capacity=100)
    cache[a] = image(40)
    cache[b] = image(50)
    grown = ImageChanges(generations={a: (1, 2, 60)}, added={a: [(55, "c55", 3, "s55")]})
    cache.update(grown)  # noted only: the next read of a applies it
    assert cache.get(a) is not None and cache.get(a).generation == 1  # type: ignore[union-attr]
    updated = finish(cache.current(a, 2))  # a grows to 60 ordinals: 110 > 100, so b goes
    assert updated is not None and updated.generation == 2 and len(updated.ids) == 60
    assert cache.get(a) is updated and b not in cache and cache.held == 60
    assert updated.id_rank[55] == 40 and updated.ids[55] == "c55" and updated.lengths[55] == 3
    assert updated.sources is not None and updated.sources[55] == "s55"
    cache.update(ImageChanges(generations={a: (1, 3, 60)}))  # follows a generation it lacks
    assert a not in cache and cache.held == 0


def fresh_image(generation: int, live: dict[int, tuple[str, int]], size: int) -> Image:
    """The image ``Image.load`` reads for these live passages (ordinal -> id, length; the
    source of each is ``source_of`` its id)."""
    id_rank = np.full(size, -1, dtype=np.int64)
    ids = np.empty(size, dtype=object)
    lengths = np.zeros(size, dtype=np.int64)
    sources = np.empty(size, dtype=object)
    for rank, (ordinal, (chunk_id, length)) in enumerate(
        sorted(live.items(), key=lambda item: item[1][0])
    ):
        id_rank[ordinal], ids[ordinal], lengths[ordinal] = rank, chunk_id, length
        sources[ordinal] = source_of(chunk_id)
    return Image(generation, id_rank, ids, lengths, sources=sources)


def source_of(chunk_id: str) -> str:
    """A source id per passage id, a few passages to a source."""
    return f"s-{chunk_id[:1]}"


def test_an_image_changed_write_after_write_equals_one_read_afresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Random writes (removals, ids of two lengths so a short one sorts before its longer
    neighbours, sizes past the last ordinal), applied in steps a few entries long: after
    each, the image equals the one read whole from the same passages."""
    monkeypatch.setattr(image_module, "CHANGE_STEP", 7)
    monkeypatch.setattr(image_module, "PLACE_STEP", 3)
    rng = random.Random(20)
    for trial in range(150):
        live: dict[int, tuple[str, int]] = {}
        for ordinal in range(rng.randint(0, 40)):
            live[ordinal] = (_id(f"{trial}-{ordinal}", rng), rng.randint(0, 9))
        following = len(live)
        current = fresh_image(1, live, following)
        for generation in range(2, 7):
            removed = rng.sample(sorted(live), rng.randint(0, len(live)))
            for ordinal in removed:
                del live[ordinal]
            taken = {chunk_id for chunk_id, _ in live.values()}
            added = []
            for _ in range(rng.randint(0, 15)):
                chunk_id = _id(f"{trial}-{generation}-{following}", rng)
                if chunk_id not in taken:
                    taken.add(chunk_id)
                    live[following] = (chunk_id, rng.randint(0, 9))
                    added.append((following, chunk_id, live[following][1], source_of(chunk_id)))
                    following += 1
            following += rng.randint(0, 2)  # ordinals reserved, not all used
            changed = current.changed(generation, following, added, removed)
            assert changed is not None
            assert changed.same_as(fresh_image(generation, live, following)), (trial, generation)
            current = changed


def _id(seed: str, rng: random.Random) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[: rng.choice([2, 64])]


def test_a_change_to_a_large_image_is_applied_in_steps_of_bounded_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A write into a million-passage workspace held the loop 2.8 s in one piece: now the
    new ids are placed PLACE_STEP at a time and the old order merged CHANGE_STEP at a time."""
    monkeypatch.setattr(image_module, "CHANGE_STEP", 100)
    monkeypatch.setattr(image_module, "PLACE_STEP", 10)
    live = {ordinal: (f"{ordinal:08d}", 1) for ordinal in range(1_000)}
    grown = fresh_image(1, live, 1_000).changed(2, 1_001, [], [])  # slots with room to spare
    assert grown is not None
    added = [(1_001 + i, f"{2 * i:08d}x", 2, "s") for i in range(50)]
    removed = list(range(0, 1_000, 3))
    steps = grown.changed_steps(3, 1_051, added, removed)
    count = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            assert isinstance(done.value, Image)
            break
        count += 1
    # 50 ids placed 10 at a time, then 667 + 50 entries merged 100 (old ones) at a time.
    assert count >= 50 // 10 + (1_000 - len(removed)) // 100


def test_a_write_that_does_not_fit_the_image_has_it_read_again() -> None:
    """A removed ordinal that is not live, or an added one inside the image, means the
    image is not the one the write followed: None, and the cache drops it."""
    live = {ordinal: (f"c{ordinal}", 1) for ordinal in range(10)}
    current = fresh_image(1, live, 10)
    assert current.changed(2, 12, [], [3, 3]) is not None
    assert current.changed(2, 12, [(5, "c5b", 1, "s")], []) is None
    gone = current.changed(2, 12, [], [4])
    assert gone is not None and gone.changed(3, 12, [], [4]) is None
    a = uuid.uuid4()
    cache = ImageCache()
    cache[a] = current
    cache.update(ImageChanges(generations={a: (1, 2, 12)}, removed={a: [4]}))
    cache.update(ImageChanges(generations={a: (2, 3, 12)}, removed={a: [4]}))
    assert finish(cache.current(a, 3)) is None and a not in cache
