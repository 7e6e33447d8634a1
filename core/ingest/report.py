"""What a load or an upload reports: a row per document, rejections, totals per file.

Apart from ``core.ingest.indexing`` because it is a different job (describing an outcome, not
producing it) and because the indexer had grown past 600 lines; the report's models cross the
boundary to the CLI and the pages, the indexer's machinery does not. ``core.ingest.indexing``
re-exports these names, so callers import either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: The reason of each document a stopped load did not write (the report's ``stopped`` says why).
NOT_WRITTEN = "not stored: the load stopped before this document was written"


class DocumentRow(BaseModel):
    """What happened to one document (or to one unreadable file or skipped record)."""

    model_config = ConfigDict(frozen=True)

    #: The file the document came from ("" when documents were given directly).
    file: str = ""
    #: None when the file could not be read, or for a skipped JSONL record.
    source_id: str | None = None
    status: Literal["indexed", "rejected"]
    passages_written: int = Field(default=0, ge=0)
    #: Repeats of an identical passage text within the document, stored once.
    duplicate_passages: int = Field(default=0, ge=0)
    entities_found: int = Field(default=0, ge=0)
    #: The document's earlier passages that this upload no longer contains (replaced).
    orphans_removed: int = Field(default=0, ge=0)
    reason: str | None = None
    #: Safe recoveries applied while reading (NUL characters removed, encoding detected ...).
    notes: list[str] = Field(default_factory=list)


class Rejection(BaseModel):
    """A document or file that stored nothing, and why, in plain words."""

    model_config = ConfigDict(frozen=True)

    file: str
    source_id: str | None
    reason: str

    def __str__(self) -> str:
        where = self.file or self.source_id or "document"
        if self.file and self.source_id and self.source_id != self.file:
            where = f"{self.file} ({self.source_id})"
        return f"{where}: {self.reason}"


class FileSummary(BaseModel):
    """One file's totals, for a row per uploaded file."""

    model_config = ConfigDict(frozen=True)

    file: str
    documents_indexed: int = Field(ge=0)
    passages_written: int = Field(ge=0)
    entities_found: int = Field(ge=0)
    orphans_removed: int = Field(ge=0)
    rejected: list[str] = Field(default_factory=list)


class IndexReport(BaseModel):
    """The outcome of a batch: totals, rejections with reasons, and a row per document."""

    model_config = ConfigDict(frozen=True)

    documents_indexed: int = Field(default=0, ge=0)
    passages_written: int = Field(default=0, ge=0)
    #: Distinct entities mentioned by the passages written.
    entities_found: int = Field(default=0, ge=0)
    orphans_removed: int = Field(default=0, ge=0)
    rejected: list[Rejection] = Field(default_factory=list)
    rows: list[DocumentRow] = Field(default_factory=list)
    #: Why the writes stopped before the end (the store became unavailable), or None.
    stopped: str | None = None

    @property
    def ok(self) -> bool:
        """True when nothing was rejected."""
        return not self.rejected

    @property
    def not_written(self) -> int:
        """Documents a stopped load never wrote (each a row with reason ``NOT_WRITTEN``)."""
        return sum(row.reason == NOT_WRITTEN for row in self.rows)

    def by_file(self) -> list[FileSummary]:
        """Totals per file, in the order the files were given."""
        grouped: dict[str, list[DocumentRow]] = {}
        for row in self.rows:
            grouped.setdefault(row.file or (row.source_id or ""), []).append(row)
        return [
            FileSummary(
                file=file,
                documents_indexed=sum(r.status == "indexed" for r in rows),
                passages_written=sum(r.passages_written for r in rows),
                entities_found=sum(r.entities_found for r in rows),
                orphans_removed=sum(r.orphans_removed for r in rows),
                rejected=[r.reason or "" for r in rows if r.status == "rejected"],
            )
            for file, rows in grouped.items()
        ]


def summarise(rows: Sequence[DocumentRow], entity_total: int | None = None) -> IndexReport:
    """The report for ``rows``; entities are counted per document unless a total is given."""
    indexed = [row for row in rows if row.status == "indexed"]
    return IndexReport(
        documents_indexed=len(indexed),
        passages_written=sum(row.passages_written for row in indexed),
        entities_found=(
            entity_total if entity_total is not None else sum(r.entities_found for r in indexed)
        ),
        orphans_removed=sum(row.orphans_removed for row in indexed),
        rejected=[
            Rejection(file=row.file, source_id=row.source_id, reason=row.reason or "rejected")
            for row in rows
            if row.status == "rejected"
        ],
        rows=list(rows),
    )
