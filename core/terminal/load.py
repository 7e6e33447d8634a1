"""``python -m core load PATH... --workspace NAME``: the bulk load, the same path as an upload.

It runs what an upload in the app runs (``read_upload`` then ``index_uploads``), so a file that
loads here loads there with the same passages, ids and entities, into the store the app uses
(``core.stores.select.open_store``; the embedded PostgreSQL when no database URL is given).
``--dry-run`` reads, cuts and checks everything into an in-memory store and keeps nothing.
Rejected: the dry run as the default without a URL, which left no way to fill the app's own
store from a terminal. Exit status: 0 when every document was stored, 1 when any was rejected,
2 when the command could not run or the database became unavailable during the load.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from core.domain.chunks import ChunkingOptions, workspace_tenant_id
from core.domain.entities import (
    EntityExtractor,
    EntityListError,
    RuleBasedExtractor,
    load_entity_list,
)
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.ingest import bulk
from core.ingest.aside import index_paths
from core.ingest.folders import read_paths, skipped_files
from core.ingest.indexing import (
    NOT_WRITTEN,
    DocumentRow,
    IndexReport,
    UploadResult,
)
from core.ingest.limits import DEFAULT_MAX_BYTES
from core.ingest.names import printable_name, terminal_safe
from core.settings import describe_store
from core.stores.memory import InMemoryChunkStore
from core.stores.port import ChunkStore, Workspace, member_email, new_tenant_id
from core.stores.postgres import embedded
from core.stores.postgres.embedded_store import EmbeddedPostgresStore
from core.stores.select import open_store
from core.terminal.common import (
    EXIT_REJECTED,
    EXIT_UNUSABLE,
    load_settings,
)


def collect_uploads(paths: Sequence[Path]) -> list[UploadResult]:
    """Every path read (``read_paths``), all at once: for tests and small loads; ``load``
    itself reads a file at a time while it indexes."""
    return list(read_paths(paths))


def _summary_table(report: IndexReport) -> Table:
    table = Table(title="Loaded", show_footer=True)
    table.add_column("file", footer="total", overflow="fold")
    table.add_column("documents", justify="right", footer=str(report.documents_indexed))
    table.add_column("passages", justify="right", footer=str(report.passages_written))
    # A file's row sums each document's distinct entities; the total counts each entity once
    # over the batch (the same name in two files is one entity), so the two are labelled apart.
    table.add_column(
        "entities (per document)",
        justify="right",
        footer=f"{report.entities_found} distinct",
    )
    table.add_column("replaced", justify="right", footer=str(report.orphans_removed))
    table.add_column("rejected", justify="right", footer=str(report.rejections))
    for row in report.by_file():
        table.add_row(
            Text(terminal_safe(row.file)),
            str(row.documents_indexed),
            str(row.passages_written),
            str(row.entities_found),
            str(row.orphans_removed),
            str(row.documents_rejected),
        )
    return table


async def load(args: argparse.Namespace, console: Console) -> int:
    """Run ``load`` against the store its arguments name; returns the exit status."""
    try:
        workspace_tenant_id(args.workspace)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}")
        return EXIT_UNUSABLE
    if args.owner is not None:
        try:
            args.owner = member_email(args.owner)
        except ValueError as exc:
            console.print(f"error: --owner: {terminal_safe(str(exc))}", markup=False)
            return EXIT_UNUSABLE
    extractor = RuleBasedExtractor()
    if args.entities is not None:
        try:
            listed = load_entity_list(args.entities.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, EntityListError) as exc:
            console.print(f"[red]error:[/red] entity list {args.entities}: {exc}")
            return EXIT_UNUSABLE
        extractor = RuleBasedExtractor(listed)
        console.print(f"entity list: {len(listed)} entities from {args.entities}")
    try:
        settings = load_settings(args.database_url)
    except ValidationError as exc:
        problems = "; ".join(str(e["msg"]) for e in exc.errors())
        console.print(f"[red]error:[/red] settings: {problems}", markup=True, highlight=False)
        return EXIT_UNUSABLE
    dry_run = bool(args.dry_run) or settings.store_kind == "memory"
    try:
        store = InMemoryChunkStore() if dry_run else await open_store(settings)
    except embedded.EmbeddedServerError as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        return EXIT_UNUSABLE
    except Exception as exc:  # asyncpg/OS errors: the message is what the user needs
        console.print(f"[red]error:[/red] cannot open the database: {exc}")
        return EXIT_UNUSABLE
    if args.background:
        # After the store opened: an embedded server this load starts keeps the priority it
        # starts with for its whole life, and the app's sessions it serves later are not bulk
        # work. The staging worker lowers its own priority whenever it starts.
        bulk.run_in_background()
        if isinstance(store, EmbeddedPostgresStore):
            store.lower_backend_priority(os.nice(0))  # our server, on this machine: it waits too
    if dry_run:
        console.print(
            "[yellow]dry run:[/yellow] files are read, cut and checked in memory; nothing is kept"
        )
    else:
        console.print(f"store: {describe_store(settings)}", highlight=False)
    for path in args.paths:
        if path.is_dir():
            for file, reason in skipped_files(path):
                shown = terminal_safe(f"{printable_name(str(file))}: {reason}")
                console.print(f"skipped: {shown}", markup=False, highlight=False)
    try:
        report = await load_into(
            store,
            args.paths,
            args.workspace,
            profile=Profile(args.profile),
            chunking=ChunkingOptions(whole_documents=args.whole_documents),
            extractor=extractor,
            console=console,
            owner=args.owner,
            max_bytes=settings.max_upload_bytes,
        )
    except OwnerMismatch as exc:
        console.print(f"error: {terminal_safe(str(exc))}", markup=False, highlight=False)
        return EXIT_UNUSABLE
    finally:
        await store.close()
    console.print(_summary_table(report))
    for note_row in report.rows:
        for note in note_row.notes:
            said = terminal_safe(f"{note_row.file or note_row.source_id}: {note}")
            console.print(f"note: {said}", markup=False, highlight=False)
    rejected = [r for r in report.rejected if r.reason != NOT_WRITTEN]
    if rejected:
        console.print(f"[red]{report.rejections - report.not_written} rejected:[/red]")
        for rejection in rejected:
            console.print(f"  {terminal_safe(str(rejection))}", markup=False, highlight=False)
        unlisted = report.rejections - report.not_written - len(rejected)
        if unlisted:
            console.print(f"  … and {unlisted:,} more (not listed)", highlight=False)
    if report.stopped is not None:
        # One message, not a line per unwritten document (they all failed the same way).
        console.print(
            f"[red]stopped:[/red] {report.stopped}\nkept: {report.documents_indexed} documents "
            f"({report.passages_written} passages) stored before the stop; not stored: "
            f"{report.not_written} documents (load them again: stored ones are replaced, not "
            "duplicated)",
            highlight=False,
        )
        return EXIT_UNUSABLE
    if rejected:
        return EXIT_REJECTED
    if dry_run:
        console.print(
            f"ok: {report.documents_indexed} documents read and checked (dry run, nothing kept)"
        )
    else:
        console.print(
            f"ok: {report.documents_indexed} documents stored in workspace {args.workspace!r} "
            f"({describe_store(settings)})",
            highlight=False,
        )
    return 0


async def load_into(
    store: ChunkStore,
    paths: Sequence[Path],
    workspace: str,
    *,
    profile: Profile = DEFAULT_PROFILE,
    chunking: ChunkingOptions,
    extractor: EntityExtractor | None,
    console: Console | None = None,
    owner: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> IndexReport:
    """What ``load`` does once the store is open: read a file at a time, index, and register
    the workspace just before its first write (a load killed while reading leaves no empty
    workspace behind). ``owner`` is a new workspace's owner; raises ``OwnerMismatch`` when
    the workspace exists with another owner (or none). ``max_bytes``: the largest file read
    (a JSONL corpus: the largest record), the ``LEXPLAIN_MAX_UPLOAD_MB`` setting."""
    console = console or Console(quiet=True)
    named = await store.find_workspace(workspace)
    if owner is not None and named is not None and named.owner != owner:
        held = f"is owned by {named.owner}" if named.owner else "has no owner"
        raise OwnerMismatch(
            f"the workspace {workspace!r} already exists and {held}, not {owner}: nothing "
            f"loaded (to hand it over: python -m core owner {shlex.quote(workspace)} EMAIL)"
        )
    # An existing workspace by what a person sees; a new one gets an id no workspace had.
    tenant_id = named.tenant_id if named is not None else await new_tenant_id(store, workspace)
    entry = Workspace(
        tenant_id=tenant_id,
        name=workspace if named is None else named.name,
        profile=profile,
        owner=owner,
    )
    with (
        bulk.bulk_collection(),
        Progress(
            TextColumn("indexing"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=not console.is_terminal,
        ) as progress,
    ):
        task = progress.add_task("indexing", total=None)

        def advance(done: int, total: int, row: DocumentRow) -> None:
            progress.update(task, completed=done, total=total)

        return await index_paths(
            paths,
            store,
            tenant_id,
            max_bytes=max_bytes,
            chunking=chunking,
            extractor=extractor,
            on_progress=advance,
            before_first_write=lambda: store.upsert_workspace(entry),
            batch_passages=bulk.LOAD_BATCH_PASSAGES,
        )


class OwnerMismatch(Exception):
    """``load --owner`` named a workspace that exists under another owner (or none)."""
