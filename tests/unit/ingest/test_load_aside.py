"""A JSONL corpus read and cut in the worker process ends exactly as one read here.

``core.ingest.aside`` moves reading and cutting to a worker and rebuilds what comes back;
these tests hold it to the path it replaces (``index_uploads(read_paths(...))`` for ``load``,
``index_uploads(read_uploads(...))`` for the Upload page's files, their bytes piped) on a corpus
with every kind of record the reader and the cutter treat differently: the same report (rows,
reasons, notes, totals), the same passages stored (ids, offsets, metadata, entities), also
when the worker dies part-way and the rest is read here, and when the store stops the load.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from core import processes
from core.checkpoint import WORKER_NICENESS
from core.domain.chunks import ChunkingOptions, StoredChunk, workspace_tenant_id
from core.domain.entities import RuleBasedExtractor
from core.ingest.aside import (
    ASIDE_BYTES,
    Upload,
    goes_aside,
    index_files,
    index_paths,
    uploads_go_aside,
)
from core.ingest.indexing import IndexReport
from core.stores.memory import InMemoryChunkStore
from core.stores.port import StoreUnavailable

TENANT = workspace_tenant_id("aside")
#: Chunking small enough that a long record is several passages (and repeats one).
CHUNKING = ChunkingOptions(size=60, overlap=10)


def _records(count: int) -> list[bytes]:
    """Plain tiny records, with every kind of other line mixed in at fixed places."""
    odd: list[bytes] = [
        b'{"_id": "titled", "title": "A Title", "text": "body of a titled record"}',
        b'{"_id": 42, "text": "a number as id"}',
        b'{"_id": "  padded  ", "text": "spaces around the id"}',
        b'{"_id": "d3", "text": "a duplicate of an earlier id"}',
        b'{"_id": "empty", "title": "", "text": ""}',
        b'{"_id": "blank", "text": "   \\n  "}',
        b"not json at all",
        b'["not", "an", "object"]',
        b'{"_id": "zw\\u200bid", "text": "zero width"}',
        b'{"_id": "nul-text", "text": "a\\u0000b"}',
        b'{"_id": "caf\xc3\xa9", "text": "Dr. Ada Lovelace met Charles Babbage in London."}',
        b'{"_id": "long", "text": "'
        + b"The same sentence again. " * 12
        + b'The Royal Society of London met in Paris."}',
        b'{"_id": "spaced", "text": "  leading and trailing space  "}',
        b'{"_id": "entities", "text": "Alan Turing worked at Bletchley Park for years."}',
        b'{"_id": "huge", "text": "' + b"w" * 3_000 + b'"}',
        b"",
    ]
    lines = [b'{"_id": "d%d", "text": "w%d x%d"}' % (n, n % 97, n % 13) for n in range(count)]
    for at, line in enumerate(odd):
        lines.insert(7 + at * (count // len(odd)), line)
    return lines


def _write(path: Path, lines: Sequence[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


async def _load(
    paths: Sequence[Path], aside: bool, store: Any = None, batch: int | None = 500
) -> tuple[IndexReport, list[dict[str, Any]]]:
    store = store or InMemoryChunkStore()
    report = await index_paths(
        paths, store, TENANT, max_bytes=2_000, chunking=CHUNKING,
        extractor=RuleBasedExtractor(), aside=aside, batch_passages=batch,
    )  # fmt: skip
    return report, await _stored(store, TENANT)


def _comparable(report: IndexReport) -> tuple[dict[str, Any], list[str], int]:
    """What a report says whatever the timing: its totals, every rejection and row with notes
    (all kept), the documents rowed or counted. Which plain documents get a row, and where the
    refusals met while reading land among the rows, depend on when the writes end (in either
    path: they come first at the next count)."""
    said = report.model_dump()
    rows, left_out = said.pop("rows"), said.pop("rows_left_out")
    said["rejected"] = sorted(said["rejected"], key=repr)
    for summary in said["files"]:
        summary["rejected"].sort()
        summary["notes"].sort()
    remarks = sorted(repr(row) for row in rows if row["status"] == "rejected" or row["notes"])
    return said, remarks, len(rows) + left_out


async def _stored(store: InMemoryChunkStore, tenant: UUID) -> list[dict[str, Any]]:
    chunks: list[StoredChunk] = []
    for source in await store.list_sources(tenant):
        chunks += await store.get_by_source(source.source_id, tenant)
    return [chunk.model_dump() for chunk in chunks]


@pytest.fixture
def corpus(tmp_path: Path) -> list[Path]:
    """Two JSONL files; the second repeats ids of the first (named as duplicates)."""
    first = _write(tmp_path / "first.jsonl", _records(3_000))
    second = _write(
        tmp_path / "second.jsonl",
        [b'{"_id": "d5", "text": "again"}', *_records(40)[20:], b'{"_id": "new", "text": "z"}'],
    )
    return [first, second]


async def test_a_corpus_read_and_cut_in_the_worker_is_stored_and_reported_as_one_read_here(
    corpus: list[Path],
) -> None:
    here, stored_here = await _load(corpus, aside=False)
    aside, stored_aside = await _load(corpus, aside=True)
    assert _comparable(aside) == _comparable(here)
    assert stored_aside == stored_here
    # The corpus holds what makes the paths differ: rejections, notes, entities, long records.
    reasons = " ".join(r.reason or "" for r in here.rejected)
    assert "duplicate _id" in reasons and "same source id as" in reasons
    assert "over the limit" in reasons and "not valid JSON" in reasons
    assert any(chunk["entity_ids"] for chunk in stored_here)
    assert any(chunk["chunk_index"] > 0 for chunk in stored_here)
    assert any(chunk["metadata"] for chunk in stored_here)
    assert here.documents_indexed > 3_000


async def test_one_file_read_and_cut_in_the_worker_names_its_duplicates_as_one_read_here(
    tmp_path: Path,
) -> None:
    # One file keeps no map of the ids met across files (``OneFile``): its reader names the
    # repeats ("duplicate _id", with the first line) in either path alike.
    lines = _records(3_000)
    one = _write(tmp_path / "one.jsonl", [*lines, lines[100], b'{"_id": "d7", "text": "x"}'])
    here, stored_here = await _load([one], aside=False)
    aside, stored_aside = await _load([one], aside=True)
    assert _comparable(aside) == _comparable(here)
    assert stored_aside == stored_here
    reasons = [r.reason or "" for r in here.rejected if "duplicate _id" in (r.reason or "")]
    assert len(reasons) >= 3 and any("'d7' (first on line" in r for r in reasons)


class _Killing(InMemoryChunkStore):
    """Kills the load's worker at its first write (the worker is then part-way)."""

    killed = 0

    async def replace_sources(self, *args: Any, **kwargs: Any) -> list[int]:
        for child in processes.running():
            os.kill(child.pid, signal.SIGKILL)
            self.killed += 1
        return await super().replace_sources(*args, **kwargs)


async def test_a_load_whose_worker_dies_reads_the_rest_here_and_ends_the_same(
    corpus: list[Path],
) -> None:
    here, stored_here = await _load(corpus, aside=False)
    killing = _Killing()
    aside, stored_aside = await _load(corpus, aside=True, store=killing)
    assert killing.killed >= 1, "no worker was killed: the test would prove nothing"
    assert _comparable(aside) == _comparable(here)
    assert stored_aside == stored_here


class _Watching(InMemoryChunkStore):
    """Notes the priority of the worker processes alive at each write."""

    def __init__(self) -> None:
        super().__init__()
        self.niceness: set[int] = set()

    async def replace_sources(self, *args: Any, **kwargs: Any) -> list[int]:
        for child in processes.running():
            self.niceness.add(os.getpriority(os.PRIO_PROCESS, child.pid))
        return await super().replace_sources(*args, **kwargs)


class _Failing(InMemoryChunkStore):
    """Unavailable from its third write on: the load stops and counts the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    async def replace_sources(self, *args: Any, **kwargs: Any) -> list[int]:
        self.writes += 1
        if self.writes >= 3:
            raise StoreUnavailable("the store is gone")
        return await super().replace_sources(*args, **kwargs)


async def test_a_load_stopped_by_the_store_counts_the_same_documents_unwritten_either_way(
    corpus: list[Path],
) -> None:
    here, _ = await _load(corpus, aside=False, store=_Failing())
    aside, _ = await _load(corpus, aside=True, store=_Failing())
    assert here.stopped is not None and here.not_written > 0
    assert (aside.stopped, aside.not_written, aside.documents_indexed) == (
        here.stopped, here.not_written, here.documents_indexed,
    )  # fmt: skip
    assert _comparable(aside) == _comparable(here)


def test_only_big_regular_jsonl_files_go_to_the_worker(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"x" * ASIDE_BYTES)
    small = _write(tmp_path / "small.jsonl", [json.dumps({"_id": "a", "text": "b"}).encode()])
    text = tmp_path / "big.txt"
    text.write_bytes(b"x" * ASIDE_BYTES)
    assert goes_aside([big]) and goes_aside([small, big])
    assert not goes_aside([small]) and not goes_aside([text]) and not goes_aside([tmp_path])
    assert not goes_aside([tmp_path / "missing.jsonl"])


async def test_the_passages_rebuilt_from_the_worker_carry_the_chunkers_mark(
    corpus: list[Path],
) -> None:
    # The worker derived their ids: a store's write check need not hash them again.
    from core.domain.chunks import was_cut
    from core.ingest.aside import Aside
    from core.ingest.writes import Prepared

    reading = Aside(corpus[:1], 2_000, TENANT, CHUNKING, RuleBasedExtractor())
    parts = reading.parts([])
    chunks = [
        chunk
        async for part in parts
        for member in part.prepared or []
        if isinstance(member, Prepared)
        for chunk in member.chunks
    ]
    assert len(chunks) > 3_000 and all(was_cut(chunk) for chunk in chunks)
    assert any(chunk.chunk_index > 0 for chunk in chunks) and any(c.metadata for c in chunks)


#: The Upload page's limit per file in these tests: the whole file is bounded, not a record.
UPLOAD_BYTES = 200_000


@pytest.fixture
def uploads(corpus: list[Path]) -> list[Upload]:
    """The corpus as uploaded files, with names that are no path and no name: a ``../`` one,
    control characters, bytes that were not UTF-8, a file over the limit (refused from its
    size, unread: the worker reads past its bytes to the next file's), an empty one."""
    first, second = (path.read_bytes() for path in corpus)
    small = b'{"_id": "odd-name", "text": "named oddly"}\n'
    return [
        ("first.jsonl", first),
        ("too-big.jsonl", b'{"_id": "big", "text": "' + b"w " * UPLOAD_BYTES + b'"}\n'),
        ("../../etc/second.jsonl", second),
        ("ctl\x1b[31m\x07.jsonl", small),
        ("bad\udcff.jsonl", small),
        ("empty.jsonl", b""),
    ]


async def _upload(
    files: Sequence[Upload], aside: bool, store: Any = None, batch: int | None = 500
) -> tuple[IndexReport, list[dict[str, Any]]]:
    store = store or InMemoryChunkStore()
    report = await index_files(
        files, store, TENANT, max_bytes=UPLOAD_BYTES, chunking=CHUNKING,
        extractor=RuleBasedExtractor(), aside=aside, batch_passages=batch,
    )  # fmt: skip
    return report, await _stored(store, TENANT)


async def test_uploaded_files_read_and_cut_in_the_worker_are_stored_and_reported_as_read_here(
    uploads: list[Upload],
) -> None:
    here, stored_here = await _upload(uploads, aside=False)
    aside, stored_aside = await _upload(uploads, aside=True)
    assert _comparable(aside) == _comparable(here)
    assert stored_aside == stored_here
    # Every file is named as the page shows it, refused or not, in either path alike.
    files = {summary.file for summary in here.by_file()} | {row.file for row in here.rejected}
    assert "../../etc/second.jsonl" in files and "ctl\x1b[31m\x07.jsonl" in files
    reasons = " ".join(r.reason or "" for r in here.rejected)
    assert "not valid UTF-8" in reasons and "empty" in reasons and "too large" in reasons
    assert "duplicate _id" in reasons and "same source id as" in reasons
    assert any(chunk["entity_ids"] for chunk in stored_here) and here.documents_indexed > 3_000


async def test_an_upload_whose_worker_dies_reads_the_rest_here_and_ends_the_same(
    uploads: list[Upload],
) -> None:
    here, stored_here = await _upload(uploads, aside=False)
    killing = _Killing()
    aside, stored_aside = await _upload(uploads, aside=True, store=killing)
    assert killing.killed >= 1, "no worker was killed: the test would prove nothing"
    assert _comparable(aside) == _comparable(here)
    assert stored_aside == stored_here


async def test_an_upload_stopped_by_the_store_counts_the_same_documents_unwritten_either_way(
    uploads: list[Upload],
) -> None:
    here, _ = await _upload(uploads, aside=False, store=_Failing())
    aside, _ = await _upload(uploads, aside=True, store=_Failing())
    assert here.stopped is not None and here.not_written > 0
    assert _comparable(aside) == _comparable(here)


async def test_the_reading_worker_of_an_upload_runs_at_a_workers_lower_priority(
    uploads: list[Upload],
) -> None:
    store = _Watching()
    await _upload(uploads, aside=True, store=store)
    assert store.niceness == {max(WORKER_NICENESS, os.nice(0))}


def test_only_big_jsonl_uploads_go_to_the_worker() -> None:
    big, small = b"x" * ASIDE_BYTES, b'{"_id": "a", "text": "b"}\n'
    assert uploads_go_aside([("big.jsonl", big)]) and uploads_go_aside(
        [("a.jsonl", small), ("b.JSONL", big)]
    )
    assert not uploads_go_aside([("small.jsonl", small)])
    assert not uploads_go_aside([("big.txt", big)]) and not uploads_go_aside(
        [("a.pdf", small), ("b.jsonl", big)]
    )


def test_the_upload_page_sends_a_big_jsonl_to_the_worker_and_reports_it_as_read_here(
    uploads: list[Upload], monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.ingest import aside as module
    from core.service.facade import LexplainService
    from core.settings import Settings

    started: list[Any] = []
    start = module.Aside.parts

    def counted(self: Any, early: list[Any]) -> Any:
        started.append(self)
        return start(self, early)

    monkeypatch.setattr(module.Aside, "parts", counted)

    def reports(threshold: int) -> list[dict[str, Any]]:
        monkeypatch.setattr(module, "ASIDE_BYTES", threshold)
        service = LexplainService.from_settings(Settings(store="memory"))
        try:
            found = service.upload_files(uploads[:2], workspace="aside", chunking=CHUNKING)
            return [report.model_dump() for report in found]
        finally:
            service.close()

    here = reports(1 << 40)
    assert not started
    aside = reports(1)
    assert started and started[0].received > 0  # the worker read them: no fall-back here
    assert aside == here and here[0]["documents"] > 3_000
