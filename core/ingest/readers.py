"""Uploaded bytes + file name -> source documents, or an error that says what is wrong.

One reader per format (``plain_text``, ``html_text``, ``pdf_text``, ``docx_text``, ``beir``),
chosen here by the file name's extension and checked against the bytes (a ``.pdf`` that does
not start with ``%PDF`` is refused, not guessed at). Readers only parse: nothing in a file is
executed or fetched. A file either yields clean text or raises ``ReadError`` with a plain-words
reason; there is no partial document, because a half-read file stored as if whole is worse
than a refusal the analyst can act on. PDF and DOCX are parsed in the worker sandbox
(``core.ingest.parse_worker``), which this module asks by kind and never the other way round:
the sandbox imports no reader, so the package has no import circle.

Size: files over ``DEFAULT_MAX_BYTES`` (64 MiB, settable) are refused before parsing, with the
size in the message, from the size the caller knows before reading (``os.fstat`` for a file on
disk: a 3 GB file was read whole before being refused, 3.1 GB of memory). A 50 MB text file
loads (about 48,000 passages at the default size). A JSONL corpus is read a line at a time and
handed on in parts (``read_parts``), so its records are indexed while the rest is read.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from core.domain.chunks import SourceDocument
from core.ingest import parse_worker
from core.ingest.beir import Oversized, jsonl_parts
from core.ingest.html_text import html_text
from core.ingest.limits import DEFAULT_MAX_BYTES, DEFAULT_PARSE_LIMITS, ParseLimits
from core.ingest.names import name_problem, sanitise_source_id
from core.ingest.plain_text import clean_text, read_plain
from core.ingest.results import ReadError, ReadResult

#: Extensions read, and the reader each one uses.
SUPPORTED_EXTENSIONS: dict[str, str] = {
    ".txt": "text",
    ".text": "text",
    ".md": "text",
    ".markdown": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".jsonl": "jsonl",
}

#: Bytes read at a time past a JSONL line over the bound per record (it is never held whole).
_SKIP_BYTES = 1 << 20


def _bounded(
    kind: str, data: bytes, limits: ParseLimits
) -> tuple[str, str, dict[str, Any], list[str]]:
    """A PDF or DOCX parsed in the worker process, under ``limits``."""
    options = {
        "text_bytes": limits.text_bytes,
        "inflated_bytes": limits.inflated_bytes,
        "content_bytes": limits.content_bytes,
    }
    try:
        answer = parse_worker.run(
            kind, data, options, memory_bytes=limits.memory_bytes, seconds=limits.seconds
        )
    except parse_worker.ParseRefused as exc:
        raise ReadError(exc.reason) from None
    return answer["text"], answer["title"], answer["metadata"], answer["notes"]


def file_kind(name: str) -> str | None:
    """The reader for ``name`` by its extension ("text", "html", "pdf", "docx", "jsonl")."""
    return SUPPORTED_EXTENSIONS.get(Path(name.replace("\\", "/")).suffix.casefold())


def read_file(
    name: str,
    data: bytes,
    *,
    source_id: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    limits: ParseLimits | None = None,
) -> ReadResult:
    """Read one file whole. Raises ``ReadError`` with a plain-words reason when it cannot.

    ``source_id`` overrides the id derived from ``name`` (the command line passes a
    folder-relative one); a JSONL corpus ignores it and uses each record's ``_id``.
    ``limits`` bound a PDF or DOCX parse (tests pass small ones; the default is the product's).
    """
    parts = list(
        read_parts(
            name, io.BytesIO(data), len(data), source_id=source_id, max_bytes=max_bytes,
            limits=limits,
        )
    )  # fmt: skip
    return ReadResult(
        file_name=name,
        documents=[d for part in parts for d in part.documents],
        problems=[p for part in parts for p in part.problems],
        notes=[n for part in parts for n in part.notes],
    )


def size_problem(size: int, max_bytes: int) -> str | None:
    """Why a file of ``size`` bytes is not read (too large, or empty), or None."""
    if size > max_bytes:
        return (
            f"file too large: {size / 1_048_576:.1f} MB, the limit is"
            f" {max_bytes / 1_048_576:.1f} MB — nothing stored (split it, or raise the limit:"
            " the LEXPLAIN_MAX_UPLOAD_MB setting, in MB)"
        )
    if not size:
        return "the file is empty — nothing stored"
    return None


def read_parts(
    name: str,
    stream: IO[bytes],
    size: int,
    *,
    source_id: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    limits: ParseLimits | None = None,
    per_record: bool = False,
) -> Iterator[ReadResult]:
    """Read one file of ``size`` bytes from ``stream`` in parts (one unless it is a JSONL
    corpus, whose records come a part at a time); raises ``ReadError`` when it cannot.

    The size is checked before anything is read; at most ``max_bytes`` + 1 are ever read (a
    file that grew after its size was taken is refused, not read to its end). ``per_record``
    (``load``, a file on disk): a JSONL corpus is bounded a record at a time instead, each
    line at most ``max_bytes`` (one over it is skipped and reported by its line, never held
    whole), and the file may be any size: it is read a line at a time, so its size costs no
    memory, and a 556 MB BEIR corpus met the file limit. The Upload page keeps the file
    limit: it holds the whole file's bytes before reading starts.
    """
    for named in (name, source_id or ""):
        problem = name_problem(named)
        if problem is not None:
            raise ReadError(problem)
    kind = file_kind(name)
    if kind is None:
        suffix = Path(name).suffix or "(none)"
        supported = ", ".join(sorted({ext.lstrip(".") for ext in SUPPORTED_EXTENSIONS}))
        raise ReadError(f"unsupported file type {suffix} (supported: {supported})")
    streamed = per_record and kind == "jsonl"
    # Streamed, only an empty file is refused here; each record is bounded as it is read.
    too_big = size_problem(size, size if streamed else max_bytes)
    if too_big is not None:
        raise ReadError(too_big)
    if kind == "jsonl":
        lines = _record_lines(stream, max_bytes) if streamed else _bounded_lines(stream, max_bytes)
        for part in jsonl_parts(lines):
            yield ReadResult(
                file_name=name, documents=part.documents, problems=part.problems,
                notes=part.notes,
            )  # fmt: skip
        return
    data = stream.read(max_bytes + 1)
    grown = size_problem(len(data), max_bytes)
    if grown is not None:
        raise ReadError(grown)
    if kind in ("pdf", "docx"):
        text, title, metadata, notes = _bounded(kind, data, limits or DEFAULT_PARSE_LIMITS)
    else:
        text, title, metadata, notes = (read_plain if kind == "text" else html_text)(data)
    del data
    text, cleaned = clean_text(text)
    title, _ = clean_text(title)
    if not text.strip():
        what = "only whitespace" if kind == "text" else "no visible text"
        raise ReadError(f"the file has {what} — nothing stored")
    read = [
        ReadResult(
            file_name=name,
            documents=[
                SourceDocument(
                    source_id=source_id or sanitise_source_id(name),
                    text=text,
                    title=title,
                    metadata=metadata,
                )
            ],
            notes=notes + cleaned,
        )
    ]
    del text  # a suspended generator keeps its locals: the caller alone holds the document
    yield read.pop()


def _record_lines(stream: IO[bytes], max_record: int) -> Iterator[bytes | Oversized]:
    """``stream``'s lines, each of at most ``max_record`` bytes (its newline aside); a longer
    one is given as ``Oversized`` with its size, read past in pieces, never held whole."""
    readline = stream.readline
    while line := readline(max_record + 1):
        if len(line) <= max_record or line.endswith(b"\n"):
            yield line
            continue
        size = len(line)
        while not line.endswith(b"\n") and (line := readline(_SKIP_BYTES)):
            size += len(line)
        yield Oversized(size - line.endswith(b"\n"), max_record)


def _bounded_lines(stream: IO[bytes], max_bytes: int) -> Iterator[bytes]:
    """``stream``'s lines, stopping with ``ReadError`` past ``max_bytes`` in all."""
    read = 0
    for line in stream:
        read += len(line)
        if read > max_bytes:
            raise ReadError(size_problem(read, max_bytes) or "file too large")
        yield line
