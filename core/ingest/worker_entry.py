"""The parse worker's entry point: ``python -m core.ingest.worker_entry MEMORY_BYTES``.

It caps its own memory, imports the PDF and DOCX readers once, then serves requests over the
sandbox's pipe (``core.ingest.parse_worker.serve``), handing each to the reader its kind
names. Kept apart from the sandbox so the sandbox imports no reader (the package has no
import circle) and apart from the readers so the app never imports pypdf or python-docx.
"""

from __future__ import annotations

import sys
from typing import Any

from core.ingest import parse_worker
from core.ingest.docx_text import docx_text
from core.ingest.pdf_text import pdf_text


def parse_in_worker(kind: str, data: bytes, options: dict[str, Any]) -> dict[str, Any]:
    """What the worker process runs for one file: ``kind`` "pdf" or "docx"; raises ReadError."""
    if kind == "pdf":
        text, title, metadata, notes = pdf_text(
            data, options["text_bytes"], options["content_bytes"]
        )
    else:
        text, title, metadata, notes = docx_text(
            data, options["text_bytes"], options["inflated_bytes"]
        )
    return {"text": text, "title": title, "metadata": metadata, "notes": notes}


def main(memory_bytes: int) -> None:
    """Cap memory first, then import the parsers once (not on the first file), then serve."""
    parse_worker.limit_memory(memory_bytes)
    import docx  # noqa: F401
    import pypdf  # noqa: F401

    parse_worker.serve(memory_bytes, parse_in_worker)


if __name__ == "__main__":
    main(int(sys.argv[1]))
