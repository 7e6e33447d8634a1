"""A PDF -> its pages' text; run only inside the worker sandbox (``core.ingest.worker_entry``).

pypdf is a parser we do not control, so this module is never imported by the app: the worker
process runs it under a memory and a time limit (``core.ingest.parse_worker``).
"""

from __future__ import annotations

import io
from typing import Any

from core.ingest.limits import MAX_TEXT_BYTES
from core.ingest.results import ReadError, mib


def pdf_text(
    data: bytes, text_bytes: int = MAX_TEXT_BYTES
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
