"""Where the service's event loop is held: a sampling profiler for ``bench_stall --holds``.

A light search waits for whatever holds the one loop it shares with long work; the question is
which piece of code that is. py-spy would answer it from outside, but it is not in the locks
(a native binary that needs ptrace), so this samples from inside: a thread reads the loop
thread's stack every ``SAMPLE_S`` (``sys._current_frames``), a coroutine on the loop notes every
turn that came later than ``HOLD_S``, and the samples taken inside those late turns are
counted by their innermost project frames. A sample costs the GIL for a few microseconds.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
#: How often the sampler reads the loop thread's stack.
SAMPLE_S = 0.001
#: A loop turn later than this counts as a hold.
HOLD_S = 0.008
#: Project frames that name a sample (innermost first).
FRAMES = 3


def _signature(frame: FrameType | None) -> str:
    """The innermost project frames, after the innermost frame outside the project if the
    sample stopped there: ``selectors.select`` is the loop thread idle or waiting for a core
    or the GIL, ``selector_events.write`` a socket send (asyncpg's), not project code."""
    names: list[str] = []
    outside = ""
    while frame is not None and len(names) < FRAMES:
        path = Path(frame.f_code.co_filename)
        if ROOT in path.parents and not {"bench", ".venv"} & set(path.parts):
            names.append(f"{path.stem}.{frame.f_code.co_name}:{frame.f_lineno}")
        elif not names and not outside:
            outside = f"({path.stem}.{frame.f_code.co_name})"
        frame = frame.f_back
    return " < ".join([outside, *names] if outside else names) or "(outside the project)"


class LoopHolds:
    """Samples one loop's thread while it runs; ``report()`` says what held it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        self._loop = loop
        self._ident = thread.ident
        self._samples: list[tuple[float, str]] = []
        self._holds: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            frame = sys._current_frames().get(self._ident or 0)
            self._samples.append((time.perf_counter(), _signature(frame)))
            time.sleep(SAMPLE_S)

    async def _watch(self) -> None:
        while not self._stop.is_set():
            before = time.perf_counter()
            await asyncio.sleep(SAMPLE_S)
            after = time.perf_counter()
            if after - before > HOLD_S + SAMPLE_S:
                self._holds.append((before, after))

    def start(self) -> None:
        self._sampler.start()
        asyncio.run_coroutine_threadsafe(self._watch(), self._loop)

    def stop(self) -> None:
        self._stop.set()
        self._sampler.join()

    def report(self, top: int = 15) -> dict[str, object]:
        """The holds' lengths and the code sampled inside them, most samples first."""
        lengths = sorted(after - before for before, after in self._holds)
        inside: Counter[str] = Counter()
        holds = iter(self._holds)
        current = next(holds, None)
        for at, name in self._samples:
            while current is not None and at > current[1]:
                current = next(holds, None)
            if current is not None and current[0] <= at:
                inside[name] += 1
        return {
            "holds": len(lengths),
            "hold_p50_ms": round(lengths[len(lengths) // 2] * 1000, 1) if lengths else 0,
            "hold_p99_ms": round(lengths[int(0.99 * len(lengths))] * 1000, 1) if lengths else 0,
            "hold_max_ms": round(lengths[-1] * 1000, 1) if lengths else 0,
            "held_by": [f"{n:5d}  {name}" for name, n in inside.most_common(top)],
        }
