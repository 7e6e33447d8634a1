"""Every store call bounded in time and retried when the connection (not the call) failed.

Why retry at all: a server restart or a killed backend loses the connection, not the work;
reads are trivially safe to repeat and writes are one transaction each, idempotent by key.
Why one cause-chain walker: the driver surfaces a lost socket as whatever it raised while
unwinding (an InterfaceError of a transaction that cannot roll back, an InternalClientError
of a COPY cut short), so each question (lost? broken? a lost write race?) looks down the
chain of causes; three hand-written loops had drifted in how far and where they stopped.
The rejected alternative, asyncpg's own timeouts alone, leaves ``copy_records_to_table``
waiting on a full socket forever (see ``Calls.attempt``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import Final, TypeVar

import asyncpg

from core.checkpoint import holding_locks
from core.stores.port import ConnectionLost, StoreUnavailable

T = TypeVar("T")

#: Attempts after the first when the connection is lost, the server is out of a resource or a
#: write deadlocks: with the pauses below, about 9 s, which a server's restart (crash recovery
#: after a killed backend) fits in; 0.1 + 0.2 s did not (issue 20: 9 documents rejected).
DEFAULT_RETRIES: Final = 8
#: Seconds to open one connection (a server that accepts TCP but never answers).
CONNECT_TIMEOUT_S: Final = 10.0
#: Seconds to wait for a free pooled connection.
ACQUIRE_TIMEOUT_S: Final = 30.0
#: Seconds any one statement may run (asyncpg's command_timeout); a bulk batch's largest
#: statement takes a few seconds at 20,000 passages.
STATEMENT_TIMEOUT_S: Final = 300.0
#: Seconds one attempt of a store call may take in all, whatever it waits on.
CALL_TIMEOUT_S: Final = 600.0
#: First pause before a retry, doubled per attempt (the server may still be starting).
RETRY_PAUSE_S: Final = 0.1
#: Longest pause between two attempts.
RETRY_PAUSE_MAX_S: Final = 2.0
#: SQLSTATE classes of a server that cannot do the call now, whatever the call: 53 insufficient
#: resources (out of memory or disk, "out of shared memory" of a full lock table, too many
#: connections), 57 operator intervention (a statement cancelled by statement_timeout, a
#: shutdown), 58 system error (I/O). Retried, then reported as ``StoreUnavailable``: no
#: document caused it, so a caller must not retry document by document.
_UNAVAILABLE_CLASSES: Final = ("53", "57", "58")
#: Single conditions of the same kind in other classes (lock_timeout expired).
_UNAVAILABLE_STATES: Final = ("55P03",)
#: What the store needs of a session, set on every connection it opens rather than asked of the
#: server's configuration: a write it reports stored survives a crash of the server (with
#: synchronous_commit off a backend killed by the OS took the last acknowledged commits with
#: it: a 6,000-document load reported whole kept 5,700). One WAL flush per write transaction.
SESSION_SETTINGS: Final = {"synchronous_commit": "on"}
#: Links of an exception's cause chain looked at (a driver error wraps a few deep at most).
_CHAIN_DEPTH: Final = 8

#: Errors after which the same call on a fresh connection can succeed.
CONNECTION_LOST: Final[tuple[type[BaseException], ...]] = (
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,
    asyncpg.exceptions.CannotConnectNowError,
    ConnectionError,
    OSError,
)
#: Words of the driver's InterfaceError when its connection is unusable (not a caller's mistake).
_BROKEN_SIGNS: Final = ("another operation is in progress", "connection is closed")
#: Errors of a write that lost a race with another write; the transaction rolled back.
_WRITE_CONFLICT: Final[tuple[type[BaseException], ...]] = (
    asyncpg.exceptions.DeadlockDetectedError,
    asyncpg.exceptions.SerializationError,
)


def causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from or during, nearest first (the one walker)."""
    seen: BaseException | None = exc
    for _ in range(_CHAIN_DEPTH):
        if seen is None:
            return
        yield seen
        seen = seen.__cause__ or seen.__context__


def retryable(exc: BaseException) -> bool:
    """A lost connection or a lost write race, also when it surfaces as the InterfaceError
    of a transaction block that can no longer roll back on the closed connection."""
    for seen in causes(exc):
        if isinstance(seen, TimeoutError):  # an OSError, but not a lost socket
            return False
        if isinstance(seen, (*CONNECTION_LOST, *_WRITE_CONFLICT)):
            return True
    return False


def broken(exc: BaseException) -> bool:
    """The driver's own state went wrong (a COPY cut short by the server's FATAL message
    leaves the protocol mid-operation before the socket's end is seen): the connection is
    unusable, exactly as if it were closed."""
    return any(
        isinstance(seen, asyncpg.exceptions.InternalClientError)
        or (
            isinstance(seen, asyncpg.InterfaceError)
            and any(sign in str(seen) for sign in _BROKEN_SIGNS)
        )
        for seen in causes(exc)
    )


def unavailable(exc: BaseException) -> asyncpg.PostgresError | None:
    """The server's error down the chain if it says the server cannot do the call now."""
    for seen in causes(exc):
        state = getattr(seen, "sqlstate", None)
        if (
            isinstance(seen, asyncpg.PostgresError)
            and isinstance(state, str)
            and (state[:2] in _UNAVAILABLE_CLASSES or state in _UNAVAILABLE_STATES)
        ):
            return seen
    return None


def retry_pause(attempt: int) -> float:
    """Seconds to wait before attempt ``attempt + 1`` (0.1, 0.2, 0.4 ... up to 2)."""
    return float(min(RETRY_PAUSE_S * 2**attempt, RETRY_PAUSE_MAX_S))


def write_conflict(exc: BaseException) -> bool:
    """A deadlock or serialisation failure somewhere down the chain."""
    return any(isinstance(seen, _WRITE_CONFLICT) for seen in causes(exc))


class _Terminated(ConnectionError):
    """The connection closed under a running call (its termination listener fired)."""


def closed(conn: asyncpg.Connection) -> bool:
    """Closed, or already taken back by the pool because it closed."""
    try:
        return bool(conn.is_closed())
    except asyncpg.InterfaceError:
        return True


def lost(writing: str | None, attempts: int) -> ConnectionLost:
    tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
    if writing is None:
        return ConnectionLost(f"the connection to the database was lost ({tries}); try again")
    return ConnectionLost(
        f"the connection was lost while writing {writing} ({tries}); nothing of it was "
        "stored; the previous version is kept"
    )


def out_of_resources(
    writing: str | None, error: asyncpg.PostgresError, attempts: int
) -> StoreUnavailable:
    tries = f"{attempts} attempt{'s' if attempts > 1 else ''}"
    said = str(error).strip() or type(error).__name__
    if writing is None:
        return StoreUnavailable(f"the database could not answer ({said}; {tries}); try again")
    return StoreUnavailable(
        f"the database could not store {writing} ({said}; {tries}); nothing of it was "
        "stored; the previous version is kept"
    )


def timed_out(writing: str | None, seconds: float) -> ConnectionLost:
    what = "reading" if writing is None else f"writing {writing}"
    kept = "" if writing is None else "; nothing of it was stored; the previous version is kept"
    return ConnectionLost(
        f"the database did not answer in time while {what} (limit {seconds:g} s per call, "
        f"{STATEMENT_TIMEOUT_S:g} s per statement){kept}"
    )


class Calls:
    """Operations on a pool's connections, each bounded and retried (see the module)."""

    def __init__(self, pool: asyncpg.Pool, *, retries: int, call_timeout: float) -> None:
        self._pool = pool
        self._retries = retries
        self._call_timeout = call_timeout

    async def run(
        self,
        operation: Callable[[asyncpg.Connection], Awaitable[T]],
        *,
        writing: str | None = None,
    ) -> T:
        """Run ``operation`` on a pooled connection, retrying on a lost connection, a server
        out of a resource (``unavailable``) or a deadlock.

        ``writing`` names what a write stores ("source 'x'"): when the connection is lost on
        every attempt, the error says so in plain words instead of the driver's. A write holds
        its transaction's locks throughout (``holding_locks``): long work's checkpoints do not
        wait for an interactive write then, which may be waiting for those locks.
        """
        attempt = 0
        with holding_locks() if writing is not None else contextlib.nullcontext():
            while True:
                try:
                    return await self.attempt(operation)
                except TimeoutError as exc:
                    raise timed_out(writing, self._call_timeout) from exc
                except Exception as exc:
                    resource = unavailable(exc)
                    if resource is None and not retryable(exc):
                        raise
                    if attempt >= self._retries:
                        if resource is not None:
                            raise out_of_resources(writing, resource, attempt + 1) from exc
                        if write_conflict(exc):
                            raise
                        raise lost(writing, attempt + 1) from exc
                    await asyncio.sleep(retry_pause(attempt))
                    attempt += 1

    async def attempt(self, operation: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """One try, bounded: a deadline for the whole call, and an end as soon as the
        connection closes.

        asyncpg's ``copy_records_to_table`` waits for the socket to drain with no timeout of
        its own; when the server side dies while the socket is full, that wait never ends
        (measured: 3 of 4 runs of 20 killed writes hung). The connection's termination
        listener fires on the lost socket, so the call is cancelled there and then, and the
        retry (or the plain-words error) follows within the retry pauses.
        """
        task = asyncio.current_task()
        state = {"inside": True, "lost": False}

        def on_terminated(_: object) -> None:
            if state["inside"] and not state["lost"] and task is not None:
                state["lost"] = True
                task.cancel()

        async with asyncio.timeout(self._call_timeout):
            async with self._pool.acquire(timeout=ACQUIRE_TIMEOUT_S) as conn:
                conn.add_termination_listener(on_terminated)
                try:
                    return await operation(conn)
                except (Exception, asyncio.CancelledError) as exc:
                    if not state["lost"] and not closed(conn) and not broken(exc):
                        raise
                    # Never back into the pool half-way through a protocol step (the pool may
                    # have taken the dead connection back already).
                    with contextlib.suppress(asyncpg.InterfaceError):
                        conn.terminate()
                    if state["lost"] and task is not None:
                        task.uncancel()
                    # Whatever the driver raised while unwinding (the InterfaceError of a
                    # transaction that can no longer roll back, an InternalClientError of a
                    # COPY cut short), a closed connection is the cause.
                    raise _Terminated("the connection closed during the call") from exc
                finally:
                    state["inside"] = False
                    with contextlib.suppress(asyncpg.InterfaceError):
                        conn.remove_termination_listener(on_terminated)


class Backends:
    """The pool's ``setup``: each server process serving the pool reniced once, when asked
    (``PostgresChunkStore.lower_backend_priority``)."""

    def __init__(self) -> None:
        self.niceness: int | None = None
        self._reniced: set[int] = set()

    async def acquired(self, conn: asyncpg.Connection) -> None:
        pid = conn.get_server_pid()
        if self.niceness is None or pid in self._reniced:
            return
        self._reniced.add(pid)
        with contextlib.suppress(OSError):  # not ours to renice (or gone): left as it is
            os.setpriority(os.PRIO_PROCESS, pid, self.niceness)
