"""A DOCX -> its paragraphs and tables; run only inside the worker sandbox.

python-docx loads every part of the package, so the members' declared sizes are summed
before anything is inflated; the rest is bounded by the worker's memory and time limits.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from core.ingest.limits import MAX_INFLATED_BYTES, MAX_TEXT_BYTES
from core.ingest.results import ReadError, mib

#: libxml2's longest text node without its "huge" option (XML_MAX_TEXT_LENGTH); the option
#: stays off, as it also lifts the bounds on nesting and entity expansion.
XML_TEXT_NODE_CHARS = 10_000_000


def docx_text(
    data: bytes, text_bytes: int = MAX_TEXT_BYTES, inflated_bytes: int = MAX_INFLATED_BYTES
) -> tuple[str, str, dict[str, Any], list[str]]:
    """A DOCX's paragraphs and tables; run in the worker (``worker_entry``), never in the app.

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
                    f"the DOCX inflates to {mib(inflated)} MB, more than the"
                    f" {mib(inflated_bytes)} MB allowed per file (a zip bomb?) — nothing stored"
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
        if "XML_PARSE_HUGE" in str(exc):  # libxml2's own bound, hit by a sound file
            raise ReadError(
                f"the DOCX holds one piece of text over {XML_TEXT_NODE_CHARS:,} characters"
                " long with no break (one run of one paragraph), more than the XML reader"
                " takes in one piece — nothing stored (split that paragraph, or save the"
                " document as .txt)"
            ) from exc
        raise ReadError(f"damaged DOCX: {exc}") from exc
    text = "\n\n".join(p for p in paragraphs if p)
    if len(text.encode("utf-8", "surrogatepass")) > text_bytes:
        raise ReadError(
            f"the DOCX expands to more than {mib(text_bytes)} MB of text"
            " (the limit per file) — nothing stored"
        )
    return text, title, {}, []
