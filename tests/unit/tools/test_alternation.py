"""bench_stall's alternating blocks (tools/alternation.py): an idle search never overlaps a run
of the other work, every during block has the work running, and every run is measured whole."""

from __future__ import annotations

import threading
import time

import pytest

from tools.alternation import WorkGate, alternate


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
    merged = [side for i, side in enumerate(sides) if i == 0 or side != sides[i - 1]]
    assert merged == [False, True] * 4, "idle first, then alternated"
    assert [i for during, i, _ in seen if not during] == list(range(23))
    assert [i for during, i, _ in seen if during][:23] == list(range(23))
    assert not any(busy for during, _, busy in seen if not during), "work ran in an idle block"
    for during, began, ended in blocks:
        if not during:
            assert not [t for t in started if began <= t <= ended], "a run began in an idle block"
    stretches: list[list[bool]] = []
    for i, (during, _, busy) in enumerate(seen):
        if during and (i == 0 or not seen[i - 1][0]):
            stretches.append([])
        if during:
            stretches[-1].append(busy)
    assert len(stretches) == 4
    assert all(any(stretch) for stretch in stretches), "a during block with the work stopped"
    assert gate.seconds, "completed runs are timed"


def test_closing_the_gate_waits_for_the_run_in_flight_and_starts_no_other() -> None:
    runs: list[int] = []

    def work(i: int) -> None:
        time.sleep(0.02)
        runs.append(i)

    gate = WorkGate(work)
    gate.open()
    assert gate.in_flight
    gate.close()
    assert not gate.in_flight
    done = len(runs)
    assert done >= 1, "close returned before the run in flight ended"
    time.sleep(0.05)
    assert len(runs) == done, "a run started after the gate was closed"
    gate.finish()


class _ScriptedGate:
    """A gate whose run in flight ends after ``tail`` more looks once stopped (no thread)."""

    def __init__(self, tail: int) -> None:
        self.tail = tail
        self.log: list[str] = []
        self._left = 0

    def open(self) -> None:
        self.log.append("open")

    def stop(self) -> None:
        self.log.append("stop")
        self._left = self.tail

    def close(self) -> None:
        self.log.append("close")
        self._left = 0

    @property
    def in_flight(self) -> bool:
        self._left -= 1
        return self._left >= 0


def test_a_during_block_goes_on_measuring_until_the_run_in_flight_has_ended() -> None:
    gate = _ScriptedGate(tail=3)
    measured: list[tuple[bool, int, int]] = []

    def measure(during: bool, first: int, count: int) -> None:
        measured.append((during, first, count))
        gate.log.append("during" if during else "idle")

    alternate(measure, gate, searches=4, blocks=2)  # type: ignore[arg-type]

    block = ["close", "idle", "open", "during", "stop", "during", "during", "during"]
    assert gate.log == [*block, *block, "close"]
    during = [(first, count) for side, first, count in measured if side]
    assert during == [(0, 2), (2, 1), (3, 1), (4, 1), (5, 2), (7, 1), (8, 1), (9, 1)]
    assert [(first, count) for side, first, count in measured if not side] == [(0, 2), (2, 2)]


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
