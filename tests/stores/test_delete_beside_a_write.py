"""A workspace deleted while a colleague's upload holds its write transaction is deleted as soon
as that transaction ends, on every PostgreSQL server (issue 21, its first probe at full size).

Found by bench/bench_delete_during_upload.py: the upload's transaction holds a row lock on the
workspace, the delete (an interactive call) waits on it, and the upload's checkpoints between
its COPY pieces waited for the pending delete (``MAX_GIVE_WAY_S`` each): the delete hit its
120 s call timeout on a stock server and took 102 s on Citus. Long work's checkpoints inside
a write no longer wait while an interactive write is under way
(``core.checkpoint.holding_locks``). Here the pieces are made small (~150 checkpoints in one
transaction) and the call timeout short, so checkpoints that still waited for the delete would
make it time out (planted: 3 of 3 servers red, "did not answer within 10 s").
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator

import pytest

from core.checkpoint import checkpoint, holding
from core.service.facade import LexplainService
from core.settings import Settings
from core.stores.postgres import pieces

WS = "shared"
#: Documents of the upload: one write group (``BATCH_PASSAGES``), one transaction.
DOCUMENTS = 5_000


@pytest.fixture
def service(both_database_urls: str) -> Iterator[LexplainService]:
    settings = Settings(
        store="postgres",
        database_url=both_database_urls,
        database_schema=f"t_{uuid.uuid4().hex}",
        call_timeout_s=10,
    )
    svc = LexplainService.from_settings(settings)
    yield svc
    svc.close()


def test_a_workspace_deleted_while_an_upload_holds_its_transaction_waits_only_for_that_transaction(
    service: LexplainService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pieces, "PIECE_ROWS", 32)  # ~150 checkpoints inside the transaction
    inside = threading.Event()

    async def first_inside_waits_for_the_delete() -> None:
        if holding() and not inside.is_set():
            inside.set()
            await asyncio.sleep(0.5)  # the delete arrives and waits on the transaction's lock
        await checkpoint()

    monkeypatch.setattr(pieces, "checkpoint", first_inside_waits_for_the_delete)
    service.create_workspace(WS)
    old = service.tenant(WS)
    data = b"".join(b'{"_id": "d%d", "text": "wing flow %d"}\n' % (n, n) for n in range(DOCUMENTS))
    outcome: list[str] = []

    def upload() -> None:
        (report,) = service.upload_files([("batch.jsonl", data)], workspace=WS)
        outcome.append(report.error or "ok")

    uploading = threading.Thread(target=upload)
    uploading.start()
    try:
        assert inside.wait(60), "the upload never reached its transaction"
        deleted = service.delete_workspace(WS)  # timed out at 10 s while checkpoints waited
    finally:
        uploading.join(120)
    assert outcome == ["ok"] and deleted == DOCUMENTS  # it waited for the write, then deleted
    store = service._store
    assert service._call(store.passage_count(old)) == 0
    service.create_workspace(WS)
    assert service.tenant(WS) != old and service.list_sources(workspace=WS) == []
