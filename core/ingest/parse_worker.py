"""PDF and DOCX are parsed in a worker process with a memory and a wall-clock limit.

pypdf and python-docx are parsers we do not control: a 97 KB PDF whose pages share one 60 MB
content stream took 99 s and 3.45 GiB for one page, and a DOCX member inflating to 250 MiB
passed 4 GiB. No check before parsing can bound what they allocate, so they run in a child
process whose address space is capped (``RLIMIT_AS``) and which is killed when it overruns
its time; the file is then refused in plain words and the app and ``load`` go on.

Why a long-lived worker fed over a pipe, not a process per file: ``multiprocessing`` with
spawn or forkserver re-imports the parent's ``__main__`` in every child (under Streamlit that
is Streamlit's own command line, about a second per file), and fork copies a process full of
threads (Streamlit's, the store's event loop). A worker started once with ``python -m
core.ingest.worker_entry`` pays the interpreter and parser imports once (~0.2 s), then a normal file
costs one round trip. Its cost: a worker that survives a parse may keep memory fragmented, so
one that grew past half its limit is replaced rather than reused.

A file the reader refuses (``ReadError``: not a PDF, damaged, over a text or inflation bound) is
the worker's normal answer, given after the parser returned or raised inside the reader, so the
worker is reused like after a good file. Replacing it cost ~0.7 s of CPU per refused file (a
folder of refused files given to ``load`` paid it per file; the unit tests ~50 times). A worker
whose state is in doubt is replaced: killed for its time, stopped by the kernel, out of memory
(a ``MemoryError`` may leave any structure half-built), or one where an error escaped the reader
(a bug we did not foresee: nothing says what it left behind).

The answer comes back as JSON, never pickle: the worker parses hostile bytes, and a parser
exploit there must not become code run in the app. Idle workers are kept in a small pool
(one per concurrent upload, up to ``IDLE_WORKERS``) and ended when the app exits.

This module is the sandbox only (process, limits, framing) and imports no reader: the
worker's entry point, ``core.ingest.worker_entry``, hands each request to the PDF or DOCX
reader. Rejected: the readers and the sandbox in one circle of imports (the readers asked the
sandbox to run, the sandbox imported the readers to serve), which made either hard to read
or test alone.
"""

from __future__ import annotations

import atexit
import json
import os
import resource
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from core.ingest.results import ReadError

#: Idle workers kept per memory limit, ready for the next file.
IDLE_WORKERS = 2
#: Files parsed at once in the whole process (each worker may take its memory limit, so this
#: bounds the app's worst case: two sessions' PDFs at 1 GiB each); more wait their turn.
MAX_BUSY_WORKERS = 2
#: Seconds of CPU a worker may spend past the wall-clock limit before the kernel stops it
#: (RLIMIT_CPU): the backstop for a worker whose app died mid-parse and cannot kill it.
CPU_GRACE_S = 5
#: Length prefix of every message on the pipe: one unsigned 64-bit big-endian integer.
_HEADER = struct.Struct(">Q")
#: The project folder: the worker is started there so ``core`` is importable.
_PROJECT_DIR = Path(__file__).resolve().parents[2]
#: Answers after which a worker (if still under half its memory limit) serves the next file: a
#: parse and the reader's own refusal. "memory" and "error" (an exception the reader did not
#: expect) end it.
_REUSABLE = ("ok", "refused")


class ParseRefused(Exception):
    """The worker refused the file, ran out of memory or time; ``reason`` is plain words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Worker:
    """One child process and its pipes."""

    def __init__(self, memory_bytes: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "core.ingest.worker_entry", str(memory_bytes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=_PROJECT_DIR,
        )

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()

    def ask(self, request: bytes, deadline: float) -> bytes:
        """Send one request, return the answer; raises TimeoutError or EOFError."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(_HEADER.pack(len(request)) + request)
        self.process.stdin.flush()
        (size,) = _HEADER.unpack(_read_exact(self.process.stdout, _HEADER.size, deadline))
        return _read_exact(self.process.stdout, size, deadline)


def _read_exact(stream: IO[bytes], size: int, deadline: float) -> bytes:
    """``size`` bytes from a pipe, or TimeoutError at ``deadline``, or EOFError if it closes."""
    fd = stream.fileno()
    chunks: list[bytes] = []
    left = size
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while left:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                raise TimeoutError
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            left -= len(chunk)
    return b"".join(chunks)


_idle: dict[int, list[_Worker]] = {}
_lock = threading.Lock()
_busy = threading.BoundedSemaphore(MAX_BUSY_WORKERS)


def _take(memory_bytes: int) -> _Worker:
    with _lock:
        pool = _idle.get(memory_bytes, [])
        while pool:
            worker = pool.pop()
            if worker.process.poll() is None:
                return worker
            worker.kill()
    return _Worker(memory_bytes)


def _give_back(worker: _Worker, memory_bytes: int) -> None:
    with _lock:
        pool = _idle.setdefault(memory_bytes, [])
        if len(pool) < IDLE_WORKERS:
            pool.append(worker)
            return
    worker.kill()


def shutdown() -> None:
    """End every idle worker (also run at exit)."""
    with _lock:
        workers = [w for pool in _idle.values() for w in pool]
        _idle.clear()
    for worker in workers:
        worker.kill()


atexit.register(shutdown)


def run(
    kind: str, data: bytes, options: dict[str, Any], *, memory_bytes: int, seconds: float
) -> Any:
    """``core.ingest.worker_entry.parse_in_worker(kind, data, options)`` in a worker, within limits.

    Returns its JSON answer; raises ``ParseRefused`` with the worker's own refusal, or with
    a plain-words reason when the worker ran out of memory or time (it is then killed).
    """
    with _busy:
        return _run(kind, data, options, memory_bytes, seconds)


def _run(kind: str, data: bytes, options: dict[str, Any], memory_bytes: int, seconds: float) -> Any:
    what = kind.upper()
    too_slow = (
        f"reading the {what} took longer than {seconds:g} s (the limit per file) — nothing stored"
    )
    worker = _take(memory_bytes)
    cpu_seconds = seconds + CPU_GRACE_S
    header = json.dumps({"kind": kind, "options": options, "cpu_seconds": cpu_seconds}).encode()
    request = _HEADER.pack(len(header)) + header + data
    try:
        answer = json.loads(worker.ask(request, time.monotonic() + seconds))
    except TimeoutError:
        worker.kill()
        raise ParseRefused(too_slow) from None
    except (EOFError, BrokenPipeError, ValueError):
        # The worker died: the kernel stopped it for CPU time, or it ran out of memory.
        worker.kill()
        if worker.process.returncode == -signal.SIGXCPU:
            raise ParseRefused(too_slow) from None
        raise ParseRefused(_memory_reason(what, memory_bytes)) from None
    if answer.get("status") in _REUSABLE and answer.get("healthy"):
        _give_back(worker, memory_bytes)
    else:
        worker.kill()
    if answer.get("status") == "memory":
        raise ParseRefused(_memory_reason(what, memory_bytes))
    if answer.get("status") != "ok":
        raise ParseRefused(str(answer.get("reason", f"the {what} could not be read")))
    return answer["result"]


def _memory_reason(what: str, memory_bytes: int) -> str:
    mib = memory_bytes // (1024 * 1024)
    return (
        f"the {what} expands to more than {mib:,} MB in memory while being read"
        " (the limit per file) — nothing stored"
    )


def _address_space() -> int:
    """This process's virtual size in bytes (what RLIMIT_AS counts)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


#: What the worker runs for one request: (kind, bytes, options) -> a JSON-able answer;
#: raises ``ReadError`` to refuse the file.
Handler = Callable[[str, bytes, dict[str, Any]], dict[str, Any]]


def limit_memory(memory_bytes: int) -> None:
    """Cap this process's address space (called first thing in the worker)."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))


def serve(memory_bytes: int, handle: Handler) -> None:
    """The worker's loop: one request in, one JSON answer out, until the pipe closes."""
    _, cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)
    stdin = sys.stdin.buffer
    stdout = sys.stdout.buffer
    while True:
        head = stdin.read(_HEADER.size)
        if len(head) < _HEADER.size:
            return
        (size,) = _HEADER.unpack(head)
        request = stdin.read(size)
        (header_size,) = _HEADER.unpack(request[: _HEADER.size])
        header = json.loads(request[_HEADER.size : _HEADER.size + header_size])
        data = request[_HEADER.size + header_size :]
        del request
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu_limit = int(usage.ru_utime + usage.ru_stime + header["cpu_seconds"]) + 1
        if cpu_hard != resource.RLIM_INFINITY:
            cpu_limit = min(cpu_limit, cpu_hard)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_hard))
        try:
            result = handle(header["kind"], data, header["options"])
            del data
            answer = {"status": "ok", "result": result}
            body = json.dumps(answer).encode()
        except ReadError as exc:
            body = json.dumps({"status": "refused", "reason": exc.reason}).encode()
        except MemoryError:
            body = json.dumps({"status": "memory"}).encode()
        except Exception as exc:  # a parser bug: refuse the file, keep the app, end the worker
            body = json.dumps({"status": "error", "reason": f"damaged file: {exc}"}).encode()
        if body.startswith((b'{"status": "ok"', b'{"status": "refused"')):
            healthy = _address_space() < memory_bytes // 2
            body = body[:-1] + (b', "healthy": true}' if healthy else b', "healthy": false}')
        stdout.write(_HEADER.pack(len(body)) + body)
        stdout.flush()
