"""``load`` stays inside what it was given and reads within bounds (issue 21, items 3 and 4).

Links out of a folder are refused and named, pipes/sockets/devices are listed and never
opened, every name reaches the terminal escaped, a file's size is taken before a byte is read,
a folder is read a file at a time while indexing, a JSONL a record at a time, and a load that
stores nothing leaves no workspace. The probes are generated here and small (a sparse file
stands for a 3 GB one); the large measurements are in bench/bench_loader_memory.py.
"""

from __future__ import annotations

import gc
import io
import os
import re
import socket
import threading
import types
from collections.abc import Awaitable, Iterator, Sized
from pathlib import Path
from typing import Any

import pytest

from core.domain.chunks import ChunkingOptions, SourceDocument, workspace_tenant_id
from core.ingest import beir, folders
from core.ingest.folders import read_paths, skipped_files
from core.ingest.names import terminal_safe
from core.settings import Settings
from core.stores.memory import InMemoryChunkStore
from core.stores.port import Workspace
from core.terminal import main
from core.terminal.load import load_into


def run_load(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(["load", *argv, "--dry-run"], stdout=out)
    return status, out.getvalue()


def test_a_link_out_of_the_folder_is_refused_and_named(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("the password is swordfish")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "fine.txt").write_text("Flutter of heated wings.")
    (folder / "passwd.txt").symlink_to(outside)
    (folder / "inside.txt").symlink_to(folder / "fine.txt")
    status, said = run_load(str(folder), "--workspace", "w")
    assert status == 0
    assert f"passwd.txt: refused: a link to {outside}, outside the folder given" in said
    reasons = dict(skipped_files(folder))
    assert folder / "inside.txt" not in reasons
    store = InMemoryChunkStore()

    async def load() -> set[str]:
        await load_into(store, [folder], "w", chunking=ChunkingOptions(), extractor=None)
        return {s.source_id for s in await store.list_sources(workspace_tenant_id("w"))}

    import asyncio

    assert asyncio.run(load()) == {"fine.txt", "inside.txt"}


def test_a_fifo_a_socket_and_a_folder_link_are_listed_as_skipped_and_never_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "fine.txt").write_text("Flutter of heated wings.")
    os.mkfifo(folder / "pipe.txt")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "sock.txt"))
    (folder / "loop").symlink_to(folder)
    opened: list[str] = []
    real_open = os.open

    def watched(path: object, *args: object, **kwargs: object) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(folders.os, "open", watched)
    done = threading.Event()
    result: list[tuple[int, str]] = []
    worker = threading.Thread(
        target=lambda: (result.append(run_load(str(folder), "--workspace", "w")), done.set()),
        daemon=True,
    )
    worker.start()
    assert done.wait(60), "load blocked (it opened the FIFO?)"
    server.close()
    status, said = result[0]
    assert status == 0
    assert "pipe.txt: a named pipe (FIFO), not a file: never opened" in said
    assert "sock.txt: a socket, not a file: never opened" in said
    assert "loop: a link to a folder: not followed" in said
    assert not [p for p in opened if p.endswith(("pipe.txt", "sock.txt"))]


def test_a_fifo_named_on_the_command_line_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.txt")
    (uploaded,) = list(read_paths([tmp_path / "pipe.txt"]))
    assert uploaded.error == "not read: a named pipe (FIFO), not a file: never opened"


HOSTILE = "\x1b]0;pwned\x07\x1b[2Jevil\u202egnp.txt"


def test_every_name_printed_to_the_terminal_is_escaped(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / HOSTILE).write_text("Flutter of heated wings.")
    (folder / ("bad" + HOSTILE + ".exe")).write_text("x")
    (folder / ("empty" + HOSTILE + ".txt")).write_text("")
    status, said = run_load(str(folder), "--workspace", "w")
    assert status == 1
    assert "\x1b" not in said and "\x07" not in said and "\u202e" not in said
    assert "\\u001b]0;pwned\\u0007\\u001b[2Jevil\\u202egnp.txt" in said


def test_terminal_safe_shows_controls_format_and_bidi_characters_as_escapes() -> None:
    assert terminal_safe("a\u200bb\u2066c\x9bd\ne") == "a\\u200bb\\u2066c\\u009bd\\u000ae"
    assert terminal_safe("naïve café — ok") == "naïve café — ok"


def test_a_file_over_the_limit_is_refused_from_its_size_before_a_byte_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as sparse:
        sparse.truncate(3 * 1024**3)  # 3 GB on paper, no disk used
    reads: list[str] = []
    real_fdopen = os.fdopen

    class Watched(io.BufferedReader):
        def read(self, size: int | None = -1) -> bytes:
            reads.append("read")
            return super().read(size)

        def __iter__(self) -> Iterator[bytes]:
            reads.append("lines")
            return super().__iter__()

    def fdopen(fd: int, mode: str = "rb") -> io.BufferedReader:
        return Watched(real_fdopen(fd, mode, buffering=0))

    monkeypatch.setattr(folders.os, "fdopen", fdopen)
    (uploaded,) = list(read_paths([huge]))
    assert uploaded.error is not None
    assert uploaded.error.startswith("file too large: 3072.0 MB, the limit is 64.0 MB")
    assert reads == []


def test_a_folder_is_read_a_file_at_a_time_while_it_is_indexed(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    for number in range(3):
        (folder / f"f{number}.txt").write_text(f"Document number {number} about wings.")
    parts = read_paths([folder])
    assert isinstance(parts, Iterator)
    first = next(parts)
    assert first.file_name.endswith("f0.txt") and len(first.documents) == 1


def test_a_jsonl_corpus_is_handed_on_in_parts_as_its_records_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(beir, "RECORDS_PER_PART", 2)
    lines = iter([b'{"_id": "%d", "text": "wings %d"}\n' % (n, n) for n in range(5)])
    parts = beir.jsonl_parts(lines)
    first = next(parts)
    assert [d.source_id for d in first.documents] == ["0", "1"]
    assert len(list(lines)) == 2, "the whole file was read before the first part"


async def test_a_load_that_stores_nothing_creates_no_workspace(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("")
    store = InMemoryChunkStore()
    report = await load_into(
        store, [tmp_path / "empty.txt"], "ghost", chunking=ChunkingOptions(), extractor=None
    )
    assert report.documents_indexed == 0
    assert await store.get_workspace(workspace_tenant_id("ghost")) is None


async def test_load_with_an_owner_gives_a_new_workspace_that_owner(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Flutter of heated wings.")
    store = InMemoryChunkStore()
    await load_into(
        store, [tmp_path], "w", chunking=ChunkingOptions(), extractor=None,
        owner="ada@example.org",
    )  # fmt: skip
    found = await store.get_workspace(workspace_tenant_id("w"))
    assert found is not None and found.owner == "ada@example.org"


async def test_load_with_an_owner_refuses_a_workspace_someone_else_owns(tmp_path: Path) -> None:
    from core.terminal.load import OwnerMismatch

    (tmp_path / "a.txt").write_text("Flutter of heated wings.")
    store = InMemoryChunkStore()
    tenant = workspace_tenant_id("w")
    await store.upsert_workspace(Workspace(tenant_id=tenant, name="w", owner="bob@example.org"))
    with pytest.raises(
        OwnerMismatch, match=re.escape("is owned by bob@example.org, not ada@example.org")
    ):
        await load_into(
            store, [tmp_path], "w", chunking=ChunkingOptions(), extractor=None,
            owner="ada@example.org",
        )  # fmt: skip
    assert await store.passage_count(tenant) == 0


def test_load_owner_that_is_not_an_address_exits_2_before_reading(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("Flutter of heated wings.")
    status, said = run_load(str(tmp_path), "--workspace", "w", "--owner", "not-an-email")
    assert status == 2 and "--owner" in said


async def test_a_document_of_too_many_distinct_words_is_refused_before_it_is_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.ingest import limits

    monkeypatch.setattr(limits, "MAX_DOCUMENT_WORDS", 100)
    (tmp_path / "words.txt").write_text(" ".join(f"w{n}" for n in range(150)))
    (tmp_path / "fine.txt").write_text("wing " * 100)
    store = InMemoryChunkStore()
    report = await load_into(store, [tmp_path], "w", chunking=ChunkingOptions(), extractor=None)
    assert [str(r) for r in report.rejected] == [
        f"{tmp_path / 'words.txt'} (words.txt): the document holds more than 100 distinct words"
        " (the limit per document; a word list or generated data?) — nothing stored"
    ]
    assert report.documents_indexed == 1


class Watching(InMemoryChunkStore):
    """The in-memory store, counting the writes in flight and what was read at each write."""

    def __init__(self, opened: Sized) -> None:
        super().__init__()
        self.opened = opened
        self.in_flight = 0
        self.most_in_flight = 0
        self.files_read_at_write: list[int] = []

    async def _watched(self, write: Awaitable[list[int]]) -> Any:
        import asyncio

        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        self.files_read_at_write.append(len(self.opened))
        try:
            await asyncio.sleep(0.05)  # a slow server: the loader runs meanwhile
            return await write
        finally:
            self.in_flight -= 1

    async def replace_sources(self, *args: Any, **kwargs: Any) -> list[int]:
        # replace_source, one document, writes through here too.
        return list(await self._watched(super().replace_sources(*args, **kwargs)))


async def test_a_huge_document_is_written_alone_and_the_next_file_waits_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.ingest import bulk, indexing

    monkeypatch.setattr(indexing, "BATCH_PASSAGES", 10)
    monkeypatch.setattr(indexing, "IN_FLIGHT_PASSAGES", 40)
    monkeypatch.setattr(bulk, "LOAD_BATCH_PASSAGES", 10)  # load's groups, two in flight: 20
    folder = tmp_path / "six"
    folder.mkdir()
    for number in range(6):  # six files of ~60 passages each, every one over the bound
        (folder / f"part{number}.txt").write_text(" ".join(f"w{number}x{k}" for k in range(600)))
    opened: list[str] = []
    real = folders.read_path

    def read_path(path: Path, *args: Any, **kwargs: Any) -> Iterator[Any]:
        opened.append(path.name)
        yield from real(path, *args, **kwargs)

    monkeypatch.setattr(folders, "read_path", read_path)
    store = Watching(opened)
    report = await load_into(
        store, [folder], "w", chunking=ChunkingOptions(size=60, overlap=0), extractor=None
    )
    assert report.documents_indexed == 6 and min(r.passages_written for r in report.rows) > 40
    assert store.most_in_flight == 1
    assert store.files_read_at_write == [1, 2, 3, 4, 5, 6]


class Holding(Watching):
    """``Watching``, also counting the documents read and still alive while a write runs."""

    def __init__(self, opened: Sized) -> None:
        super().__init__(opened)
        self.documents_alive: list[int] = []
        self.texts_held: list[int] = []

    async def _watched(self, write: Awaitable[list[int]]) -> Any:
        import asyncio

        await asyncio.sleep(0.05)  # the loader runs on until it waits for this write
        alive = [o for o in gc.get_objects() if type(o) is SourceDocument]
        self.documents_alive.append(len(alive))
        self.texts_held.append(len(_texts_in_suspended_frames()))
        return await super()._watched(write)


def _texts_in_suspended_frames() -> list[str]:
    """Whole files' texts (10,000 characters or more) held by suspended generators' locals."""
    frames = [
        getattr(o, "gi_frame", None) or getattr(o, "ag_frame", None)
        for o in gc.get_objects()
        if isinstance(o, types.GeneratorType | types.AsyncGeneratorType)
    ]
    return [
        value
        for frame in frames
        if frame is not None
        for value in frame.f_locals.values()
        if isinstance(value, str) and len(value) >= 10_000
    ]


async def test_a_huge_documents_text_is_let_go_while_its_passages_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its passages hold their own copies of the text: a 42 MB file's decoded text stayed
    alive, held by the readers' and the indexer's suspended frames, through its write."""
    from core.ingest import bulk, indexing

    monkeypatch.setattr(indexing, "IN_FLIGHT_PASSAGES", 40)
    monkeypatch.setattr(bulk, "LOAD_BATCH_PASSAGES", 10)
    folder = tmp_path / "three"
    folder.mkdir()
    for number in range(3):
        (folder / f"part{number}.txt").write_text(" ".join(f"w{number}x{k}" for k in range(3_000)))
    store = Holding([])
    report = await load_into(
        store, [folder], "w", chunking=ChunkingOptions(size=60, overlap=0), extractor=None
    )
    assert report.documents_indexed == 3 and store.most_in_flight == 1
    assert store.documents_alive == [0, 0, 0] and store.texts_held == [0, 0, 0]


def test_loading_one_huge_line_takes_memory_in_proportion_to_its_size(tmp_path: Path) -> None:
    """Peak RSS of ``load`` (in memory, index included) over that of loading a tiny file, for a
    3 MB file of one line: 20x its size before the store stopped listing every passage's
    terms before indexing them; the bound is 12x (the 58 MB probe: ~560 MB)."""
    import subprocess
    import sys

    from tests.fixtures.probes import one_line

    size = 3_000_000
    (tmp_path / "huge.txt").write_bytes(one_line(size))
    (tmp_path / "tiny.txt").write_text("Flutter of heated wings.")
    peaks = {}
    for name in ("tiny.txt", "huge.txt"):
        measure = (
            "import resource, subprocess, sys;"
            "subprocess.run([sys.executable, '-m', 'core', 'load', sys.argv[1], '--workspace',"
            " 'w', '--dry-run'], check=True, stdout=subprocess.DEVNULL);"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
        )
        done = subprocess.run(
            [sys.executable, "-c", measure, str(tmp_path / name)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        peaks[name] = int(done.stdout.split()[-1]) * 1024
    assert peaks["huge.txt"] - peaks["tiny.txt"] < 12 * size, peaks


def test_an_upload_is_indexed_while_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from core.ingest import indexing
    from core.service import library
    from core.service.facade import LexplainService
    from tests.fixtures.probes import tiny_records

    monkeypatch.setattr(beir, "RECORDS_PER_PART", 100)
    monkeypatch.setattr(indexing, "BATCH_DOCUMENTS", 500)
    monkeypatch.setattr(library, "UPLOAD_BATCH_PASSAGES", 500)
    parsed: list[int] = []  # a document made per record read
    real = beir.built

    def parse(*args: Any) -> Any:
        parsed.append(1)
        return real(*args)

    monkeypatch.setattr(beir, "built", parse)
    store = Watching(parsed)

    async def factory() -> Watching:
        return store

    service = LexplainService(factory)
    try:
        (report,) = service.upload_files([("r.jsonl", tiny_records(5_000))], workspace="w")
    finally:
        service.close()
    assert report.documents == 5_000 and len(parsed) == 5_000
    # The first write came before the whole file was parsed (the parts are written as read).
    assert store.files_read_at_write[0] < 5_000


async def test_a_big_load_keeps_rows_for_the_first_documents_and_every_rejection_and_counts_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A row per document was ~600 bytes, 0.6 GB for a million tiny records: the report keeps
    the first ``REPORT_ROWS`` documents' rows and the rejections, and counts everything."""
    from core.domain.chunks import SourceDocument
    from core.ingest import report as reporting
    from core.ingest.indexing import index_documents

    monkeypatch.setattr(reporting, "REPORT_ROWS", 10)
    documents = [SourceDocument(source_id=f"d{n}", text=f"wing {n}") for n in range(200)]
    documents.insert(150, SourceDocument(source_id="d7", text="a second d7"))
    tenant = workspace_tenant_id("w")
    report = await index_documents(documents, InMemoryChunkStore(), tenant, extractor=None)
    assert [r.source_id for r in report.rows] == [f"d{n}" for n in range(10)] + ["d7"]
    assert report.rows[-1].status == "rejected" and report.rows_left_out == 190
    assert report.documents_indexed == 200 and report.passages_written == 200
    assert report.rejections == 1 and len(report.rejected) == 1
    assert sum(f.documents_indexed for f in report.by_file()) == 200


def test_an_upload_reports_every_document_of_a_file_beyond_the_rows_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from core.ingest import report as reporting
    from core.service.facade import LexplainService
    from tests.fixtures.probes import tiny_records

    monkeypatch.setattr(reporting, "REPORT_ROWS", 10)
    service = LexplainService.from_settings(Settings(store="memory"))
    try:
        data = tiny_records(50) + b'{"_id": "r0", "text": "again"}\n'
        (report,) = service.upload_files([("r.jsonl", data)], workspace="w")
    finally:
        service.close()
    assert report.documents == 50 and report.passages_written == 50
    assert len(report.source_ids) == 50
    assert report.notes == [
        "1 document rejected: line 51: duplicate _id 'r0' (first on line 1) — line skipped"
    ]


def test_load_lists_the_rejections_kept_and_says_how_many_more_there_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.ingest import report as reporting

    monkeypatch.setattr(reporting, "REPORT_ROWS", 2)
    monkeypatch.setattr(reporting, "REPORT_REMARKS", 5)
    lines = [b'{"_id": "d%d", "text": "wing"}\n' % n for n in range(3)]
    lines += [b'{"_id": "d0", "text": "again"}\n'] * 8
    (tmp_path / "r.jsonl").write_bytes(b"".join(lines))
    status, said = run_load(str(tmp_path / "r.jsonl"), "--workspace", "w")
    assert status == 1
    # The rows kept are the first five (the rejections read come first), the rest counted.
    assert "8 rejected:" in said and said.count("duplicate _id 'd0'") == 5
    assert "… and 3 more (not listed)" in said


def test_load_reads_a_jsonl_over_the_file_limit_and_refuses_only_a_record_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSONL is read a line at a time, so ``load`` bounds each record, not the file (a 556 MB
    BEIR corpus met the file limit); a record over the limit is skipped by its line, read past
    in pieces, and the limit is the setting (``LEXPLAIN_MAX_UPLOAD_MB``), as for other files."""
    from core.ingest import readers
    from tests.fixtures.probes import tiny_records

    monkeypatch.setenv("LEXPLAIN_MAX_UPLOAD_MB", "1")
    monkeypatch.setattr(readers, "_SKIP_BYTES", 4096)
    big = b'{"_id": "big", "text": "' + b"wing " * 300_000 + b'"}\n'  # 1.5 MB
    corpus = tmp_path / "corpus.jsonl"
    records = tiny_records(60_000).splitlines(keepends=True)
    corpus.write_bytes(b"".join(records[:2]) + big + b"".join(records[2:]))  # over 3 MB in all
    (tmp_path / "big.txt").write_bytes(b"wing " * 300_000)
    longest = [0]
    real_fdopen = os.fdopen

    class Watched(io.BufferedReader):
        def readline(self, size: int | None = -1) -> bytes:
            line = super().readline(size)
            longest[0] = max(longest[0], len(line))
            return line

    monkeypatch.setattr(
        folders.os, "fdopen", lambda fd, mode="rb": Watched(real_fdopen(fd, mode, buffering=0))
    )
    status, said = run_load(str(corpus), str(tmp_path / "big.txt"), "--workspace", "w")
    assert status == 1, said
    assert re.search(r"line 3: the record is 1\.4 MB, over the limit of 1\.0 MB per record", said)
    assert "big.txt: file too large: 1.4 MB, the limit is 1.0 MB" in said
    assert "2 rejected:" in said and re.search(r"corpus\.jsonl\s+│\s+60,?000 ", said), said
    assert longest[0] <= 1024 * 1024 + 1, "the record over the limit was held whole"


def test_the_upload_path_keeps_the_limit_per_file_for_a_jsonl() -> None:
    """The Upload page holds a file's bytes whole before reading: its limit stays per file."""
    from core.ingest.indexing import upload_parts
    from tests.fixtures.probes import tiny_records

    data = tiny_records(40_000)  # 1.4 MB of records, each tiny
    (part,) = list(upload_parts("c.jsonl", io.BytesIO(data), len(data), max_bytes=1024 * 1024))
    assert part.error is not None and part.error.startswith("file too large: 1.4 MB")
