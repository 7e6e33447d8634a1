"""A read's snapshot kept for the passages looked up after the read returned.

An analysis (Truncation's scatter, Evaluate's documents) looks passages up by id after the
read that found them has committed; read in a newer snapshot, a passage a concurrent rewrite
deleted is gone ("deleted after this search read it; search again"), and since the read gives
way in steps that window is wide. So a read with more candidates than it prefetched exports
its snapshot (``pg_export_snapshot``) and one of at most ``HELD_SNAPSHOTS`` connections of
our own imports it (``SET TRANSACTION SNAPSHOT``) before the read commits, and keeps that
transaction open for the read's later lookups: they see exactly what the read saw, and are
awaited on the store's loop (not a thread the loop blocks on). A held snapshot is given up
after ``HOLD_S`` unused, or for a newer read's (least recently used first): its lookups then
read a fresh snapshot as before. Not on a Citus coordinator: the workers' reads take
snapshots of their own, so an imported one would not cover them.

Rejected: holding the read's own pooled connection (its transaction) until the analysis ends,
which pins pool connections for as long as the screens keep a result; and keeping deleted
passages for a while (a second write per deletion, for a lookup that is rare).
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Final

import asyncpg

from core.stores.postgres.resilience import CONNECT_TIMEOUT_S, STATEMENT_TIMEOUT_S

#: Reads whose snapshots are held at once, each on a connection of its own.
HELD_SNAPSHOTS: Final = 2
#: Seconds a held snapshot is kept after its last use (an open transaction holds back vacuum).
HOLD_S: Final = 10.0
#: What ``pg_export_snapshot`` returns (checked before it is spliced into ``SET``).
_SNAPSHOT_ID: Final = re.compile(r"[0-9A-F]+-[0-9A-F]+(-[0-9]+)?")


class HeldSnapshot:
    """One read's snapshot, open on a connection of its own until given up."""

    def __init__(self, conn: asyncpg.Connection, transaction: asyncpg.transaction.Transaction):
        self._conn = conn
        self._transaction = transaction
        self._busy = asyncio.Lock()
        self.last_used = time.monotonic()
        self.released = False

    async def fetch(self, query: str, *args: object) -> list[asyncpg.Record] | None:
        """``query``'s rows in the held snapshot; None once it was given up."""
        async with self._busy:
            if self.released:
                return None
            self.last_used = time.monotonic()
            return list(await self._conn.fetch(query, *args))

    async def release(self) -> asyncpg.Connection | None:
        """End the transaction; the connection back if it is still fit for another."""
        async with self._busy:
            if self.released:
                return None
            self.released = True
            try:
                await asyncio.wait_for(self._transaction.rollback(), CONNECT_TIMEOUT_S)
            except Exception:
                self._conn.terminate()
                return None
            return self._conn


class Snapshots:
    """Held read snapshots, at most ``HELD_SNAPSHOTS``, on connections opened for them."""

    def __init__(self, dsn: str | None, settings: dict[str, str]) -> None:
        self._dsn = dsn
        self._settings = dict(settings)
        #: Off without a DSN and on a Citus coordinator (see the module's docstring).
        self.enabled = dsn is not None and "citus.override_table_visibility" not in settings
        self._held: list[HeldSnapshot] = []
        self._idle: list[asyncpg.Connection] = []
        self._guard: asyncio.Lock | None = None
        self._closed = False
        #: Expiry checks under way (kept so that none is collected before it ran).
        self._expiring: set[asyncio.Task[None]] = set()

    async def hold(self, conn: asyncpg.Connection) -> HeldSnapshot | None:
        """The snapshot of ``conn``'s open REPEATABLE READ transaction, held on a connection
        of our own; None when it cannot be (then lookups read a fresh snapshot)."""
        if not self.enabled or self._closed:
            return None
        if self._guard is None:
            self._guard = asyncio.Lock()
        async with self._guard:
            await self._give_up(stale_only=True)
            if len(self._held) >= HELD_SNAPSHOTS:
                oldest = min(self._held, key=lambda held: held.last_used)
                self._held.remove(oldest)
                await self._recycle(oldest)
            own = self._idle.pop() if self._idle else None
            try:
                snapshot = str(await conn.fetchval("SELECT pg_export_snapshot()"))
                if _SNAPSHOT_ID.fullmatch(snapshot) is None:
                    raise ValueError(f"unexpected snapshot id {snapshot!r}")
                if own is None:
                    own = await asyncpg.connect(
                        self._dsn,
                        server_settings={"application_name": "lexplain", **self._settings},
                        timeout=CONNECT_TIMEOUT_S,
                        command_timeout=STATEMENT_TIMEOUT_S,
                    )
                transaction = own.transaction(isolation="repeatable_read", readonly=True)
                await transaction.start()
                await own.execute(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
            except (TimeoutError, asyncpg.PostgresError, OSError, ValueError):
                if own is not None:
                    own.terminate()
                return None
            held = HeldSnapshot(own, transaction)
            self._held.append(held)
            asyncio.get_running_loop().call_later(HOLD_S, self._expire)
            return held

    def _expire(self) -> None:
        if not self._closed:
            task = asyncio.ensure_future(self._expired())
            self._expiring.add(task)
            task.add_done_callback(self._expiring.discard)

    async def _expired(self) -> None:
        if self._guard is not None:
            async with self._guard:
                await self._give_up(stale_only=True)

    async def _give_up(self, *, stale_only: bool) -> None:
        now = time.monotonic()
        for held in list(self._held):
            if not stale_only or now - held.last_used >= HOLD_S:
                self._held.remove(held)
                await self._recycle(held)

    async def _recycle(self, held: HeldSnapshot) -> None:
        conn = await held.release()
        if conn is not None and not self._closed:
            self._idle.append(conn)
        elif conn is not None:
            await _closed(conn)

    async def close(self) -> None:
        """Give every held snapshot up and close the connections."""
        self._closed = True
        for held in self._held:
            conn = await held.release()
            if conn is not None:
                await _closed(conn)
        for conn in self._idle:
            await _closed(conn)
        self._held, self._idle = [], []


async def _closed(conn: asyncpg.Connection) -> None:
    try:
        await asyncio.wait_for(conn.close(), CONNECT_TIMEOUT_S)
    except Exception:
        conn.terminate()


__all__ = ["HELD_SNAPSHOTS", "HOLD_S", "HeldSnapshot", "Snapshots"]
