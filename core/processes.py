"""Worker processes that never run the caller's script again: ``python -m core.processes``.

``multiprocessing``'s spawn and forkserver methods prepare every child by importing the
parent's ``__main__`` (as ``__mp_main__``). Under Streamlit ``__main__`` is the page script,
so the first sample load's staging worker ran the page outside Streamlit (77 warning lines in
the terminal); a user's script without ``if __name__ == "__main__":`` ran again in the worker,
and one that deleted, reloaded and searched a workspace found it empty (the worker's second
run deleted it under the first). Fork was rejected too: it copies a process full of threads
(the event loop's, Streamlit's), one of which may hold a lock. So a worker is its own program:
this module, started with the same interpreter and ``core`` on its path; it reads one pickled
call from its standard input and runs it. The call's ``Connection`` arguments (ends of
``multiprocessing.Pipe``) cross as inherited descriptors (``pass_fds``), so the workers keep
``Connection``'s framing and their callers their code. The cost: no ``Pool`` or
``ProcessPoolExecutor`` (they start children through a context); ``CallWorker`` is the one
worker serving calls in turn that the staging pool was.

Only this project's functions cross, by reference (pickle names ``module.qualname``); the
parse sandbox, which runs parsers on hostile bytes, answers in JSON and stays apart
(``core.ingest.parse_worker``).
"""

from __future__ import annotations

import atexit
import os
import pickle
import signal
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

#: The folder that holds the ``core`` package, put first on the worker's module path.
_ROOT = str(Path(__file__).resolve().parents[1])
#: Workers still running, killed at exit (as multiprocessing kills its daemonic children).
_LIVE: weakref.WeakSet[Worker] = weakref.WeakSet()


class WorkerGone(RuntimeError):
    """The worker process ended (killed, out of memory) before it answered."""


class _Inherited:
    """A ``Connection`` argument as it crosses: its descriptor number, kept by ``pass_fds``."""

    def __init__(self, fd: int, readable: bool, writable: bool) -> None:
        self.fd, self.readable, self.writable = fd, readable, writable


class Worker:
    """``target(*args)`` in a new interpreter (``python -m core.processes``)."""

    def __init__(self, target: Callable[..., object], *args: Any) -> None:
        sent = [
            _Inherited(a.fileno(), a.readable, a.writable) if isinstance(a, Connection) else a
            for a in args
        ]
        fds = tuple(a.fd for a in sent if isinstance(a, _Inherited))
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": _ROOT + (os.pathsep + path if path else "")}
        self._process = subprocess.Popen(
            [sys.executable, "-m", "core.processes"],
            stdin=subprocess.PIPE,
            pass_fds=fds,
            env=env,
            close_fds=True,
        )
        assert self._process.stdin is not None
        try:
            with self._process.stdin as call:
                pickle.dump((target, sent), call, pickle.HIGHEST_PROTOCOL)
        except OSError:
            pass  # it died at once: its caller meets the closed pipe
        _LIVE.add(self)

    @property
    def pid(self) -> int:
        return self._process.pid

    def is_alive(self) -> bool:
        return self._process.poll() is None

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()

    def join(self, timeout: float | None = None) -> int | None:
        """Wait for the worker to end; its exit code (None if ``timeout`` passed first)."""
        try:
            return self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None


class CallWorker:
    """One worker process that runs calls one at a time (``call``), started on first use.

    What ``ProcessPoolExecutor(1)`` was to its callers: the function and arguments go pickled,
    the value (or the exception it raised) comes back; a worker that dies raises ``WorkerGone``
    and the next call starts a new one. Thread-safe (a lock: one call in flight); callers on an
    event loop call it in a thread.
    """

    def __init__(self, initializer: Callable[[], object] | None = None) -> None:
        self._initializer = initializer
        self._lock = threading.Lock()
        self._worker: Worker | None = None
        self._ends: tuple[Connection, Connection] | None = None

    @property
    def pid(self) -> int | None:
        """The worker process's id; None before the first call and after it died."""
        worker = self._worker
        return None if worker is None else worker.pid

    def call(self, function: Callable[..., Any], *args: Any) -> Any:
        with self._lock:
            if self._worker is None or self._ends is None:
                self._start()
            assert self._ends is not None
            requests, replies = self._ends
            try:
                requests.send_bytes(pickle.dumps((function, args), pickle.HIGHEST_PROTOCOL))
                ok, value = pickle.loads(replies.recv_bytes())
            except (EOFError, OSError) as exc:
                self._stop()
                raise WorkerGone("the worker process ended before it answered") from exc
        if ok:
            return value
        raise value

    def _start(self) -> None:
        theirs_in, ours_out = Pipe(duplex=False)
        ours_in, theirs_out = Pipe(duplex=False)
        self._worker = Worker(_serve_calls, theirs_in, theirs_out, self._initializer)
        theirs_in.close()
        theirs_out.close()
        self._ends = (ours_out, ours_in)

    def _stop(self) -> None:
        worker, ends = self._worker, self._ends
        self._worker = self._ends = None
        if ends is not None:
            for end in ends:
                end.close()
        if worker is not None:
            worker.kill()
            worker.join(5)

    def close(self) -> None:
        with self._lock:
            self._stop()


def _serve_calls(
    requests: Connection, replies: Connection, initializer: Callable[[], object] | None
) -> None:
    """``CallWorker``'s worker: each request answered in turn, until its caller closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to answer
    if initializer is not None:
        initializer()
    while True:
        try:
            function, args = pickle.loads(requests.recv_bytes())
        except EOFError:
            return
        try:
            reply = pickle.dumps((True, function(*args)), pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            try:
                reply = pickle.dumps((False, exc), pickle.HIGHEST_PROTOCOL)
            except Exception:
                reply = pickle.dumps((False, RuntimeError(repr(exc))))
        replies.send_bytes(reply)


def running() -> list[Worker]:
    """This process's workers still running."""
    return [worker for worker in list(_LIVE) if worker.is_alive()]


@atexit.register
def _kill_live() -> None:
    for worker in list(_LIVE):
        worker.kill()


def _main() -> None:
    target, sent = pickle.load(sys.stdin.buffer)
    sys.stdin.close()
    args = [
        Connection(a.fd, readable=a.readable, writable=a.writable)
        if isinstance(a, _Inherited)
        else a
        for a in sent
    ]
    target(*args)


if __name__ == "__main__":  # run as a program: the functions it unpickles name core.processes
    from core.processes import _main as main

    main()
