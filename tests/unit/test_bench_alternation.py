"""bench_stall's alternating blocks (bench/alternation.py): an idle search never overlaps a run
of the other work, and every during block has the work running throughout."""

from __future__ import annotations

import threading
import time

import pytest

from bench.alternation import WorkGate, alternate


def test_idle_blocks_overlap_no_run_of_the_work_and_during_blocks_overlap_runs() -> None:
    in_flight = threading.Event()
    started: list[float] = []

    def work(_: int) -> None:
        in_flight.set()
        started.append(time.perf_counter())
        time.sleep(0.004)
        in_flight.clear()

    gate = WorkGate(work)
    seen: list[tuple[bool, int, bool]] = []
    blocks: list[tuple[bool, float, float]] = []

    def measure(during: bool, first: int, count: int) -> None:
        began = time.perf_counter()
        for i in range(first, first + count):
            seen.append((during, i, in_flight.is_set() or gate.in_flight))
            time.sleep(0.001)
        blocks.append((during, began, time.perf_counter()))

    alternate(measure, gate, searches=23, blocks=4)
    gate.finish()

    sides = [during for during, _, _ in blocks]
    assert sides == [False, True] * 4, "idle first, then alternated"
    assert [i for during, i, _ in seen if not during] == list(range(23))
    assert [i for during, i, _ in seen if during] == list(range(23))
    assert not any(busy for during, _, busy in seen if not during), "work ran in an idle block"
    for during, began, ended in blocks:
        if not during:
            assert not [t for t in started if began <= t <= ended], "a run began in an idle block"
    for block in range(4):
        busy = [b for during, i, b in seen if during and block * 6 <= i < min(23, block * 6 + 6)]
        assert any(busy), "a during block with the work stopped"
    assert gate.seconds, "completed runs are timed"


def test_a_failing_work_is_reported_to_the_measuring_thread() -> None:
    def work(_: int) -> None:
        raise ValueError("broken work")

    gate = WorkGate(work)
    with pytest.raises(RuntimeError, match="the other work failed") as raised:
        gate.open()
        gate.close()
    assert isinstance(raised.value.__cause__, ValueError)
    with pytest.raises(RuntimeError):
        gate.finish()
