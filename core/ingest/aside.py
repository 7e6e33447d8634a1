"""``load``'s reading and cutting of a big JSONL corpus in a worker process beside the writes.

Why: a tiny record's ~76 us of CPU (300k, in-memory dry run) were ~23 reading and cutting and
the rest the indexer loop, the report and the store's write, all on one core: reading ran in a
thread, which only took turns with the loop for the GIL, while the machine's second core
idled (in-memory dry run) or served the database. Here a spawned process reads the files
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
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import stat
import traceback
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Sequence
from multiprocessing import get_context
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final
from uuid import UUID

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
)
from core.ingest.limits import DEFAULT_MAX_BYTES
from core.ingest.readers import file_kind
from core.ingest.results import LineProblem
from core.ingest.writes import Prepared
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
    """The worker reading and cutting ``paths`` (started by ``parts``), and what came back."""

    def __init__(
        self,
        paths: Sequence[Path],
        max_bytes: int,
        tenant_id: UUID,
        options: ChunkingOptions,
        extractor: EntityExtractor | None,
    ) -> None:
        self._arguments = (list(paths), max_bytes, tenant_id, options, extractor)
        #: Files (or JSONL parts) received from the worker so far.
        self.received = 0

    async def parts(self, early: list[DocumentRow]) -> AsyncGenerator[Part, None]:
        """Each file (or JSONL part) read and cut, in order; its refusals into ``early``."""
        context = get_context("spawn")  # a fork of a process running threads may hold a lock
        ours, theirs = context.Pipe(duplex=False)
        worker = context.Process(target=_serve, args=(theirs, *self._arguments), daemon=True)
        worker.start()
        theirs.close()  # the worker's end: its death is then an EOF here
        loop = asyncio.get_running_loop()
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
            ours.close()
            await loop.run_in_executor(None, worker.join)

    def _received(self, message: tuple[Any, ...], early: list[DocumentRow]) -> Part | None:
        file, error, problems, notes, sent = message
        lines = [LineProblem(line=number, reason=reason) for number, reason in problems]
        early.extend(refused_rows(file, error, lines))
        if error is not None or not sent:
            return None
        tenant_id = self._arguments[2]
        prepared: list[Prepared | DocumentRow] = []
        said = notes
        for source_id, text, outcome in sent:
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
                prepared.append(_new(Prepared, (file, source_id, said, [only], [], 0)))
                said = []
                continue
            if type(outcome) is str:
                prepared.append(rejected_row(file, source_id, said, outcome))
                said = []
                continue
            else:
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
            prepared.append(Prepared(file, source_id, said, chunks, entities, duplicates))
            said = []
        return Part(file, [], list(notes), prepared)

    async def _here(self, early: list[DocumentRow]) -> AsyncGenerator[Part, None]:
        """The parts after the ``received`` ones, read and cut in this process."""
        paths, max_bytes, tenant_id, options, extractor = self._arguments
        uploads = read_paths(paths, max_bytes=max_bytes)
        first_file: dict[str, str] = {}
        for _ in range(self.received):  # read again for the ids they held only
            again = await asyncio.to_thread(next, uploads)
            for document in again.documents:
                first_file.setdefault(document.source_id, again.file_name or document.source_id)
        while (upload := await asyncio.to_thread(next, uploads, None)) is not None:
            part = self._received(
                _message(upload, tenant_id, options, extractor, first_file)[1:], early
            )
            if part is not None:
                yield part


def _message(
    upload: UploadResult,
    tenant_id: UUID,
    options: ChunkingOptions,
    extractor: EntityExtractor | None,
    first_file: dict[str, str],
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


def _passage_values(chunk: StoredChunk) -> tuple[Any, ...]:
    """What a passage adds to its document (``Aside._received`` rebuilds it)."""
    return (
        chunk.text, chunk.chunk_index, chunk.start_char, chunk.end_char, chunk.entity_ids,
        chunk.metadata, chunk.id,
    )  # fmt: skip


def _serve(
    pipe: Connection,
    paths: list[Path],
    max_bytes: int,
    tenant_id: UUID,
    options: ChunkingOptions,
    extractor: EntityExtractor | None,
) -> None:
    """The worker: every file read and cut, a message each, then "end" (or what it raised).
    Ctrl-C is the load's to answer (it ends this worker), not this process's."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    first_file: dict[str, str] = {}
    uploads: Iterator[UploadResult] = read_paths(paths, max_bytes=max_bytes)
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
