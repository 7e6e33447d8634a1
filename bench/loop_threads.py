"""Who used the CPU inside each measured search's window: ``bench_stall``'s ``slowest_windows``.

On a machine shared by several developers the wall p99 of 300 searches moves 2-5x between two
passes of one code, and the verdict (during p99 / idle p99) rests on the third-slowest search.
What a slow search's window held says whether the code or the machine made it slow: for every
thread of this process and of the processes it started (a ``load`` in another process, its
workers), the CPU it ran and, for the searching threads, the time they waited *runnable* for a
core (``/proc/<pid>/task/<tid>/schedstat``: nanoseconds, both); and the whole machine's busy
and stolen time (``/proc/stat``, in 10 ms ticks, so read only as a sum over several windows).
The loop thread's CPU is the search's own plus the other work's steps on the loop (``--windows``
splits the two); a core the searcher waited for went to another thread or process (named by the
other columns) or to the rest of the machine. Sampled between searches, outside their timed
windows (about 0.3 ms a sample). Rejected: per-thread CPU clocks (``time.pthread_getcpuclockid``,
last session's experiment script): they see neither another process nor the wait for a core,
which is the machine's part.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import NamedTuple

#: Nanoseconds in a millisecond.
_NS_MS = 1_000_000
#: Milliseconds in one ``/proc/stat`` tick (USER_HZ).
_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")
#: Share of each pass's searches, the slowest by wall, summarised (at least ``MIN_SLOWEST``).
SLOWEST_SHARE = 0.01
#: Fewest searches summarised: the p99 of 300 is the third-slowest.
MIN_SLOWEST = 3


class Sample(NamedTuple):
    """One moment: per (pid, tid), (run ns, runnable-wait ns), of this process's tree and of the
    database server's; the machine's ticks."""

    tasks: dict[tuple[int, int], tuple[int, int]]
    server: dict[tuple[int, int], tuple[int, int]]
    busy_ticks: int
    steal_ticks: int


def _tasks(pid: int, into: dict[tuple[int, int], tuple[int, int]], children: list[int]) -> None:
    """Each thread of ``pid``'s schedstat into ``into``; its child processes onto ``children``."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:  # gone
        return
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as file:
                run, wait, _ = file.read().split()
        except (OSError, ValueError):  # exited between the listing and the read
            continue
        into[(pid, int(tid))] = (int(run), int(wait))
        # A kernel without CONFIG_PROC_CHILDREN has no such file: no child process is seen.
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/children", "rb") as file:
            children.extend(int(child) for child in file.read().split())


def _tree(root: int) -> dict[tuple[int, int], tuple[int, int]]:
    """Every thread of ``root`` and of the processes under it."""
    tasks: dict[tuple[int, int], tuple[int, int]] = {}
    pending = [root]
    while pending:
        found: list[int] = []
        for pid in pending:
            _tasks(pid, tasks, found)
        pending = found
    return tasks


def sample(server: int | None = None) -> Sample:
    """This process's tree, the server's (``server``: its first process), the machine's ticks."""
    tasks = _tree(os.getpid())
    served = _tree(server) if server is not None else {}
    with open("/proc/stat", "rb") as file:
        fields = [int(value) for value in file.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...: busy is all but idle, iowait, steal.
    busy = sum(fields[:3]) + sum(fields[5:7])
    return Sample(tasks, served, busy, fields[7] if len(fields) > 7 else 0)


class WindowCpu:
    """``before()`` and ``after()`` around each search; ``report()`` on the slowest."""

    def __init__(self, loop_thread: threading.Thread, server: int | None = None) -> None:
        self._pid = os.getpid()
        self._server = server
        self._loop = loop_thread.native_id
        self._caller = threading.get_native_id()
        self._start: Sample | None = None
        self.windows: list[tuple[float, dict[str, float]]] = []

    def before(self) -> None:
        self._start = sample(self._server)

    def after(self, wall_s: float) -> None:
        start, end = self._start, sample(self._server)
        assert start is not None, "after() without before()"
        names = ("loop_cpu", "loop_waited", "caller_cpu", "caller_waited", "other_threads_cpu")
        columns = dict.fromkeys((*names, "other_processes_cpu"), 0.0)
        ours = 0.0
        for key, (run, wait) in end.tasks.items():
            run0, wait0 = start.tasks.get(key, (0, 0))
            ran = (run - run0) / _NS_MS
            ours += ran
            pid, tid = key
            if pid != self._pid:
                columns["other_processes_cpu"] += ran
            elif tid in (self._loop, self._caller):
                who = "loop" if tid == self._loop else "caller"
                columns[f"{who}_cpu"] += ran
                columns[f"{who}_waited"] += (wait - wait0) / _NS_MS
            else:
                columns["other_threads_cpu"] += ran
        if self._server is not None:
            served = 0.0
            for key, (run, _) in end.server.items():
                served += (run - start.server.get(key, (0, 0))[0]) / _NS_MS
            columns["server_cpu"] = served
            ours += served
        busy = (end.busy_ticks - start.busy_ticks) * _TICK_MS
        columns["rest_of_machine_cpu"] = busy - ours  # ticks: meaningful summed over windows
        columns["stolen"] = (end.steal_ticks - start.steal_ticks) * _TICK_MS
        self.windows.append((wall_s * 1000, columns))

    def report(self) -> dict[str, float]:
        """Per window, the mean of each column over the slowest ``SLOWEST_SHARE`` by wall, and
        the p99 and p50 of the loop thread's CPU over every window (ms)."""
        if not self.windows:
            return {}
        count = max(MIN_SLOWEST, int(SLOWEST_SHARE * len(self.windows)))
        slowest = sorted(self.windows, key=lambda window: -window[0])[:count]
        report = {"searches": float(len(slowest))}
        loop = sorted(columns["loop_cpu"] for _, columns in self.windows)
        # The loop thread's CPU in a window, whatever the window's wall: the search's own and
        # the other work's steps on the loop (the code's part, little moved by the machine).
        report["loop_cpu_p99_all"] = round(loop[min(len(loop) - 1, int(0.99 * len(loop)))], 1)
        report["loop_cpu_p50_all"] = round(loop[len(loop) // 2], 2)
        report["wall"] = round(sum(wall for wall, _ in slowest) / len(slowest), 1)
        for column in slowest[0][1]:
            total = sum(columns[column] for _, columns in slowest)
            report[column] = round(total / len(slowest), 1)
        return report
