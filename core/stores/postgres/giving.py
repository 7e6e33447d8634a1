"""Connections whose long work gives way as soon as an answer is in.

A long task on the service's loop (an upload's write, an Evaluate's reads, a re-index) suspends
at each round trip to the server, and when the answer arrives asyncio resumes it at once: it
runs until its next checkpoint while a search that arrived meanwhile waits. Those steps begin
at an answer, not at a checkpoint (the inserted rows' ordinals and the blocks' records before
the COPY, the profiles read, a read's columns before its prefetch): bench_stall PostgreSQL
upload, other work's loop CPU inside a search's window p99 ~20 ms over the search's own. So in
a task that gives way (``core.checkpoint.giving_way``: long work, a heavy query) every query
reaches a checkpoint once its answer is in, and a pending search goes before the work after
it. A search's own queries do not (no pause is installed in its task; a loop turn there would
hand the loop to long work). Rejected: a checkpoint after each await in the write and read
code (dozens of places, and every new query would need its own).
"""

from __future__ import annotations

from typing import Any

import asyncpg

from core.checkpoint import checkpoint, giving_way


class GivingWayConnection(asyncpg.Connection):  # type: ignore[misc]
    """``asyncpg.Connection`` with a checkpoint after each answer in a task that gives way."""

    async def _answered(self, answer: Any) -> Any:
        if giving_way():
            await checkpoint()
        return answer

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        return await self._answered(await super().execute(*args, **kwargs))

    async def executemany(self, *args: Any, **kwargs: Any) -> Any:
        return await self._answered(await super().executemany(*args, **kwargs))

    async def fetch(self, *args: Any, **kwargs: Any) -> Any:
        return await self._answered(await super().fetch(*args, **kwargs))

    async def fetchrow(self, *args: Any, **kwargs: Any) -> Any:
        return await self._answered(await super().fetchrow(*args, **kwargs))

    async def fetchval(self, *args: Any, **kwargs: Any) -> Any:
        return await self._answered(await super().fetchval(*args, **kwargs))

    async def copy_records_to_table(self, *args: Any, **kwargs: Any) -> Any:
        return await self._answered(await super().copy_records_to_table(*args, **kwargs))

    async def copy_to_table(self, *args: Any, **kwargs: Any) -> Any:
        return await self._answered(await super().copy_to_table(*args, **kwargs))
