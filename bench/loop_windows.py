"""What ran on the service's loop while each measured search waited: ``bench_stall --windows``.

``bench.loop_steps`` says how long the other work's steps are; a slow search is slow for what
ran inside its own window. This times every step the loop runs in the loop thread's CPU (as
``loop_steps`` does, so the machine's load inflates it far less than wall time), keeps when it
ran (wall) and where its task resumed and suspended (the last project frames, the runner's and
the checkpoint's left out), and for each search window sums the CPU of the steps of other work
that overlap it. Its p99 is what the code puts in a search's way; the top 5% of searches by it
name what did. It found the upload's interactive listing of 12,600 sources (issue 20 item 5)
that ``--steps`` could not: every one of its steps was short, and searches took turns with them.
Rejected: sampling the loop thread's stack (``loop_holds``), which sees wall time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from bench.loop_steps import KEEP_S, _owner

#: Project frames that name where a task was (its last few, outermost first).
_CORE = str(Path(__file__).resolve().parents[1] / "core")
#: Frames of the loop's own plumbing, left out of a name (every long work suspends there).
_PLUMBING = ("checkpoint.py", "runner.py")
#: Frames kept in a name.
FRAMES = 3
#: Share of searches, the slowest by other work's CPU, whose windows name what ran.
TOP_SHARE = 0.05


class Step(NamedTuple):
    started: float
    ended: float
    cpu: float
    owner: str
    where: str


def _frames_at(task: asyncio.Task[Any]) -> str:
    """The last ``FRAMES`` project frames where ``task`` is suspended, outermost first."""
    chain: list[str] = []
    awaited: Any = task.get_coro()
    for _ in range(64):
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is None:
            break
        name = frame.f_code.co_filename
        if name.startswith(_CORE) and not name.endswith(_PLUMBING):
            chain.append(f"{Path(name).stem}.{frame.f_code.co_name}:{frame.f_lineno}")
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    return ">".join(chain[-FRAMES:]) or "(none)"


class SearchWindows:
    """Times every step one thread's loop runs while started; ``window()`` marks a search."""

    def __init__(self, thread: threading.Thread, is_search: Callable[[str], bool]) -> None:
        self._ident = thread.ident
        self._is_search = is_search
        self.steps: list[Step] = []
        self.windows: list[tuple[float, float]] = []
        self._at: dict[int, str] = {}
        self._original: Callable[[asyncio.Handle], None] | None = None

    def start(self) -> None:
        original = self._original = asyncio.Handle._run
        steps, at, ident = self.steps, self._at, self._ident

        def timed(handle: asyncio.Handle) -> None:
            if threading.get_ident() != ident:
                original(handle)
                return
            started, before = time.perf_counter(), time.thread_time()
            try:
                original(handle)
            finally:
                spent = time.thread_time() - before
                task = getattr(getattr(handle, "_callback", None), "__self__", None)
                where = ""
                if isinstance(task, asyncio.Task):
                    resumed = at.get(id(task), "(start)")
                    at[id(task)] = suspended = "(done)" if task.done() else _frames_at(task)
                    if task.done():
                        del at[id(task)]  # a later task may reuse its id
                    where = f"{resumed} -> {suspended}"
                if spent >= KEEP_S:
                    steps.append(Step(started, time.perf_counter(), spent, _owner(handle), where))

        asyncio.Handle._run = timed  # type: ignore[method-assign,assignment]

    def stop(self) -> None:
        if self._original is not None:
            asyncio.Handle._run = self._original  # type: ignore[method-assign,assignment]

    def window(self, started: float, ended: float) -> None:
        """A measured search ran from ``started`` to ``ended`` (``time.perf_counter``)."""
        self.windows.append((started, ended))

    def report(self) -> dict[str, Any]:
        """Other work's loop CPU per search window (p50/p90/p99/max ms) and, over the top
        ``TOP_SHARE`` of windows by it, the CPU per owner and place that filled them."""
        others = [s for s in sorted(self.steps) if not self._is_search(s.owner)]
        sums: list[tuple[float, dict[str, float]]] = []
        first = 0
        for started, ended in self.windows:
            while first < len(others) and others[first].started < started - 1.0:
                first += 1  # no step is a second long: earlier ones cannot overlap
            named: dict[str, float] = {}
            for step in others[first:]:
                if step.started > ended:
                    break
                if step.ended >= started:
                    key = f"{step.owner} {step.where}".strip()
                    named[key] = named.get(key, 0.0) + step.cpu
            sums.append((sum(named.values()), named))
        if not sums:
            return {}
        ordered = sorted(sums, key=lambda pair: pair[0])
        totals = [pair[0] for pair in ordered]

        def at(share: float) -> float:
            return round(totals[min(len(totals) - 1, int(share * len(totals)))] * 1000, 1)

        top: dict[str, float] = {}
        for _, named in ordered[-max(1, int(TOP_SHARE * len(ordered))) :]:
            for key, cpu in named.items():
                top[key] = top.get(key, 0.0) + cpu
        filled = sorted(top.items(), key=lambda pair: -pair[1])[:6]
        return {
            "other_work_cpu_ms_p50_p90_p99_max": [at(0.5), at(0.9), at(0.99), at(1.0)],
            "in_the_top_windows_cpu_ms": {where: round(cpu * 1000, 1) for where, cpu in filled},
        }
