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
size in the message. A 50 MB text file loads (about 48,000 passages at the default size).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.domain.chunks import SourceDocument
from core.ingest import parse_worker
from core.ingest.beir import Collector, jsonl_documents
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


def _bounded(
    kind: str, data: bytes, limits: ParseLimits
) -> tuple[str, str, dict[str, Any], list[str]]:
    """A PDF or DOCX parsed in the worker process, under ``limits``."""
    options = {"text_bytes": limits.text_bytes, "inflated_bytes": limits.inflated_bytes}
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
    """Read one file. Raises ``ReadError`` with a plain-words reason when it cannot.

    ``source_id`` overrides the id derived from ``name`` (the command line passes a
    folder-relative one); a JSONL corpus ignores it and uses each record's ``_id``.
    ``limits`` bound a PDF or DOCX parse (tests pass small ones; the default is the product's).
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
    if len(data) > max_bytes:
        raise ReadError(
            f"file too large: {len(data) / 1_048_576:.1f} MiB, the limit is"
            f" {max_bytes / 1_048_576:.1f} MiB — nothing stored (split it or raise the limit)"
        )
    if not data:
        raise ReadError("the file is empty — nothing stored")
    collector = Collector()
    if kind == "jsonl":
        jsonl_documents(data, collector)
        return ReadResult(
            file_name=name,
            documents=collector.documents,
            problems=collector.problems,
            notes=collector.notes,
        )
    if kind in ("pdf", "docx"):
        text, title, metadata, notes = _bounded(kind, data, limits or DEFAULT_PARSE_LIMITS)
    else:
        text, title, metadata, notes = (read_plain if kind == "text" else html_text)(data)
    text, cleaned = clean_text(text)
    title, _ = clean_text(title)
    if not text.strip():
        what = "only whitespace" if kind == "text" else "no visible text"
        raise ReadError(f"the file has {what} — nothing stored")
    document = SourceDocument(
        source_id=source_id or sanitise_source_id(name),
        text=text,
        title=title,
        metadata=metadata,
    )
    return ReadResult(file_name=name, documents=[document], notes=notes + cleaned)
