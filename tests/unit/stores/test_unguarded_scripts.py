"""A script that uses lexplain without ``if __name__ == "__main__":`` runs once (issue 38).

The workers lexplain starts (the PostgreSQL store's staging worker for a batch of 32 passages or
more, the reading worker for a JSONL upload of 4 MiB or more) were ``multiprocessing`` spawn
children, which import the parent's ``__main__`` again: an unguarded script ran its statements
twice, and one that deleted, loaded and searched a workspace found it empty. Each script here
does exactly that against the CI server, at the top level, and notes every statement in a log;
each statement must be there once, and every passage found. The scripts run as a file and as
``python -`` (whose ``__main__`` has no file: spawn then failed with a traceback in the worker).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
#: Records of the facade's JSONL upload (past the reading worker's 4 MiB), and the store's
#: passages (past the staging worker's batch of 32).
RECORDS = {"facade": 2_400, "store": 200}

FACADE = """
import json, os, sys
from pathlib import Path
log = Path(os.environ["SCRIPT_LOG"])
def said(what):
    with log.open("a") as out:
        out.write(what + "\\n")
said("started")
from core.service.facade import LexplainService
service = LexplainService.from_settings()
name = os.environ["SCRIPT_WORKSPACE"]
service.delete_workspace(name)
said("deleted")
service.create_workspace(name)
records = "".join(
    json.dumps({"_id": f"d{i}", "text": f"wing flutter model{i} " + "filler " * 230}) + "\\n"
    for i in range(int(os.environ["SCRIPT_RECORDS"]))
)
service.upload_files([("big.jsonl", records.encode())], workspace=name)
said("loaded")
result = service.search("flutter", k=5, limit=10_000, workspace=name)
said(f"searched {result.matching_passages}")
service.close()
"""

STORE = """
import asyncio, os
from pathlib import Path
log = Path(os.environ["SCRIPT_LOG"])
def said(what):
    with log.open("a") as out:
        out.write(what + "\\n")
said("started")
from core.domain.chunks import StoredChunk
from core.stores.port import open_workspace
from core.stores.postgres import PostgresChunkStore
async def main():
    store = await PostgresChunkStore.connect(
        os.environ["LEXPLAIN_DATABASE_URL"], schema=os.environ["LEXPLAIN_DATABASE_SCHEMA"]
    )
    found = await store.find_workspace(os.environ["SCRIPT_WORKSPACE"])
    if found is not None:
        await store.delete_workspace(found.tenant_id)
    said("deleted")
    workspace = await open_workspace(store, os.environ["SCRIPT_WORKSPACE"])
    chunks = [
        StoredChunk(tenant_id=workspace.tenant_id, source_id=f"s{i}", text=f"wing flutter {i}",
                    chunk_index=0, start_char=0, end_char=10)
        for i in range(int(os.environ["SCRIPT_RECORDS"]))
    ]
    await store.upsert_many(chunks)
    said("loaded")
    got = await store.lexical_candidates(["flutter"], workspace.tenant_id, 10_000)
    said(f"searched {got.matching}")
    await store.close()
asyncio.run(main())
"""


def _run(script: str, how: str, records: int, tmp_path: Path, url: str, schema: str) -> list[str]:
    log = tmp_path / f"{how}.log"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LEXPLAIN_DATABASE_URL": url,
        "LEXPLAIN_DATABASE_SCHEMA": schema,
        "SCRIPT_LOG": str(log),
        "SCRIPT_WORKSPACE": f"scripted-{uuid.uuid4().hex[:8]}",
        "SCRIPT_RECORDS": str(records),
    }
    env.pop("LEXPLAIN_STORE", None)
    if how == "file":
        path = tmp_path / "unguarded.py"
        path.write_text(script)
        command, given = [sys.executable, str(path)], None
    else:
        command, given = [sys.executable, "-"], script
    done = subprocess.run(
        command, input=given, text=True, capture_output=True, env=env, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return log.read_text().splitlines()


@pytest.mark.parametrize("how", ["file", "stdin"])
@pytest.mark.parametrize("through", ["facade", "store"])
def test_an_unguarded_script_runs_each_statement_once_and_finds_every_passage(
    through: str, how: str, tmp_path: Path, database_url: str, pg_schema: str
) -> None:
    script = FACADE if through == "facade" else STORE
    records = RECORDS[through]
    lines = _run(script, how, records, tmp_path, database_url, pg_schema)
    assert lines == ["started", "deleted", "loaded", f"searched {records}"], json.dumps(lines)
