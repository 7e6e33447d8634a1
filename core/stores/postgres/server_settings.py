"""The embedded PostgreSQL's settings for the machine it runs on, not initdb's defaults.

Why a module of its own: the sizing rule (a share of the machine's memory, within bounds) is a
decision with its own reasons and tests, apart from the server's lifecycle in ``embedded``,
which was past the 600 lines a module may have. ``embedded.acquire`` passes these to each
start; settings a caller passes win.
"""

from __future__ import annotations

import os

#: Share of the machine's memory the buffer cache takes (PostgreSQL's docs suggest a quarter for
#: a dedicated server; this one shares the machine with the app and its in-memory images).
SHARED_BUFFERS_SHARE = 8
#: Bounds of the buffer cache in MB (initdb's default, and past which a load gains nothing here).
SHARED_BUFFERS_MB = (128, 2048)
#: Bounds of per-sort memory in MB (a search's image sort and a write's staging set it higher
#: per transaction themselves; this is for everything else).
WORK_MEM_MB = (4, 64)
#: Bounds of index-build and VACUUM memory in MB.
MAINTENANCE_WORK_MEM_MB = (64, 1024)
#: WAL between checkpoints: a 100k-passage load writes ~1 GB, which the default (1 GB)
#: checkpointed mid-load.
MAX_WAL_SIZE = "4GB"


def machine_settings(memory_bytes: int | None = None) -> dict[str, str]:
    """The server settings for this machine's memory (``memory_bytes``: the physical memory)."""
    if memory_bytes is None:
        memory_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    megabytes = memory_bytes // 2**20

    def within(value: int, bounds: tuple[int, int]) -> str:
        return f"{min(max(value, bounds[0]), bounds[1])}MB"

    return {
        "shared_buffers": within(megabytes // SHARED_BUFFERS_SHARE, SHARED_BUFFERS_MB),
        "work_mem": within(megabytes // 256, WORK_MEM_MB),
        "maintenance_work_mem": within(megabytes // 32, MAINTENANCE_WORK_MEM_MB),
        "max_wal_size": MAX_WAL_SIZE,
    }
