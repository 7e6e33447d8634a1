"""The peak memory of a command's process tree, read from ``/proc`` while it runs: the one
measure of it, for the benchmarks (bench_load, bench_loader_memory) and the full-size probe test
(tests/probes).

Each process's ``VmHWM`` (its own resident high-water mark, kept by the kernel, never falling)
is read every ``SAMPLE_S`` for every process of the tree, which is found by parent id every
``SCAN_S``; the tree's peak is the sum of each process's highest reading. That is at least
the most the tree ever held at once (peaks reached at different moments are added), so a
bound that holds on it holds. What it misses: a process's growth in its last ``SAMPLE_S`` and
a process that lives less than ``SCAN_S`` (``pg_ctl``, a few MB).
Rejected: wait4's ``ru_maxrss`` (``resource.getrusage(RUSAGE_CHILDREN)``, GNU time's ``%M``):
it is the largest process of the tree, not the sum, and a child started from a big parent
counts the parent's pages from before its ``exec`` (bench_load read 383 MB for every load,
the bench's own corpus). Rejected too: the sum of ``VmRSS`` sampled at once, which misses
every peak between two samples.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: Seconds between two readings of the tree's processes' VmHWM.
SAMPLE_S = 0.05
#: Seconds between two scans of /proc for the tree's new processes (~3 ms of CPU each).
SCAN_S = 0.25


@dataclass
class TreePeak:
    """Each process's highest VmHWM read (KiB) and its name, by process id; ``root`` is the
    command's own process."""

    peaks: dict[int, tuple[str, int]] = field(default_factory=dict)
    root: int = 0

    @property
    def root_mib(self) -> float:
        """The command's own process's peak."""
        return self.peaks.get(self.root, ("", 0))[1] / 1024

    @property
    def total_mib(self) -> float:
        return sum(kib for _, kib in self.peaks.values()) / 1024

    def describe(self) -> str:
        """The processes, largest first: "python 238 MiB, python 201 MiB, ..."."""
        rows = sorted(self.peaks.values(), key=lambda row: -row[1])
        return ", ".join(f"{name} {kib // 1024} MiB" for name, kib in rows)


def _children() -> dict[int, list[int]]:
    """Every process's children, by parent id."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(b")", 1)[1].split(None, 2)[1])
        children.setdefault(parent, []).append(int(entry))
    return children


def _descendants(roots: Sequence[int]) -> set[int]:
    children = _children()
    found, queue = set(roots), list(roots)
    while queue:
        for child in children.get(queue.pop(), []):
            if child not in found:
                found.add(child)
                queue.append(child)
    return found


def _high_water(pid: int) -> tuple[str, int] | None:
    """(name, VmHWM in KiB) of a live process; None once it has exited (or is a zombie), and
    while it is a fork not yet ``exec``'d (its command line is still its parent's): a child
    started by ``vfork`` shares its parent's memory until then and reads as the parent (a
    ``pg_ctl`` sampled at 195 MB RSS beside its loader, session 10)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in lines if ":" in line)
    if "VmHWM" not in fields:
        return None
    if _command(pid) == _command(int(fields["PPid"].split()[0])):
        return None
    return fields["Name"].strip(), int(fields["VmHWM"].split()[0])


def _command(pid: int) -> bytes | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None


def run_measured(
    command: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    apart: Callable[[], list[int]] = list,
) -> tuple[int, str, TreePeak]:
    """Run ``command`` to its end: (exit status, its output, the peak of its tree).

    ``apart`` names processes left out of the tree with their descendants, asked at every
    scan (a database server the command started: its shared buffers are a cache sized to the
    machine, and each backend's VmHWM counts the pages of it that backend touched).
    """
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    output: list[bytes] = []
    reader = threading.Thread(target=lambda: output.append(process.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    peak = TreePeak(root=process.pid)
    watched: set[int] = set()
    left_out: set[int] = set()
    scanned = 0.0
    deadline = time.monotonic() + timeout
    try:
        while process.poll() is None:
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError(f"{command[:4]} still running after {timeout:g} s")
            if now - scanned >= SCAN_S:
                others = apart()
                left_out |= _descendants(others) if others else set()
                watched = _descendants([process.pid]) - left_out
                scanned = now
            for pid in watched:
                read = _high_water(pid)
                if read is not None and read[1] > peak.peaks.get(pid, ("", 0))[1]:
                    peak.peaks[pid] = read
            time.sleep(SAMPLE_S)
    finally:
        if process.poll() is None:
            # Its children too (an upload's staging worker, its resource tracker): left alive,
            # they hold the output pipe and the reader waits on them (823 s for a 300 s
            # timeout, session 12). What ``apart`` names is stopped by its owner.
            for pid in _descendants([process.pid]) - left_out - {process.pid}:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            process.kill()
        process.wait()
        reader.join()
    for pid in left_out:  # seen before its root was named
        peak.peaks.pop(pid, None)
    return process.returncode, b"".join(output).decode("utf-8", "replace"), peak
