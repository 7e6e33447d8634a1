"""Passages: the content-addressed ``StoredChunk`` and the documents they come from.

A passage's id is SHA-256 over its source id, a NUL byte and its text, so the
same passage gets the same id in every store and under every tenant, and every
key is the pair (tenant_id, id). The id is derived, never supplied: accepting a
caller's id would let two different texts share one key.

Text must be storable everywhere: PostgreSQL's ``text`` cannot hold NUL and
UTF-8 cannot encode lone surrogates, so both are rejected here with a message
that names the position, rather than failing differently in each store.
Readers clean such input before it reaches this model.

A source id is at most ``MAX_SOURCE_ID_CHARS`` (512) characters, checked here, in the domain,
so both stores refuse the same ids with the same words: PostgreSQL indexes source ids in a
btree, whose entries cannot exceed about 2,700 bytes (512 characters are at most 2,048 bytes of
UTF-8), while the in-memory store would keep any length. The alternative, letting each store
fail its own way, gave a raw error naming an index in one store and silent success in the other.
A source id holds no format character (zero-width, bidi controls): two ids that print alike
must be one id (``core.domain.names``); refusing beats cleaning, which would break the match
with a judgments file's ids.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
import unicodedata
import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.domain.models import built
from core.domain.names import format_problem

#: Longest text whose id is hashed from one joined string (a copy of it); longer texts are fed
#: to the hash in pieces. Joined, a tiny passage's id cost half as much (~1.5 against ~3 us).
_JOINED_HASH_CHARS = 1 << 16


def chunk_id(source_id: str, text: str) -> str:
    """SHA-256 hex of ``source_id`` (UTF-8), one NUL byte, then ``text`` (UTF-8)."""
    if len(text) <= _JOINED_HASH_CHARS:  # one string, one encode, one hash call
        return hashlib.sha256(f"{source_id}\x00{text}".encode()).hexdigest()
    digest = hashlib.sha256()
    digest.update(source_id.encode("utf-8"))
    digest.update(b"\x00")
    digest.update(text.encode("utf-8"))
    return digest.hexdigest()


#: Longest source id in characters, in every store (PostgreSQL's btree entries stay < 2,700 bytes).
MAX_SOURCE_ID_CHARS = 512

#: What no store can hold: NUL (PostgreSQL text) and lone surrogates (UTF-8).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored (NUL or lone surrogate), or None if it can.

    An ASCII text (a flag CPython keeps: O(1)) holds no surrogate, so only NUL is looked for
    there (memchr): ~0.15 us for an 800-character passage where the pattern took ~14 us."""
    if value.isascii() and "\x00" not in value:
        return None
    found = _UNSTORABLE.search(value)
    if found is None:
        return None
    char, offset = found.group(), found.start()
    if char == "\x00":
        return f"contains a NUL character at offset {offset}"
    return f"contains a lone surrogate U+{ord(char):04X} at offset {offset}"


def check_storable(value: str, what: str) -> str:
    problem = storable_text_problem(value)
    if problem is not None:
        raise ValueError(f"{what} {problem}")
    return value


def source_id_problem(value: str) -> str | None:
    """Why ``value`` cannot be a source id in any store, or None if it can."""
    if len(value) > MAX_SOURCE_ID_CHARS:
        return (
            f"the source id is {len(value):,} characters long; the longest kept is"
            f" {MAX_SOURCE_ID_CHARS:,}"
        )
    problem = storable_text_problem(value) or format_problem(value)
    return None if problem is None else f"the source id {problem}"


def _check_source_id(value: str) -> str:
    problem = source_id_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def _check_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    if not metadata:
        return metadata
    try:
        encoded = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"metadata must be plain JSON: {exc}") from exc
    check_storable(encoded.replace("\\u0000", "\x00"), "metadata")
    return metadata


class SourceDocument(BaseModel):
    """One document as a reader produced it, before it is cut into passages."""

    model_config = ConfigDict(frozen=True)

    source_id: str = Field(min_length=1)
    text: str
    title: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("source_id")
    @classmethod
    def _storable_source(cls, value: str) -> str:
        return _check_source_id(value)

    @field_validator("text", "title")
    @classmethod
    def _storable(cls, value: str) -> str:
        return check_storable(value, "text")

    @field_validator("metadata")
    @classmethod
    def _plain_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _check_metadata(value)


class StoredChunk(BaseModel):
    """A passage as every store keeps it; ``id`` is derived from source and text."""

    model_config = ConfigDict(frozen=True)

    tenant_id: UUID
    source_id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    chunk_index: int = Field(ge=0)
    #: Offset of the passage's first character in the source text.
    start_char: int = Field(ge=0)
    #: Offset one past the passage's last character in the source text.
    end_char: int = Field(ge=0)
    entity_ids: list[UUID] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    id: str = ""

    @field_validator("source_id")
    @classmethod
    def _storable_source(cls, value: str) -> str:
        return _check_source_id(value)

    @field_validator("text")
    @classmethod
    def _storable_text(cls, value: str) -> str:
        return check_storable(value, "passage text")

    @field_validator("metadata")
    @classmethod
    def _plain_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _check_metadata(value)

    @model_validator(mode="after")
    def _derive_id(self) -> StoredChunk:
        if self.end_char < self.start_char:
            raise ValueError(f"end_char {self.end_char} is before start_char {self.start_char}")
        derived = chunk_id(self.source_id, self.text)
        if self.id and self.id != derived:
            raise ValueError(
                f"id {self.id!r} disagrees with the id derived from source and text ({derived})"
            )
        object.__setattr__(self, "id", derived)
        return self


# --- The chunker -----------------------------------------------------------------------------
#
# Character windows with overlap, cut at the most natural boundary found in the back half of the
# window: a paragraph break, then a sentence end, then a line break, then any space, else hard.
# Characters, not tokens: offsets stay exact indexes into the source text (``text ==
# source[start:end]``), which is what showing a passage in context needs; a token window would
# need a second offset map and would still cut where a tokenizer, not a reader, sees a boundary.

#: Largest document file read by default (``LEXPLAIN_MAX_UPLOAD_MB``); bigger ones are refused
#: before any parsing. Here, with the other defaults of a document, so that the settings and
#: the readers share it without the settings importing the ingest layer.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
#: Default passage length in characters.
DEFAULT_CHUNK_SIZE = 1200
#: Default characters shared by consecutive passages (so a sentence cut at a boundary is whole
#: in at least one of them).
DEFAULT_CHUNK_OVERLAP = 150
#: Namespace of workspace tenant ids (fixed; changing it would orphan every stored workspace).
WORKSPACE_NAMESPACE: UUID = UUID("3b8f2f64-5d0c-4c52-9f0e-6a7d1c9e2b43")

#: Best cut: a blank line (the passage ends before it).
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n")
#: Next best: after a full stop, "!" or "?" (and closing quotes/brackets) followed by space.
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s)")
#: Then a line break, then any whitespace; failing all four, a hard cut at the size.
_LINE_BREAK = re.compile(r"\n")
_SPACE = re.compile(r"\s")


class TextSpan(NamedTuple):
    """A passage as offsets into its source: ``text == source[start:end]``."""

    start: int
    end: int
    text: str


class ChunkingOptions(BaseModel):
    """How documents are cut: windows of ``size`` characters sharing ``overlap``, or whole."""

    model_config = ConfigDict(frozen=True)

    size: int = Field(default=DEFAULT_CHUNK_SIZE, ge=1)
    overlap: int = Field(default=DEFAULT_CHUNK_OVERLAP, ge=0)
    whole_documents: bool = False

    @model_validator(mode="after")
    def _overlap_below_size(self) -> ChunkingOptions:
        if not self.whole_documents and self.overlap >= self.size:
            raise ValueError(
                f"overlap ({self.overlap}) must be smaller than the passage size ({self.size}),"
                " or cutting would never move forward"
            )
        return self


def _strip_bounds(text: str) -> tuple[int, int]:
    start, end = 0, len(text)
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _best_cut(text: str, low: int, high: int) -> int:
    """The preferred cut position in ``(low, high]``; ``high`` if there is no boundary.

    Each kind of boundary is looked for only when the kinds before it are absent, the last of
    its kind wins, and a space is found from the end: listing every kind's matches first was
    a third of cutting a 58 MB line.
    """
    window = text[low + 1 : high + 1]
    for pattern, at_end in ((_PARAGRAPH_BREAK, False), (_SENTENCE_END, True), (_LINE_BREAK, False)):
        cuts = [match.end() if at_end else match.start() for match in pattern.finditer(window)]
        if cuts:
            return low + 1 + cuts[-1]
    for offset in range(len(window) - 1, -1, -1):
        if window[offset].isspace():  # what ``\s`` matches
            return low + 1 + offset
    cut = high
    # A hard cut never separates a base character from its combining marks.
    while cut > low + 1 and unicodedata.combining(text[cut]):
        cut -= 1
    return cut


def chunk_text(
    text: str, size: int = DEFAULT_CHUNK_SIZE, overlap: int = DEFAULT_CHUNK_OVERLAP
) -> list[TextSpan]:
    """Cut ``text`` into passages of at most ``size`` characters sharing about ``overlap``.

    Every non-whitespace character is in at least one passage; no passage is empty or
    whitespace-only, or starts or ends with whitespace.
    """
    ChunkingOptions(size=size, overlap=overlap)  # validates: size >= 1, 0 <= overlap < size
    return _cut(text, size, overlap)


def _cut(text: str, size: int, overlap: int) -> list[TextSpan]:
    """``chunk_text`` with ``size`` and ``overlap`` already checked (a model per call cost a
    tiny document as much as cutting it)."""
    start, limit = _strip_bounds(text)
    spans: list[TextSpan] = []
    # A cut is searched in the back half of the window, and always beyond the overlap, so every
    # step moves forward by at least one character.
    min_piece = max(size // 2, overlap + 1)
    while start < limit:
        if limit - start <= size:
            end = limit
        else:
            end = _best_cut(text, start + min_piece - 1, start + size)
        stop = end
        while stop > start and text[stop - 1].isspace():
            stop -= 1
        spans.append(TextSpan(start, stop, text[start:stop]))
        if end >= limit:
            break
        following = max(end - overlap, start + 1)
        if overlap:
            # Start the overlap at a word, not inside one, when the overlap holds a space.
            space = _SPACE.search(text, following, end)
            if space is not None:
                following = space.end()
        while following < limit and text[following].isspace():
            following += 1
        start = following
    return spans


def split_document(text: str, options: ChunkingOptions) -> list[TextSpan]:
    """The passages of ``text`` under ``options``: windows, or the whole (stripped) text.

    A text that fits in one window is that one passage, as ``_cut`` would give it, without
    the window search (most records of a BEIR corpus are shorter than a window)."""
    if options.whole_documents or len(text) <= options.size:
        start, end = _strip_bounds(text)
        return [TextSpan(start, end, text[start:end])] if end > start else []
    return _cut(text, options.size, options.overlap)


class PassageMention(NamedTuple):
    """An entity mention located in the source text (offsets into the source)."""

    start: int
    end: int
    entity_id: UUID


#: The fields set every passage the chunker cuts shares (``built``), and its mark: a passage
#: holding this very set had its id derived from its own source and text here (``build_chunks``,
#: or ``core.ingest.aside`` rebuilding what the chunker cut in its worker), so a store's check
#: before writing (``checks.checked_for_write``) need not hash it again (~1.5 us of a tiny
#: record's ~35 in ``load``). ``model_copy`` and unpickling give a model a set of its own, so a
#: passage changed after cutting loses the mark. Rejected: a flag field (stored, compared and
#: shown with the model) and a registry of ids (a lookup per passage, and memory).
CUT_FIELDS: set[str] = set(StoredChunk.model_fields)


def was_cut(chunk: StoredChunk) -> bool:
    """Whether ``chunk`` carries the chunker's mark (``CUT_FIELDS``): its id is its own."""
    return chunk.__pydantic_fields_set__ is CUT_FIELDS


def build_chunks(
    document: SourceDocument,
    tenant_id: UUID,
    spans: Sequence[TextSpan],
    mentions: Sequence[PassageMention] = (),
) -> list[StoredChunk]:
    """StoredChunks for ``document``: one per distinct passage text, numbered from 0.

    A passage text repeated within the document has one id, so it is stored once (at its first
    position); keeping both would be two rows under one key. A mention belongs to a passage when
    it lies wholly inside it; its offsets are kept in ``metadata["mentions"]`` relative to the
    passage text, so a screen can mark it without running an extractor again.
    """
    chunks: list[StoredChunk] = []
    seen: set[str] = set()
    source_id, title = document.source_id, document.title
    page_starts = document.metadata.get("page_starts") if document.metadata else None
    if not (page_starts and isinstance(page_starts, list)):
        page_starts = None
    # Most tiny documents name no entity: no sort, no search, no generator.
    ordered = sorted(mentions) if mentions else None
    starts = [m.start for m in ordered] if ordered else []
    for span in spans:
        identity = chunk_id(source_id, span.text)
        if identity in seen:
            continue
        seen.add(identity)
        inside: list[PassageMention] = []
        if ordered:
            first = bisect.bisect_left(starts, span.start)
            last = bisect.bisect_left(starts, span.end)
            inside = [m for m in ordered[first:last] if m.end <= span.end]
        entity_ids = list(dict.fromkeys(m.entity_id for m in inside)) if inside else []
        metadata: dict[str, Any] = {"title": title} if title else {}
        if page_starts is not None:
            metadata["page"] = sum(1 for p in page_starts if isinstance(p, int) and p <= span.start)
        if inside:
            metadata["mentions"] = [
                {
                    "start": m.start - span.start,
                    "end": m.end - span.start,
                    "entity_id": str(m.entity_id),
                }
                for m in inside
            ]
        # Not validated again: the document's source id, text and title were checked when it
        # was made, a span is a non-empty slice of that text, the metadata is built here from
        # ints and those strings, and the id is the one just derived. Validating each passage
        # re-ran those checks and hashed the text a second time (a tenth of a load's Python
        # time); every store still re-checks a batch before writing (``checked_for_write``).
        # ``built``, not ``model_construct``: 15-20 us a passage, a third of preparing a tiny
        # document (~20 s of a million-record JSONL).
        chunks.append(
            built(
                StoredChunk,
                {
                    "tenant_id": tenant_id,
                    "source_id": source_id,
                    "text": span.text,
                    "chunk_index": len(chunks),
                    "start_char": span.start,
                    "end_char": span.end,
                    "entity_ids": entity_ids,
                    "metadata": metadata,
                    "id": identity,
                },
                CUT_FIELDS,
            )
        )
    return chunks


def workspace_tenant_id(name: str) -> UUID:
    """The tenant id of the workspace called ``name`` (UUIDv5 of its NFKC, trimmed name).

    Deterministic, so the command line and the app reach the same tenant from the same name
    without a lookup table. The name is case-sensitive: "Research" and "research" are two.
    """
    cleaned = unicodedata.normalize("NFKC", name).strip()
    if not cleaned:
        raise ValueError("a workspace name must not be empty")
    return uuid.uuid5(WORKSPACE_NAMESPACE, cleaned)
