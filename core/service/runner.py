"""The one background event loop every screen family shares, and the store on it.

Streamlit reruns page scripts in worker threads, while the stores are async and
an asyncpg pool is bound to the event loop that created it. So the service owns
ONE background thread running ONE event loop, creates the store on it, and every
public method submits a coroutine there and waits (``run_coroutine_threadsafe``).
The rejected alternative, ``asyncio.run`` per call, makes a new loop each time:
a pool created on the first loop breaks on the second, and a new pool per click
costs a connection handshake per action.

Interactive calls (``_call``: a search, a list) go before long work (``_call_with_progress``:
Evaluate, uploads, re-indexing): the runner counts the interactive calls pending, and long
work waits at each ``core.checkpoint.checkpoint()`` while any is (``core.checkpoint`` says why
this and not a second loop or thread). A query of more than ``HEAVY_QUERY_WORDS`` distinct
words is an interactive call that runs as long work (``_call_heavy``): its caller waits for
it, but it is not counted as pending and gives way at its checkpoints, so a 1,000-term
Truncation (0.5-1.6 s) no longer holds up another session's 15 ms search.

The collector is settled once the store is open (``core.checkpoint.settle_collector``): a full
collection walks every object the process tracks, most of them the modules loaded at start.
And it waits while interactive calls are pending (``_Pending``): an upload's or an Evaluate's
allocations make the collections, but whichever allocation crosses the threshold pays for one,
often a search's own (bench_stall PostgreSQL upload ``--steps``: a search step of 13.6 ms CPU,
2.3 of it the search's; middle collections ~2 ms, full 3.5-5 ms). With the collector off from
the first pending call to the last one's end, those collections fall in the long work's steps
after it. Rejected: higher thresholds (each collection as long), and ``gc.disable()`` for the
long work (asyncio's per-call cycles would never be freed on a long load). The cost: under
calls that never stop overlapping, cycles wait for the first moment none is pending.

The interpreter's thread switch interval is lowered to ``SWITCH_INTERVAL_S`` (1 ms; CPython's
default is 5 ms): a thread running Python (an upload's file parsed in a worker thread, another
session's script) keeps the GIL until the loop thread has waited a whole interval for it, and a
search takes the GIL back after each numpy call and each loop turn, so beside a parsing thread
it ran in 5 ms slices (bench_stall ``upload``, load 5-6: a search's wall less its CPU, p99
34-44 -> 13-16 ms). It cannot help against one long C call holding the GIL (numpy on object
arrays, the in-memory image build's merges in their thread). Rejected: the
parsing on the loop in steps (the loop is where the searches wait; a thread uses the second core
for the part of the parse that lets go of the GIL).

Progress callbacks run in the CALLER's thread (Streamlit can only draw from the
script thread): the loop thread queues progress events, the caller drains them.
Each screen family (``search``, ``analysis``, ``library``, ``corpus``) subclasses
``StoreRunner`` and adds its actions; ``facade.LexplainService`` combines them.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import queue
import re
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Hashable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar
from uuid import UUID

from core import checkpoint
from core.settings import Settings
from core.stores.port import ChunkStore, tenant_of

T = TypeVar("T")

#: Longest one checkpoint of long work waits for interactive calls (so it always progresses).
MAX_GIVE_WAY_S = 0.5
#: How often long work waiting at a worker thread's checkpoint looks again (on the loop it is
#: woken when the last pending call ends: ``StoreRunner._until_none_pending``).
GIVE_WAY_POLL_S = 0.001
#: With no interactive call pending, a checkpoint still yields the loop this often (for the
#: loop's own callbacks and calls not yet counted); in between it returns at once (~1 µs), so
#: long work may call it per item. A search that arrives waits for up to this much of long work
#: (plus one unit) before its first step: 2 ms -> 1 ms cut other work's loop CPU in a search's
#: window p90 2.1-2.9 -> 1.2-2.6 ms (bench_stall --windows, memory and PostgreSQL; a loop turn
#: is ~10 us, so long work pays ~1% more).
GIVE_WAY_EVERY_S = 0.001

#: Longest a thread running Python keeps the GIL from the loop's thread (``sys.setswitchinterval``).
SWITCH_INTERVAL_S = 0.001

#: Distinct words from which a query's call runs as long work (``_call_heavy``); a person's
#: query has a few, a pasted paragraph dozens, and one of 1,000 held the loop 1.6 s.
HEAVY_QUERY_WORDS = 64

#: Results a service keeps for reruns (``ResultCache``): a few per analyst for a team of twenty.
RESULT_CACHE_ENTRIES = 256

#: What ``_call_query`` counts as a word.
_WORD = re.compile(r"\w+")

#: A progress report: (done, total, label of the item just done).
ProgressCallback = Callable[[int, int, str], None]


class _Pending:
    """A count of interactive calls, one object for the runner and every signed-in view of
    it (``core.service.access`` copies the runner; a copied int would count per view, and one
    session's long work would not give way to another's searches)."""

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()
        #: Whether the first pending call turned the collector off (it was on then).
        self.holds_collector = False
        #: Long work's checkpoints waiting for the count to reach 0 (the loop's thread only).
        self.waiters = 0
        #: Called (from the thread whose call ended) when the count reaches 0 with waiters.
        self.on_none_pending: Callable[[], None] | None = None

    def add(self) -> None:
        """One more interactive call pending; the first turns the collector off if it is on."""
        with self.lock:
            self.count += 1
            if self.count == 1 and gc.isenabled():
                gc.disable()
                self.holds_collector = True

    def done(self) -> None:
        """One interactive call finished; the last turns the collector back on if it did."""
        with self.lock:
            self.count -= 1
            if self.count == 0 and self.holds_collector:
                self.holds_collector = False
                gc.enable()
            wake = self.count == 0 and self.waiters > 0
        if wake and self.on_none_pending is not None:
            self.on_none_pending()


class ResultCache:
    """The last results of one action, by a key that names everything they depend on.

    A page reruns its whole script on every click (opening an explanation, choosing a row),
    and every session's rerun queues for the one interpreter; these reruns ask again what
    they just asked. A key holds the workspace's ``generation`` (``ChunkStore.generation``),
    read from the store on every call, so a write by any process (another app process on
    the same database included) makes the old entries unreachable: no invalidation to send.
    Used only on the service's loop thread, so it needs no lock. Rejected: ``st.cache_data``
    in the pages (it pickles the result on every hit, and the page cannot know the
    generation without asking core anyway).
    """

    def __init__(self, entries: int = RESULT_CACHE_ENTRIES) -> None:
        self._entries = entries
        self._kept: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable) -> Any | None:
        found = self._kept.get(key)
        if found is not None:
            self._kept.move_to_end(key)
        return found

    def put(self, key: Hashable, value: Any) -> None:
        self._kept[key] = value
        self._kept.move_to_end(key)
        while len(self._kept) > self._entries:
            self._kept.popitem(last=False)


class StoreRunner:
    """One store on one background event loop; the synchronous bridge every action uses."""

    def __init__(
        self,
        store_factory: Callable[[], Awaitable[ChunkStore]],
        *,
        store_label: str = "in-memory (lost on restart)",
        settings: Settings | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.store_label = store_label
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="lexplain-store-loop", daemon=True
        )
        self._thread.start()
        self._closed = False
        #: Interactive calls submitted and not yet finished (any thread adds, any removes).
        self._interactive = _Pending()
        #: Set on the loop when the last pending call ends while long work waits for it.
        self._none_pending = asyncio.Event()
        self._interactive.on_none_pending = self._wake_long_work
        #: When long work last yielded the loop at a checkpoint (loop time).
        self._last_give_way = 0.0
        #: Results reruns ask for again; shared by every signed-in view (keys hold the tenant,
        #: and the view's store checks access before the generation is read).
        self._results = ResultCache()
        try:
            self._store: ChunkStore = self._call(self._open(store_factory))
        except BaseException:
            self._stop_loop()
            raise
        checkpoint.settle_collector()
        if sys.getswitchinterval() > SWITCH_INTERVAL_S:  # never raised (tests set it lower)
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        # Close the store before the interpreter's own exit hooks stop the embedded server,
        # so a pool never watches its server shut down under it (atexit runs last-in first).
        atexit.register(self.close)

    async def _open(self, factory: Callable[[], Awaitable[ChunkStore]]) -> ChunkStore:
        """Open the store on the loop (the facade also creates the default workspace)."""
        return await factory()

    def _submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        if self._closed:
            coro.close()
            raise RuntimeError("the service is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def _interactive_done(self) -> None:
        self._interactive.done()

    async def _give_way(self) -> None:
        """Long work's checkpoint: wait while interactive calls are pending (bounded)."""
        if (
            self._interactive.count == 0
            and self._loop.time() - self._last_give_way < GIVE_WAY_EVERY_S
        ):
            return
        await asyncio.sleep(0)
        if self._interactive.count > 0:
            await self._until_none_pending(self._loop.time() + MAX_GIVE_WAY_S)
        self._last_give_way = self._loop.time()

    async def _until_none_pending(self, deadline: float) -> None:
        """Sleep until no interactive call is pending or ``deadline`` (loop time), woken by the
        last call's end (``_Pending.done``) instead of looking every millisecond: a search's
        window held one wake-up of each waiting task per millisecond (~50 us each on the shared
        machine, a few per cent of a search's own loop CPU)."""
        pending = self._interactive
        pending.waiters += 1
        try:
            while pending.count > 0 and self._loop.time() < deadline:
                self._none_pending.clear()
                if pending.count == 0:  # the last call ended before the clear
                    break
                try:
                    async with asyncio.timeout_at(deadline):
                        await self._none_pending.wait()
                except TimeoutError:
                    break
        finally:
            pending.waiters -= 1

    def _wake_long_work(self) -> None:
        """From the thread whose call ended: wake long work waiting at its checkpoints."""
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            self._loop.call_soon_threadsafe(self._none_pending.set)

    def _thread_give_way(self) -> None:
        """Long work's checkpoint in a worker thread: sleep, the GIL let go, while interactive
        calls are pending (bounded as ``_give_way``). Never on the loop's own thread: the work
        the pause stands in for runs there too when small, and the loop must run the calls."""
        if self._interactive.count == 0 or threading.get_ident() == self._thread.ident:
            return
        deadline = time.monotonic() + MAX_GIVE_WAY_S
        while self._interactive.count > 0 and time.monotonic() < deadline:
            time.sleep(GIVE_WAY_POLL_S)

    async def _long(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run long work with ``_give_way`` at its checkpoints (``_thread_give_way`` in the
        threads it starts)."""
        checkpoint.install(self._give_way, self._thread_give_way)
        return await coro

    def _tenant(self, workspace: str) -> UUID:
        """The id of the workspace called ``workspace`` now (``tenant_of``): a workspace is
        an identity, so a name is looked up on each call, never derived."""
        return self._call(tenant_of(self._store, workspace))

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        # Counted until the CALLER has the result: long work resuming as soon as the loop set
        # it would take the GIL from the caller's thread and slow the rest of the call.
        self._interactive.add()
        try:
            return self._wait(self._submit(coro))
        finally:
            self._interactive_done()

    def _wait(self, future: Future[T]) -> T:
        try:
            return future.result(timeout=self.settings.call_timeout_s)
        except FutureTimeout:
            future.cancel()
            raise TimeoutError(
                f"the store did not answer within {self.settings.call_timeout_s:g} s"
            ) from None

    def _call_heavy(self, coro: Coroutine[Any, Any, T]) -> T:
        """An interactive call that gives way like long work: not counted as pending, and
        pausing at its checkpoints while other sessions' calls are."""
        return self._wait(self._submit(self._long(coro)))

    def _call_query(self, query: str, coro: Coroutine[Any, Any, T]) -> T:
        """``_call``, or ``_call_heavy`` for a query of more than ``HEAVY_QUERY_WORDS``
        distinct words (counted before tokenising: the profile is the store's to say)."""
        if len(set(_WORD.findall(query.casefold()))) > HEAVY_QUERY_WORDS:
            return self._call_heavy(coro)
        return self._call(coro)

    def _call_with_progress(
        self,
        make: Callable[[Callable[[int, int, str], None]], Coroutine[Any, Any, T]],
        on_progress: ProgressCallback | None,
    ) -> T:
        """Run ``make(report)`` on the loop; ``report`` events reach ``on_progress`` here."""
        events: queue.SimpleQueue[tuple[int, int, str]] = queue.SimpleQueue()
        future = self._submit(
            self._long(make(lambda done, total, label: events.put((done, total, label))))
        )

        def drain() -> None:
            while True:
                try:
                    event = events.get_nowait()
                except queue.Empty:
                    return
                if on_progress is not None:
                    on_progress(*event)

        while True:
            try:
                result = future.result(timeout=0.05)
            except FutureTimeout:
                drain()
                continue
            drain()
            return result

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def close(self) -> None:
        """Close the store and stop the loop thread (idempotent)."""
        if self._closed:
            return
        atexit.unregister(self.close)
        try:
            self._call(self._store.close())
        finally:
            self._closed = True
            self._stop_loop()
            gc.unfreeze()  # what this service froze may be garbage now (tests start many)
