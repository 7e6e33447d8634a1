"""Issue 21's probe of a million tiny JSONL records, at full size: ``load`` into the embedded
store stores every record, without an error, and its processes stay under 1 GiB.

The probe ("a 37 MB JSONL of 1M tiny documents: 2.36 GB and unfinished after 600 s") was
``load`` on the embedded default, so that is the path taken: the command line in its own
process, as a user runs it (at its own lower priority), into a fresh embedded server. The
smaller tests (tests/unit/ingest/test_loader_bounds.py, test_load_aside.py) hold each
mechanism; only the full size shows that they add up: memory that grows with the records,
not with a part, shows at a million (~0.7 GB more for every record held as a model) and
hides at 50,000.
Rejected: ``--dry-run``, which costs the same CPU (~75 s) but keeps every passage in the
loader's in-memory store, a path no user loads a million records into; its peak is the
in-memory store's size (895 MiB loader + 201 MiB reading worker summed, session 10), not the
loader's bound. Memory is read from ``/proc`` (``tools/process_tree.py``): the
VmHWM of every process the load runs (the loader, its reading worker, its staging worker,
initdb and pg_ctl), summed. The embedded server's processes are left out: its shared buffers
are a cache sized to the machine (an eighth of its memory, up to 2 GB), not to the input, and
each backend's VmHWM counts the pages of it that backend touched (summed, 5.3 GB on 23 GB).
No timed assertion: speed is bench_loader_memory's (bench/README.md).

A folder of its own: the CI runs it in the lane with the most idle CPU (scripts/test).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from core.domain.chunks import workspace_tenant_id
from core.settings import Settings
from core.stores.postgres import embedded
from core.stores.select import open_store
from tests.fixtures.probes import tiny_records
from tools.process_tree import run_measured

ROOT = Path(__file__).resolve().parents[2]
#: Records in the probe (issue 21: "1M tiny documents").
RECORDS = 1_000_000
#: Issue 21's bound on a probe's peak memory, in MiB.
PEAK_BOUND_MIB = 1024
#: Seconds after which the load is stopped and the test fails (not a speed bound: a hang).
HANG_S = 1_800


def test_a_million_tiny_records_load_into_the_embedded_store_whole_under_a_gibibyte(
    tmp_path: Path, embedded_data_dir: Path
) -> None:
    corpus = tmp_path / "tiny.jsonl"
    corpus.write_bytes(tiny_records(RECORDS))
    env = {
        k: v for k, v in os.environ.items() if k not in ("LEXPLAIN_DATABASE_URL", "LEXPLAIN_STORE")
    }
    env["LEXPLAIN_DATA_DIR"] = str(embedded_data_dir)

    def server() -> list[int]:
        found = embedded.running(embedded_data_dir)
        return [] if found is None else [found.pid]

    status, out, peak = run_measured(
        [sys.executable, "-m", "core", "load", str(corpus), "--workspace", "probe"],
        cwd=ROOT,
        env=env,
        timeout=HANG_S,
        apart=server,
    )
    assert status == 0, out[-3000:]
    assert f"ok: {RECORDS} documents stored in workspace 'probe'" in out, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    assert peak.total_mib < PEAK_BOUND_MIB, peak.describe()
    assert [name for name, _ in peak.peaks.values()].count("python") >= 2, peak.describe()

    async def stored() -> int:
        store = await open_store(Settings(data_dir=embedded_data_dir))
        try:
            return await store.passage_count(workspace_tenant_id("probe"))
        finally:
            await store.close()

    assert asyncio.run(stored()) == RECORDS
