"""A BEIR/JSONL corpus -> one document per record ``{"_id", "title", "text"}``.

A malformed line is skipped and reported; the good lines are kept (one bad record in a
million must not cost the other 999,999). Each record keeps its ``_id`` as source id so
relevance judgments (qrels ``corpus-id``) match.

Read a record at a time and handed on in parts of ``RECORDS_PER_PART``: a 37 MB file of a
million tiny records held every document (2.36 GB) before the first was indexed when the
file was split whole and collected into one list. What stays for the whole file is the map of
ids seen (to name a duplicate's first line), a few dozen bytes per record.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from core.domain.chunks import SourceDocument, source_id_problem, storable_text_problem
from core.domain.models import built
from core.domain.names import format_problem
from core.ingest.jsonlines import JsonLineError, parse_json_line
from core.ingest.names import ID_UNSAFE
from core.ingest.plain_text import clean_text
from core.ingest.results import LineProblem, ReadError

#: Records handed on at once (the indexer writes while the rest of the file is read).
RECORDS_PER_PART = 1_000
#: The fields set every document read here shares (``built``).
_DOCUMENT_FIELDS: set[str] = set(SourceDocument.model_fields)


def jsonl_parts(lines: Iterable[bytes], *, prefix: str = "") -> Iterator[Collector]:
    """BEIR records ``{"_id", "title", "text"}``, one per line, in parts of at most
    ``RECORDS_PER_PART`` documents; bad lines skipped and reported in the part they fall in.

    Raises ``ReadError`` at the end when no line gave a document.
    """
    seen: dict[str, int] = {}
    empty = 0
    stored = 0
    result = Collector()
    for number, raw in enumerate(lines, start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if len(result.documents) >= RECORDS_PER_PART:
            stored += len(result.documents)
            yield result
            result = Collector()
        if not raw.strip():
            continue
        try:
            record = parse_json_line(raw.decode("utf-8"))
        except UnicodeDecodeError:
            result.problem(number, "not UTF-8 — line skipped")
            continue
        except JsonLineError as exc:
            result.problem(number, f"{exc} — line skipped")
            continue
        if not isinstance(record, dict):
            result.problem(number, "not a JSON object — line skipped")
            continue
        doc_id = record.get("_id")
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if not isinstance(doc_id, str) or not doc_id.strip():
            result.problem(number, 'no "_id" string — line skipped')
            continue
        invisible = format_problem(doc_id)
        if invisible is not None:
            # Two ids that print alike would differ; stripping it would break the qrels match.
            result.problem(number, f"the _id {invisible} — line skipped")
            continue
        unstorable = storable_text_problem(doc_id)
        if unstorable is not None:
            # Cleaning it would break the match with the qrels' corpus-id: refuse instead.
            result.problem(number, f"the _id {unstorable}; no store can keep it — line skipped")
            continue
        title = record.get("title") or ""
        body = record.get("text") or ""
        if not isinstance(title, str) or not isinstance(body, str):
            result.problem(number, '"title" and "text" must be strings — line skipped')
            continue
        source_id = prefix + ID_UNSAFE.sub("", doc_id).strip()
        if not source_id:
            result.problem(
                number, f"_id {_shown(doc_id)} has no printable character — line skipped"
            )
            continue
        too_long = source_id_problem(source_id)
        if too_long is not None:
            result.problem(number, f"{too_long} — line skipped")
            continue
        if source_id in seen:
            result.problem(
                number,
                f"duplicate _id {_shown(doc_id)} (first on line {seen[source_id]}) — line skipped",
            )
            continue
        seen[source_id] = number
        title, title_notes = clean_text(title)
        body, body_notes = clean_text(body)
        for note in title_notes + body_notes:
            result.notes.append(f"line {number}: {note}")
        text = f"{title}\n{body}" if title.strip() else body
        if not text.strip():
            empty += 1
            continue
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
    if empty:
        result.notes.append(
            f"{empty} empty record{'s' if empty != 1 else ''} left out (no title, no text)"
        )
    if not stored and not result.documents:
        # Nothing was handed on yet (a part holds at least one document): every problem is here.
        reasons = "; ".join(f"line {p.line}: {p.reason}" for p in result.problems[:3])
        raise ReadError(
            "no usable records in the JSONL file" + (f" ({reasons})" if reasons else "")
        )
    yield result


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
