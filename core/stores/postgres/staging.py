"""A big batch's tokenising and block building in a worker process beside the writer.

Why: a load's Python work is about two thirds of its time (cProfile of a 100k-passage load:
tokenising and blocks 7.8 s, cutting and entities 4.1 s, reading 3.7 s of ~17 s), and it ran
on the one core the event loop has while the database used the other. Tokenising a batch in
a process lets the loop cut the next documents meanwhile. Rejected: a thread
(``asyncio.to_thread``), measured slower (20k passages 5.5 s -> 7.3 s: the loop and the
tokenising thread passed the GIL back and forth). The cost: the texts cross to the worker
and the tf counters come back by pickle (a few MB per batch), and the worker's start (~0.3 s,
once per process); so only batches of ``WORKER_PASSAGES`` or more go there, and a worker that
fails (killed, out of memory) is replaced while the batch is staged in this process instead.

In the service the same worker keeps a write off the one loop every session shares: tokenising
runs ~50-300 us a passage, so a 1,000-passage batch tokenised here held other sessions'
searches ~0.1 s (bench_stall upload); every batch of ``WORKER_PASSAGES`` or more goes there,
re-indexing's too, and the worker runs at ``checkpoint.WORKER_NICENESS`` so it takes a core
from a search only when one is idle.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Final
from uuid import UUID

from core.checkpoint import at_worker_priority
from core.domain.chunks import StoredChunk
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.processes import CallWorker, WorkerGone
from core.stores.postgres.blocks import (
    Blocks,
    Staged,
    Staging,
    stage,
    staged_row,
    terms_and_blocks,
)
from core.stores.postgres.pieces import listed

#: Passages a batch needs for its tokenising to go to the worker: below, it is a few ms here
#: (what one piece of long work may hold the loop for, ``pieces``) and the hop costs more.
WORKER_PASSAGES: Final = 32

_worker: CallWorker | None = None
_worker_lock = threading.Lock()


def _the_worker() -> CallWorker:
    """The process's one worker, started on first use (``core.processes``: its own program, so
    it never runs the caller's script or page again; a fork of a process running an event loop
    and threads may inherit a held lock)."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = CallWorker(initializer=at_worker_priority)
        return _worker


async def terms_and_blocks_aside(
    texts: Sequence[str], profile: Profile
) -> tuple[list[int], Blocks]:
    """``terms_and_blocks`` in the worker for ``WORKER_PASSAGES`` texts or more (here if the
    worker fails: killed, out of memory; the next big batch starts a new one), else here."""
    if len(texts) < WORKER_PASSAGES:
        return terms_and_blocks(texts, profile)
    try:
        done: tuple[list[int], Blocks] = await asyncio.to_thread(
            _the_worker().call, terms_and_blocks, list(texts), profile
        )
    except (WorkerGone, OSError):
        return terms_and_blocks(texts, profile)
    return done


async def stage_batch(batch: Sequence[StoredChunk], profiles: dict[UUID, Profile]) -> Staging:
    """``stage`` for one tenant's batch, tokenised aside (``terms_and_blocks_aside``), its rows
    built in pieces (``pieces.listed``); a batch of many tenants (``upsert_many``) here."""
    tenants = {chunk.tenant_id for chunk in batch}
    if len(tenants) != 1:
        return stage(batch, profiles)
    profile = profiles.get(next(iter(tenants)), DEFAULT_PROFILE)
    lengths, blocks = await terms_and_blocks_aside([chunk.text for chunk in batch], profile)
    rows: list[Staged] = await listed(
        (staged_row(chunk, length), None) for chunk, length in zip(batch, lengths, strict=True)
    )
    return Staging(rows, blocks)
