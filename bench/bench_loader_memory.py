"""Peak memory and time of ``load`` on the hostile sizes of issue 21 (item 4), generated here.

Each probe is written to a temporary folder and loaded by ``python -m core load PATH
--dry-run`` (the in-memory store; ``--embedded``: into a fresh embedded store) in its own
process; its peak RSS is read from ``/proc`` (``tools.process_tree``): the process's own, and
its processes' summed (the reading worker, the staging worker; the embedded server's left out),
and the CPU seconds of the process and those it waited for (``cpu_s``); a run past
``--timeout`` seconds is stopped and reported so. The probes: a 3 GB sparse file (refused
from its size), six 42 MB text files, 56 MB of 7 M distinct words, a 40 MB JSONL of
1 M tiny records and a 57 MB file of one line. The tests hold the mechanisms with small files
(tests/unit/ingest/test_loader_bounds.py); the 1M records also run at full size (tests/probes).
``--upload`` sends a file probe through the Upload path instead (the service's
``upload_files`` into the in-memory store, or with ``--embedded``, ``--stock`` or ``--citus``
into that store, the bytes given whole as the page gives them). ``--stock`` loads into a
throwaway PostgreSQL 15 with stock settings (bench_load's ``stock`` server, one per probe):
issue 21 asks for the same bounds in every store, and a server lexplain did not configure is
the one a team brings. ``--citus`` loads into a fresh Citus cluster per probe (bench_citus'
coordinator and two workers on loopback, citus.sh's settings: stock memory, fsync off): the
distributed store, the one a team shares. Its nodes are servers apart from the load, so like
the embedded server they are left out of the summed peak.

    .venv/bin/python -m bench.bench_loader_memory [--timeout 300] [--only six,tiny] [--upload]
        [--embedded | --stock | --citus]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.bench_citus import cluster
from bench.bench_load import SERVERS, errors_in, server
from core.stores.postgres.embedded import running
from tools.process_tree import TreePeak, run_measured

ROOT = Path(__file__).resolve().parents[1]
#: Letters words are made of (the tokenizer keeps them whole).
_LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)


def _prose(size: int, vocab: list[bytes], *, newlines: bool = True) -> bytes:
    out = bytearray()
    pick = random.Random(size)
    while len(out) < size:
        sentence = b" ".join(pick.choices(vocab, k=pick.randint(8, 20)))
        out += sentence + (b".\n\n" if newlines and pick.random() < 0.2 else b". ")
    return bytes(out[:size]) if newlines else bytes(out[:size]).replace(b".", b"")


#: The probes' names, in the order they run.
PROBES = ("huge", "six", "distinct", "tiny", "oneline")


def write_probes(root: Path, wanted: set[str] | None = None) -> dict[str, Path]:
    """The probes of issue 21 under ``root`` (those ``wanted``, or all), by name."""
    rng = np.random.default_rng(21)
    vocab = [bytes(w) for w in _LETTERS[rng.integers(0, 26, size=(5000, 7))]]
    names = [name for name in PROBES if not wanted or name in wanted]
    paths = {name: root / name if name == "six" else root / f"{name}.txt" for name in names}
    if "huge" in paths:
        with paths["huge"].open("wb") as sparse:
            sparse.truncate(3 * 1024**3)
    if "six" in paths:
        paths["six"].mkdir()
        for number in range(6):
            (paths["six"] / f"part{number}.txt").write_bytes(_prose(42_000_000, vocab))
    if "distinct" in paths:
        ids = np.arange(7_000_000, dtype=np.int64)
        columns = [_LETTERS[(ids // 26**k) % 26] for k in range(6)]
        tail = [np.full(ids.size, ord("q"), np.uint8), np.full(ids.size, ord(" "), np.uint8)]
        paths["distinct"].write_bytes(np.stack(columns + tail, axis=1).tobytes())
    if "tiny" in paths:
        paths["tiny"] = root / "tiny.jsonl"
        with paths["tiny"].open("wb") as out:
            for n in range(1_000_000):
                a, b = vocab[n % 5000][:4], vocab[(n * 7) % 5000][:4]
                out.write(b'{"_id": "d%d", "text": "%s %s"}\n' % (n, a, b))
    if "oneline" in paths:
        paths["oneline"].write_bytes(_prose(58_000_000, vocab, newlines=False))
    return paths


#: The Upload path as the page calls it, printing what the report says of the file. A file over
#: the page's upload limit never reaches the app (the browser's uploader refuses it, Streamlit's
#: ``maxUploadSize`` and ``st.file_uploader(max_upload_size=...)``), so it is not read here.
_UPLOAD = (
    "import sys; from pathlib import Path; from core.service.facade import LexplainService;"
    "from core.settings import Settings; p = Path(sys.argv[1]);"
    "url = sys.argv[3] if len(sys.argv) > 3 else None;"
    "s = LexplainService.from_settings(Settings(store=sys.argv[2], database_url=url));"
    "big = p.stat().st_size > s.settings.max_upload_bytes;"
    "r = None if big else s.upload_files([(p.name, p.read_bytes())], workspace='probe')[0];"
    "print(f'refused by the uploader: over {s.settings.max_upload_mb} MB' if big else"
    " r and (r.error or f'{r.documents} documents, {r.passages_written} passages')); s.close()"
)


def measure(
    path: Path,
    timeout: float,
    *,
    upload: bool = False,
    embedded: bool = False,
    url: str | None = None,
) -> dict[str, object]:
    """Peak RSS (MiB: the loading process's own, and its processes' summed), seconds and the
    last line it printed, for one probe."""
    command = [sys.executable]
    if upload:
        store = "postgres" if url else "embedded" if embedded else "memory"
        command += ["-c", _UPLOAD, str(path), store, *([url] if url else [])]
    else:
        command += ["-m", "core", "load", str(path), "--workspace", "probe"]
        command += ["--database-url", url] if url else [] if embedded else ["--dry-run"]
    env = {k: v for k, v in os.environ.items() if k != "LEXPLAIN_DATABASE_URL"}
    data = Path(tempfile.mkdtemp(prefix="lexplain-probe.")) if embedded else None
    if data is not None:
        env["LEXPLAIN_DATA_DIR"] = str(data)

    def server() -> list[int]:
        found = None if data is None else running(data)
        return [] if found is None else [found.pid]

    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        _, output, peak = run_measured(command, cwd=ROOT, env=env, timeout=timeout, apart=server)
        said = [line for line in output.splitlines() if line.strip()]
        outcome = said[-1] if said else ""
    except TimeoutError:
        peak, outcome = TreePeak(), "stopped at the timeout"
    finally:
        # The processes it waited for (its workers; not the embedded server, which it started
        # detached): the CPU the probe cost, which a loaded machine's wall time hides.
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        if data is not None:
            stop = [sys.executable, "-m", "core", "db", "stop"]
            subprocess.run(stop, cwd=ROOT, env=env, capture_output=True, check=False)
            shutil.rmtree(data, ignore_errors=True)
    return {
        "peak_mib": round(peak.root_mib),
        "summed_mib": round(peak.total_mib),
        "seconds": round(time.perf_counter() - started, 1),
        "cpu_s": round(cpu, 1),
        "outcome": outcome.strip()[:160],
        "processes": peak.describe(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--only", default="", help="comma-separated probe names")
    parser.add_argument("--upload", action="store_true", help="through the Upload path")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--embedded", action="store_true", help="load into a fresh embedded store")
    where.add_argument("--stock", action="store_true", help="load into a fresh stock PostgreSQL")
    where.add_argument("--citus", action="store_true", help="load into a fresh Citus cluster")
    args = parser.parse_args()
    wanted = {name for name in args.only.split(",") if name}
    with tempfile.TemporaryDirectory() as folder:
        probes = write_probes(Path(folder), wanted)
        for name, path in probes.items():
            if args.upload and path.is_dir():
                continue
            if args.citus:
                with cluster(settings="") as url:
                    result = measure(path, args.timeout, upload=args.upload, url=url)
                print(name, result, flush=True)
                continue
            if not args.stock:
                result = measure(path, args.timeout, upload=args.upload, embedded=args.embedded)
                print(name, result, flush=True)
                continue
            with server(SERVERS["stock"]) as (url, log):
                result = measure(path, args.timeout, upload=args.upload, url=url)
                result["server_errors"] = len(errors_in(log))
            print(name, result, flush=True)


if __name__ == "__main__":
    main()
