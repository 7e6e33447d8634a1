"""Uploaded bytes + file name -> source documents, or an error that says what is wrong.

One reader per format, chosen by the file name's extension and checked against the bytes
(a ``.pdf`` that does not start with ``%PDF`` is refused, not guessed at). Readers only parse:
nothing in a file is executed or fetched (HTML is parsed by the stdlib parser, links and
images are never followed). A file either yields clean text or raises ``ReadError`` with a
plain-words reason; there is no partial document, because a half-read file stored as if whole
is worse than a refusal the analyst can act on.

Recoveries that are safe and reported rather than refused (each adds a note):
- NUL characters are removed and lone surrogates become U+FFFD: neither can be stored
  (``core.domain.chunks.storable_text_problem``) and neither carries meaning in text.
- A few invalid bytes in otherwise UTF-8 text become U+FFFD; text that is not UTF-8 at all is
  decoded with the encoding charset-normalizer detects (Latin-1, cp1252, UTF-16 ...).
- A malformed line of a JSONL corpus is skipped and reported; the good lines are kept.

Source ids: an uploaded file's id is its base name (browsers send only that; a directory part
in a name is either an old browser's full path or an attack, and not what the user calls the
file), with control and format characters (zero-width, bidi) removed and any separator replaced; the
command line passes a folder-relative path, joined with "__" (``reports__q1.txt``) so ids never
contain a path separator. A BEIR/JSONL corpus gives each record its ``_id`` unchanged (only
control characters removed; a "/" stays, as in DBpedia ids), so relevance judgments (qrels
``corpus-id``) match source ids; two corpora with overlapping ids belong in two workspaces. An
``_id`` with a format character is refused with its line (two such ids print alike and differ).

Size: files over ``DEFAULT_MAX_BYTES`` (64 MiB, settable) are refused before parsing, with the
size in the message. A 50 MB text file loads (about 48,000 passages at the default size).

Bounds that hold whatever a file says (``ParseLimits``; shown on the Upload page): PDF and DOCX
are parsed in a worker process (``core.ingest.parse_worker``) capped at ``PARSE_MEMORY_BYTES`` of
address space and ``PARSE_SECONDS`` of wall-clock time, killed on breach; their text stops at
``MAX_TEXT_BYTES``; a DOCX whose members declare more than ``MAX_INFLATED_BYTES`` in total is
refused before anything is inflated (and ``zipfile`` never inflates past a declared size: a
member that lies ends in a CRC error). HTML is read in one linear pass; JSON nesting is capped.
Rejected: checks before parsing alone (no check bounds what pypdf allocates for one page) and
a thread with a timeout (a thread cannot be killed, nor its memory capped).
"""

from __future__ import annotations

import codecs
import io
import re
import unicodedata
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from core.domain.chunks import (
    MAX_SOURCE_ID_CHARS,
    SourceDocument,
    source_id_problem,
    storable_text_problem,
)
from core.domain.names import FORMAT_CATEGORY, format_problem
from core.ingest import parse_worker
from core.ingest.jsonlines import MAX_JSON_DEPTH, JsonLineError, parse_json_line

#: Largest file read by default; bigger ones are refused before any parsing.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
#: Address space of the worker process that parses one PDF or DOCX (RLIMIT_AS); a file that
#: needs more is refused. The worker itself takes about 80 MiB of it.
PARSE_MEMORY_BYTES = 1024 * 1024 * 1024
#: Wall-clock seconds one PDF or DOCX may take to parse before its worker is killed.
PARSE_SECONDS = 120.0
#: Most text (UTF-8 bytes) one PDF or DOCX may yield; one that expands to more is refused.
MAX_TEXT_BYTES = 64 * 1024 * 1024
#: Most bytes the members of one DOCX may inflate to, in total (checked before inflating).
MAX_INFLATED_BYTES = 128 * 1024 * 1024
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
#: Share of control characters above which decoded "text" is taken for binary data.
BINARY_CONTROL_SHARE = 0.02
#: Share of NUL characters above which decoded "text" is taken for binary data.
BINARY_NUL_SHARE = 0.05
#: Characters sampled from each of the start, middle and end of a long text for the binary test.
_SAMPLE_CHARS = 65536
#: Control characters that do not occur in text (NUL counted separately), and U+FFFD.
_CONTROLS = re.compile(r"[\x01-\x08\x0e-\x1f\x7f-\x9f\ufffd]")
#: Text made only of ASCII, Latin-1 letters and punctuation, and Windows-1252 typography.
_WESTERN_TEXT = re.compile(r"[\x00-\x7f\u00a0-\u00ff‘’“”–—…€•]*")
#: Encodings preferred when charset-normalizer finds them as plausible as its first choice.
_WESTERN = ("cp1252", "latin_1", "iso8859_15")
#: Share of invalid UTF-8 sequences (per character) below which text holding well-formed
#: multi-byte UTF-8 is read as UTF-8 with U+FFFD, not re-read in a legacy code page.
MOSTLY_UTF8_BAD_SHARE = 0.01
#: One invalid UTF-8 byte sequence after lenient decoding (the decoder may emit several U+FFFD).
_REPLACEMENT_RUNS = re.compile("\ufffd+")
#: Any non-ASCII character (to count well-formed multi-byte UTF-8 sequences).
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
#: Unpaired UTF-16 surrogates (a str can hold them; UTF-8 and PostgreSQL cannot).
_SURROGATES = re.compile(r"[\ud800-\udfff]")
#: Elements whose content is never visible text.
_INVISIBLE_TAGS = (
    "script", "style", "noscript", "template", "head", "svg", "math", "iframe",
    "object", "embed", "canvas", "audio", "video", "select", "button",
)  # fmt: skip
#: Elements that start a new paragraph of text.
_BLOCK_TAGS = (
    "p", "div", "section", "article", "main", "aside", "header", "footer", "nav",
    "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "dl", "dt", "dd",
    "table", "tr", "blockquote", "pre", "figure", "figcaption", "hr", "form",
    "fieldset", "address", "details", "summary", "caption",
)  # fmt: skip
#: Byte-order marks and the codec each announces (longest first: UTF-32 LE starts like UTF-16).
_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
#: Characters stripped from source ids: C0/C1 controls, bidi overrides and isolates.
_ID_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: Paragraph and line markers used while flattening HTML (private-use characters; one already
#: in the page only adds a break).
_BLOCK_MARK = "\ue000"
_LINE_MARK = "\ue001"
#: Horizontal whitespace collapsed to one space in HTML text.
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")
#: Bytes of an HTML page searched for a ``<meta charset>`` (the HTML standard says 1,024).
_CHARSET_SNIFF_BYTES = 4096
#: ``<meta charset="x">`` or ``<meta http-equiv=... content="text/html; charset=x">``.
_META_CHARSET = re.compile(
    rb"<meta[^>]{0,200}?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:-]{1,40})", re.IGNORECASE
)


class ParseLimits(BaseModel):
    """The bounds one PDF or DOCX is parsed under (the defaults are the constants above)."""

    model_config = ConfigDict(frozen=True)

    memory_bytes: int = Field(default=PARSE_MEMORY_BYTES, gt=0)
    seconds: float = Field(default=PARSE_SECONDS, gt=0)
    text_bytes: int = Field(default=MAX_TEXT_BYTES, gt=0)
    inflated_bytes: int = Field(default=MAX_INFLATED_BYTES, gt=0)

    def summary(self, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
        """The limits in one sentence, for the Upload page."""
        return (
            f"Limits per file: {_mib(max_bytes)} MiB uploaded; a PDF or DOCX is read in a separate"
            f" process with at most {_mib(self.memory_bytes)} MiB of memory and"
            f" {self.seconds:g} s, and may yield at most {_mib(self.text_bytes)} MiB of text; a"
            f" DOCX may inflate to at most {_mib(self.inflated_bytes)} MiB; JSON lines may nest"
            f" {MAX_JSON_DEPTH} levels."
        )


def _mib(size: int) -> str:
    """``size`` in MiB for a message: whole above 10 MiB, else two significant digits."""
    mib = size / 1_048_576
    return f"{mib:,.0f}" if mib >= 10 else f"{mib:.2g}"


#: The product's bounds for one PDF or DOCX.
DEFAULT_PARSE_LIMITS = ParseLimits()


class ReadError(Exception):
    """A file that cannot be read; ``str()`` is a plain-words reason for the analyst."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LineProblem(BaseModel):
    """A record of a multi-document file that was skipped, and why."""

    model_config = ConfigDict(frozen=True)

    line: int = Field(ge=1)
    reason: str


class ReadResult(BaseModel):
    """What a file yielded: its documents, skipped records, and recoveries applied."""

    model_config = ConfigDict(frozen=True)

    file_name: str
    documents: list[SourceDocument] = Field(default_factory=list)
    #: Records skipped (JSONL lines), each with its line number and reason.
    problems: list[LineProblem] = Field(default_factory=list)
    #: Safe recoveries applied, e.g. "removed 3 NUL characters".
    notes: list[str] = Field(default_factory=list)


def sanitise_source_id(name: str, *, keep_directories: bool = False) -> str:
    """A readable source id from a file name: no control or format characters, no separators.

    ``keep_directories`` joins the directory parts with "__" instead of dropping them (for
    folder loads, where two files may share a base name).
    """
    visible = "".join(c for c in name if unicodedata.category(c) != FORMAT_CATEGORY)
    cleaned = _ID_UNSAFE.sub("", unicodedata.normalize("NFC", visible)).replace("\\", "/")
    parts = [part.strip() for part in cleaned.split("/")]
    parts = [part for part in parts if part and part not in (".", "..")]
    if not keep_directories:
        parts = parts[-1:]
    result = "__".join(parts).strip()
    if len(result) > MAX_SOURCE_ID_CHARS:
        suffix = Path(result).suffix[:16]
        result = result[: MAX_SOURCE_ID_CHARS - len(suffix) - 1] + "…" + suffix
    return result or "unnamed"


def printable_name(name: str) -> str:
    """``name`` as it can be shown and stored: lone surrogates become U+FFFD.

    A file name on disk that is not UTF-8 reaches Python with each bad byte as a lone
    surrogate (``os.fsdecode``), and a browser may send one; neither can be printed, sent to
    the page or stored, so messages and reports show the name with U+FFFD instead.
    """
    return _SURROGATES.sub("\ufffd", name)


def name_problem(name: str) -> str | None:
    """Why a file name (or the path a source id is made from) cannot name a source, or None."""
    if _SURROGATES.search(name):
        return (
            f"the file name {printable_name(name)!r} is not valid UTF-8 (the bad bytes are shown"
            " as \ufffd): rename the file — nothing stored"
        )
    return None


def clean_text(text: str) -> tuple[str, list[str]]:
    """``text`` without NUL characters and with lone surrogates replaced, plus notes saying so."""
    notes: list[str] = []
    nuls = text.count("\x00")
    if nuls:
        text = text.replace("\x00", "")
        notes.append(f"removed {nuls} NUL character{'s' if nuls != 1 else ''}")
    text, surrogates = _SURROGATES.subn("\ufffd", text)
    if surrogates:
        notes.append("replaced unpaired UTF-16 surrogates with U+FFFD")
    return text, notes


def _looks_binary(text: str) -> bool:
    """Too many control characters (sampled: the start, middle and end of long texts)."""
    if len(text) > 3 * _SAMPLE_CHARS:
        middle = len(text) // 2
        text = text[:_SAMPLE_CHARS] + text[middle : middle + _SAMPLE_CHARS] + text[-_SAMPLE_CHARS:]
    if not text:
        return False
    nuls = text.count("\x00")
    others = len(_CONTROLS.findall(text))
    # A handful of stray control bytes is damage, not binary data (NULs are removed later).
    too_many_controls = others > 2 and others / len(text) > BINARY_CONTROL_SHARE
    return too_many_controls or (nuls > 2 and nuls / len(text) > BINARY_NUL_SHARE)


def decode_text(data: bytes) -> tuple[str, list[str]]:
    """Bytes of a text file -> str, with notes on how it was decoded. Raises ReadError."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            text = data[len(bom) :].decode(codec, errors="replace")
            notes = [f"decoded as {codec.upper()} (byte-order mark)"] if codec != "utf-8" else []
            return _checked_text(text, notes)
    try:
        text = data.decode("utf-8")
        if not _looks_binary(text):
            return text, []
    except UnicodeDecodeError:
        lenient = data.decode("utf-8", errors="replace")
        bad = len(_REPLACEMENT_RUNS.findall(lenient))
        good_multibyte = len(_NON_ASCII.findall(lenient)) - lenient.count("\ufffd")
        if good_multibyte > 0 and (
            bad <= good_multibyte or bad <= len(lenient) * MOSTLY_UTF8_BAD_SHARE
        ):
            note = (
                f"replaced {bad} invalid UTF-8 byte sequence{'s' if bad != 1 else ''} with U+FFFD"
            )
            return _checked_text(lenient, [note])
    western = _as_western(data)
    if western is not None:
        return _checked_text(western, ["decoded as Windows-1252 (not UTF-8)"])
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    best = matches.best()
    if best is None or best.encoding is None:
        raise ReadError("not text: the bytes match no text encoding (a binary file?)")
    # Short Western European text fits several 8-bit code pages equally well; among the
    # equally plausible ones prefer Windows-1252 (a superset of printable Latin-1).
    for match in matches:
        if match.encoding in _WESTERN and match.chaos <= best.chaos:
            best = match
            break
    return _checked_text(str(best), [f"decoded as {best.encoding} (detected; not UTF-8)"])


def _as_western(data: bytes) -> str | None:
    """``data`` as Windows-1252 when every non-ASCII character is Western European, else None.

    Detection on a short legacy text is a coin toss between 8-bit code pages (charset-normalizer
    read "naïve" in Latin-1 as Baltic "naļve"); Western European text is the common case, so
    it is tried first. The cost: a Central European file that happens to decode cleanly as
    Windows-1252 is misread (ř shows as ø); UTF-8 files never are.
    """
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    return text if _WESTERN_TEXT.fullmatch(text) else None


def _checked_text(text: str, notes: list[str]) -> tuple[str, list[str]]:
    if _looks_binary(text):
        raise ReadError("not text: the file is mostly control bytes (a binary file?)")
    return text, notes


def _read_plain(data: bytes) -> tuple[str, str, dict[str, Any], list[str]]:
    text, notes = decode_text(data)
    return text, "", {}, notes


class _HtmlText:
    """An lxml parser target that keeps visible text: one pass, one small entry per open element.

    libxml2 balances every start with an end, so a stack of each open element's effect
    (hides its content? preformatted?) is enough: no tree is built, nothing recurses, and the
    work is linear in the size of the page whatever its depth.
    """

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.title: list[str] = []
        self._stack: list[tuple[bool, bool]] = []
        self._hidden = 0
        self._pre = 0
        self._in_title = False

    def start(self, tag: str, attrib: Mapping[str, str]) -> None:
        name = tag.casefold() if isinstance(tag, str) else ""
        style = str(attrib.get("style", "")).replace(" ", "").casefold()
        hides = (
            name in _INVISIBLE_TAGS
            or "hidden" in attrib
            or "display:none" in style
            or "visibility:hidden" in style
        )
        pre = name == "pre"
        self._stack.append((hides, pre))
        self._hidden += hides
        self._pre += pre
        if name == "title" and not self.title:
            self._in_title = True
        if name in _BLOCK_TAGS:
            self.pieces.append(_BLOCK_MARK)
        elif name == "br":
            self.pieces.append(_LINE_MARK)

    def end(self, tag: str) -> None:
        name = tag.casefold() if isinstance(tag, str) else ""
        if self._stack:
            hides, pre = self._stack.pop()
            self._hidden -= hides
            self._pre -= pre
        if name == "title":
            self._in_title = False
        if name in _BLOCK_TAGS:
            self.pieces.append(_BLOCK_MARK)

    def data(self, value: str) -> None:
        if self._in_title:
            self.title.append(value)
        if self._hidden:
            return
        if self._pre:
            self.pieces.append(value.replace("\n", _LINE_MARK))
        else:
            self.pieces.append(_SPACES.sub(" ", value.replace("\n", " ")))

    def close(self) -> None:
        return None


def _declared_charset(data: bytes) -> str | None:
    """The codec a ``<meta charset>`` near the start names, if Python knows it."""
    found = _META_CHARSET.search(data[:_CHARSET_SNIFF_BYTES])
    if found is None:
        return None
    try:
        return codecs.lookup(found.group(1).decode("ascii")).name
    except (LookupError, UnicodeDecodeError):
        return None


def _html_text(data: bytes) -> tuple[str, str, dict[str, Any], list[str]]:
    from lxml import etree

    declared = None if any(data.startswith(bom) for bom, _ in _BOMS) else _declared_charset(data)
    if declared is not None:
        markup, notes = _checked_text(data.decode(declared, errors="replace"), [])
    else:
        markup, notes = decode_text(data)
    target = _HtmlText()
    parser = etree.HTMLParser(target=target, recover=True, no_network=True)
    try:
        parser.feed(markup)
        parser.close()
    except etree.Error as exc:  # recover=True makes this rare: a page libxml2 gives up on
        raise ReadError(f"damaged HTML: {exc}") from exc
    title = " ".join("".join(target.title).split())
    paragraphs = []
    for block in "".join(target.pieces).split(_BLOCK_MARK):
        lines = [_SPACES.sub(" ", line).strip() for line in block.split(_LINE_MARK)]
        joined = "\n".join(line for line in lines if line)
        if joined:
            paragraphs.append(joined)
    return "\n\n".join(paragraphs), title, {}, notes


def _pdf_text(
    data: bytes, text_bytes: int = MAX_TEXT_BYTES
) -> tuple[str, str, dict[str, Any], list[str]]:
    """A PDF's pages as paragraphs; run in the worker (``parse_in_worker``), never in the app."""
    from pypdf import PdfReader

    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise ReadError("not a PDF: the file does not start with %PDF")
    if b"%%EOF" not in data[-2048:]:
        raise ReadError("truncated PDF: the end-of-file marker is missing — nothing stored")
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except Exception as exc:  # pypdf raises several types for unsupported crypto
                raise ReadError(
                    f"encrypted PDF that cannot be opened ({exc}) — nothing stored"
                ) from exc
            if not opened:
                raise ReadError("encrypted PDF: it needs a password — nothing stored")
        pages: list[str] = []
        produced = 0
        for pdf_page in reader.pages:
            page_text = pdf_page.extract_text() or ""
            produced += len(page_text.encode("utf-8", "surrogatepass"))
            if produced > text_bytes:
                raise ReadError(
                    f"the PDF expands to more than {_mib(text_bytes)} MiB of text"
                    " (the limit per file) — nothing stored"
                )
            pages.append(page_text)
        title = ""
        info = reader.metadata
        if info is not None and info.title:
            title = " ".join(str(info.title).split())
    except (ReadError, MemoryError):
        raise
    except Exception as exc:  # pypdf raises many types (IndexError, struct.error ...) on damage
        detail = str(exc) or type(exc).__name__
        raise ReadError(f"damaged PDF: {detail} — nothing stored") from exc
    if not pages:
        raise ReadError("PDF without pages — nothing stored")
    if not any(page.strip() for page in pages):
        raise ReadError("scanned PDF without a text layer — nothing stored")
    text_parts: list[str] = []
    page_starts: list[int] = []
    offset = 0
    for page in pages:
        stripped = page.strip()
        if text_parts:
            offset += 2
        page_starts.append(offset)
        text_parts.append(stripped)
        offset += len(stripped)
    return "\n\n".join(text_parts), title, {"page_starts": page_starts}, []


def _docx_text(
    data: bytes, text_bytes: int = MAX_TEXT_BYTES, inflated_bytes: int = MAX_INFLATED_BYTES
) -> tuple[str, str, dict[str, Any], list[str]]:
    """A DOCX's paragraphs and tables; run in the worker (``parse_in_worker``), never in the app.

    The members' declared sizes are summed before python-docx inflates anything: it loads
    every part of the package (a 1 GiB ``styles.xml`` as much as ``document.xml``).
    """
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise ReadError(
            "not a DOCX: the file is not a zip archive (an old .doc or a password-protected file?)"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            if "word/document.xml" not in names:
                raise ReadError("not a DOCX: the file is a zip without word/document.xml")
            inflated = sum(member.file_size for member in archive.infolist())
            if inflated > inflated_bytes:
                raise ReadError(
                    f"the DOCX inflates to {_mib(inflated)} MiB, more than the"
                    f" {_mib(inflated_bytes)} MiB allowed per file (a zip bomb?) — nothing stored"
                )
    except zipfile.BadZipFile as exc:
        raise ReadError(f"damaged DOCX: {exc}") from exc
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(io.BytesIO(data))
        paragraphs: list[str] = []
        for block in document.iter_inner_content():
            if isinstance(block, Paragraph):
                paragraphs.append(block.text.strip())
            elif isinstance(block, Table):
                for row in block.rows:
                    cells = list(dict.fromkeys(cell.text.strip() for cell in row.cells))
                    paragraphs.append(" | ".join(cell for cell in cells if cell))
        title = " ".join((document.core_properties.title or "").split())
    except ReadError:
        raise
    except MemoryError:
        raise
    except Exception as exc:  # python-docx/lxml raise many types for a damaged package
        raise ReadError(f"damaged DOCX: {exc}") from exc
    text = "\n\n".join(p for p in paragraphs if p)
    if len(text.encode("utf-8", "surrogatepass")) > text_bytes:
        raise ReadError(
            f"the DOCX expands to more than {_mib(text_bytes)} MiB of text"
            " (the limit per file) — nothing stored"
        )
    return text, title, {}, []


def parse_in_worker(kind: str, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """What the worker process runs for one file: ``kind`` "pdf" or "docx"; raises ReadError."""
    if kind == "pdf":
        text, title, metadata, notes = _pdf_text(data, options["text_bytes"])
    else:
        text, title, metadata, notes = _docx_text(
            data, options["text_bytes"], options["inflated_bytes"]
        )
    return {"text": text, "title": title, "metadata": metadata, "notes": notes}


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


def _jsonl_documents(data: bytes, result: _Collector, *, prefix: str = "") -> None:
    """BEIR records ``{"_id", "title", "text"}``, one per line; bad lines skipped and reported."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    seen: dict[str, int] = {}
    empty = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
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
        source_id = prefix + _ID_UNSAFE.sub("", doc_id).strip()
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
        result.documents.append(
            SourceDocument(source_id=source_id, text=text, title=title.strip(), metadata=metadata)
        )
    if empty:
        result.notes.append(
            f"skipped {empty} empty record{'s' if empty != 1 else ''} (no title, no text)"
        )
    if not result.documents:
        reasons = "; ".join(f"line {p.line}: {p.reason}" for p in result.problems[:3])
        raise ReadError(
            "no usable records in the JSONL file" + (f" ({reasons})" if reasons else "")
        )


def _shown(value: str, limit: int = 80) -> str:
    """``value`` quoted for a message, shortened when long."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


class _Collector:
    def __init__(self) -> None:
        self.documents: list[SourceDocument] = []
        self.problems: list[LineProblem] = []
        self.notes: list[str] = []

    def problem(self, line: int, reason: str) -> None:
        self.problems.append(LineProblem(line=line, reason=reason))


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
    collector = _Collector()
    if kind == "jsonl":
        _jsonl_documents(data, collector)
        return ReadResult(
            file_name=name,
            documents=collector.documents,
            problems=collector.problems,
            notes=collector.notes,
        )
    if kind in ("pdf", "docx"):
        text, title, metadata, notes = _bounded(kind, data, limits or DEFAULT_PARSE_LIMITS)
    else:
        text, title, metadata, notes = (_read_plain if kind == "text" else _html_text)(data)
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


def read_beir_folder(folder: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> ReadResult:
    """The ``corpus.jsonl`` of a BEIR folder; source ids are the records' ``_id``."""
    corpus = folder / "corpus.jsonl"
    return read_file(str(corpus), corpus.read_bytes(), max_bytes=max_bytes)


def is_beir_folder(folder: Path) -> bool:
    """A folder holding a BEIR ``corpus.jsonl``."""
    return (folder / "corpus.jsonl").is_file()


def iter_supported_files(folder: Path) -> Iterator[Path]:
    """Files under ``folder`` (recursively, sorted) whose extension a reader handles."""
    for path in sorted(folder.rglob("*")):
        if path.is_file() and _skip_reason(path, folder, beir=False) is None:
            yield path


#: What a BEIR folder holds besides its corpus, and why it is not a document.
BEIR_COMPANIONS: dict[str, str] = {
    "queries.jsonl": "BEIR queries, not documents: use them on the Evaluate screen",
    "qrels.tsv": "BEIR judgments, not documents: use them on the Evaluate screen",
}


def _skip_reason(path: Path, folder: Path, *, beir: bool) -> str | None:
    """Why a file under ``folder`` is not read as documents, or None when it is."""
    relative = path.relative_to(folder)
    if any(part.startswith(".") for part in relative.parts):
        return "hidden file or folder (its name starts with a dot)"
    if beir:
        if relative.as_posix() == "corpus.jsonl":
            return None
        if relative.as_posix() in BEIR_COMPANIONS or relative.parts[0] == "qrels":
            return BEIR_COMPANIONS.get(relative.as_posix(), BEIR_COMPANIONS["qrels.tsv"])
        return (
            "not read: in a BEIR folder only corpus.jsonl holds the documents;"
            " name this file on the command line to load it too"
        )
    if file_kind(path.name) is None:
        supported = ", ".join(sorted({ext.lstrip(".") for ext in SUPPORTED_EXTENSIONS}))
        return f"not read: unsupported file type (supported: {supported})"
    return None


def skipped_files(folder: Path) -> list[tuple[Path, str]]:
    """Every file under ``folder`` that loading it does not read, each with the reason.

    No file given to the loader is passed over in silence: a folder is read either as a
    BEIR collection (its corpus.jsonl) or file by file, and whatever that leaves out is
    named here rather than ignored.
    """
    beir = is_beir_folder(folder)
    skipped = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            reason = _skip_reason(path, folder, beir=beir)
            if reason is not None:
                skipped.append((path, reason))
    return skipped
