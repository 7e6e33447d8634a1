"""``load``'s reading and cutting of a big JSONL corpus in a worker process beside the writes.

Why: a tiny record's ~76 us of CPU (300k, in-memory dry run) were ~23 reading and cutting and
the rest the indexer loop, the report and the store's write, all on one core: reading ran in a
thread, which only took turns with the loop for the GIL, while the machine's second core
idled (in-memory dry run) or served the database. Here a worker process reads the files
(``read_paths``) and cuts each document (``indexing.prepare``, with its own map of the ids
seen), and sends each part back as plain values pickled (strings, ints, lists, the rare
entities); this process rebuilds the models without validating them again (``built``: the
same code made them) and hands the parts to the indexer as prepared (``indexing.Part``), so
what is written, refused and reported is what ``index_uploads`` makes of ``read_paths`` (where
the refusals met while reading land among the rows depends, in either path, on when writes
end: they come first at the next count).
Rejected: a thread (the GIL); sending the models themselves (pickle gives each model its own
fields set, ~730 bytes a passage, and is slower); the staging worker's pool (one round trip
per call, no read-ahead). The worker keeps at most two parts ahead (one in the pipe, one read
off it by a thread here), so memory stays bounded by the parts, not the file.

Only for JSONL files of ``ASIDE_BYTES`` or more in all, each a regular file: a worker's start
(~0.4 s) costs more than a small file saves; folders and other kinds (whose PDFs parse in
their own sandbox, which answers in JSON) stay in this process. The worker runs this
project's JSONL reader only, so its pickled answers are no parser's output.

A worker that dies (killed, out of memory) is no fault of the corpus: the rest is read and cut
here, from the part after the last one received (the parts before it read again only for the
ids they held, so a later duplicate is named as before).

The Upload page's files (``index_files``) go the same way: a name and its bytes, given whole
by the page. The bytes go to the worker through a second pipe, in pieces (``PIECE_BYTES``),
sent by a thread here (the loop never waits on it) as the worker reads them: it holds a piece,
not the file (held whole there, the 1M tiny probe's 40 MB file was in both processes: summed
peak 1,017 MiB, 974-1,005 in pieces; one GiB is issue 21's bound). It reads them with
``read_uploads``, the function the in-process path reads the held bytes with. Rejected: a
temporary file per upload (the bytes are in memory here already: writing 40 MB to disk, a
private folder to make and to clean up after a process killed mid-upload, for nothing the
pipe does not do); the bytes among the worker's start arguments (written to the
child as it starts, on the loop, while the child imports).
A name is never a path here: it is the label the readers check (``../x.jsonl``, control
characters: ``printable_name``, ``name_problem``) in either process alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import pickle
import signal
import stat
import traceback
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator, Sequence
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any, Final, overload
from uuid import UUID

from core.checkpoint import at_worker_priority
from core.domain.chunks import CUT_FIELDS, ChunkingOptions, StoredChunk
from core.domain.entities import EntityExtractor
from core.domain.models import built
from core.ingest.bulk import bulk_collection
from core.ingest.folders import read_paths
from core.ingest.indexing import (
    DEFAULT_EXTRACTOR,
    DocumentRow,
    IndexReport,
    Part,
    ProgressCallback,
    UploadResult,
    index_parts,
    index_uploads,
    prepare,
    refused_rows,
    rejected_row,
    upload_parts,
)
from core.ingest.limits import DEFAULT_MAX_BYTES
from core.ingest.readers import file_kind
from core.ingest.results import LineProblem
from core.ingest.seen import FirstFiles, OneFile
from core.ingest.writes import Prepared
from core.processes import Worker
from core.stores.port import ChunkStore

#: Bytes of JSONL a load needs for its reading and cutting to go to the worker (~100k tiny
#: records; a worker's start, ~0.4 s of CPU, is what ~20k of them save).
ASIDE_BYTES: Final = 4 << 20

#: A NamedTuple made from its fields whole (its generated ``__new__`` is a Python frame: ~1.2
#: against ~0.4 us, paid per tiny record).
_new: Final = tuple.__new__

#: A document as sent: its source id, its text and its outcome: (start, end, id) of its one
#: passage when that has no metadata and no entity (most records: a few objects to pickle, the
#: passage a slice of the text); else the text is "" and the outcome a rejection's reason, or
#: [its passages as ``_passage_values``, its entities, duplicates left out].
_Sent = tuple[str, str, Any]
#: Bytes of an upload sent to the worker at once (the worker holds a piece, not the file).
PIECE_BYTES: Final = 1 << 20
#: A file as the Upload page gives it: its name (as the person's machine named it) and bytes.
Upload = tuple[str, bytes]


def goes_aside(paths: Sequence[Path]) -> bool:
    """Whether ``paths`` are JSONL files (regular files) of ``ASIDE_BYTES`` or more in all."""
    total = 0
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            return False
        if not stat.S_ISREG(info.st_mode) or file_kind(path.name) != "jsonl":
            return False
        total += info.st_size
    return total >= ASIDE_BYTES


def uploads_go_aside(files: Sequence[Upload]) -> bool:
    """Whether ``files`` are JSONL uploads (by name) of ``ASIDE_BYTES`` or more in all."""
    if not all(file_kind(name) == "jsonl" for name, _ in files):
        return False
    return sum(len(data) for _, data in files) >= ASIDE_BYTES


def read_uploads(
    files: Iterable[tuple[str, IO[bytes], int]], max_bytes: int
) -> Iterator[UploadResult]:
    """Each uploaded file (its name, its bytes as a stream and their size) read a part at a
    time (``upload_parts``): here from the bytes held (``opened``), in the worker off the pipe."""
    for name, stream, size in files:
        yield from upload_parts(name, stream, size, max_bytes=max_bytes)


def opened(files: Iterable[Upload]) -> Iterator[tuple[str, IO[bytes], int]]:
    """The uploads held here as ``read_uploads`` reads them."""
    for name, data in files:
        yield name, io.BytesIO(data), len(data)


async def index_files(
    files: Sequence[Upload],
    store: ChunkStore,
    tenant_id: UUID,
    *,
    max_bytes: int,
    chunking: ChunkingOptions | None = None,
    extractor: EntityExtractor | None = DEFAULT_EXTRACTOR,
    on_progress: ProgressCallback | None = None,
    batch_passages: int | None = None,
    aside: bool | None = None,
) -> IndexReport:
    """``index_uploads(read_uploads(files))``, read and cut in the worker when ``aside`` (by
    default when ``uploads_go_aside``)."""
    options = chunking or ChunkingOptions()
    if not (uploads_go_aside(files) if aside is None else aside):
        return await index_uploads(
            read_uploads(opened(files), max_bytes), store, tenant_id, chunking=options,
            extractor=extractor, on_progress=on_progress, batch_passages=batch_passages,
        )  # fmt: skip
    reading = Aside([], max_bytes, tenant_id, options, extractor, files=files)
    early: list[DocumentRow] = []
    parts = reading.parts(early)
    try:
        return await index_parts(
            parts, store, tenant_id, options, extractor, on_progress, early,
            batch_passages=batch_passages,
        )  # fmt: skip
    finally:
        await parts.aclose()


async def index_paths(
    paths: Sequence[Path],
    store: ChunkStore,
    tenant_id: UUID,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    chunking: ChunkingOptions | None = None,
    extractor: EntityExtractor | None = DEFAULT_EXTRACTOR,
    on_progress: ProgressCallback | None = None,
    before_first_write: Callable[[], Awaitable[None]] | None = None,
    batch_passages: int | None = None,
    aside: bool | None = None,
) -> IndexReport:
    """``index_uploads(read_paths(paths))``, read and cut in the worker when ``aside`` (by
    default when ``goes_aside``)."""
    options = chunking or ChunkingOptions()
    if not (goes_aside(paths) if aside is None else aside):
        return await index_uploads(
            read_paths(paths, max_bytes=max_bytes), store, tenant_id, chunking=options,
            extractor=extractor, on_progress=on_progress, before_first_write=before_first_write,
            batch_passages=batch_passages,
        )  # fmt: skip
    reading = Aside(paths, max_bytes, tenant_id, options, extractor)
    early: list[DocumentRow] = []
    parts = reading.parts(early)
    try:
        return await index_parts(
            parts, store, tenant_id, options, extractor, on_progress, early,
            before_first_write=before_first_write, batch_passages=batch_passages,
        )  # fmt: skip
    finally:
        await parts.aclose()


class Aside:
    """The worker reading and cutting ``paths`` (or the uploaded ``files``: started by
    ``parts``), and what came back."""

    def __init__(
        self,
        paths: Sequence[Path],
        max_bytes: int,
        tenant_id: UUID,
        options: ChunkingOptions,
        extractor: EntityExtractor | None,
        *,
        files: Sequence[Upload] = (),
    ) -> None:
        self._arguments = (list(paths), max_bytes, tenant_id, options, extractor)
        self._files = list(files)
        #: Files (or JSONL parts) received from the worker so far.
        self.received = 0

    async def parts(self, early: list[DocumentRow]) -> AsyncGenerator[Part, None]:
        """Each file (or JSONL part) read and cut, in order; its refusals into ``early``."""
        # Its own program (core.processes), never the caller's script or page run again.
        ours, theirs = Pipe(duplex=False)
        feed: Connection | None = None
        fed: Connection | None = None
        names = [(name, len(data)) for name, data in self._files]
        if self._files:  # the uploaded bytes, read by the worker off a pipe of their own
            fed, feed = Pipe(duplex=False)
        worker = Worker(_serve, theirs, fed, names, *self._arguments)
        theirs.close()  # the worker's end: its death is then an EOF here
        loop = asyncio.get_running_loop()
        sending: asyncio.Future[None] | None = None
        if feed is not None and fed is not None:
            fed.close()  # the worker's end: its death is then a broken pipe for the sender
            sending = loop.run_in_executor(None, _send, feed, [data for _, data in self._files])
        pending = loop.run_in_executor(None, ours.recv_bytes)
        try:
            while True:
                try:
                    message = pickle.loads(await pending)
                except (EOFError, OSError):  # the worker died: the rest is read here
                    async for part in self._here(early):
                        yield part
                    return
                if message[0] == "end":
                    return
                if message[0] == "raised":
                    raise message[1]
                pending = loop.run_in_executor(None, ours.recv_bytes)
                self.received += 1
                received = self._received(message[1:], early)
                if received is not None:
                    yield received
        finally:
            worker.kill()  # its end of the pipe closes: a read still waiting ends
            with contextlib.suppress(Exception):
                await pending
            if sending is not None:  # a send still waiting ends on the broken pipe
                with contextlib.suppress(Exception):
                    await sending
            ours.close()
            await loop.run_in_executor(None, worker.join)

    def _received(self, message: tuple[Any, ...], early: list[DocumentRow]) -> Part | None:
        file, error, problems, notes, sent = message
        lines = [LineProblem(line=number, reason=reason) for number, reason in problems]
        early.extend(refused_rows(file, error, lines))
        if error is not None or not sent:
            return None
        return Part(file, [], list(notes), _Rebuilt(file, self._arguments[2], notes, sent))

    async def _here(self, early: list[DocumentRow]) -> AsyncGenerator[Part, None]:
        """The parts after the ``received`` ones, read and cut in this process."""
        paths, max_bytes, tenant_id, options, extractor = self._arguments
        uploads = (
            read_uploads(opened(self._files), max_bytes)
            if self._files
            else read_paths(paths, max_bytes=max_bytes)
        )
        first_file = _first_files(len(self._files) or len(paths))
        for _ in range(self.received):  # read again for the ids they held only
            again = await asyncio.to_thread(next, uploads)
            for document in again.documents:
                if first_file.get(document.source_id) is None:
                    first_file.add(document.source_id, again.file_name or document.source_id)
        while (upload := await asyncio.to_thread(next, uploads, None)) is not None:
            part = self._received(
                _message(upload, tenant_id, options, extractor, first_file)[1:], early
            )
            if part is not None:
                yield part


class _Rebuilt(Sequence[Prepared | DocumentRow]):
    """A part's documents as the worker sent them, each rebuilt into its models when the indexer
    takes it (``index_parts``, between its checkpoints). Rebuilt a part at a time, the loop's
    step that received a part grew with it: the sample uploaded through the worker (bench_stall
    --work upload --steps, in-memory) had 12 steps of 5-10.5 ms there, each a part of 1,000."""

    __slots__ = ("_file", "_notes", "_sent", "_tenant_id")

    def __init__(self, file: str, tenant_id: UUID, notes: list[str], sent: list[_Sent]) -> None:
        self._file, self._tenant_id, self._notes, self._sent = file, tenant_id, notes, sent

    def __len__(self) -> int:
        return len(self._sent)

    @overload
    def __getitem__(self, at: int) -> Prepared | DocumentRow: ...

    @overload
    def __getitem__(self, at: slice) -> list[Prepared | DocumentRow]: ...

    def __getitem__(self, at: int | slice) -> Any:
        if isinstance(at, slice):
            return [self[index] for index in range(*at.indices(len(self._sent)))]
        said = self._notes if at == 0 else []  # a part's notes go with its first document
        return _rebuilt(self._file, self._tenant_id, said, self._sent[at])


def _rebuilt(file: str, tenant_id: UUID, said: list[str], sent: _Sent) -> Prepared | DocumentRow:
    """One document as sent (``_Sent``), its models rebuilt without validating them again."""
    source_id, text, outcome = sent
    if type(outcome) is tuple:  # one passage, no metadata, no entity: most records
        start, end, identity = outcome
        only = built(
            StoredChunk,
            {
                "tenant_id": tenant_id,
                "source_id": source_id,
                "text": text[start:end],
                "chunk_index": 0,
                "start_char": start,
                "end_char": end,
                "entity_ids": [],
                "metadata": {},
                "id": identity,
            },
            CUT_FIELDS,  # cut by the chunker in the worker: ids derived there
        )
        # tuple.__new__: no Python frame of the NamedTuple's own __new__ (~0.8 us)
        prepared: Prepared = _new(Prepared, (file, source_id, said, [only], [], 0))
        return prepared
    if type(outcome) is str:
        return rejected_row(file, source_id, said, outcome)
    passages, entities, duplicates = outcome
    chunks = [
        built(
            StoredChunk,
            {
                "tenant_id": tenant_id,
                "source_id": source_id,
                "text": cut,
                "chunk_index": index,
                "start_char": start,
                "end_char": end,
                "entity_ids": entity_ids,
                "metadata": about,
                "id": identity,
            },
            CUT_FIELDS,  # cut by the chunker in the worker: ids derived there
        )
        for cut, index, start, end, entity_ids, about, identity in passages
    ]
    return Prepared(file, source_id, said, chunks, entities, duplicates)


def _message(
    upload: UploadResult,
    tenant_id: UUID,
    options: ChunkingOptions,
    extractor: EntityExtractor | None,
    first_file: FirstFiles,
) -> tuple[Any, ...]:
    """One file (or JSONL part) read, its documents cut, as plain values (``_Sent``)."""
    file, notes = upload.file_name, upload.notes
    problems = [(p.line, p.reason) for p in upload.problems]
    sent: list[_Sent] = []
    said = notes
    for document in upload.documents:
        outcome = prepare(file, document, said, tenant_id, options, extractor, first_file)
        said = []
        kept: Any
        if isinstance(outcome, DocumentRow):
            kept = outcome.reason
        elif len(outcome.chunks) == 1 and not (outcome.entities or outcome.duplicates):
            (chunk,) = outcome.chunks
            if chunk.metadata or chunk.entity_ids:
                kept = [[_passage_values(chunk)], outcome.entities, outcome.duplicates]
            else:
                kept = (chunk.start_char, chunk.end_char, chunk.id)
        else:
            passages = [_passage_values(chunk) for chunk in outcome.chunks]
            kept = [passages, outcome.entities, outcome.duplicates]
        text = document.text if type(kept) is tuple else ""
        sent.append((document.source_id, text, kept))
    return ("part", file, upload.error, problems, notes, sent)


def _first_files(files: int) -> FirstFiles:
    """What ``prepare`` checks each id against, for ``files`` JSONL files (each a regular file:
    ``goes_aside``, ``uploads_go_aside``): every id met, or none for one file (``OneFile``)."""
    return FirstFiles() if files > 1 else OneFile()


def _passage_values(chunk: StoredChunk) -> tuple[Any, ...]:
    """What a passage adds to its document (``Aside._received`` rebuilds it)."""
    return (
        chunk.text, chunk.chunk_index, chunk.start_char, chunk.end_char, chunk.entity_ids,
        chunk.metadata, chunk.id,
    )  # fmt: skip


def _send(feed: Connection, data: list[bytes]) -> None:
    """The uploaded files' bytes to the worker, in order, in pieces of ``PIECE_BYTES``, each
    file ended by an empty piece (in a thread: the pipe takes them as the worker reads); a
    worker that died ends it (a broken pipe)."""
    try:
        for each in data:
            for start in range(0, len(each), PIECE_BYTES):
                feed.send_bytes(each, start, min(PIECE_BYTES, len(each) - start))
            feed.send_bytes(b"")
    except OSError:
        pass
    finally:
        feed.close()


class _Fed(io.RawIOBase):
    """One uploaded file's bytes in the worker, read off the pipe a piece at a time."""

    def __init__(self, fed: Connection) -> None:
        self._fed = fed
        self._piece = memoryview(b"")
        self._ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._piece and not self._ended:
            self._piece = memoryview(self._fed.recv_bytes())
            self._ended = not self._piece
        size = min(len(buffer), len(self._piece))
        buffer[:size] = self._piece[:size]
        self._piece = self._piece[size:]
        return size

    def drain(self) -> None:
        """Read past what the reader left of this file (refused from its size, or stopped)."""
        while not self._ended:
            self._piece = memoryview(b"")
            self.readinto(bytearray(0))


def _fed_files(
    fed: Connection, names: list[tuple[str, int]]
) -> Iterator[tuple[str, IO[bytes], int]]:
    """The uploads (``names``: each name and size) as ``read_uploads`` reads them, their bytes
    off ``fed`` as they come: the worker never holds a whole file."""
    for name, size in names:
        stream = _Fed(fed)
        yield name, io.BufferedReader(stream, PIECE_BYTES), size
        stream.drain()


def _serve(
    pipe: Connection,
    fed: Connection | None,
    names: list[tuple[str, int]],
    paths: list[Path],
    max_bytes: int,
    tenant_id: UUID,
    options: ChunkingOptions,
    extractor: EntityExtractor | None,
) -> None:
    """The worker: every file read and cut, a message each, then "end" (or what it raised):
    ``paths``, or the uploads ``names`` (with sizes) with their bytes off ``fed``.
    Ctrl-C is the load's to answer (it ends this worker), not this process's. It runs at
    ``WORKER_NICENESS``: beside the app's searches it reads only on a core they leave idle."""
    at_worker_priority()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    first_file = _first_files(len(names) if fed is not None else len(paths))
    uploads: Iterator[UploadResult]
    if fed is None:
        uploads = read_paths(paths, max_bytes=max_bytes)
    else:
        uploads = read_uploads(_fed_files(fed, names), max_bytes)
    try:
        with bulk_collection():  # a part's records alive while cut: no collection finds garbage
            for upload in uploads:
                message = _message(upload, tenant_id, options, extractor, first_file)
                pipe.send_bytes(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))
        pipe.send_bytes(pickle.dumps(("end",)))
    except Exception as exc:  # what reading here would have raised, raised there
        try:
            said = pickle.dumps(("raised", exc))
        except Exception:
            said = pickle.dumps(("raised", RuntimeError(traceback.format_exc())))
        pipe.send_bytes(said)
