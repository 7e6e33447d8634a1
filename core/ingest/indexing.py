"""Documents -> passages + entities -> a store, in batches of documents, with a report.

Documents are cut and their entities extracted in order, then written in groups of up to
``BATCH_PASSAGES`` passages: one ``replace_sources`` per group (its entities, its sources'
orphans, its passages, their terms and the statistics: one transaction), so re-uploading a
document still replaces its passages atomically. Everything is decided before the store is
touched: a document that would store nothing (no text) is rejected rather than written as an
empty source, because that would delete the passages of an earlier, good upload.

Why groups, not one transaction per document: in PostgreSQL each transaction pays for its
staging tables, locks, statistics rows and commit; one per document loaded ~150 passages/s,
however fast COPY is. Why not one transaction for the whole load: it would hold locks for the
whole load and one bad file would undo a thousand good ones. When a group's write fails on its
data, its documents are written again one by one, so the bad document is named with its reason
and the others are stored. When it fails because the store is unavailable (its database gone, out
of a resource, not answering: ``StoreUnavailable``, raised after the store's own retries), no
document is to blame and every single write would fail the same way (measured: a killed server
turned a 4,000-document load into 9 min 44 s of single-document retries and 4,000 identical
lines), so the load stops there and the report says why and what was kept (``stopped``).
Up to ``WRITE_CONCURRENCY`` groups are written at once while the next is being prepared (the
database works while Python cuts); rows come back in input order. What is in flight is bounded
by passages, not by a count of groups (``IN_FLIGHT_PASSAGES``): a group larger than that (one
huge document is one group, since its passages replace the source in one transaction) is
written alone, and no further document is read or cut while it is. Bounding by groups alone
let four 42 MB documents be in flight with a fifth being cut (3.4 GB for six such files).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from typing import IO, NamedTuple
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from core.checkpoint import checkpoint, turn_due
from core.domain.chunks import (
    ChunkingOptions,
    PassageMention,
    SourceDocument,
    build_chunks,
    split_document,
)
from core.domain.entities import EntityExtractor, RuleBasedExtractor
from core.ingest.limits import DEFAULT_MAX_BYTES, too_many_words
from core.ingest.names import printable_name
from core.ingest.readers import read_file, read_parts
from core.ingest.report import (
    NOT_WRITTEN as NOT_WRITTEN,
)
from core.ingest.report import (
    DocumentRow as DocumentRow,
)
from core.ingest.report import (
    FileSummary as FileSummary,
)
from core.ingest.report import (
    IndexReport as IndexReport,
)
from core.ingest.report import (
    Rejection as Rejection,
)
from core.ingest.report import (
    Tally,
)
from core.ingest.report import (
    summarise as summarise,
)
from core.ingest.results import LineProblem, ReadError
from core.ingest.seen import FirstFiles
from core.ingest.writes import COUNT_STEP as COUNT_STEP
from core.ingest.writes import (
    Counted,
    InFlight,
    Outcome,
    Prepared,
    Slot,
    Unwritten,
    unwritten,
    write_group,
)
from core.ingest.writes import ProgressCallback as ProgressCallback
from core.stores.port import ChunkStore, StoreUnavailable

#: Documents written at once (a PostgreSQL store writes each in its own transaction and
#: connection; 4 halves Cranfield's load time, more adds lock waits on the shared statistics).
WRITE_CONCURRENCY = 4
#: Passages per bulk write: many documents in one transaction (COPY plus set-based statements),
#: so the per-transaction costs (staging tables, locks, statistics rows) are paid per batch.
BATCH_PASSAGES = 5_000
#: Documents per bulk write at most (the progress bar moves per batch).
BATCH_DOCUMENTS = 5_000
#: Passages in groups being written at once at most; a group over it is written alone and
#: nothing more is read meanwhile (four ordinary groups fit, so ordinary loads keep their pace).
IN_FLIGHT_PASSAGES = WRITE_CONCURRENCY * BATCH_PASSAGES
#: The extractor used when the caller names none (rules only; see EXTRACTOR_LIMITS).
DEFAULT_EXTRACTOR: EntityExtractor = RuleBasedExtractor()


class UploadResult(BaseModel):
    """One uploaded file read: its documents, or the error that stopped it."""

    model_config = ConfigDict(frozen=True)

    file_name: str
    documents: list[SourceDocument] = Field(default_factory=list)
    #: Records skipped inside the file (JSONL lines), each with its reason.
    problems: list[LineProblem] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    #: Why nothing could be read from the file, or None.
    error: str | None = None

    def message(self) -> str | None:
        """ "file X: <reason>" when the file could not be read."""
        return None if self.error is None else f"file {self.file_name}: {self.error}"


def read_upload(
    name: str, data: bytes, *, source_id: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
) -> UploadResult:
    """Read one uploaded file whole; a bad file gives ``error`` instead of raising."""
    try:
        result = read_file(name, data, source_id=source_id, max_bytes=max_bytes)
    except ReadError as exc:
        return UploadResult(file_name=printable_name(name), error=exc.reason)
    return UploadResult(
        file_name=printable_name(name),
        documents=result.documents,
        problems=result.problems,
        notes=result.notes,
    )


def upload_parts(
    name: str,
    stream: IO[bytes],
    size: int,
    *,
    shown: str | None = None,
    source_id: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    per_record: bool = False,
) -> Iterator[UploadResult]:
    """One file read a part at a time (``read_parts``, ``per_record`` as there), each part an
    ``UploadResult`` named ``shown`` (default: the printable ``name``); a file that cannot be
    read, or stops being readable part-way, ends in a part with ``error``."""
    label = shown or printable_name(name)
    try:
        for part in read_parts(
            name, stream, size, source_id=source_id, max_bytes=max_bytes, per_record=per_record
        ):
            read = [
                UploadResult(
                    file_name=label, documents=part.documents, problems=part.problems,
                    notes=part.notes,
                )
            ]  # fmt: skip
            del part  # held while suspended, it would keep the part's documents alive
            yield read.pop()
    except ReadError as exc:
        yield UploadResult(file_name=label, error=exc.reason)
    except OSError as exc:
        yield UploadResult(file_name=label, error=f"cannot be read: {exc.strerror or exc}")


async def index_documents(
    documents: Sequence[SourceDocument],
    store: ChunkStore,
    tenant_id: UUID,
    *,
    chunking: ChunkingOptions | None = None,
    extractor: EntityExtractor | None = DEFAULT_EXTRACTOR,
    on_progress: ProgressCallback | None = None,
    concurrency: int = WRITE_CONCURRENCY,
) -> IndexReport:
    """Cut, extract and store each document; one bad document never stops the batch.

    ``extractor=None`` stores passages without entities; ``concurrency`` is how many documents
    are written at once (1: strictly one after another).
    """
    return await index_parts(
        _each([Part("", documents, [])]), store, tenant_id, chunking, extractor, on_progress,
        [], concurrency, total=len(documents),
    )  # fmt: skip


async def _each(parts: Iterable[Part]) -> AsyncIterator[Part]:
    for part in parts:
        yield part


class Part(NamedTuple):
    """Documents read together (a file, or a part of a JSONL corpus); ``notes`` go with the
    first document's row (one row shows them once). ``prepared``: each document already cut
    (``prepare``, in another process: ``core.ingest.aside``; ``documents`` then empty), else
    None (cut here)."""

    file: str
    documents: Sequence[SourceDocument]
    notes: list[str]
    prepared: Sequence[Prepared | DocumentRow] | None = None


async def index_parts(
    parts: AsyncIterator[Part],
    store: ChunkStore,
    tenant_id: UUID,
    chunking: ChunkingOptions | None,
    extractor: EntityExtractor | None,
    on_progress: ProgressCallback | None,
    early: list[DocumentRow],
    concurrency: int = WRITE_CONCURRENCY,
    before_first_write: Callable[[], Awaitable[None]] | None = None,
    batch_passages: int | None = None,
    total: int = 0,
) -> IndexReport:
    """Prepare documents in order, in groups of up to ``BATCH_PASSAGES`` passages (or
    ``batch_passages``); write up to ``concurrency`` groups at once (each one transaction);
    counted in input order as groups end. ``before_first_write`` is awaited once, before the
    first group holding a document is written (``load`` registers its workspace there, not
    before reading). ``early`` holds the rows of what was refused while reading; they come
    first in the report. ``total``: the documents to come when known (else what has arrived).

    Documents come a part at a time and are prepared in a plain loop: an async generator step,
    two awaited coroutines and a tuple per document were ~10 us of a tiny document's ~80. The
    loop still reaches a checkpoint before every document when one is due (``turn_due``)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    options = chunking or ChunkingOptions()
    first_file = FirstFiles()
    known = bool(total)
    batch, documents, bound = BATCH_PASSAGES, BATCH_DOCUMENTS, IN_FLIGHT_PASSAGES
    if batch_passages is not None:  # two such groups in flight: one staged while one is written
        batch, documents, bound = batch_passages, max(documents, batch_passages), 2 * batch_passages
    gate = InFlight(concurrency, bound)
    tally = Tally()
    counted = Counted(tally, early, on_progress)
    stopped: list[StoreUnavailable] = []

    async def write(group: list[Prepared | DocumentRow], weight: int, slot: Slot) -> None:
        try:
            outcomes, failure = await write_group(group, store, tenant_id)
        finally:
            gate.release(weight)
        if failure is not None and not stopped:
            stopped.append(failure)
        group.clear()  # the outcomes hold the documents now: the drain lets go of them in steps
        slot.outcomes = outcomes
        await counted.drain(total)

    group: list[Prepared | DocumentRow] = []
    passages = 0
    tasks: list[asyncio.Task[None]] = []

    async def hold(outcomes: list[Outcome]) -> None:
        """Count what a stopped load does not write, after every group in flight."""
        await asyncio.gather(*tasks, return_exceptions=True)
        counted.queue.append(Slot(outcomes))
        await counted.drain(total)

    first_write = [before_first_write] if before_first_write is not None else []

    async def flush() -> None:
        nonlocal group, passages
        if first_write and any(isinstance(member, Prepared) for member in group):
            await first_write.pop()()
        if group:
            await gate.acquire(passages)
            if stopped:  # failed while this group waited for a slot
                gate.release(passages)
                await hold([unwritten(member) for member in group])
            else:
                slot = Slot(None)
                counted.queue.append(slot)
                tasks[:] = [task for task in tasks if not task.done()]
                tasks.append(asyncio.ensure_future(write(group, passages, slot)))
            group, passages = [], 0

    rest_counted = False
    try:
        while True:
            # Nothing more is read or cut while the groups in flight hold the bound.
            if gate.full:
                await gate.room()
            part = await anext(parts, None)
            if part is None:
                break
            file, arrived, part_notes, ready = part
            total += 0 if known else _size(part)
            for position in range(_size(part)):
                notes = part_notes if position == 0 else []
                if gate.full:
                    await gate.room()
                if turn_due():
                    await checkpoint()
                if stopped:  # the store is unavailable: the rest is counted, not prepared
                    rest = [unwritten(member) for member in group]
                    rest += _unwritten_part(part, position, notes)
                    await hold(rest)
                    group, rest_counted = [], True
                    async for more in parts:
                        total += 0 if known else _size(more)
                        await hold(_unwritten_part(more, 0, more.notes))
                    break
                if ready is None:
                    prepared = prepare(
                        file, arrived[position], notes, tenant_id, options, extractor, first_file
                    )
                else:
                    prepared = ready[position]
                group.append(prepared)
                if type(prepared) is Prepared:
                    passages += len(prepared.chunks)
                if passages >= batch or len(group) >= documents:
                    await flush()
            if rest_counted:
                break
            # A part's documents go once cut: their passages hold their own text, and a huge
            # document's text (a 42 MB file: 40 MiB) stayed alive through its write, held
            # here and by the readers' suspended frames (which hold none either).
            del part, arrived, ready
        await flush()
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
    await counted.drain(total)
    return tally.report(
        entity_total=len(counted.entity_ids), stopped=str(stopped[0]) if stopped else None
    )


def refused_rows(
    file: str, error: str | None, problems: Sequence[LineProblem]
) -> list[DocumentRow]:
    """The rows of a file that could not be read (``error``), else of its skipped records."""
    if error is not None:
        return [DocumentRow(file=file, status="rejected", reason=error)]
    return [
        DocumentRow(file=file, status="rejected", reason=f"line {p.line}: {p.reason}")
        for p in problems
    ]


def rejected_row(file: str, source_id: str, notes: list[str], reason: str) -> DocumentRow:
    return DocumentRow(
        file=file, source_id=source_id, status="rejected", reason=reason, notes=notes
    )


def _size(part: Part) -> int:
    return len(part.documents) if part.prepared is None else len(part.prepared)


def _unwritten_part(part: Part, start: int, notes: list[str]) -> list[Outcome]:
    """A part's documents from ``start`` on as not written (``notes`` with the first)."""
    if part.prepared is None:
        ids = [document.source_id for document in part.documents[start:]]
    else:
        ids = [member.source_id or "" for member in part.prepared[start:]]
    return [Unwritten(part.file, s, notes if at == 0 else []) for at, s in enumerate(ids)]


def prepare(
    file: str,
    document: SourceDocument,
    notes: list[str],
    tenant_id: UUID,
    options: ChunkingOptions,
    extractor: EntityExtractor | None,
    first_file: FirstFiles,
) -> Prepared | DocumentRow:
    """Everything before the store: the passages and entities, or the reason there are none."""
    source_id, text = document.source_id, document.text
    earlier = first_file.get(source_id)
    if earlier is not None:
        where = earlier or "an earlier document"
        reason = f"same source id as {where} in this batch — the first one was kept"
        return rejected_row(file, source_id, notes, reason)
    first_file.add(source_id, file or source_id)
    too_varied = too_many_words(text)
    if too_varied is not None:
        return rejected_row(file, source_id, notes, too_varied)
    try:
        spans = split_document(text, options)
        if not spans:
            return rejected_row(file, source_id, notes, "no text — nothing stored")
        mentions = extractor.extract(text) if extractor is not None else None
        if not mentions:  # most tiny documents name no entity
            chunks = build_chunks(document, tenant_id, spans)
            return Prepared(file, source_id, notes, chunks, [], len(spans) - len(chunks))
        entities = {m.entity.entity_id: m.entity for m in mentions}
        located = [PassageMention(m.start, m.end, m.entity.entity_id) for m in mentions]
        chunks = build_chunks(document, tenant_id, spans, located)
    except ValueError as exc:
        return rejected_row(file, source_id, notes, f"cannot be cut into passages: {exc}")
    used = {entity_id for chunk in chunks for entity_id in chunk.entity_ids}
    wanted = [entity for entity_id, entity in entities.items() if entity_id in used]
    return Prepared(file, source_id, notes, chunks, wanted, len(spans) - len(chunks))


async def index_uploads(
    uploads: Iterable[UploadResult],
    store: ChunkStore,
    tenant_id: UUID,
    *,
    chunking: ChunkingOptions | None = None,
    extractor: EntityExtractor | None = DEFAULT_EXTRACTOR,
    on_progress: ProgressCallback | None = None,
    concurrency: int = WRITE_CONCURRENCY,
    before_first_write: Callable[[], Awaitable[None]] | None = None,
    batch_passages: int | None = None,
) -> IndexReport:
    """Index the documents of files already read; unreadable files and skipped records are rows.

    The rows of unreadable files and skipped JSONL records come first (nothing was stored for
    them), then one row per document in file order. ``uploads`` may be a generator that reads
    each file (or part of one) only when the indexer asks for it: then one file at a time is
    in memory, and what has been read is written while the rest is read.
    """
    early: list[DocumentRow] = []
    files = iter(uploads)

    async def parts() -> AsyncIterator[Part]:
        while True:
            # Read off the event loop: parsing a file (a PDF waits for its sandbox) must not
            # hold the service's loop, where every session's search runs.
            upload = await asyncio.to_thread(next, files, None)
            if upload is None:
                return
            early.extend(refused_rows(upload.file_name, upload.error, upload.problems))
            ready = [Part(upload.file_name, upload.documents, list(upload.notes))]
            if upload.error is not None or not upload.documents:
                ready.clear()
            del upload  # not held while suspended (``index_parts``)
            while ready:
                yield ready.pop()

    return await index_parts(
        parts(), store, tenant_id, chunking, extractor, on_progress, early, concurrency,
        before_first_write, batch_passages,
    )  # fmt: skip
