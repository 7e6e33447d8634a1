"""What reading a file gives: documents, skipped records, notes, or a plain-words refusal.

A leaf of the ingest package (it imports only the domain's ``SourceDocument``), so every
format's reader, the worker sandbox and the indexer share one ``ReadError`` without importing
each other; the alternative, each reader defining its own error, made the worker import the
readers to recognise a refusal, and the readers import the worker to run it (a circle).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from core.domain.chunks import SourceDocument


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


def mib(size: int) -> str:
    """``size`` in units of 1,048,576 bytes for a message: whole above 10, else two
    significant digits.

    Messages call that unit "MB", as Streamlit does: its upload setting (``maxUploadSize``,
    which the uploader prints as "64MB per file") and ``LEXPLAIN_MAX_UPLOAD_MB`` count it so.
    "MiB" beside the uploader's "MB" read as two limits; one unit on every screen.
    """
    mib = size / 1_048_576
    return f"{mib:,.0f}" if mib >= 10 else f"{mib:.2g}"
