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
    """One file's totals, for a row per uploaded file (every document counted, kept or not)."""

    model_config = ConfigDict(frozen=True)

    file: str
    documents_indexed: int = Field(ge=0)
    passages_written: int = Field(ge=0)
    entities_found: int = Field(ge=0)
    orphans_removed: int = Field(ge=0)
    #: Reasons of the file's rejections among the rows kept (``documents_rejected`` counts all).
    rejected: list[str] = Field(default_factory=list)
    #: Documents, records or the file itself that stored nothing.
    documents_rejected: int = Field(default=0, ge=0)
    #: Documents a stopped load never wrote (each also counted in ``documents_rejected``).
    not_written: int = Field(default=0, ge=0)
    #: Notes of the rows kept (recoveries applied while reading).
    notes: list[str] = Field(default_factory=list)
    #: Every source stored from the file, in order.
    source_ids: list[str] = Field(default_factory=list)


class IndexReport(BaseModel):
    """The outcome of a batch: totals, totals per file, rejections with reasons, and rows.

    Rows are kept for the first ``REPORT_ROWS`` documents and, after them, for rejections and
    documents with notes up to ``REPORT_REMARKS`` rows in all; the rest are counted
    (``rows_left_out``) in the totals and the files' totals. A row per document was ~600 bytes,
    0.6 GB for a JSONL of a million tiny records, and nobody reads a million rows.
    """

    model_config = ConfigDict(frozen=True)

    documents_indexed: int = Field(default=0, ge=0)
    passages_written: int = Field(default=0, ge=0)
    #: Distinct entities mentioned by the passages written.
    entities_found: int = Field(default=0, ge=0)
    orphans_removed: int = Field(default=0, ge=0)
    #: The rejections among the rows kept (``rejections`` counts them all).
    rejected: list[Rejection] = Field(default_factory=list)
    #: Documents, records and files that stored nothing.
    rejections: int = Field(default=0, ge=0)
    #: Documents a stopped load never wrote (the rows kept of them have reason ``NOT_WRITTEN``).
    not_written: int = Field(default=0, ge=0)
    rows: list[DocumentRow] = Field(default_factory=list)
    #: Rows counted in the totals but not kept.
    rows_left_out: int = Field(default=0, ge=0)
    files: list[FileSummary] = Field(default_factory=list)
    #: Why the writes stopped before the end (the store became unavailable), or None.
    stopped: str | None = None

    @property
    def ok(self) -> bool:
        """True when nothing was rejected."""
        return not self.rejections

    def by_file(self) -> list[FileSummary]:
        """Totals per file, in the order the files were given."""
        return list(self.files)


#: Rows kept for every document, the first this many of a batch.
REPORT_ROWS = 1_000
#: Rows kept at most; after the first ``REPORT_ROWS`` only rejections and rows with notes.
REPORT_REMARKS = 10_000


class _FileTotals:
    """A file's running totals (a plain object: one update per document must be cheap)."""

    __slots__ = (
        "entities",
        "indexed",
        "notes",
        "orphans",
        "passages",
        "reasons",
        "rejected",
        "sources",
        "unwritten",
    )

    def __init__(self) -> None:
        self.indexed = self.passages = self.entities = self.orphans = 0
        self.rejected = self.unwritten = 0
        self.reasons: list[str] = []
        self.notes: list[str] = []
        self.sources: list[str] = []


class Tally:
    """A report built a document at a time: totals per file, at most ``REPORT_REMARKS`` rows.

    ``stored`` makes a ``DocumentRow`` only for a row it keeps, so a million tiny documents cost
    a counter update each, not a model each.
    """

    def __init__(self) -> None:
        self._files: dict[str, _FileTotals] = {}
        self._rows: list[DocumentRow] = []
        self._documents = 0
        self._left_out = 0

    def _file(self, file: str, source_id: str | None) -> _FileTotals:
        key = file or (source_id or "")
        totals = self._files.get(key)
        if totals is None:
            totals = self._files[key] = _FileTotals()
        return totals

    def _keeps(self, remark: bool) -> bool:
        self._documents += 1
        kept = len(self._rows) < REPORT_REMARKS and (remark or self._documents <= REPORT_ROWS)
        self._left_out += not kept
        return kept

    def add(self, row: DocumentRow) -> None:
        """Count a row made elsewhere (a rejection, or a document given as a row)."""
        totals = self._file(row.file, row.source_id)
        if row.status == "indexed":
            self._count_stored(
                totals,
                row.source_id or "",
                row.passages_written,
                row.entities_found,
                row.orphans_removed,
            )
        else:
            totals.rejected += 1
            totals.unwritten += row.reason == NOT_WRITTEN
        if self._keeps(row.status == "rejected" or bool(row.notes)):
            self._rows.append(row)
            if row.status == "rejected":
                totals.reasons.append(row.reason or "rejected")
            totals.notes.extend(row.notes)

    def stored(
        self,
        file: str,
        source_id: str,
        passages: int,
        duplicates: int,
        entities: int,
        orphans: int,
        notes: list[str],
    ) -> None:
        """Count one stored document; its row is made only if kept (arguments by position: a
        million tiny documents call this a million times)."""
        totals = self._file(file, source_id)
        self._count_stored(totals, source_id, passages, entities, orphans)
        if self._keeps(bool(notes)):
            self._rows.append(
                DocumentRow(
                    file=file,
                    source_id=source_id,
                    status="indexed",
                    passages_written=passages,
                    duplicate_passages=duplicates,
                    entities_found=entities,
                    orphans_removed=orphans,
                    notes=notes,
                )
            )
            totals.notes.extend(notes)

    @staticmethod
    def _count_stored(
        totals: _FileTotals, source_id: str, passages: int, entities: int, orphans: int
    ) -> None:
        totals.indexed += 1
        totals.passages += passages
        totals.entities += entities
        totals.orphans += orphans
        totals.sources.append(source_id)

    def report(self, entity_total: int | None = None, stopped: str | None = None) -> IndexReport:
        """The report of everything counted; entities are summed per document unless a total
        is given."""
        files = [
            FileSummary(
                file=file,
                documents_indexed=t.indexed,
                passages_written=t.passages,
                entities_found=t.entities,
                orphans_removed=t.orphans,
                rejected=t.reasons,
                documents_rejected=t.rejected,
                not_written=t.unwritten,
                notes=t.notes,
                source_ids=t.sources,
            )
            for file, t in self._files.items()
        ]
        return IndexReport(
            documents_indexed=sum(f.documents_indexed for f in files),
            passages_written=sum(f.passages_written for f in files),
            entities_found=(
                entity_total if entity_total is not None else sum(f.entities_found for f in files)
            ),
            orphans_removed=sum(f.orphans_removed for f in files),
            rejected=[
                Rejection(file=row.file, source_id=row.source_id, reason=row.reason or "rejected")
                for row in self._rows
                if row.status == "rejected"
            ],
            rejections=sum(f.documents_rejected for f in files),
            not_written=sum(f.not_written for f in files),
            rows=self._rows,
            rows_left_out=self._left_out,
            files=files,
            stopped=stopped,
        )


def summarise(rows: Sequence[DocumentRow], entity_total: int | None = None) -> IndexReport:
    """The report for ``rows``; entities are counted per document unless a total is given."""
    tally = Tally()
    for row in rows:
        tally.add(row)
    return tally.report(entity_total)
