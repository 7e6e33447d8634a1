"""A write's change to the PostgreSQL store's cached workspace image, at 100k or 1M passages.

After a write into a workspace this process has searched, the next read brings its cached
image (``core.stores.postgres.query_read.Image``: rank in id order, id and length per ordinal) up
to date from what the write changed, on the service's loop. This times one Cranfield-sized
write (1,398 passages removed, 1,398 added, random sha256 ids as the store's) in the loop
thread's CPU: the whole change and its longest step (``Image.changed_steps``), three times,
on an image built in memory (no server: the change is pure numpy over the image).

    .venv/bin/python -m bench.bench_image --passages 100000
    flock /tmp/lexplain-big.lock .venv/bin/python -m bench.bench_image --passages 1000000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from typing import Any, cast

import numpy as np

from bench.results import record
from core.stores.postgres.query_read import Image

#: Passages the write removes and adds (Cranfield's, as bench_stall's upload).
WRITE = 1_398
#: Times the same write is applied to the same image.
RUNS = 3


def _id(seed: str) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()


def image(passages: int) -> Image:
    """``passages`` live passages, ordinals in insert order, ids in random order (hashes)."""
    rng = np.random.default_rng(20)
    ordinals = rng.permutation(passages)
    id_rank = np.full(passages, -1, dtype=np.int64)
    id_rank[ordinals] = np.arange(passages, dtype=np.int64)
    ids = np.empty(passages, dtype=object)
    ids[ordinals] = sorted(_id(str(i)) for i in range(passages))
    lengths = rng.integers(1, 200, passages).astype(np.int64)
    return Image(1, id_rank, ids, lengths, ordinals)


def run(passages: int) -> dict[str, object]:
    before = image(passages)
    rng = np.random.default_rng(21)
    removed = rng.choice(passages, WRITE, replace=False).tolist()
    added = [(passages + i, _id(f"new-{i}"), 7, f"source-{i}") for i in range(WRITE)]
    runs = []
    for _ in range(RUNS):
        steps, spent = before.changed_steps(2, passages + WRITE, added, removed), []
        while True:
            started = time.thread_time()
            try:
                next(steps)
            except StopIteration:
                spent.append(time.thread_time() - started)
                break
            spent.append(time.thread_time() - started)
        runs.append(
            {
                "cpu_ms": round(1000 * sum(spent), 1),
                "steps": len(spent),
                "longest_step_ms": round(1000 * max(spent), 1),
                "each": [round(1000 * s, 1) for s in spent],
            }
        )
    return {"passages": passages, "write": WRITE, "runs": runs, "load": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000)
    passages = parser.parse_args().passages
    measured = run(passages)
    print(json.dumps(measured, indent=2))
    runs = cast(list[dict[str, Any]], measured["runs"])
    fastest = min(runs, key=lambda r: float(r["cpu_ms"]))
    record("image", [{
        "workload": f"PostgreSQL image after a Cranfield-sized write, {passages:,} passages",
        "lexplain": f"{fastest['cpu_ms']} ms CPU, longest step {fastest['longest_step_ms']} ms",
        "command": f".venv/bin/python -m bench.bench_image --passages {passages}",
    }])  # fmt: skip


if __name__ == "__main__":
    main()
