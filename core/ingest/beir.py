"""A BEIR/JSONL corpus -> one document per record ``{"_id", "title", "text"}``.

A malformed line is skipped and reported; the good lines are kept (one bad record in a
million must not cost the other 999,999). Each record keeps its ``_id`` as source id so
relevance judgments (qrels ``corpus-id``) match.

Read a record at a time and handed on in parts of ``RECORDS_PER_PART``: a 37 MB file of a
million tiny records held every document (2.36 GB) before the first was indexed when the
file was split whole and collected into one list. What stays for the whole file is the ids
seen (to name a duplicate's first line: ``seen.SeenIds``), ~36 bytes per record.

A plain record (one JSON object of ASCII strings, none of them holding NUL or a control
character, its ``_id`` new) takes a short path: no check on it can refuse it or change it, so
none is run (the JSON parser's scanner is called directly, without ``json.loads``' wrappers).
Every other line takes the full path, which decides what is refused and with which words; the
short path only ever stores what the full path would store, identically
(tests/unit/ingest/test_jsonl_reading.py compares both on hostile lines). It cut reading a tiny
record from ~15 to ~8 us of CPU; rejected: parsing a part's lines as one JSON array (faster
still, but a value spread over two lines can hide there, so a problem's line could be wrong).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from core.checkpoint import thread_checkpoint
from core.domain.chunks import (
    MAX_SOURCE_ID_CHARS,
    SourceDocument,
    source_id_problem,
    storable_text_problem,
)
from core.domain.models import built
from core.domain.names import format_problem
from core.ingest.jsonlines import MAX_JSON_DEPTH, JsonLineError, parse_json_line
from core.ingest.names import ID_UNSAFE
from core.ingest.plain_text import clean_text
from core.ingest.results import LineProblem, ReadError
from core.ingest.seen import SeenIds

#: Records handed on at once (the indexer writes while the rest of the file is read).
RECORDS_PER_PART = 1_000
#: Lines read between two ``thread_checkpoint``s (~0.3 ms of tiny records): an upload is read in a
#: worker thread, which sleeps there while another session's search waits for the GIL.
LINES_PER_PAUSE = 32
#: The fields set every document read here shares (``built``).
_DOCUMENT_FIELDS: set[str] = set(SourceDocument.model_fields)
#: The JSON parser's own scanner (what ``json.loads`` runs, with the same defaults).
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
#: What JSON counts as white space around a value.
_JSON_SPACE = " \t\n\r"


class Oversized(NamedTuple):
    """A line longer than the bound per record, given in place of its bytes (never read whole)."""

    size: int
    limit: int


def jsonl_parts(lines: Iterable[bytes | Oversized]) -> Iterator[Collector]:
    """BEIR records ``{"_id", "title", "text"}``, one per line, in parts of at most
    ``RECORDS_PER_PART`` documents; bad lines skipped and reported in the part they fall in.

    Raises ``ReadError`` at the end when no line gave a document.
    """
    return _parts(lines, short=True)


def _parts(lines: Iterable[bytes | Oversized], *, short: bool) -> Iterator[Collector]:
    """``jsonl_parts``; ``short=False`` sends every line through the full path (the reference
    the tests hold the short path to)."""
    reader = _Records()
    result = Collector()
    documents = result.documents
    seen = reader.seen
    for number, raw in enumerate(lines, start=1):
        if not number % LINES_PER_PAUSE:
            thread_checkpoint()
        if len(documents) >= RECORDS_PER_PART:
            reader.stored += len(documents)
            yield result
            result = Collector()
            documents = result.documents
        if number == 1 and type(raw) is bytes and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]  # a byte-order mark before the first record
        record = _plain_object(raw) if short else None
        if record is not None:
            doc_id = record.get("_id")
            title = record.get("title") or ""
            body = record.get("text") or ""
            if type(doc_id) is int:  # what the full path does to a number (bool is no int here)
                doc_id = str(doc_id)
            if (
                type(doc_id) is str
                and type(title) is str
                and type(body) is str
                and doc_id.isascii()
                and doc_id.isprintable()  # ASCII: no control character, so nothing to strip
                and title.isascii()  # no lone surrogate
                and body.isascii()
                and "\x00" not in title
                and "\x00" not in body
            ):
                source_id = doc_id.strip()
                if (
                    source_id
                    and len(source_id) <= MAX_SOURCE_ID_CHARS
                    and seen.get(source_id) is None
                ):
                    seen.add(source_id, number)
                    text = f"{title}\n{body}" if title.strip() else body
                    if not text.strip():
                        reader.empty += 1
                        continue
                    fields = {
                        "source_id": source_id,
                        "text": text,
                        "title": title.strip(),
                        "metadata": {"corpus_id": doc_id} if source_id != doc_id else {},
                    }
                    documents.append(built(SourceDocument, fields, _DOCUMENT_FIELDS))
                    continue
        reader.line(number, raw, result)
    if reader.empty:
        empty = reader.empty
        result.notes.append(
            f"{empty} empty record{'s' if empty != 1 else ''} left out (no title, no text)"
        )
    if not reader.stored and not documents:
        # Nothing was handed on yet (a part holds at least one document): every problem is here.
        reasons = "; ".join(f"line {p.line}: {p.reason}" for p in result.problems[:3])
        raise ReadError(
            "no usable records in the JSONL file" + (f" ({reasons})" if reasons else "")
        )
    yield result


def _plain_object(raw: bytes | Oversized) -> dict[str, Any] | None:
    """The JSON object a line holds when it is UTF-8, one object and nothing else, and too
    shallow to need the depth check; None for anything else (the full path then decides)."""
    if type(raw) is not bytes:
        return None
    try:
        text = raw.decode("utf-8")
        if text.count("[") + text.count("{") > MAX_JSON_DEPTH:
            return None
        record, end = _SCAN(text, 0)
    except Exception:  # not UTF-8, not JSON, leading space, a huge number: the full path says
        return None
    if type(record) is not dict or (end != len(text) and text[end:].strip(_JSON_SPACE)):
        return None
    return record


class _Records:
    """The full path: every check on one line, in the order that decides what is reported."""

    def __init__(self) -> None:
        #: Each source id read, with the line it was first on (to name a duplicate's first).
        self.seen = SeenIds()
        self.empty = 0
        self.stored = 0

    def line(self, number: int, raw: bytes | Oversized, result: Collector) -> None:
        if isinstance(raw, Oversized):
            result.problem(
                number,
                f"the record is {raw.size / 1_048_576:.1f} MB, over the limit of"
                f" {raw.limit / 1_048_576:.1f} MB per record (the LEXPLAIN_MAX_UPLOAD_MB"
                " setting, in MB) — line skipped",
            )
            return
        if not raw.strip():
            return
        try:
            record = parse_json_line(raw.decode("utf-8"))
        except UnicodeDecodeError:
            result.problem(number, "not UTF-8 — line skipped")
            return
        except JsonLineError as exc:
            result.problem(number, f"{exc} — line skipped")
            return
        if not isinstance(record, dict):
            result.problem(number, "not a JSON object — line skipped")
            return
        doc_id = record.get("_id")
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if not isinstance(doc_id, str) or not doc_id.strip():
            result.problem(number, 'no "_id" string — line skipped')
            return
        invisible = format_problem(doc_id)
        if invisible is not None:
            # Two ids that print alike would differ; stripping it would break the qrels match.
            result.problem(number, f"the _id {invisible} — line skipped")
            return
        unstorable = storable_text_problem(doc_id)
        if unstorable is not None:
            # Cleaning it would break the match with the qrels' corpus-id: refuse instead.
            result.problem(number, f"the _id {unstorable}; no store can keep it — line skipped")
            return
        title = record.get("title") or ""
        body = record.get("text") or ""
        if not isinstance(title, str) or not isinstance(body, str):
            result.problem(number, '"title" and "text" must be strings — line skipped')
            return
        source_id = ID_UNSAFE.sub("", doc_id).strip()
        if not source_id:
            result.problem(
                number, f"_id {_shown(doc_id)} has no printable character — line skipped"
            )
            return
        too_long = source_id_problem(source_id)
        if too_long is not None:
            result.problem(number, f"{too_long} — line skipped")
            return
        first = self.seen.get(source_id)
        if first is not None:
            result.problem(
                number, f"duplicate _id {_shown(doc_id)} (first on line {first}) — line skipped"
            )
            return
        self.seen.add(source_id, number)
        title, title_notes = clean_text(title)
        body, body_notes = clean_text(body)
        for note in title_notes + body_notes:
            result.notes.append(f"line {number}: {note}")
        text = f"{title}\n{body}" if title.strip() else body
        if not text.strip():
            self.empty += 1
            return
        metadata: dict[str, Any] = {"corpus_id": doc_id} if source_id != doc_id else {}
        # Not validated again: the id was checked above, the text and title cleaned (no NUL, no
        # lone surrogate) and the metadata is that checked id; validating cost ~5 us a record.
        fields = {
            "source_id": source_id,
            "text": text,
            "title": title.strip(),
            "metadata": metadata,
        }
        result.documents.append(built(SourceDocument, fields, _DOCUMENT_FIELDS))


def _shown(value: str, limit: int = 80) -> str:
    """``value`` quoted for a message, shortened when long."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


class Collector:
    """Documents, skipped records and notes, gathered while one file is read."""

    def __init__(self) -> None:
        self.documents: list[SourceDocument] = []
        self.problems: list[LineProblem] = []
        self.notes: list[str] = []

    def problem(self, line: int, reason: str) -> None:
        self.problems.append(LineProblem(line=line, reason=reason))
