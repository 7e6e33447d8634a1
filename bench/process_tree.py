"""Peak memory of a child process and the workers it starts, read from ``/proc`` while it runs.

Why not ``wait4``'s ``ru_maxrss``: a child forked from a big parent counts the parent's pages
from before ``exec`` (Linux records the old address space's high-water mark at ``exec``), so
``bench_load``'s loader, started by a bench process holding its 100k-passage corpus, read 383 MB
whatever it did. ``VmHWM`` in ``/proc/PID/status`` is the high-water mark of the address space
the process has now, so it starts at ``exec``. Rejected: ``/usr/bin/time`` in between (the same
``wait4`` on a small parent, right, but it reports one process: the loader's reading worker is a
second one) — the sampler reads every Python process of the tree. Left out: PostgreSQL and its
tools (the embedded server the loader starts: the figure is the client's) and a fork not yet
``exec``'d (it shows the parent's pages). Workers are started by ``spawn`` (fresh interpreters),
so their RSS shares nothing with the loader's but libraries, and a sum does not count twice.
"""

from __future__ import annotations

from pathlib import Path

#: How often ``TreePeak.sample`` should be called (seconds): the caller's poll interval.
SAMPLE_EVERY_S = 0.05


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _status_kb(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of a process in kB (empty once it has gone)."""
    found: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                found[line[:5]] = int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return {}
    return found


def _command(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _is_python(command: bytes) -> bool:
    return Path(command.split(b"\0", 1)[0].decode(errors="replace")).name.startswith("python")


class TreePeak:
    """The root's own peak RSS and the peak of the summed RSS of it and its non-PostgreSQL
    descendants, from samples (``sample`` every ``SAMPLE_EVERY_S`` while the root runs)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.root_kb = 0
        self.tree_kb = 0

    def sample(self) -> None:
        total, stack, root_command = 0, [self.root], _command(self.root)
        while stack:
            pid = stack.pop()
            stack.extend(_children(pid))
            command = _command(pid)
            if pid != self.root and (command == root_command or not _is_python(command)):
                continue  # a server or a tool, or a fork not yet exec'd (its pages are the root's)
            status = _status_kb(pid)
            total += status.get("VmRSS", 0)
            if pid == self.root:
                self.root_kb = max(self.root_kb, status.get("VmHWM", 0))
        self.tree_kb = max(self.tree_kb, total, self.root_kb)
