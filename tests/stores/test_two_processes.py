"""Two app processes on one PostgreSQL database stay correct when either writes (issue 22).

Several Streamlit processes behind a sticky-session proxy (docs/scaling.md) each hold their
own service, with its own caches: the PostgreSQL store's passage image per generation and the
service's recent search results keyed on ``ChunkStore.generation``. Each process here is a
real interpreter (tests/stores/app_process.py) on the same database and schema; every search
is asked in the reading process before the other one writes, so a cache that missed the write
would answer with the old list.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Seconds one request may take on a busy machine.
ANSWER_TIMEOUT_S = 120


class AppProcess:
    """One service in its own interpreter, asked one JSON request at a time."""

    def __init__(self, url: str, schema: str) -> None:
        env = {
            **os.environ,
            "LEXPLAIN_DATABASE_URL": url,
            "LEXPLAIN_DATABASE_SCHEMA": schema,
        }
        env.pop("LEXPLAIN_STORE", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.stores.app_process"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._line() == {"ready": True}

    def _line(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"the app process ended (exit {self.process.poll()})"
        return json.loads(line)

    def __call__(self, op: str, **request: object) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **request}) + "\n")
        self.process.stdin.flush()
        reply = self._line()
        assert "error" not in reply, reply["error"]
        return reply["ok"]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(ANSWER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def two_apps(database_url: str, pg_schema: str) -> Iterator[tuple[AppProcess, AppProcess]]:
    first = AppProcess(database_url, pg_schema)
    second = AppProcess(database_url, pg_schema)
    yield first, second
    first.close()
    second.close()


def test_what_one_app_process_writes_the_other_finds_reindexed_and_deleted(
    two_apps: tuple[AppProcess, AppProcess],
) -> None:
    one, other = two_apps
    name = f"shared-{uuid.uuid4().hex[:8]}"
    one("create", workspace=name)
    one("upload", workspace=name, files={"wings.txt": "Wing models flutter at speed."})
    assert other("search", workspace=name, query="flutter models") == {
        "terms": ["flutter", "models"],
        "sources": ["wings.txt"],
    }
    # An upload through one is found by a search through the other (asked just before).
    one("upload", workspace=name, files={"tail.txt": "Tail flutter, tail flutter again."})
    assert other("search", workspace=name, query="flutter models")["sources"] == [
        "wings.txt",
        "tail.txt",
    ]
    # A re-index through one is seen by the other: the query's terms are stemmed now.
    assert one("profile", workspace=name, profile="english") == 2
    assert other("search", workspace=name, query="flutter models") == {
        "terms": ["flutter", "model"],
        "sources": ["wings.txt", "tail.txt"],
    }
    # A deleted workspace disappears from both.
    assert name in other("workspaces")
    assert one("delete", workspace=name) == 2
    assert name not in other("workspaces") and name not in one("workspaces")
    assert other("search", workspace=name, query="flutter models")["sources"] == []
