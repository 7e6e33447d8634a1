"""How long each step of work on the service's loop holds it, in CPU time: ``bench_stall --steps``.

A light search waits for the step of long work running when it arrives (everything between two
points where that work suspends: a checkpoint, a thread's result). ``bench.loop_holds`` sees
the waits in wall time, which on a machine shared by five developers is mostly the other
developers' processes (a 1 ms step descheduled for 40 ms); this counts the loop thread's CPU
time per callback the loop runs (``asyncio.Handle._run``: a task's step is one), by the
coroutine whose step it is, so a step's size is measured whatever the load. Rejected:
asyncio's debug mode (``slow_callback_duration``), which logs wall time and slows every step.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

#: Steps shorter than this (CPU seconds) are counted but not kept: most are loop plumbing.
KEEP_S = 0.0002


def _owner(handle: asyncio.Handle) -> str:
    """The coroutine whose step a handle runs (a task's), else the callback's name."""
    callback: Any = getattr(handle, "_callback", None)
    task = getattr(callback, "__self__", None)
    named: Any = task.get_coro() if isinstance(task, asyncio.Task) else callback
    return str(getattr(named, "__qualname__", repr(named)))


class LoopSteps:
    """Times every callback one thread's loop runs while started; ``report()`` per owner."""

    def __init__(self, thread: threading.Thread) -> None:
        self._ident = thread.ident
        self._steps: dict[str, list[float]] = defaultdict(list)
        self._original: Callable[[asyncio.Handle], None] | None = None

    def start(self) -> None:
        original = asyncio.Handle._run
        self._original = original
        steps, ident = self._steps, self._ident

        def timed(handle: asyncio.Handle) -> None:
            if threading.get_ident() != ident:
                original(handle)
                return
            before = time.thread_time()
            try:
                original(handle)
            finally:
                spent = time.thread_time() - before
                if spent >= KEEP_S:
                    steps[_owner(handle)].append(spent)

        asyncio.Handle._run = timed  # type: ignore[method-assign,assignment]

    def stop(self) -> None:
        if self._original is not None:
            asyncio.Handle._run = self._original  # type: ignore[method-assign,assignment]

    def report(self) -> dict[str, dict[str, float]]:
        """Per owner with a step of 2 ms or more: its steps, p99 and max CPU ms, steps over 5 ms."""
        out: dict[str, dict[str, float]] = {}
        for owner, spent in sorted(self._steps.items(), key=lambda kv: -max(kv[1])):
            ordered = sorted(spent)
            if ordered[-1] < 0.002:
                continue
            out[owner] = {
                "steps": len(ordered),
                "p99_cpu_ms": round(ordered[int(0.99 * len(ordered))] * 1000, 1),
                "max_cpu_ms": round(ordered[-1] * 1000, 1),
                "over_5_ms": sum(s > 0.005 for s in ordered),
            }
        return out
