"""A PDF -> its pages' text; run only inside the worker sandbox (``core.ingest.worker_entry``).

pypdf is a parser we do not control, so this module is never imported by the app: the worker
process runs it under a memory and a time limit (``core.ingest.parse_worker``).

Before any text is extracted, the page content streams are measured: their inflated sizes are
summed over the pages that draw them (a stream shared by 30 pages is interpreted 30 times),
and a PDF over ``MAX_CONTENT_BYTES`` is refused. A 97 KB PDF of 30 pages sharing one 60 MB
stream otherwise ran the text extractor until the worker's 120 s clock killed it. A Flate
stream is measured by inflating it in slices and counting, so measuring never holds more than a
slice; each distinct stream is measured once. Rejected: a cap on the text yielded alone (that
stream yields little text; the time goes into interpreting its operators).
"""

from __future__ import annotations

import io
import zlib
from typing import Any

from core.ingest.limits import MAX_CONTENT_BYTES, MAX_TEXT_BYTES
from core.ingest.results import ReadError, mib

#: Bytes inflated at a time while a Flate content stream is measured.
_MEASURE_SLICE = 1 << 20


def pdf_text(
    data: bytes, text_bytes: int = MAX_TEXT_BYTES, content_bytes: int = MAX_CONTENT_BYTES
) -> tuple[str, str, dict[str, Any], list[str]]:
    """A PDF's pages as paragraphs; run in the worker (``worker_entry``), never in the app."""
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
        _check_content_size(reader, content_bytes)
        pages: list[str] = []
        produced = 0
        for pdf_page in reader.pages:
            page_text = pdf_page.extract_text() or ""
            produced += len(page_text.encode("utf-8", "surrogatepass"))
            if produced > text_bytes:
                raise ReadError(
                    f"the PDF expands to more than {mib(text_bytes)} MB of text"
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


def _check_content_size(reader: Any, limit: int) -> None:
    """Refuse a PDF whose page content streams inflate to more than ``limit`` bytes, summed
    over the pages that draw them; raises ``ReadError``."""
    from pypdf.generic import ArrayObject, IndirectObject

    sizes: dict[object, int] = {}
    total = 0
    for page in reader.pages:
        contents = page.get("/Contents")
        if contents is None:
            continue
        resolved = contents.get_object() if isinstance(contents, IndirectObject) else contents
        parts = list(resolved) if isinstance(resolved, ArrayObject) else [contents]
        for part in parts:
            key: object = (
                (part.idnum, part.generation) if isinstance(part, IndirectObject) else id(part)
            )
            if key not in sizes:
                sizes[key] = _inflated_size(part.get_object(), limit - total + 1)
            total += sizes[key]
            if total > limit:
                raise ReadError(
                    f"the PDF's page contents inflate to more than {mib(limit)} MB (the limit per"
                    " file; pages that repeat one drawing count once each) — nothing stored"
                )


def _inflated_size(stream: Any, most: int) -> int:
    """The bytes ``stream`` inflates to, counted up to a little past ``most``."""
    if stream.get("/Filter") == "/FlateDecode" and stream.get("/DecodeParms") is None:
        inflater = zlib.decompressobj()
        pending = stream._data  # the stored (deflated) bytes
        size = 0
        while pending and size <= most:
            size += len(inflater.decompress(pending, _MEASURE_SLICE))
            pending = inflater.unconsumed_tail
        return size
    return len(stream.get_data())
