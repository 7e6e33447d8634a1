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
from collections import deque
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Sequence,
    Sized,
)
from typing import IO, NamedTuple
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from core.checkpoint import checkpoint
from core.domain.chunks import (
    ChunkingOptions,
    PassageMention,
    SourceDocument,
    StoredChunk,
    build_chunks,
    split_document,
)
from core.domain.entities import Entity, EntityExtractor, RuleBasedExtractor
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
#: Outcomes counted into the report between two checkpoints (Cranfield's 1,398 held the loop 11 ms).
COUNT_STEP = 64
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


#: Called after each group of documents is counted: (documents done, documents in total, the
#: group's last row).
ProgressCallback = Callable[[int, int, DocumentRow], None]


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
            yield UploadResult(
                file_name=label, documents=part.documents, problems=part.problems,
                notes=part.notes,
            )  # fmt: skip
    except ReadError as exc:
        yield UploadResult(file_name=label, error=exc.reason)
    except OSError as exc:
        yield UploadResult(file_name=label, error=f"cannot be read: {exc.strerror or exc}")


def _mentioned_entities(
    document: SourceDocument, extractor: EntityExtractor | None
) -> tuple[list[PassageMention], dict[UUID, Entity]]:
    if extractor is None:
        return [], {}
    mentions = extractor.extract(document.text)
    entities = {m.entity.entity_id: m.entity for m in mentions}
    located = [PassageMention(m.start, m.end, m.entity.entity_id) for m in mentions]
    return located, entities


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
    items = [_Item(file="", document=document, notes=[]) for document in documents]
    return await _index_items(
        items, store, tenant_id, chunking, extractor, on_progress, [], concurrency
    )


class _Item(NamedTuple):
    file: str
    document: SourceDocument
    notes: list[str]


async def _index_items(
    items: Sequence[_Item] | AsyncIterator[_Item],
    store: ChunkStore,
    tenant_id: UUID,
    chunking: ChunkingOptions | None,
    extractor: EntityExtractor | None,
    on_progress: ProgressCallback | None,
    early: list[DocumentRow],
    concurrency: int = WRITE_CONCURRENCY,
    before_first_write: Callable[[], Awaitable[None]] | None = None,
    batch_passages: int | None = None,
) -> IndexReport:
    """Prepare documents in order, in groups of up to ``BATCH_PASSAGES`` passages (or
    ``batch_passages``); write up to ``concurrency`` groups at once (each one transaction);
    counted in input order as groups end. ``before_first_write`` is awaited once, before the
    first group holding a document is written (``load`` registers its workspace there, not
    before reading). ``early`` holds the rows of what was refused while reading; they come
    first in the report."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    options = chunking or ChunkingOptions()
    first_file: dict[str, str] = {}
    # Documents arrive as files are read, so the total is what has arrived so far.
    total = len(items) if isinstance(items, Sized) else 0
    batch, documents, bound = BATCH_PASSAGES, BATCH_DOCUMENTS, IN_FLIGHT_PASSAGES
    if batch_passages is not None:  # two such groups in flight: one staged while one is written
        batch, documents, bound = batch_passages, max(documents, batch_passages), 2 * batch_passages
    gate = _InFlight(concurrency, bound)
    tally = Tally()
    counted = _Counted(tally, early, on_progress)
    stopped: list[StoreUnavailable] = []

    async def write_group(group: list[_Prepared | DocumentRow], weight: int, slot: _Slot) -> None:
        try:
            outcomes, failure = await _write_group(group, store, tenant_id)
        finally:
            gate.release(weight)
        if failure is not None and not stopped:
            stopped.append(failure)
        slot.outcomes = outcomes
        await counted.drain(total)

    group: list[_Prepared | DocumentRow] = []
    passages = 0
    tasks: list[asyncio.Task[None]] = []

    async def hold(outcomes: list[_Outcome]) -> None:
        """Count what a stopped load does not write, after every group in flight."""
        await asyncio.gather(*tasks, return_exceptions=True)
        counted.queue.append(_Slot(outcomes))
        await counted.drain(total)

    first_write = [before_first_write] if before_first_write is not None else []

    async def flush() -> None:
        nonlocal group, passages
        if first_write and any(isinstance(member, _Prepared) for member in group):
            await first_write.pop()()
        if group:
            await gate.acquire(passages)
            if stopped:  # failed while this group waited for a slot
                gate.release(passages)
                await hold([_unwritten(member) for member in group])
            else:
                slot = _Slot(None)
                counted.queue.append(slot)
                tasks[:] = [task for task in tasks if not task.done()]
                tasks.append(asyncio.ensure_future(write_group(group, passages, slot)))
            group, passages = [], 0

    pending = items if isinstance(items, AsyncIterator) else _each(items)
    try:
        while True:
            # Nothing more is read or cut while the groups in flight hold the bound.
            await gate.room()
            await checkpoint()
            item = await anext(pending, None)
            if item is None:
                break
            if not isinstance(items, Sized):
                total += 1
            if stopped:  # the store is unavailable: the rest is counted, not prepared
                await hold([_unwritten(member) for member in group] + [_Unwritten(item)])
                async for rest in pending:
                    total += not isinstance(items, Sized)
                    await hold([_Unwritten(rest)])
                group = []
                break
            prepared = _prepare(item, tenant_id, options, extractor, first_file)
            group.append(prepared)
            if isinstance(prepared, _Prepared):
                passages += len(prepared.chunks)
            if passages >= batch or len(group) >= documents:
                await flush()
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


class _Slot:
    """A group's place in input order; ``outcomes`` is set when its write ends."""

    __slots__ = ("outcomes",)

    def __init__(self, outcomes: list[_Outcome] | None) -> None:
        self.outcomes = outcomes


class _Counted:
    """Outcomes counted into the report in input order, as the groups before them end, with
    progress once per group (a call per document cost more than a tiny document's write)."""

    def __init__(
        self, tally: Tally, early: list[DocumentRow], on_progress: ProgressCallback | None
    ) -> None:
        self.tally = tally
        self.early = early
        self.on_progress = on_progress
        self.queue: deque[_Slot] = deque()
        self.entity_ids: set[UUID] = set()
        self.done = 0
        #: One drain at a time: a second waits while one gives way, so the order is kept.
        self.lock = asyncio.Lock()

    async def drain(self, total: int) -> None:
        async with self.lock:
            # Rows of files refused while reading come first (read before anything was written).
            for row in self.early:
                self.tally.add(row)
            self.early.clear()
            while self.queue and self.queue[0].outcomes is not None:
                outcomes = self.queue.popleft().outcomes or []
                for done, outcome in enumerate(outcomes, start=1):
                    self._count(outcome)
                    if done % COUNT_STEP == 0:
                        await checkpoint()
                self.done += len(outcomes)
                if outcomes and self.on_progress is not None:
                    self.on_progress(self.done, max(total, self.done), _row(outcomes[-1]))

    def _count(self, outcome: _Outcome) -> None:
        if isinstance(outcome, _Stored):
            (file, document, notes), chunks, entities, duplicates = outcome.prepared
            self.tally.stored(
                file, document.source_id, passages=len(chunks), duplicates=duplicates,
                entities=len(entities), orphans=outcome.orphans, notes=notes,
            )  # fmt: skip
            self.entity_ids.update(entity.entity_id for entity in entities)
        else:
            self.tally.add(_row(outcome))


async def _each(items: Iterable[_Item]) -> AsyncIterator[_Item]:
    for item in items:
        yield item


class _InFlight:
    """Groups being written: at most ``groups`` at once, holding at most ``passages`` passages
    together; a group over ``passages`` is admitted only when nothing else is in flight."""

    def __init__(self, groups: int, passages: int) -> None:
        self._limits = (groups, passages)
        self._groups = 0
        self._passages = 0
        self._changed = asyncio.Event()

    def _fits(self, weight: int) -> bool:
        groups, passages = self._limits
        if not self._groups:
            return True
        return self._groups < groups and self._passages + weight <= passages

    async def room(self) -> None:
        """Wait until the groups in flight hold no more than the passage bound."""
        while self._groups and self._passages > self._limits[1]:
            self._changed.clear()
            await self._changed.wait()

    async def acquire(self, weight: int) -> None:
        """Wait until a group of ``weight`` passages may be written, and count it in."""
        while not self._fits(weight):
            self._changed.clear()
            await self._changed.wait()
        self._groups += 1
        self._passages += weight

    def release(self, weight: int) -> None:
        self._groups -= 1
        self._passages -= weight
        self._changed.set()


class _Prepared(NamedTuple):
    item: _Item
    chunks: list[StoredChunk]
    entities: list[Entity]
    duplicates: int


def _prepare(
    item: _Item,
    tenant_id: UUID,
    options: ChunkingOptions,
    extractor: EntityExtractor | None,
    first_file: dict[str, str],
) -> _Prepared | DocumentRow:
    """Everything before the store: the passages and entities, or the reason there are none."""
    file, document, doc_notes = item
    source_id = document.source_id

    def rejected(reason: str) -> DocumentRow:
        return DocumentRow(
            file=file, source_id=source_id, status="rejected", reason=reason, notes=doc_notes
        )

    if source_id in first_file:
        earlier = first_file[source_id] or "an earlier document"
        return rejected(f"same source id as {earlier} in this batch — the first one was kept")
    first_file[source_id] = file or source_id
    too_varied = too_many_words(document.text)
    if too_varied is not None:
        return rejected(too_varied)
    try:
        spans = split_document(document.text, options)
        if not spans:
            return rejected("no text — nothing stored")
        mentions, entities = _mentioned_entities(document, extractor)
        chunks = build_chunks(document, tenant_id, spans, mentions)
    except ValueError as exc:
        return rejected(f"cannot be cut into passages: {exc}")
    used = {entity_id for chunk in chunks for entity_id in chunk.entity_ids}
    wanted = [entity for entity_id, entity in entities.items() if entity_id in used]
    return _Prepared(item, chunks, wanted, len(spans) - len(chunks))


class _Stored(NamedTuple):
    """A document written, with the passages of its earlier version it removed."""

    prepared: _Prepared
    orphans: int


class _Unwritten(NamedTuple):
    """A document a stopped load did not write."""

    item: _Item


#: What became of one document: stored, not written, or a row saying why not.
_Outcome = _Stored | _Unwritten | DocumentRow


def _row(outcome: _Outcome) -> DocumentRow:
    """The report row of ``outcome`` (made only when shown or kept: one is a model)."""
    if isinstance(outcome, DocumentRow):
        return outcome
    if isinstance(outcome, _Unwritten):
        file, document, notes = outcome.item
        return DocumentRow(
            file=file, source_id=document.source_id, status="rejected", reason=NOT_WRITTEN,
            notes=notes,
        )  # fmt: skip
    (file, document, notes), chunks, entities, duplicates = outcome.prepared
    return DocumentRow(
        file=file, source_id=document.source_id, status="indexed", passages_written=len(chunks),
        duplicate_passages=duplicates, entities_found=len(entities),
        orphans_removed=outcome.orphans, notes=notes,
    )  # fmt: skip


async def _write_group(
    group: Sequence[_Prepared | DocumentRow], store: ChunkStore, tenant_id: UUID
) -> tuple[list[_Outcome], StoreUnavailable | None]:
    """The group's documents in one ``replace_sources``; if that fails on its data, each on its
    own, so the one bad document is named and the others are stored. An unavailable store
    ends the group there: its unwritten documents are ``_Unwritten``, and the failure is
    returned for the report."""
    prepared = [p for p in group if isinstance(p, _Prepared)]
    written: dict[int, _Outcome] = {}
    if len(prepared) > 1:
        entities = {e.entity_id: e for p in prepared for e in p.entities}
        try:
            removed = await store.replace_sources(
                tenant_id,
                [(p.item.document.source_id, p.chunks) for p in prepared],
                list(entities.values()),
            )
        except StoreUnavailable as exc:  # no document is to blame: do not split the group
            return [_unwritten(member) for member in group], exc
        except Exception:  # the per-document writes below name the bad document and why
            written = {}
        else:
            for p, orphans in zip(prepared, removed, strict=True):
                written[id(p)] = _Stored(p, orphans)
    outcomes: list[_Outcome] = []
    failure: StoreUnavailable | None = None
    for member in group:
        if isinstance(member, DocumentRow):
            outcomes.append(member)
        elif id(member) in written:
            outcomes.append(written[id(member)])
        elif failure is not None:
            outcomes.append(_unwritten(member))
        else:
            try:
                outcomes.append(await _write(member, store, tenant_id))
            except StoreUnavailable as exc:
                failure = exc
                outcomes.append(_unwritten(member))
    return outcomes, failure


def _unwritten(member: _Prepared | DocumentRow) -> _Outcome:
    """A member of a group an unavailable store did not write (a rejection row stays as it is)."""
    if isinstance(member, DocumentRow):
        return member
    return _Unwritten(member.item)


async def _write(prepared: _Prepared, store: ChunkStore, tenant_id: UUID) -> _Outcome:
    """One document's entities, then its passages in one ``replace_source``."""
    (file, document, doc_notes), chunks, entities, _ = prepared
    try:
        if entities:
            await store.upsert_entities(entities, tenant_id)
        orphans = await store.replace_source(document.source_id, tenant_id, chunks)
    except StoreUnavailable:
        raise  # not this document's fault: the caller stops
    except Exception as exc:  # the document's own data: it alone is rejected
        reason = f"not stored ({type(exc).__name__}: {exc}); earlier passages kept"
        return DocumentRow(
            file=file, source_id=document.source_id, status="rejected", reason=reason,
            notes=doc_notes,
        )  # fmt: skip
    return _Stored(prepared, orphans)


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

    async def items() -> AsyncIterator[_Item]:
        while True:
            # Read off the event loop: parsing a file (a PDF waits for its sandbox) must not
            # hold the service's loop, where every session's search runs.
            upload = await asyncio.to_thread(next, files, None)
            if upload is None:
                return
            if upload.error is not None:
                early.append(
                    DocumentRow(file=upload.file_name, status="rejected", reason=upload.error)
                )
                continue
            for problem in upload.problems:
                early.append(
                    DocumentRow(
                        file=upload.file_name,
                        status="rejected",
                        reason=f"line {problem.line}: {problem.reason}",
                    )
                )
            for position, document in enumerate(upload.documents):
                # A part's notes go with its first document (one row shows them once).
                notes = list(upload.notes) if position == 0 else []
                yield _Item(file=upload.file_name, document=document, notes=notes)

    return await _index_items(
        items(), store, tenant_id, chunking, extractor, on_progress, early, concurrency,
        before_first_write, batch_passages,
    )  # fmt: skip
