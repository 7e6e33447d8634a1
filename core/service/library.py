"""Upload, sources, entities and workspaces: what a workspace holds and how it got there.

Reading, cutting and extracting happen in ``core.ingest.indexing``; these actions run it on
the store's loop and turn its per-document rows into one report per file, the unit
a user uploaded. Reporting per document was rejected: a BEIR file holds thousands.
"""

from __future__ import annotations

import contextlib
import gc
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.analysis.judgment_files import QueryFormat
from core.analysis.presentation import natural_key
from core.analysis.sentences import count
from core.domain.chunks import ChunkingOptions, StoredChunk
from core.domain.entities import Entity
from core.domain.names import format_problem
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.ingest.aside import Upload, index_files
from core.ingest.bulk import LOAD_BATCH_PASSAGES
from core.ingest.indexing import NOT_WRITTEN, FileSummary, IndexReport
from core.ingest.limits import DEFAULT_MAX_BYTES, DEFAULT_PARSE_LIMITS
from core.ingest.names import printable_name
from core.ingest.readers import SUPPORTED_EXTENSIONS
from core.service.common import (
    DEFAULT_WORKSPACE,
    SAMPLE_QUERIES,
    SAMPLE_QUERY_SET,
    NoAccess,
    chips,
    corrected_summaries,
    corrections_of,
    entity_names,
    lookalike,
    read_query_set,
)
from core.service.runner import ProgressCallback, StoreRunner
from core.stores.port import EntitySummary, SourceSummary, open_workspace, tenant_of

#: The sample collection shipped with the repository (BEIR layout).
SAMPLE_CORPUS = Path(__file__).resolve().parents[2] / "data" / "cranfield" / "corpus.jsonl"
#: Longest workspace name accepted (a name is shown in the sidebar and in links).
WORKSPACE_NAME_MAX = 100
#: How the sample is named on screen: what it loads (two of the 1,400 records are empty).
SAMPLE_LABEL = "Cranfield, 1,398 aeronautics abstracts"
#: A query to try on the sample (Cranfield's first query, without its stopwords).
SAMPLE_QUERY = "aeroelastic models of heated high speed aircraft"
#: A small bundled file that names people, organisations and places (the sample names none).
EXAMPLE_WITH_NAMES = SAMPLE_CORPUS.parents[1] / "examples" / "wind-tunnel-notes.md"
#: Middle-generation collections between two full ones while an upload runs (CPython: 10):
#: in effect none during an upload (a 150k-record upload makes ~230 middle ones). What a full
#: collection walks then is the upload's documents in flight (up to two groups of 20,000: 120k-
#: 330k objects), collecting nothing: at 10, 47 of ~45 ms for 300k tiny records; at 100, two
#: of 98-282 ms per 150k records, each a pause for whichever search came in meanwhile
#: (bench_stall upload-big, in-memory: max 325 ms). Cyclic garbage that lives through two
#: younger collections waits for the uploads' end.
UPLOAD_FULL_COLLECTION_EVERY: Final = 10_000
#: Passages per write of an upload: ``load``'s 20,000 rather than the indexer's 5,000. Each
#: in-memory write rebuilds the image (its id, source and passage arrays copied: O(stored)),
#: so a million tiny records in 5,000s copied ~100M rows over 200 versions; in 20,000s a
#: quarter. 300k in-memory 21.5 / 20.2 -> 19.4 / 18.7 s CPU, 200k embedded 15.4 -> 13.9 s
#: (loaded machine). A piece of a write other sessions wait on does not grow with the group:
#: the write gives way per lookups and characters tokenised, and each copy is O(stored).
UPLOAD_BATCH_PASSAGES: Final = LOAD_BATCH_PASSAGES
#: Where the Entities screen offers to put that example: its own workspace, so adding it never
#: changes the counts and scores of the workspace being looked at.
EXAMPLE_WORKSPACE = "example-with-names"
#: File types the uploader accepts: exactly the extensions the readers read, with the dot
#: (Streamlit reads a bare "text" as every MIME type text/*, a .csv or .ics among them).
UPLOAD_FILE_TYPES: tuple[str, ...] = tuple(sorted(SUPPORTED_EXTENSIONS))


class Mention(BaseModel):
    """An entity mention inside one passage (offsets into the passage text)."""

    model_config = ConfigDict(frozen=True)

    start: int
    end: int
    entity_id: UUID


class EntityPassage(BaseModel):
    """A passage of an entity, with where that entity is mentioned in it."""

    model_config = ConfigDict(frozen=True)

    chunk: StoredChunk
    entities: list[Entity]
    mentions: list[Mention]


class FileReport(BaseModel):
    """What happened to one uploaded file."""

    model_config = ConfigDict(frozen=True)

    file_name: str
    documents: int = 0
    #: Passages the file's sources had before this upload (0 for new sources).
    passages_before: int = 0
    #: Passages the file's sources have now (every one written; unchanged ones are rewritten).
    passages_written: int = 0
    #: Of those, passages that were already stored with the same text (same content id).
    passages_unchanged: int = 0
    #: Of those, passages whose text was not stored before.
    passages_new: int = 0
    #: Passages of the earlier version that are gone (their text is no longer in the file).
    passages_removed: int = 0
    #: Entity mentions found (a name mentioned twice counts twice).
    entities_found: int = 0
    error: str | None = None
    #: The sources the file's documents were stored as (what the Sources table lists).
    source_ids: list[str] = Field(default_factory=list)
    #: Recoveries, skipped records and rejected documents, in plain words.
    notes: list[str] = Field(default_factory=list)


def _mentions_of(chunk: StoredChunk) -> list[Mention]:
    raw = chunk.metadata.get("mentions")
    mentions: list[Mention] = []
    if not isinstance(raw, list):
        return mentions
    for item in raw:
        try:
            mention = Mention.model_validate(item)
        except ValueError:
            continue
        if 0 <= mention.start < mention.end <= len(chunk.text):
            mentions.append(mention)
    return mentions


#: No workspace has this id: ``lookalike`` then excludes none.
_NO_TENANT: Final = UUID(int=0)


class LibraryActions(StoreRunner):
    """The Upload and Entities screens' actions, and the sidebar's workspaces."""

    def list_workspaces(self) -> list[str]:
        """Names of the workspaces the person signed in may open (all without sign-in), sorted."""
        return [w.name for w in self._call(self._store.list_workspaces())]

    @staticmethod
    def workspace_name(name: str) -> str:
        """``name`` without surrounding spaces; ``ValueError`` in plain words if unusable.

        Names come from links too (``?ws=``), so anything may arrive: only spaces, NUL,
        other control characters, a whole paragraph.
        """
        cleaned = name.strip()
        if not cleaned:
            raise ValueError("a workspace name cannot be empty or only spaces")
        if any(unicodedata.category(c) == "Cc" for c in cleaned):
            raise ValueError("a workspace name cannot contain control characters (such as NUL)")
        invisible = format_problem(cleaned)
        if invisible is not None:
            raise ValueError(f"a workspace name cannot hold invisible characters: it {invisible}")
        if len(cleaned) > WORKSPACE_NAME_MAX:
            raise ValueError(
                f"a workspace name has at most {WORKSPACE_NAME_MAX} characters, "
                f"this one has {len(cleaned):,}"
            )
        return cleaned

    def create_workspace(self, name: str, profile: Profile | str = DEFAULT_PROFILE) -> str:
        """Create (or keep, with its profile) the workspace ``name``; returns its cleaned name.

        ``profile`` is the tokenizer every write and query of a NEW workspace uses; an
        existing workspace keeps its own (change it with ``change_profile``). With sign-in
        (``core.service.access``) the creator owns a new workspace, and a name someone else
        holds is refused, and so is a name that looks like one (``lookalike``: "secret" or a
        Cyrillic "Ѕecret" beside "Secret"). Raises ``ValueError`` (plain words) for a name
        ``workspace_name`` refuses.
        """
        cleaned = self.workspace_name(name)
        found = self._call(self._store.find_workspace(cleaned))
        if found is not None and found.name == cleaned:
            return cleaned
        # The workspaces this person sees, named; the signed-in guard checks everyone's.
        seen = found or lookalike(cleaned, _NO_TENANT, self._call(self._store.list_workspaces()))
        if seen is not None:
            raise ValueError(
                f"the name “{cleaned}” is taken: it looks the same as “{seen.name}”; choose another"
            )
        try:
            self._call(open_workspace(self._store, cleaned, Profile(profile)))
        except NoAccess:
            raise ValueError(f"the name “{cleaned}” is taken; choose another") from None
        return cleaned

    def delete_workspace(self, name: str) -> int:
        """Delete a workspace with its passages and entities; returns passages deleted.

        With sign-in only its owner may (``NotOwner``). The default workspace is emptied
        and kept: a store always has one to show.
        """
        deleted = self._call(self._store.delete_workspace(self._tenant(name)))
        if name == DEFAULT_WORKSPACE:
            self.create_workspace(DEFAULT_WORKSPACE)
        return deleted

    def is_empty(self, *, workspace: str) -> bool:
        """Whether the workspace holds no passage (counted, never listed). One call to the
        store's loop, the workspace looked up on it: every screen asks on every rerun."""
        return self._call(self._passage_count(workspace)) == 0

    async def _passage_count(self, workspace: str) -> int:
        return await self._store.passage_count(await tenant_of(self._store, workspace))

    def list_sources(self, *, workspace: str) -> list[SourceSummary]:
        """The workspace's sources in natural order of their ids (2 before 10, as people count)."""
        found = self._call(self._store.list_sources(self._tenant(workspace)))
        return sorted(found, key=lambda source: natural_key(source.source_id))

    def delete_source(self, source_id: str, *, workspace: str) -> int:
        """Delete a source's passages; returns how many were deleted."""
        return self._call(self._store.delete_by_source(source_id, self._tenant(workspace)))

    def list_entities(self, *, workspace: str) -> list[EntitySummary]:
        """The workspace's entities as corrected (merged, re-kinded, hidden ones left out),
        by passages mentioning them, then name, then id."""
        return self._call(corrected_summaries(self._store, self._tenant(workspace)))

    def entity_passages(self, entity_id: UUID, *, workspace: str) -> list[EntityPassage]:
        """The passages mentioning an entity or a name merged into it, in the store's order
        (source, passage, id), with those mentions."""
        return self._call(self._entity_passages(entity_id, workspace))

    async def _entity_passages(self, entity_id: UUID, workspace: str) -> list[EntityPassage]:
        tenant = await tenant_of(self._store, workspace)
        members = (await corrections_of(self._store, tenant)).members(entity_id)
        found = {c.id: c for m in members for c in await self._store.get_by_entity(m, tenant)}
        chunks = sorted(found.values(), key=lambda c: (c.source_id, c.chunk_index, c.id))
        names = await entity_names(self._store, chunks, tenant)
        return [
            EntityPassage(
                chunk=chunk,
                entities=chips(chunk, names),
                mentions=[m for m in _mentions_of(chunk) if m.entity_id in members],
            )
            for chunk in chunks
        ]

    def chunking(
        self, size: int | None = None, overlap: int | None = None, whole_documents: bool = False
    ) -> ChunkingOptions:
        """Chunking options, defaulting to the settings.

        Raises ``ValueError`` in plain words (pydantic's report, with its error count and
        documentation link, is for developers).
        """
        try:
            return ChunkingOptions(
                size=size if size is not None else self.settings.chunk_size,
                overlap=overlap if overlap is not None else self.settings.chunk_overlap,
                whole_documents=whole_documents,
            )
        except ValidationError as exc:
            problems = [
                str(error["ctx"]["error"]) if "error" in error.get("ctx", {}) else error["msg"]
                for error in exc.errors()
            ]
            words = "; ".join(problems)
            raise ValueError(words[:1].upper() + words[1:] + ".") from None

    def upload_limits(self) -> str:
        """The limits every uploaded file is read under, in one sentence (from the constants)."""
        return DEFAULT_PARSE_LIMITS.summary(self.settings.max_upload_bytes)

    def upload_files(
        self,
        files: Sequence[tuple[str, bytes]],
        *,
        workspace: str,
        chunking: ChunkingOptions | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> list[FileReport]:
        """Read, cut, extract and store each file; one report per file, errors in plain words.

        A bad file or document never stops the others; re-uploading a file replaces its
        passages (``core.ingest.indexing``: one ``replace_source`` per document).
        """
        # Read as the indexer asks, a file (or a JSONL part) at a time, as ``load`` reads: read
        # whole first, a 37 MB JSONL of 1 M records held every document before the first write.
        # A big JSONL upload is read and cut in a worker process (``core.ingest.aside``), as
        # ``load`` reads one: the 1M tiny records' probe used one core for ~49 s of CPU.
        limit = self.settings.max_upload_bytes
        given = list(files)
        report, before = self._call_with_progress(
            lambda progress: self._index_uploads(given, limit, workspace, chunking, progress),
            on_progress,
        )
        return _file_reports([printable_name(name) for name, _ in files], report, before)

    def load_sample(
        self, *, workspace: str, on_progress: ProgressCallback | None = None
    ) -> FileReport:
        """Load the Cranfield sample: whole-document passages, source id = the doc's _id."""
        # The sample's 225 queries arrive as a set, so a newcomer meets the whole judging loop;
        # saved first, so a load cut short (the page left mid-way) still leaves the set.
        opened = self._call(open_workspace(self._store, workspace))
        tenant, profile = opened.tenant_id, opened.profile
        sample_set, _ = read_query_set(  # Cranfield's longest query has 266 characters
            tenant, SAMPLE_QUERY_SET, SAMPLE_QUERIES.read_bytes(), QueryFormat.BEIR, profile
        )
        self._call(self._store.save_query_set(sample_set))
        # Read as the indexer asks, in its worker thread, which gives way to other sessions'
        # searches (``thread_checkpoint``): read here first, the caller's thread parsed 1,398
        # records (~20 ms of Python) taking turns with those searches for the GIL.
        sample = [(SAMPLE_CORPUS.name, SAMPLE_CORPUS.read_bytes())]
        report, before = self._call_with_progress(
            lambda progress: self._index_uploads(
                sample,
                DEFAULT_MAX_BYTES,
                workspace,
                ChunkingOptions(whole_documents=True),
                progress,
            ),
            on_progress,
        )
        (summary,) = _file_reports([SAMPLE_CORPUS.name], report, before)
        return summary.model_copy(update={"file_name": SAMPLE_LABEL})

    def load_example_with_names(self, *, workspace: str) -> FileReport:
        """Add the bundled example that names people, organisations and places."""
        (report,) = self.upload_files(
            [(EXAMPLE_WITH_NAMES.name, EXAMPLE_WITH_NAMES.read_bytes())], workspace=workspace
        )
        return report

    async def _index_uploads(
        self,
        files: Sequence[Upload],
        max_bytes: int,
        workspace: str,
        chunking: ChunkingOptions | None,
        report: Callable[[int, int, str], None],
    ) -> tuple[IndexReport, dict[str, int]]:
        """The upload's report, and each source's passages before it (for ``_file_reports``).

        The counts are read here, as part of the long work (giving way to other sessions'
        calls), and as counts: read as an interactive listing of ``SourceSummary`` models,
        12,600 sources were ~50 steps that every search arriving meanwhile took turns with."""
        # The workspace as it is now (created if new): a deletion meanwhile makes every
        # later write of this upload fail (WorkspaceGone), the upload stops and says so.
        tenant = (await open_workspace(self._store, workspace)).tenant_id
        before = await self._store.source_passage_counts(tenant)
        with rare_full_collections():
            indexed = await index_files(
                files,
                self._store,
                tenant,
                max_bytes=max_bytes,
                chunking=chunking or self.chunking(),
                on_progress=lambda done, total, row: report(done, total, row.source_id or row.file),
                batch_passages=UPLOAD_BATCH_PASSAGES,
            )
        return indexed, before


#: Uploads running now, and the collector's thresholds from before the first of them.
_UPLOADS_RUNNING: list[tuple[int, int, int]] = []


@contextlib.contextmanager
def rare_full_collections() -> Iterator[None]:
    """Full collections ``UPLOAD_FULL_COLLECTION_EVERY`` middle ones apart while uploads run
    (the thresholds restored when the last one ends; uploads share the loop's thread).

    Fewer pauses, each as long: a full collection walks what the process tracks, which the
    service settled at start (``checkpoint.settle_collector``) and the in-memory store keeps
    untracked, so what it walks during an upload is the upload's own documents in flight.
    Young collections are unchanged (their pauses stay short; garbage cycles still die
    young). Rejected: ``load``'s freeze and big young generation (``bulk.bulk_collection``):
    a young collection of 100k objects is a pause of its own for every session."""
    thresholds = gc.get_threshold()
    _UPLOADS_RUNNING.append(thresholds)
    if len(_UPLOADS_RUNNING) == 1:
        young, middle, full = thresholds
        gc.set_threshold(young, middle, max(full, UPLOAD_FULL_COLLECTION_EVERY))
    try:
        yield
    finally:
        first = _UPLOADS_RUNNING[0]
        _UPLOADS_RUNNING.pop()
        if not _UPLOADS_RUNNING:
            gc.set_threshold(*first)


def _file_reports(
    names: Sequence[str], report: IndexReport, before: Mapping[str, int]
) -> list[FileReport]:
    """One report per file name, in the order given, from the per-file totals.

    ``before`` is every source's passage count before the upload: content-addressed ids make
    "unchanged" = before − removed, since a passage whose text stayed keeps its id.
    """
    files = {summary.file: summary for summary in report.by_file()}
    out: list[FileReport] = []
    for name in dict.fromkeys(names):
        summary = files.get(name) or FileSummary(
            file=name, documents_indexed=0, passages_written=0, entities_found=0,
            orphans_removed=0,
        )  # fmt: skip
        rejected = [_reason(reason, report.stopped) for reason in summary.rejected]
        notes = list(summary.notes)
        error = None
        if not summary.documents_indexed:
            error = "; ".join(dict.fromkeys(rejected)) or "nothing in the file — nothing stored"
        elif summary.documents_rejected:
            notes = [
                f"{count(summary.documents_rejected, 'document')} rejected: "
                + "; ".join(rejected[:5]),
                *notes,
            ]
        # Each stored once: the indexer refuses a source id an upload already stored
        # (``prepare``), so no dict of them is made (a million tiny records: ~50 MiB at the
        # upload's peak, which is here, with every passage stored).
        sources = summary.source_ids
        before_total = sum(before.get(source, 0) for source in sources)
        removed = summary.orphans_removed
        written = summary.passages_written
        unchanged = min(max(before_total - removed, 0), written)
        out.append(
            FileReport(
                file_name=name,
                documents=summary.documents_indexed,
                passages_written=written,
                entities_found=summary.entities_found,
                passages_before=before_total,
                passages_unchanged=unchanged,
                passages_new=written - unchanged,
                passages_removed=removed,
                error=error,
                source_ids=sources,
                notes=notes,
            )
        )
    return out


def _reason(reason: str, stopped: str | None) -> str:
    """A rejection's reason; for a document a stopped upload never wrote, why it stopped."""
    if reason == NOT_WRITTEN and stopped is not None:
        return f"not stored: {stopped}"
    return reason
