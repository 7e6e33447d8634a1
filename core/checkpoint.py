"""Long work gives way to interactive calls at checkpoints: no session's search waits for it.

The service runs every store call on ONE event loop (``core.service.runner``: an asyncpg pool
belongs to one loop). Long work — an Evaluate over 225 queries, a load, a re-index — is a
coroutine on that loop too, and the in-memory store never suspends, so one Evaluate held the
loop for its whole run: another session's search waited 0.6-1 s for it (bench/bench_stall.py).
Long work therefore awaits ``checkpoint()`` between units (a query, a document, a batch of
passages); the runner installs a pause there that waits while any interactive call is pending.

Rejected: long work on its own thread and loop (the PostgreSQL pool cannot be shared across
loops, and the in-memory store is not written for concurrent threads; under the GIL a CPU-bound
thread would still halve a search's speed), and ``asyncio.sleep(0)`` alone (a search submitted
from another thread needs two loop turns to start, and on PostgreSQL it suspends at each round
trip, when the long work would take the loop again). The cost: long work pauses for as long as
searches keep arriving, up to ``core.service.runner.MAX_GIVE_WAY_S`` per checkpoint.

With no pause installed (``load``, tests), a checkpoint turns the loop at most every
``_TURN_S``: each turn is an epoll call and a task switch (~10 us), and a load of a million
tiny documents reached six checkpoints per document (in the store too), a tenth of its time.

Synchronous work cut into steps (``core.domain.steps``) runs with a checkpoint between
steps here (``stepped``), and whole with ``finish``.

Long work's Python in a worker thread (an upload's file read in ``asyncio.to_thread``) is not
on the loop, but it takes the GIL from it: a search beside it ran in 1 ms slices, taking turns
with the parser. Such a thread calls ``thread_checkpoint()`` between small units; with the
runner's pause installed it sleeps (the GIL let go) while an interactive call is pending. The
pause reaches the thread with the task's context (``asyncio.to_thread`` copies it). Reading in
a process is kept for big JSONL uploads only (``core.ingest.aside``: a process per upload, and
the documents sent back cost the loop's thread part of what parsing them does).

Long work inside a store's write transaction (``holding_locks``: the PostgreSQL store's
writes) does not wait at its checkpoints while an interactive write is under way: that call
may be waiting for a lock the transaction holds. A colleague's delete of the workspace being
uploaded into did (blocked on the upload's row lock on the workspace): the upload waited
``MAX_GIVE_WAY_S`` at each of its remaining COPY pieces for the delete to end, so the delete
hit its 120 s call timeout on a stock server (8,000 documents, a delete 2.0-2.4 s in: 3 of 3)
and waited 102 s on Citus (bench/bench_delete_during_upload.py). Searches hold no lock a write
waits for, so the write still gives way to them. Rejected: never waiting inside a transaction
(search p99 beside a PostgreSQL upload 1.4x higher: bench_stall upload-big 21-24 -> 32-34 ms),
a cap on a task's total give-way (still a wait per piece for a call that cannot end first), and
not counting writes as interactive (a rename's or a profile change's caller would wait too).

A worker process doing long work for the app (the staging worker, the reading worker) cannot
pause at a checkpoint: it runs at ``WORKER_NICENESS`` (``at_worker_priority``), so it takes a
core from a search only when one is idle. The reading worker ran at the app's priority until
session 14: beside a 150k-record upload through it, search p99 was 4.0x idle (in-memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import Final, TypeVar

from core.domain.steps import Steps, finish

T = TypeVar("T")

#: The pause long work awaits at each checkpoint; None outside the service (tests, ``load``).
_PAUSE: ContextVar[Callable[[], Awaitable[None]] | None] = ContextVar("pause", default=None)
#: The pause a thread doing long work's Python calls between units (``thread_checkpoint``).
_THREAD_PAUSE: ContextVar[Callable[[], None] | None] = ContextVar("thread_pause", default=None)
#: Seconds between two turns of the loop at checkpoints when no pause is installed.
_TURN_S = 0.001
#: The niceness a worker process doing the app's long work runs at, at least (as ``nice``).
WORKER_NICENESS: Final = 10
#: When a checkpoint without a pause last turned the loop (``time.monotonic``).
_last_turn = [0.0]
#: Whether the current task holds a write transaction's locks (``holding_locks``).
_HOLDING: ContextVar[bool] = ContextVar("holding", default=False)
#: Interactive writes (no pause installed: not long work) inside ``holding_locks`` now.
_interactive_writes = [0]


@contextlib.contextmanager
def holding_locks() -> Iterator[None]:
    """While this runs, the current task (and the threads it starts) holds a write's locks.
    Long work's checkpoints then do not wait while an interactive write is under way (it may
    wait for them); an interactive write counts itself as one."""
    interactive = _PAUSE.get() is None
    token = _HOLDING.set(True)
    if interactive:
        _interactive_writes[0] += 1
    try:
        yield
    finally:
        if interactive:
            _interactive_writes[0] -= 1
        _HOLDING.reset(token)


def holding() -> bool:
    """Whether the current task holds a write transaction's locks (``holding_locks``)."""
    return _HOLDING.get()


def _must_not_wait() -> bool:
    """Long work holding locks while an interactive write, which may wait for them, runs."""
    return _interactive_writes[0] > 0 and holding()


async def checkpoint() -> None:
    """Let pending interactive calls run before this long work goes on."""
    pause = _PAUSE.get()
    if pause is None or _must_not_wait():
        now = time.monotonic()
        if now - _last_turn[0] >= _TURN_S:
            _last_turn[0] = now
            await asyncio.sleep(0)
    else:
        await pause()


def giving_way() -> bool:
    """Whether the current task's checkpoints wait for other sessions (a pause is installed):
    its pieces of work are then worth cutting smaller than where nobody waits."""
    return _PAUSE.get() is not None


def turn_due() -> bool:
    """Whether ``checkpoint()`` would do anything now: a pause is installed, or the loop is due
    a turn. A loop over thousands of tiny units asks this before awaiting a checkpoint, so it
    pays no coroutine per unit between turns (~1 us each, a tenth of preparing a tiny document)."""
    return giving_way() or time.monotonic() - _last_turn[0] >= _TURN_S


def thread_checkpoint() -> None:
    """In a worker thread of long work: let pending interactive calls have the GIL first."""
    pause = _THREAD_PAUSE.get()
    if pause is not None and not _must_not_wait():
        pause()


def install(
    pause: Callable[[], Awaitable[None]], thread_pause: Callable[[], None] | None = None
) -> None:
    """Use ``pause`` at every checkpoint of the current task (and the tasks it starts), and
    ``thread_pause`` at every ``thread_checkpoint`` of the threads they start."""
    _PAUSE.set(pause)
    _THREAD_PAUSE.set(thread_pause)


async def stepped(steps: Steps[T]) -> T:
    """Run ``steps`` with a checkpoint between two steps, awaiting what a step yields when it
    is awaitable (a store reading passages ahead of a lookup: ``chunks_ahead``)."""
    while True:
        try:
            request = next(steps)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        if request is not None and inspect.isawaitable(request):
            await request
        if turn_due():  # else the checkpoint would do nothing: no coroutine made for it
            await checkpoint()


__all__ = [
    "Steps", "checkpoint", "finish", "giving_way", "holding", "holding_locks", "install", "stepped",
    "thread_checkpoint", "turn_due",
]  # fmt: skip


def settle_collector() -> None:
    """Collect garbage cycles once, then leave every object alive out of later collections
    (``gc.freeze``): a full collection walks every object the process tracks and falls in
    whatever step of whatever session's call runs then (130-160 ms with Cranfield loaded on the
    shared machine, a light search's step included; 8-12 ms after). The service settles it once,
    when its store opens (the in-memory store keeps its passages untracked instead of settling
    again as it grows: ``core.stores.memory``). The cost: a frozen object is never collected, so
    a cycle among them that becomes garbage later is kept until the next settle. Rejected:
    higher thresholds (fewer pauses, each as long) and ``gc.disable()`` (the cycles asyncio
    makes per call would never be freed)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def at_worker_priority() -> None:
    """This process (a worker doing long work, at its start) at ``WORKER_NICENESS`` at least:
    a ``load`` at its own lower priority already is, and keeps it."""
    with contextlib.suppress(OSError):
        os.nice(max(0, WORKER_NICENESS - os.nice(0)))
