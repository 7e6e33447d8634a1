"""Issue 21's first probe as the issue ran it: a workspace deleted while a colleague uploads.

The issue uploaded 4,000 documents into a workspace in one thread and deleted the workspace
from another 5 s later (``svc.upload_files(...)`` then ``svc.delete_workspace(name)``): the
upload still said "ok", what it wrote after the delete stayed under a workspace no list showed
(5,537-12,498 passages, 5 of 6 runs), counters and passages disagreed (later searches raised
``IndexError``), a delete once waited past 120 s and once died of a raw deadlock; and whoever
created the name again inherited the passages. The compliance suite holds the mechanism with
small groups at fixed moments (``test_deleting_a_workspace_during_an_upload_leaves_no_orphans``,
every store); this runs it at the issue's size through the service, at several delays, in one
store per run: the upload's outcome, the delete's outcome and seconds, what the deleted id
still holds through the store's port, rows of any table whose workspace no longer exists (SQL,
PostgreSQL and Citus; the in-memory store's tenants without a workspace), and the name created
again (empty, searchable).

    .venv/bin/python -m bench.bench_delete_during_upload --store memory|embedded|stock|citus
        [--documents 4000] [--delays 0.5,1,2,3,5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import asyncpg

from bench.bench_query_probes import opened
from bench.scale_setup import zipf_corpus
from core.service.facade import LexplainService
from core.stores.memory import InMemoryChunkStore

WORKSPACE = "shared"
#: Words a generated document has (~3,000 characters: the issue's 18k documents cut into
#: 47,505 passages, about 2.6 passages each at the default 1,200-character passages).
DOCUMENT_WORDS = 480
#: Tables keyed by a workspace: a row whose workspace is gone is an orphan.
TABLES = ("passages", "postings", "segments", "tenant_counters", "term_dead", "entities")


def corpus(documents: int) -> bytes:
    """``documents`` generated documents as one JSONL (read aside, as a big upload is)."""
    _, texts, _ = zipf_corpus(documents * DOCUMENT_WORDS // 120)
    words = " ".join(texts).split()
    lines = (
        json.dumps(
            {
                "_id": f"doc{n}",
                "text": " ".join(words[n * DOCUMENT_WORDS : (n + 1) * DOCUMENT_WORDS]),
            }
        )
        for n in range(documents)
    )
    return "".join(line + "\n" for line in lines).encode()


def orphans(service: LexplainService, url: str | None) -> dict[str, int]:
    """Rows kept for a workspace that no longer exists, by table (or the in-memory tenants')."""
    store: Any = service._store
    if isinstance(store, InMemoryChunkStore):
        return {
            "passages": sum(
                tenant.image.passages
                for tid, tenant in store._tenants.items()
                if tid not in store._workspaces
            )
        }
    if url is None:
        return {}

    async def count() -> dict[str, int]:
        connection = await asyncpg.connect(url)
        try:
            found = {}
            for table in TABLES:
                found[table] = await connection.fetchval(  # the tables: constants above
                    f"SELECT count(*) FROM {table} t WHERE NOT EXISTS "  # noqa: S608
                    "(SELECT 1 FROM workspaces w WHERE w.tenant_id = t.tenant_id)"
                )
            return found
        finally:
            await connection.close()

    return asyncio.run(count())


@contextmanager
def racing(service: LexplainService, data: bytes) -> Iterator[dict[str, Any]]:
    """The upload in a thread of its own, as a colleague's page runs it; its outcome after."""
    outcome: dict[str, Any] = {}

    def upload() -> None:
        started = time.perf_counter()
        try:
            (report,) = service.upload_files([("batch.jsonl", data)], workspace=WORKSPACE)
            outcome["upload"] = report.error or f"ok, {report.passages_written} passages"
        except Exception as error:  # the probe records what a caller would see
            outcome["upload"] = f"{type(error).__name__}: {error}"
        outcome["upload_s"] = round(time.perf_counter() - started, 2)

    thread = threading.Thread(target=upload)
    thread.start()
    try:
        yield outcome
    finally:
        thread.join()


def one_run(service: LexplainService, data: bytes, delay: float, url: str | None) -> dict[str, Any]:
    service.create_workspace(WORKSPACE)
    old = service.tenant(WORKSPACE)
    with racing(service, data) as outcome:
        time.sleep(delay)
        started = time.perf_counter()
        try:
            outcome["delete"] = f"deleted {service.delete_workspace(WORKSPACE)} passages"
        except Exception as error:
            outcome["delete"] = f"{type(error).__name__}: {error}"
        outcome["delete_s"] = round(time.perf_counter() - started, 2)
    store: Any = service._store
    outcome["old_id_passages"] = service._call(store.passage_count(old))
    outcome["old_id_sources"] = len(service._call(store.list_sources(old)))
    outcome["orphans"] = orphans(service, url)
    service.create_workspace(WORKSPACE)
    outcome["recreated_new_id"] = service.tenant(WORKSPACE) != old
    outcome["recreated_passages"] = len(service.list_sources(workspace=WORKSPACE))
    outcome["recreated_search"] = len(service.search("w1 w2", workspace=WORKSPACE).passages)
    service.delete_workspace(WORKSPACE)
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("memory", "embedded", "stock", "citus"), required=True)
    parser.add_argument("--documents", type=int, default=4_000)
    parser.add_argument("--delays", default="0.5,1,2,3,5")
    args = parser.parse_args()
    data = corpus(args.documents)
    with opened(args.store) as (service, url):
        for delay in [float(d) for d in args.delays.split(",")]:
            result = {"store": args.store, "documents": args.documents, "delay_s": delay}
            print(json.dumps({**result, **one_run(service, data, delay, url)}), flush=True)


if __name__ == "__main__":
    main()
