"""bench_users on the embedded default: the workspace on disk, a colleague's load, who is busy.

Issue 20 asks how analysts fare on what a newcomer gets: the embedded PostgreSQL the app starts
itself, holding a 1M-passage workspace, while a colleague loads 100k passages into another
workspace of the same server. So the workspace is built once with the ``load`` command (the
synthetic Zipf corpus of ``bench_scale`` written as ``bench_load`` writes it) into a data folder
that a later run reuses; ``app.py`` is served by ``streamlit run`` on that folder with nothing
patched (the store chosen by ``core.settings`` as for anyone); and the colleague's load is the
same command in its own process, as they would type it. Rejected: loading through the Upload
page (a browser upload of 100k passages measures the upload widget, and would need a browser
on a machine whose two cores the analysts' server needs).

What saturates first is read from outside by sampling CPU times once a second (``psutil``),
in four groups: the Streamlit server's process (one interpreter: at most about one core, its
GIL), PostgreSQL's processes at normal priority (the app's backends and the server's own
workers), PostgreSQL's processes at nice > 0 (the backends serving the load, which ``load``
renices), and the loader's own process tree; and the whole machine's busy cores beside them.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]

from bench import bench_browser, bench_load, scale_setup

ROOT = Path(__file__).resolve().parents[1]

#: Seconds between two CPU samples.
SAMPLE_S = 1.0
#: The groups a sample splits CPU into, in the order reported.
GROUPS = ("server", "postgres", "postgres_load", "loader", "machine")
#: Passages per file of the one-off build (``load`` reads at most 64 MB a file: 100k are ~56 MB).
BUILD_FILE_PASSAGES = 100_000
#: The workspace the colleague's load writes (one per measurement: never an upsert of the last).
LOAD_WORKSPACE = "bench-users-load"


def environment(data_dir: Path) -> dict[str, str]:
    """The environment of the app and of ``load``: the embedded default on ``data_dir``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LEXPLAIN_DATABASE_URL", "LEXPLAIN_STORE", "DATABASE_URL")
    }
    env["LEXPLAIN_DATA_DIR"] = str(data_dir)
    return env


def load_command(paths: list[Path], workspace: str) -> list[str]:
    """``load`` as a colleague types it (whole documents: one JSONL record, one passage)."""
    command = [sys.executable, "-m", "core", "load", *map(str, paths), "--whole-documents"]
    return [*command, "--workspace", workspace]


def stored(data_dir: Path, workspace: str) -> int:
    """Passages ``workspace`` holds on ``data_dir`` (0 when it does not exist yet)."""
    return bench_load.stored(None, data_dir, workspace)


def corpus_files(folder: Path, passages: int) -> list[Path]:
    """The Zipf corpus as files of BUILD_FILE_PASSAGES (``load`` reads at most 64 MB a file;
    100k passages are ~56 MB), written once into ``folder`` and reused (a marker says done)."""
    count = -(-passages // BUILD_FILE_PASSAGES)
    paths = [folder / f"corpus-{i:02d}.jsonl" for i in range(count)]
    done = folder / f"done-{passages}"
    if done.exists():
        return paths
    folder.mkdir(parents=True, exist_ok=True)
    ids, texts, _ = scale_setup.zipf_corpus(passages)
    for i, path in enumerate(paths):
        part = slice(i * BUILD_FILE_PASSAGES, (i + 1) * BUILD_FILE_PASSAGES)
        bench_load.write_corpus(path, ids[part], texts[part])
    done.touch()
    return paths


def build(data_dir: Path, passages: int) -> dict[str, Any]:
    """The analysts' workspace on ``data_dir``, loaded with ``load`` unless it is there already."""
    data_dir.mkdir(parents=True, exist_ok=True)
    have = stored(data_dir, scale_setup.WORKSPACE)
    if have == passages:
        return {"built": False, "passages": have}
    if have:
        raise SystemExit(
            f"{data_dir} holds {have:,} passages in {scale_setup.WORKSPACE}, not {passages:,}: "
            "use another --data-dir"
        )
    paths = corpus_files(data_dir.with_name(f"{data_dir.name}-corpus"), passages)
    started = time.perf_counter()
    subprocess.run(  # setup, not measured: at normal priority on a shared machine
        [*load_command(paths, scale_setup.WORKSPACE), "--full-priority"],
        cwd=ROOT,
        env=environment(data_dir),
        check=True,
    )
    seconds = time.perf_counter() - started
    return {"built": True, "passages": stored(data_dir, scale_setup.WORKSPACE), "seconds": seconds}


def start_server(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``streamlit run app.py`` on the embedded default of ``data_dir``; its URL."""
    port = bench_browser.free_port()
    command = [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py")]
    command += [
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--server.fileWatcherType",
        "none",
        "--browser.gatherUsageStats",
        "false",
    ]
    server = subprocess.Popen(command, cwd=ROOT, env=environment(data_dir))
    return server, f"http://127.0.0.1:{port}"


def postmaster(data_dir: Path) -> int | None:
    """The embedded server's postmaster, once the app has started it."""
    from core.stores.postgres import embedded

    found = embedded.running(data_dir)
    return found.pid if found is not None else None


@dataclass
class Loader:
    """The colleague's ``load`` of a prepared corpus file, started in its own process."""

    data_dir: Path
    path: Path
    workspace: str
    started: float = 0.0
    ended: float | None = None
    status: int | None = None
    child: subprocess.Popen[bytes] | None = None
    tail: list[str] = field(default_factory=list)

    @property
    def log(self) -> Path:
        """What the load printed (beside its corpus file)."""
        return self.path.with_name(f"{self.workspace}.log")

    def start(self) -> None:
        self.started = time.perf_counter()
        with self.log.open("wb") as output:  # the child keeps its own copy of the descriptor
            self.child = subprocess.Popen(
                load_command([self.path], self.workspace),
                cwd=ROOT,
                env=environment(self.data_dir),
                stdout=output,
                stderr=output,
            )

    def poll(self) -> bool:
        """True once the load has ended (its end time recorded at the first poll that sees it)."""
        if self.child is None:
            return True
        if self.ended is None and self.child.poll() is not None:
            self.ended = time.perf_counter()
            self.status = self.child.returncode
        return self.ended is not None

    def wait(self) -> dict[str, Any]:
        """Until the load ends; its seconds, exit status, passages stored and rate."""
        assert self.child is not None
        while not self.poll():
            time.sleep(0.2)
        self.tail = self.log.read_text(errors="replace").strip().splitlines()[-2:]
        assert self.ended is not None
        seconds = self.ended - self.started
        passages = stored(self.data_dir, self.workspace)
        return {
            "workspace": self.workspace,
            "exit": self.status,
            "seconds": seconds,
            "passages": passages,
            "passages_per_s": passages / seconds,
            "tail": self.tail,
        }


class Sampler:
    """CPU of the groups (``GROUPS``), sampled every ``SAMPLE_S`` in a thread."""

    def __init__(self, server: int, data_dir: Path, loader: Loader | None) -> None:
        self.server, self.data_dir, self.loader = server, data_dir, loader
        self.samples: list[dict[str, float]] = []
        self._seen: dict[int, float] = {}  # pid -> CPU seconds at the last sample
        self._at = time.monotonic()  # when the last sample was taken (a busy machine wakes late)
        self.postmaster_nice: int | None = None  # inherited by every backend it starts
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._take()  # the baseline
        self.samples.clear()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._take()

    def _tree(self, pid: int | None) -> list[Any]:
        if pid is None:
            return []
        with contextlib.suppress(psutil.NoSuchProcess):
            root = psutil.Process(pid)
            return [root, *root.children(recursive=True)]
        return []

    def _take(self) -> None:
        now_at = time.monotonic()
        elapsed, self._at = max(now_at - self._at, 1e-3), now_at
        pg_pid = postmaster(self.data_dir)
        pg = self._tree(pg_pid)
        if pg:
            with contextlib.suppress(psutil.NoSuchProcess):
                self.postmaster_nice = pg[0].nice()
        pg_pids = {p.pid for p in pg}
        groups: dict[str, list[Any]] = {
            "server": [p for p in self._tree(self.server) if p.pid not in pg_pids],
            "postgres": [],
            "postgres_load": [],
            "loader": [],
        }
        for proc in pg:
            with contextlib.suppress(psutil.NoSuchProcess):
                groups["postgres_load" if proc.nice() > 0 else "postgres"].append(proc)
        if self.loader is not None and self.loader.child is not None:
            groups["loader"] = self._tree(self.loader.child.pid)
        sample: dict[str, float] = {}
        seen: dict[int, float] = {}
        for name, procs in groups.items():
            total = 0.0
            for proc in procs:
                with contextlib.suppress(psutil.NoSuchProcess):
                    times = proc.cpu_times()
                    now = times.user + times.system
                    seen[proc.pid] = now
                    total += now - self._seen.get(proc.pid, 0.0)
            sample[name] = total / elapsed
        machine = psutil.cpu_times()
        # guest time is inside user already; iowait and steal are not this machine working
        busy = machine.user + machine.nice + machine.system + machine.irq + machine.softirq
        sample["machine"] = (busy - self._seen.get(-1, busy)) / elapsed
        seen[-1] = busy
        self._seen = seen
        self.samples.append(sample)

    def summary(self) -> dict[str, dict[str, float]]:
        """Mean and 95th percentile cores of each group over the samples."""
        out: dict[str, dict[str, float]] = {}
        for name in GROUPS:
            values = sorted(s[name] for s in self.samples) or [0.0]
            out[name] = {
                "mean": statistics.fmean(values),
                "p95": values[min(len(values) - 1, int(0.95 * len(values)))],
            }
        return out


def busiest(cpu: dict[str, dict[str, float]], cores: int) -> str:
    """What saturated first, in words: the group nearest its own ceiling (the server process
    one core, PostgreSQL and the machine every core)."""
    server = cpu["server"]["p95"]
    machine = cpu["machine"]["p95"]
    if machine >= 0.9 * cores:
        return f"the machine ({machine:.2f} of {cores} cores at p95)"
    if server >= 0.9:
        return f"the server process ({server:.2f} cores at p95, one interpreter)"
    return "nothing (no group near its ceiling)"


def report_actions(results: list[dict[str, Any]]) -> None:
    """Per analysts and action: count, p50 / p95 / max, and the same while the load ran."""
    print(
        "\n| analysts | action | runs | p50 / p95 / max s | during the load: runs, p50 / p95 s |"
        "\n|---:|---|---:|---:|---:|"
    )
    for r in results:
        for action, a in r["actions"].items():
            during = (
                f"{a['during_load_n']}, {a['during_load_p50_s']:.2f} / {a['during_load_p95_s']:.2f}"
                if a["during_load_n"]
                else "—"
            )
            print(
                f"| {r['analysts']} | {action} | {a['n']} | {a['p50_s']:.2f} / "
                f"{a['p95_s']:.2f} / {a['max_s']:.2f} | {during} |"
            )


def report(results: list[dict[str, Any]]) -> None:
    """The embedded rows: the actions, then errors, the load and CPU by group."""
    report_actions(results)
    print(
        "\n| analysts | errors | load: passages, s, passages/s | cores mean / p95: server | "
        "PostgreSQL | PostgreSQL (load) | loader | machine | load avg |"
        "\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    for r in results:
        load = r["load"]
        loaded = (
            f"{load['passages']:,}, {load['seconds']:.0f}, {load['passages_per_s']:,.0f}"
            + ("" if load["exit"] == 0 else f" (exit {load['exit']})")
            if load
            else "—"
        )
        cpu = " | ".join(f"{r['cpu'][g]['mean']:.2f} / {r['cpu'][g]['p95']:.2f}" for g in GROUPS)
        print(f"| {r['analysts']} | {r['errors']} | {loaded} | {cpu} | {r['load_average']:.1f} |")
    for r in results:
        print(
            f"{r['analysts']} analysts: {busiest(r['cpu'], os.cpu_count() or 1)}"
            + f"; PostgreSQL's postmaster at nice {r['postmaster_nice']}"
            + (f"; errors e.g. {r['error_examples']}" if r["errors"] else "")
        )
