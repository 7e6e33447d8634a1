"""Idle and during searches in alternating blocks: ``bench_stall``'s two samples in one stretch.

The verdict is the p99 of a session's searches while other work runs over their p99 with no
work running. Measured as two passes one after the other (300 searches idle, then 300 during),
each side saw its own half-minute of a machine shared by several developers, under a hypervisor
that steals in 10 ms ticks: the idle p99 of one code moved 18 -> 94 ms between the rows of one
pass, and a row's ratio moved with whichever side a burst of steal fell on (session 11's quiet
window: the three slowest searches of a row over 2x lost 20-33 ms each to steal, its idle ones
0-3). So the bench alternates: ``BLOCKS`` blocks of each side, idle first, the work stopped
through every idle block (no run in flight: the gate waits for the run in progress to end) and
running through every during block (restarting at once, as before); a during block goes on
until the run in flight ends, so every run is measured whole, its last phase too (an
Evaluate's metrics, an upload's merge), as in one long pass. The statistic is the same, the p99
of a side's searches (``bench_stall.SEARCHES`` idle, at least as many during); both sides
sample the same minutes.
Rejected: more searches per side (a longer row, the same drift between its two halves), idle
before and after only (a burst in the middle still falls on one side), during blocks cut at a
count (every run's later phases would go unmeasured). The cost: each during block lasts at least
one run of the work (an Evaluate's ~3-15 s on the shared machine).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: Blocks of each side (idle, during) a row alternates.
BLOCKS = 5


class WorkGate:
    """Runs ``work(i)`` again and again in a thread while open; ``close()`` stops it (waiting
    for the run in progress to end, so no run is in flight while it is closed)."""

    def __init__(self, work: Callable[[int], None]) -> None:
        self._work = work
        self._state = threading.Condition()
        self._open = False
        self._running = False
        self._finished = False
        self._error: BaseException | None = None
        #: Seconds each completed run took.
        self.seconds: list[float] = []
        self._thread = threading.Thread(target=self._runs, name="bench-other-work", daemon=True)
        self._thread.start()

    def _runs(self) -> None:
        i = 0
        while True:
            with self._state:
                while not self._open and not self._finished:
                    self._state.wait()
                if self._finished:
                    return
                self._running = True
                self._state.notify_all()
            started = time.perf_counter()
            try:
                self._work(i)
            except BaseException as error:  # reported in the measuring thread
                with self._state:
                    self._error, self._finished, self._running = error, True, False
                    self._state.notify_all()
                return
            self.seconds.append(time.perf_counter() - started)
            i += 1
            with self._state:
                self._running = False
                self._state.notify_all()

    def _raise(self) -> None:
        if self._error is not None:
            raise RuntimeError("the other work failed") from self._error

    def open(self) -> None:
        """Let the work run; returns once a run is in flight."""
        with self._state:
            self._open = True
            self._state.notify_all()
            while not self._running and not self._finished:
                self._state.wait()
        self._raise()

    def stop(self) -> None:
        """Start no further run (the one in flight goes on); returns at once."""
        with self._state:
            self._open = False

    def close(self) -> None:
        """Stop the work; returns once no run is in flight and none will start."""
        with self._state:
            self._open = False
            while self._running:
                self._state.wait()
        self._raise()

    @property
    def in_flight(self) -> bool:
        """Whether a run of the work is in progress."""
        return self._running

    def finish(self) -> None:
        """End the thread (after the run in progress)."""
        with self._state:
            self._finished = True
            self._state.notify_all()
        self._thread.join()
        self._raise()


def alternate(
    measure: Callable[[bool, int, int], None], gate: WorkGate, searches: int, blocks: int = BLOCKS
) -> None:
    """``measure(during, first, count)`` over ``blocks`` idle and ``blocks`` during blocks,
    alternated, idle first (``first``: the side's index of the block's first search). Idle
    blocks hold ``searches`` in all, the gate closed; a during block opens it, measures its
    share, then lets the run in flight finish while it goes on measuring, so every run of the
    work is measured whole (its last phase too) and none is cut off unmeasured."""
    sizes = [searches // blocks + (1 if b < searches % blocks else 0) for b in range(blocks)]
    idle = during = 0
    for size in sizes:
        gate.close()
        measure(False, idle, size)
        idle += size
        gate.open()
        measure(True, during, size)
        during += size
        gate.stop()
        while gate.in_flight:
            measure(True, during, 1)
            during += 1
    gate.close()
