"""What the terminal's commands share: exit codes, opening the app's store (or the facade on it),
finding a workspace by the name a person gives, JSON lines, the arguments every query command
takes."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import IO, Final, TypeVar

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from core.analysis.expansion import ORIGINAL_WEIGHT, ROCCHIO_ALPHA, ExpansionSpec
from core.analysis.judgment_files import JudgmentError
from core.ingest.names import terminal_safe
from core.service.bounds import PYDANTIC_VALUE_ERROR, one_sentence
from core.service.common import DEFAULT_K, DEFAULT_LIMIT
from core.service.facade import LexplainService, StoreUnreachable
from core.settings import Settings
from core.stores.port import ChunkStore
from core.stores.postgres import embedded
from core.stores.select import open_store

T = TypeVar("T")
#: Environment variable holding the default database URL.
DATABASE_URL_ENV = "LEXPLAIN_DATABASE_URL"
#: The embedded server's client tools ``db`` runs with the connection filled in.
DB_TOOLS = ("pg_dump", "pg_restore", "psql", "pg_dumpall")
#: Console width when output is not a terminal.
PIPED_WIDTH = 200
#: Exit status when any document was rejected (``load``) or a check found a difference.
EXIT_REJECTED = 1
#: Exit status when the command could not run at all.
EXIT_UNUSABLE = 2
#: Exit status when the reader of the output went away (``| head``): 128 + SIGPIPE, as
#: ``cat`` or ``grep`` end, so a shell's ``pipefail`` tells a cut output from a whole one.
EXIT_PIPE_CLOSED = 141


def refusal(exc: ValueError) -> str:
    """A refusal's one plain line: core's one sentence (``one_sentence``), a pydantic field
    named as its option (``--fb-docs: ...``), never pydantic's multi-line dump with its URL."""
    if isinstance(exc, ValidationError):
        problems = []
        for error in exc.errors():
            message = str(error["msg"])
            if message.startswith(PYDANTIC_VALUE_ERROR):  # a validator's own sentence
                problems.append(message.removeprefix(PYDANTIC_VALUE_ERROR))
                continue
            where = "-".join(str(part) for part in error["loc"]).replace("_", "-")
            problems.append(f"--{where}: {message}" if where else message)
        return terminal_safe("; ".join(problems))
    return terminal_safe(one_sentence(exc))


def expansion_of(args: argparse.Namespace) -> ExpansionSpec | None:
    """The expansion ``--expand`` and its parameters name (None without ``--expand``); a
    parameter out of range raises pydantic's ``ValidationError``, which ``refusal`` words, and
    ``--beta``/``--gamma`` without Rocchio a ``ValueError`` (they would be ignored)."""
    if not args.expand:
        return None
    typed_share = args.original_weight
    if typed_share is None:
        typed_share = ROCCHIO_ALPHA if args.expand == "rocchio" else ORIGINAL_WEIGHT
    rocchio = {
        name: value
        for name in ("beta", "gamma")
        if (value := getattr(args, name, None)) is not None
    }
    if rocchio and args.expand != "rocchio":
        given = " and ".join(f"--{name}" for name in rocchio)
        raise ValueError(f"{given} weigh feedback from the grades: give them with --expand rocchio")
    return ExpansionSpec(
        method=args.expand,
        fb_docs=args.fb_docs,
        fb_terms=args.fb_terms,
        original_weight=typed_share,
        **rocchio,
    )


def query_arguments(command: argparse.ArgumentParser, k_means: str) -> None:
    """What ``search`` and ``evaluate`` share: the workspace, k (``k_means`` says what it is
    there), limit and the store."""
    command.add_argument("--workspace", required=True, metavar="NAME", help="the workspace")
    command.add_argument(
        "--k", type=int, default=DEFAULT_K, metavar="N", help=f"{k_means} (default {DEFAULT_K})"
    )
    command.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=(
            "candidates the store hands to BM25, chosen by matched-term count, before any "
            f"scoring (default {DEFAULT_LIMIT})"
        ),
    )
    command.add_argument("--database-url", metavar="URL", default=None, help="as for load")


def load_settings(database_url: str | None) -> Settings:
    """The app's settings, with ``--database-url`` (when given) in place of the environment's."""
    if database_url:
        return Settings(database_url=database_url)
    return Settings()


def _open_service(database_url: str | None, console: Console) -> LexplainService | None:
    """The facade on the store the settings (or ``--database-url``) name, as the app opens it;
    None once the reason is printed."""
    try:
        return LexplainService.from_settings(load_settings(database_url))
    except ValidationError as exc:
        problems = "; ".join(str(e["msg"]) for e in exc.errors())
        console.print(f"error: settings: {problems}", markup=False, highlight=False)
    except StoreUnreachable as exc:
        console.print(f"error: {exc}", markup=False, highlight=False)
    return None


#: What an unknown workspace name is answered with. No workspace is named: the terminal
#: trusts its operator (docs/command-line.md), but a mistyped name in a shared log or screen
#: would show every owner's workspaces. Rejected: listing them (as it did), and listing them
#: only without sign-in (the terminal cannot know the app's sign-in without its secrets).
UNKNOWN_WORKSPACE: Final = (
    "there is no workspace {name!r} (names are not listed here: the app's sidebar shows a "
    "person theirs)"
)


def _known_workspace(service: LexplainService, name: str, console: Console) -> str | None:
    """The workspace's name as kept (``linked_workspace``: "secret" opens "Secret"); None once
    it is said that there is none such (a search of it would find nothing, not say why),
    without naming any other workspace (``UNKNOWN_WORKSPACE``)."""
    try:
        linked = service.linked_workspace(name)
    except ValueError as exc:
        console.print(f"error: {terminal_safe(str(exc))}", markup=False, highlight=False)
        return None
    if linked.outcome == "open":
        return linked.name
    console.print(
        terminal_safe("error: " + UNKNOWN_WORKSPACE.format(name=name)),
        markup=False,
        highlight=False,
    )
    return None


def _json_line(stream: IO[str], record: dict[str, object]) -> None:
    """One JSON object on one line; floats as ``repr`` writes them, so they read back exactly.

    ASCII only: a name's control or bidirectional characters arrive escaped, never raw on a
    terminal."""
    stream.write(json.dumps(record, allow_nan=False) + "\n")


def number_column(table: Table, name: str) -> None:
    # Folded, never cut short: a number shown is the whole number.
    table.add_column(name, justify="right", overflow="fold")


def on_a_set(
    args: argparse.Namespace,
    console: Console,
    ask: Callable[[LexplainService, str], T],
) -> T | None:
    """``ask(service, workspace)`` for a command about a query set of ``--workspace`` (evaluate,
    diagnose), on the app's store; None once why it could not is printed (the store, the
    workspace, no such set, no grade yet, a bound)."""
    service = _open_service(args.database_url, console)
    if service is None:
        return None
    try:
        workspace = _known_workspace(service, args.workspace, console)
        if workspace is None:
            return None
        try:
            return ask(service, workspace)
        except KeyError as exc:  # no such set: its message names it
            console.print(f"error: {terminal_safe(exc.args[0])}", markup=False, highlight=False)
        except (JudgmentError, ValueError) as exc:  # no grade yet, or a bound (pydantic's too)
            console.print(f"error: {refusal(exc)}", markup=False, highlight=False)
        return None
    finally:
        service.close()


async def open_store_or_say_why(database_url: str | None, console: Console) -> ChunkStore | None:
    """The store the settings (or ``--database-url``) name; None once the reason is printed."""
    try:
        return await open_store(load_settings(database_url))
    except (ValueError, embedded.EmbeddedServerError) as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
    except Exception as exc:  # asyncpg/OS errors: the message is what the user needs
        console.print(f"[red]error:[/red] cannot open the database: {exc}", highlight=False)
    return None
