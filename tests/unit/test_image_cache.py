"""The PostgreSQL store's workspace images are bounded in passages, least recently used first."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from core.settings import Settings
from core.stores.postgres.image import Image, ImageCache


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
