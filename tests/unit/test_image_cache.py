"""The PostgreSQL store's workspace images are bounded in passages, least recently used first."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from core.settings import Settings
from core.stores.postgres.image import Image, ImageCache, ImageChanges


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
    grown = ImageChanges(generations={a: (1, 2, 60)}, added={a: [(55, "c55", 3)]})
    cache.update(grown)  # a grows to 60 ordinals: 110 > 100, so b (least recently used) goes
    updated = cache.get(a)
    assert updated is not None and updated.generation == 2 and len(updated.ids) == 60
    assert b not in cache and cache.held == 60
    assert updated.id_rank[55] == 40 and updated.ids[55] == "c55" and updated.lengths[55] == 3
    cache.update(ImageChanges(generations={a: (1, 3, 60)}))  # follows a generation it lacks
    assert a not in cache and cache.held == 0
