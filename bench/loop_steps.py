"""How long each step of work on the service's loop holds it, in CPU time: ``bench_stall --steps``.

A light search waits for the step of long work running when it arrives (everything between two
points where that work suspends: a checkpoint, a thread's result). ``bench.loop_holds`` sees
the waits in wall time, which on a machine shared by five developers is mostly the other
developers' processes (a 1 ms step descheduled for 40 ms); this counts the loop thread's CPU
time per callback the loop runs (``asyncio.Handle._run``: a task's step is one), by the
coroutine whose step it is, so a step's size is measured whatever the load; the collector's
time inside a step (``gc.callbacks`` on the loop's thread) is counted apart, since a full
collection lands in whichever step allocates when it is due. Rejected:
asyncio's debug mode (``slow_callback_duration``), which logs wall time and slows every step.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Steps shorter than this (CPU seconds) are counted but not kept: most are loop plumbing.
KEEP_S = 0.0002
#: Steps longer than this (CPU seconds) are named by where their task resumed and suspended.
NAMED_S = 0.005
#: Where a file must be to name a step (the project's own code).
_PROJECT = str(Path(__file__).resolve().parents[1] / "core")


def _suspended_at(task: asyncio.Task[Any]) -> str:
    """The innermost project frame where ``task`` is suspended ("module.function:line")."""
    where = "(start)"
    awaited: Any = task.get_coro()
    for _ in range(64):
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is None:
            break
        if frame.f_code.co_filename.startswith(_PROJECT):
            module = Path(frame.f_code.co_filename).stem
            where = f"{module}.{frame.f_code.co_name}:{frame.f_lineno}"
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    return where


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
        #: Per owner, each kept step's CPU less the collector's time inside it.
        self._without_gc: dict[str, list[float]] = defaultdict(list)
        #: Per owner, "resumed at -> suspended at" of each step over ``NAMED_S``.
        self._named: dict[str, Counter[str]] = defaultdict(Counter)
        #: Where each task last suspended (by task id).
        self._at: dict[int, str] = {}
        self._original: Callable[[asyncio.Handle], None] | None = None
        #: The collector's CPU seconds on the loop's thread so far, and when the current began.
        self._gc = [0.0, 0.0]

    def _collected(self, phase: str, info: dict[str, Any]) -> None:
        if threading.get_ident() != self._ident:
            return
        if phase == "start":
            self._gc[1] = time.thread_time()
        else:
            self._gc[0] += time.thread_time() - self._gc[1]

    def start(self) -> None:
        original = asyncio.Handle._run
        self._original = original
        steps, without, ident, collector = self._steps, self._without_gc, self._ident, self._gc
        named, at = self._named, self._at

        def timed(handle: asyncio.Handle) -> None:
            if threading.get_ident() != ident:
                original(handle)
                return
            before, collected = time.thread_time(), collector[0]
            try:
                original(handle)
            finally:
                spent = time.thread_time() - before
                if spent >= KEEP_S:
                    steps[_owner(handle)].append(spent)
                    without[_owner(handle)].append(spent - (collector[0] - collected))
                task = getattr(getattr(handle, "_callback", None), "__self__", None)
                if isinstance(task, asyncio.Task):
                    resumed = at.get(id(task), "(start)")
                    suspended = "(done)" if task.done() else _suspended_at(task)
                    at[id(task)] = suspended
                    if spent >= NAMED_S:
                        named[_owner(handle)][f"{resumed} -> {suspended}"] += 1

        gc.callbacks.append(self._collected)

        asyncio.Handle._run = timed  # type: ignore[method-assign,assignment]

    def stop(self) -> None:
        if self._original is not None:
            asyncio.Handle._run = self._original  # type: ignore[method-assign,assignment]
            gc.callbacks.remove(self._collected)

    def report(self) -> dict[str, dict[str, float]]:
        """Per owner with a step of 2 ms or more: its steps, p99 and max CPU ms, steps over
        5 ms, and the max and count less the collector's time in them."""
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
                "max_cpu_ms_less_gc": round(max(self._without_gc[owner]) * 1000, 1),
                "over_5_ms_less_gc": sum(s > 0.005 for s in self._without_gc[owner]),
            }
            if self._named[owner]:
                out[owner]["over_5_ms_at"] = [  # type: ignore[assignment]
                    f"{count} x {where}" for where, count in self._named[owner].most_common(6)
                ]
        out["collector (loop thread)"] = {"cpu_ms": round(self._gc[0] * 1000, 1)}
        return out
