"""Indexing: files -> passages + entities in a store; bad input never costs good data.

Runs against the in-memory store (the reference adapter); the command-line tests load the same
files into PostgreSQL and compare.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import pytest

from core.domain.chunks import ChunkingOptions, SourceDocument, StoredChunk, workspace_tenant_id
from core.domain.entities import Entity, RuleBasedExtractor, entity_id, load_entity_list
from core.ingest import indexing
from core.ingest.indexing import (
    NOT_WRITTEN,
    DocumentRow,
    IndexReport,
    UploadResult,
    index_documents,
    index_uploads,
    read_upload,
)
from core.stores.memory import InMemoryChunkStore
from core.stores.port import StoreUnavailable
from tests.fixtures.files import docx_bytes, image_only_pdf_bytes, pdf_bytes

TENANT = workspace_tenant_id("indexing tests")
SMALL = ChunkingOptions(size=200, overlap=30)


class FailingStore(InMemoryChunkStore):
    """The memory store, except that writing one source fails with an error the store does
    not classify as its own unavailability (so it may be the document's)."""

    def __init__(self, failing_source: str) -> None:
        super().__init__()
        self.failing_source = failing_source
        #: The sources of each write, in order.
        self.batches: list[list[str]] = []

    async def replace_sources(
        self,
        tenant_id: UUID,
        sources: Sequence[tuple[str, Sequence[StoredChunk]]],
        entities: Sequence[Entity] = (),
    ) -> list[int]:
        self.batches.append([source_id for source_id, _ in sources])
        if any(source_id == self.failing_source for source_id, _ in sources):
            raise ConnectionError("connection lost")
        return await super().replace_sources(tenant_id, sources, entities)


async def load(
    store: InMemoryChunkStore, files: dict[str, bytes], **options: object
) -> IndexReport:
    uploads = [read_upload(name, data) for name, data in files.items()]
    return await index_uploads(uploads, store, TENANT, **options)  # type: ignore[arg-type]


def texts(chunks: Sequence[StoredChunk]) -> list[str]:
    return [chunk.text for chunk in chunks]


MEMO = (
    "Dr Jane Whitfield of the Royal Aeronautical Society reviewed the tests.\n\n"
    "The wind tunnel at Farnborough was run by Acme Widgets Ltd for NASA. "
    "Results agree with theory at small incidence."
)


async def test_a_batch_with_one_bad_file_indexes_the_good_ones_and_reports_the_bad_one() -> None:
    store = InMemoryChunkStore()
    report = await load(
        store,
        {"memo.txt": MEMO.encode(), "scan.pdf": image_only_pdf_bytes(), "notes.md": b"# Notes"},
    )
    assert report.documents_indexed == 2
    assert [str(r) for r in report.rejected] == [
        "scan.pdf: scanned PDF without a text layer — nothing stored"
    ]
    assert [s.source_id for s in await store.list_sources(TENANT)] == ["memo.txt", "notes.md"]
    assert not report.ok
    assert UploadResult(file_name="scan.pdf", error="x").message() == "file scan.pdf: x"


async def test_a_failed_re_upload_of_a_stored_source_leaves_its_old_passages_in_place() -> None:
    store = InMemoryChunkStore()
    await load(store, {"memo.txt": MEMO.encode()}, chunking=SMALL)
    before = await store.get_by_source("memo.txt", TENANT)
    assert before
    # An unreadable file, a whitespace-only file and a text-less document all store nothing.
    report = await load(store, {"memo.txt": b"\x00\x01\x02\x03" * 300})
    assert report.rejected and report.rejected[0].reason.startswith("not text")
    report = await load(store, {"memo.txt": b"   \n  "})
    assert report.rejected[0].reason == "the file has only whitespace — nothing stored"
    blank = SourceDocument(source_id="memo.txt", text=" \n ")
    report = await index_documents([blank], store, TENANT)
    assert report.rejected[0].reason == "no text — nothing stored"
    assert await store.get_by_source("memo.txt", TENANT) == before


async def test_a_store_failure_rejects_that_document_only_and_keeps_what_it_had() -> None:
    store = FailingStore(failing_source="b.txt")
    old = StoredChunk(
        tenant_id=TENANT, source_id="b.txt", text="Old beta.", chunk_index=0, start_char=0,
        end_char=9,
    )  # fmt: skip
    await InMemoryChunkStore.replace_sources(store, TENANT, [("b.txt", [old])])
    first = SourceDocument(source_id="a.txt", text="Alpha passage.")
    second = SourceDocument(source_id="b.txt", text="Beta passage.")
    third = SourceDocument(source_id="c.txt", text="Gamma passage.")
    report = await index_documents([first, second, third], store, TENANT)
    assert [row.status for row in report.rows] == ["indexed", "rejected", "indexed"]
    assert report.rejected[0].reason == (
        "not stored (ConnectionError: connection lost); earlier passages kept"
    )
    assert report.documents_indexed == 2
    assert await store.get_by_source("b.txt", TENANT) == [old]


async def test_re_uploading_a_changed_document_replaces_its_passages_and_counts_the_orphans() -> (
    None
):
    store = InMemoryChunkStore()
    await load(store, {"memo.txt": MEMO.encode()}, chunking=SMALL)
    old = await store.get_by_source("memo.txt", TENANT)
    report = await load(store, {"memo.txt": b"A completely new memo."}, chunking=SMALL)
    (row,) = report.rows
    assert row.orphans_removed == len(old) and report.orphans_removed == len(old)
    assert texts(await store.get_by_source("memo.txt", TENANT)) == ["A completely new memo."]
    same = await load(store, {"memo.txt": b"A completely new memo."}, chunking=SMALL)
    assert same.orphans_removed == 0 and same.passages_written == 1


async def test_progress_is_reported_after_every_written_group_with_the_batch_total(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[int, int, str | None]] = []

    def progress(done: int, total: int, row: DocumentRow) -> None:
        seen.append((done, total, row.source_id))

    documents = [SourceDocument(source_id=f"d{i}", text=f"text {i}") for i in range(3)]
    await index_documents(documents, InMemoryChunkStore(), TENANT, on_progress=progress)
    assert seen == [(3, 3, "d2")]  # one group: one call (a call per document cost more)
    seen.clear()
    monkeypatch.setattr(indexing, "BATCH_PASSAGES", 1)
    await index_documents(documents, InMemoryChunkStore(), TENANT, on_progress=progress)
    assert seen == [(1, 3, "d0"), (2, 3, "d1"), (3, 3, "d2")]


async def test_two_documents_with_one_source_id_in_a_batch_keep_the_first() -> None:
    store = InMemoryChunkStore()
    report = await index_uploads(
        [read_upload("a/report.txt", b"first"), read_upload("b/report.txt", b"second")],
        store,
        TENANT,
    )
    assert [r.status for r in report.rows] == ["indexed", "rejected"]
    assert report.rejected[0].reason == (
        "same source id as a/report.txt in this batch — the first one was kept"
    )
    assert texts(await store.get_by_source("report.txt", TENANT)) == ["first"]


async def test_a_mixed_folder_of_real_files_ingests_with_expected_passages_offsets_entities() -> (
    None
):
    html = (
        b"<html><head><title>Briefing</title><script>var secret = 1;</script></head><body>"
        b"<p>Mr John Tanaka met Siemens AG in Berlin.</p><p>Tanaka agreed.</p></body></html>"
    )
    files = {
        "memo.txt": MEMO.encode(),
        "readme.md": b"# Setup\n\nInstall from GitHub.\n",
        "briefing.html": html,
        "paper.pdf": pdf_bytes(["Flutter tests at NACA.", "Results by Prof Maria Gonzalez."]),
        "letter.docx": docx_bytes(["Dear Dr Patel,", "Rolls-Royce plc will attend."]),
    }
    store = InMemoryChunkStore()
    report = await load(store, files, chunking=ChunkingOptions(size=80, overlap=10))
    assert report.ok and report.documents_indexed == 5
    uploads = {name: read_upload(name, data).documents[0] for name, data in files.items()}
    for source_id, document in uploads.items():
        chunks = await store.get_by_source(source_id, TENANT)
        assert chunks, source_id
        for chunk in chunks:
            assert document.text[chunk.start_char : chunk.end_char] == chunk.text
            for mention in chunk.metadata.get("mentions", []):
                assert str(mention["entity_id"]) in {str(e) for e in chunk.entity_ids}
    assert texts(await store.get_by_source("briefing.html", TENANT)) == [
        "Mr John Tanaka met Siemens AG in Berlin.\n\nTanaka agreed."
    ]
    assert texts(await store.get_by_source("paper.pdf", TENANT)) == [
        "Flutter tests at NACA.\n\nResults by Prof Maria Gonzalez."
    ]
    assert [c.metadata.get("page") for c in await store.get_by_source("paper.pdf", TENANT)] == [1]
    names = {(s.entity.name, s.entity.kind) for s in await store.list_entities(TENANT)}
    assert {
        ("Jane Whitfield", "person"),
        ("Royal Aeronautical Society", "organisation"),
        ("Acme Widgets Ltd", "organisation"),
        ("NASA", "organisation"),
        ("John Tanaka", "person"),
        ("Siemens AG", "organisation"),
        ("Berlin", "place"),
        ("NACA", "organisation"),
        ("Maria Gonzalez", "person"),
        ("Patel", "person"),
        ("Rolls-Royce plc", "organisation"),
    } <= names
    tanaka = await store.get_by_entity(entity_id("person", "John Tanaka"), TENANT)
    (chunk,) = tanaka
    marked = [chunk.text[m["start"] : m["end"]] for m in chunk.metadata["mentions"]]
    assert marked == ["John Tanaka", "Siemens AG", "Berlin", "Tanaka"]
    assert "secret" not in chunk.text


async def test_an_entity_list_links_aliases_to_one_stored_entity() -> None:
    extractor = RuleBasedExtractor(
        load_entity_list("National Aeronautics and Space Administration,organisation,NASA")
    )
    store = InMemoryChunkStore()
    documents = [
        SourceDocument(source_id="a", text="The nasa data."),
        SourceDocument(
            source_id="b", text="Data from the National Aeronautics and Space Administration."
        ),
    ]
    report = await index_documents(documents, store, TENANT, extractor=extractor)
    assert report.entities_found == 1
    (summary,) = await store.list_entities(TENANT)
    assert summary.entity.name == "National Aeronautics and Space Administration"
    assert summary.passages == 2


async def test_without_an_extractor_passages_carry_no_entities() -> None:
    store = InMemoryChunkStore()
    await index_documents(
        [SourceDocument(source_id="a", text="NASA and Boeing Co.")], store, TENANT, extractor=None
    )
    (chunk,) = await store.get_by_source("a", TENANT)
    assert chunk.entity_ids == [] and "mentions" not in chunk.metadata


async def test_whole_document_mode_stores_each_document_as_one_passage() -> None:
    store = InMemoryChunkStore()
    long_text = ("A sentence about flutter. " * 200).encode()
    report = await load(
        store, {"long.txt": long_text}, chunking=ChunkingOptions(whole_documents=True)
    )
    assert report.passages_written == 1
    (chunk,) = await store.get_by_source("long.txt", TENANT)
    assert chunk.start_char == 0 and chunk.end_char == len(long_text.strip())


async def test_a_jsonl_corpus_with_a_bad_line_loads_the_good_records_and_reports_the_line() -> None:
    store = InMemoryChunkStore()
    corpus = b'{"_id": "1", "text": "good one"}\n{broken\n{"_id": "2", "text": "good two"}\n'
    report = await load(store, {"corpus.jsonl": corpus})
    assert report.documents_indexed == 2
    assert [str(r) for r in report.rejected] == [
        "corpus.jsonl: line 2: not valid JSON (Expecting property name enclosed in double quotes)"
        " — line skipped"
    ]
    (summary,) = report.by_file()
    assert (summary.documents_indexed, summary.passages_written, len(summary.rejected)) == (2, 2, 1)


async def test_nul_bytes_in_an_upload_are_removed_and_the_note_reaches_the_report() -> None:
    store = InMemoryChunkStore()
    report = await load(store, {"nul.txt": b"wing\x00 flutter"})
    assert report.ok and report.rows[0].notes == ["removed 1 NUL character"]
    assert texts(await store.get_by_source("nul.txt", TENANT)) == ["wing flutter"]


async def test_a_fifty_megabyte_text_upload_loads_into_the_memory_store() -> None:
    line = "Run {}: boundary layer on a flat plate at Mach 2.5; transition moved aft.\n"
    data = "".join(line.format(i) for i in range(680_000)).encode()
    assert len(data) > 50_000_000
    store = InMemoryChunkStore()
    report = await load(store, {"big.txt": data}, extractor=None)
    assert report.ok and report.passages_written > 40_000
    summary = await store.corpus_summary(TENANT)
    assert summary.passages == report.passages_written


async def test_writing_one_at_a_time_or_several_at_once_stores_the_same_and_reports_in_order() -> (
    None
):
    documents = [
        SourceDocument(source_id=f"doc-{i:02d}", text=f"Report {i} from NASA. " * (i + 1))
        for i in range(12)
    ]
    stores = [InMemoryChunkStore(), InMemoryChunkStore()]
    reports = [
        await index_documents(documents, stores[0], TENANT, chunking=SMALL, concurrency=1),
        await index_documents(documents, stores[1], TENANT, chunking=SMALL, concurrency=4),
    ]
    assert reports[0] == reports[1]
    assert [row.source_id for row in reports[1].rows] == [d.source_id for d in documents]
    snapshots = [
        [
            c
            for s in await store.list_sources(TENANT)
            for c in await store.get_by_source(s.source_id, TENANT)
        ]
        for store in stores
    ]
    assert snapshots[0] == snapshots[1]
    with pytest.raises(ValueError, match="concurrency"):
        await index_documents(documents, stores[0], TENANT, concurrency=0)


async def test_documents_are_written_in_one_batch_and_a_failed_batch_again_one_by_one() -> None:
    store = FailingStore("doc7")
    documents = [
        SourceDocument(source_id=f"doc{i}", text=f"Passage {i} about gliders and wings.")
        for i in range(12)
    ]
    report = await index_documents(documents, store, TENANT)
    assert [row.status for row in report.rows] == ["indexed"] * 7 + ["rejected"] + ["indexed"] * 4
    assert "connection lost" in (report.rows[7].reason or "")
    # One write for all twelve, then (it failed) one per document.
    assert store.batches[0] == [f"doc{i}" for i in range(12)]
    assert store.batches[1:] == [[f"doc{i}"] for i in range(12)]
    assert len(await store.list_sources(TENANT)) == 11


class VanishingStore(FailingStore):
    """A store whose database goes away after ``writes`` writes (every later one fails)."""

    def __init__(self, writes: int, failing_source: str = "") -> None:
        super().__init__(failing_source)
        self.writes = writes

    async def replace_sources(
        self,
        tenant_id: UUID,
        sources: Sequence[tuple[str, Sequence[StoredChunk]]],
        entities: Sequence[Entity] = (),
    ) -> list[int]:
        if len(self.batches) >= self.writes:
            self.batches.append([source_id for source_id, _ in sources])
            raise StoreUnavailable("the database did not answer (planted)")
        return await super().replace_sources(tenant_id, sources, entities)


def gliders(count: int) -> list[SourceDocument]:
    return [
        SourceDocument(source_id=f"doc{i}", text=f"Passage {i} about gliders and wings.")
        for i in range(count)
    ]


async def test_an_unavailable_store_stops_the_load_instead_of_writing_one_document_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(indexing, "BATCH_PASSAGES", 4)
    store = VanishingStore(writes=1)
    seen: list[int] = []
    report = await index_documents(
        gliders(12), store, TENANT, concurrency=1, on_progress=lambda done, _, __: seen.append(done)
    )
    # The first group landed; the second failed whole and was not split; the third never ran.
    assert store.batches == [[f"doc{i}" for i in range(4)], [f"doc{i}" for i in range(4, 8)]]
    assert report.stopped == "the database did not answer (planted)"
    assert [row.status for row in report.rows] == ["indexed"] * 4 + ["rejected"] * 8
    assert {row.reason for row in report.rows[4:]} == {NOT_WRITTEN}
    assert report.documents_indexed == 4 and report.not_written == 8
    # Per group counted: the two groups, then what was left after the stop, up to every one.
    assert seen[:2] == [4, 8] and seen[-1] == 12 and seen == sorted(set(seen))
    assert len(await store.list_sources(TENANT)) == 4


async def test_a_store_lost_during_the_one_by_one_writes_stops_there_and_keeps_what_landed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(indexing, "BATCH_PASSAGES", 6)
    # The group fails on doc1's data, doc0 is written alone, then the store goes away.
    store = VanishingStore(writes=2, failing_source="doc1")
    report = await index_documents(gliders(12), store, TENANT, concurrency=1)
    assert store.batches == [[f"doc{i}" for i in range(6)], ["doc0"], ["doc1"]]
    assert [row.status for row in report.rows] == ["indexed"] + ["rejected"] * 11
    assert report.not_written == 11 and report.stopped is not None


async def test_a_stopped_load_with_writes_in_flight_reports_every_document_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(indexing, "BATCH_PASSAGES", 2)
    store = VanishingStore(writes=3)
    report = await index_documents(gliders(40), store, TENANT, concurrency=4)
    assert [row.source_id for row in report.rows] == [f"doc{i}" for i in range(40)]
    assert all(len(batch) == 2 for batch in store.batches)  # never one document alone
    assert report.documents_indexed == 6 and report.not_written == 34


async def test_a_load_stopped_mid_file_counts_every_later_document_of_every_file_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Documents come a file (or a JSONL part) at a time: after the stop, the rest of the file
    being cut and every later file are counted as not written, each document once, in order,
    a file's notes on its first row."""
    monkeypatch.setattr(indexing, "BATCH_PASSAGES", 4)
    uploads = [
        UploadResult(
            file_name=f"f{k}.jsonl",
            documents=[
                SourceDocument(source_id=f"f{k}-{i}", text=f"Passage {i} about wings.")
                for i in range(5)
            ],
            notes=[f"note of f{k}"],
        )
        for k in range(6)
    ]
    store = VanishingStore(writes=1)
    report = await index_uploads(uploads, store, TENANT, concurrency=1)
    expected = [f"f{k}-{i}" for k in range(6) for i in range(5)]
    assert [row.source_id for row in report.rows] == expected
    assert report.documents_indexed == 4 and report.not_written == 26
    assert [row.notes for row in report.rows if row.notes] == [[f"note of f{k}"] for k in range(6)]
    assert [f.documents_indexed + f.documents_rejected for f in report.by_file()] == [5] * 6
