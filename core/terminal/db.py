"""``python -m core db status|stop|parity|repair|TOOL ARGS...``: the operator's store commands.

``status``/``stop`` look after the embedded server; ``pg_dump``, ``pg_restore``, ``psql``,
``pg_dumpall`` run the wheel's own client tools against it with the connection filled in, since
the system's tools may be of an older major version and refuse to dump it. ``parity`` checks
the store the app uses against an in-memory copy of a workspace (``core.service.parity``): how
an operator checks a migration or a shard move; exit status 1 on a difference. ``repair``
rebuilds counters that disagree with the passages.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import subprocess
from collections.abc import Sequence

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from core.ingest.names import terminal_safe
from core.service.common import DEFAULT_LIMIT
from core.service.parity import PARITY_QUERIES, ParityReport, check_parity
from core.settings import Settings, display_path
from core.stores.port import tenant_of
from core.stores.postgres import PostgresChunkStore, embedded
from core.terminal.common import (
    EXIT_UNUSABLE,
    open_store_or_say_why,
)


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
    store = await open_store_or_say_why(args.database_url, console)
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
    store = await open_store_or_say_why(None, console)
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
