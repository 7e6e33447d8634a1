"""An Evaluate reads the next queries while it ranks one (``common.read_ahead``): the caller
sees every key with its own read, in the keys' order, as if read one at a time; a read's
error is raised at its key; the reads still under way are cancelled when the caller stops."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

import pytest

from core.service.common import read_ahead


async def test_each_key_comes_with_its_own_read_in_order_with_later_reads_under_way() -> None:
    started: list[int] = []

    async def read(key: int) -> str:
        started.append(key)
        await asyncio.sleep(0.001 * (5 - key))  # later keys finish first
        return f"read {key}"

    seen = []
    async with aclosing(read_ahead(read, range(5), depth=2)) as reading:
        async for key, value in reading:
            seen.append((key, value, list(started)))
    assert [(key, value) for key, value, _ in seen] == [(k, f"read {k}") for k in range(5)]
    assert seen[0][2] == [0, 1, 2], "two reads were under way when the first was handed"


async def test_depth_0_reads_one_key_at_a_time() -> None:
    started: list[int] = []

    async def read(key: int) -> int:
        started.append(key)
        await asyncio.sleep(0)
        return key

    async with aclosing(read_ahead(read, range(3), depth=0)) as reading:
        async for key, _ in reading:
            assert started == list(range(key + 1))


async def test_a_reads_error_is_raised_at_its_key_and_the_reads_ahead_are_cancelled() -> None:
    cancelled: list[int] = []

    async def read(key: int) -> int:
        if key == 1:
            raise ValueError("query 1: too many terms")
        try:
            await asyncio.sleep(10 if key > 1 else 0)
        except asyncio.CancelledError:
            cancelled.append(key)
            raise
        return key

    seen = []
    with pytest.raises(ValueError, match="query 1: too many terms"):
        async with aclosing(read_ahead(read, range(6), depth=3)) as reading:
            async for key, _ in reading:
                seen.append(key)
    await asyncio.sleep(0)
    assert seen == [0]
    assert sorted(cancelled) == [2, 3]  # key 4's read was cancelled before it started
    assert asyncio.all_tasks() == {asyncio.current_task()}, "a read ahead is left running"
