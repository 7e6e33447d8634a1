"""A big batch tokenised in the worker process stages exactly as it would in this process."""

from __future__ import annotations

import os
import signal
import uuid

from core.domain.chunks import StoredChunk
from core.domain.tokenize import Profile
from core.stores.postgres import staging
from core.stores.postgres.blocks import Staging, stage

TENANT = uuid.uuid4()


def batch(count: int) -> list[StoredChunk]:
    texts = [f"Passage {i} on wings, w{i % 97} and w{i % 13}; gliders glide." for i in range(count)]
    return [
        StoredChunk(
            tenant_id=TENANT, source_id=f"s{i}", text=t, chunk_index=0, start_char=0,
            end_char=len(t),
        )
        for i, t in enumerate(texts)
    ]  # fmt: skip


def same(a: Staging, b: Staging) -> bool:
    assert a.blocks is not None and b.blocks is not None
    rows_a, rows_b = [row for row, _ in a.rows], [row for row, _ in b.rows]
    copied_a, copied_b = (
        [piece.tobytes() for piece in staged.copy_data(TENANT, 0, 7)]
        for staged in (a.blocks, b.blocks)
    )
    return rows_a == rows_b and copied_a == copied_b


async def test_a_big_batch_staged_in_the_worker_equals_the_same_batch_staged_here() -> None:
    chunks = batch(staging.WORKER_PASSAGES)
    for profile in (Profile.PLAIN, Profile.ENGLISH):
        profiles = {TENANT: profile}
        assert same(await staging.stage_batch(chunks, profiles), stage(chunks, profiles))


async def test_a_worker_killed_between_batches_is_replaced_and_nothing_is_lost() -> None:
    chunks = batch(staging.WORKER_PASSAGES)
    profiles = {TENANT: Profile.PLAIN}
    await staging.stage_batch(chunks, profiles)
    killed = staging._the_worker().pid
    assert killed is not None
    os.kill(killed, signal.SIGKILL)
    # the batch after the death is staged here; the next one starts a new worker
    assert same(await staging.stage_batch(chunks, profiles), stage(chunks, profiles))
    assert same(await staging.stage_batch(chunks, profiles), stage(chunks, profiles))
    assert staging._the_worker().pid not in (None, killed)
