"""The terminal: ``python -m core load|db|owner|reextract|search|evaluate|diagnose|import-queries``.

| module | what |
| --- | --- |
| ``parser`` | the one parser: every command's arguments and help |
| ``common`` | exit codes, opening the store or the facade, a workspace by name, JSON lines |
| ``load`` | ``load``: files, folders or a BEIR folder into a workspace (the upload's path) |
| ``db`` | ``db status|stop|parity|repair|pg_dump...``: the operator's store commands |
| ``owner`` | ``owner NAME EMAIL``: give a workspace an owner |
| ``reextract`` | ``reextract --workspace NAME``: find its entities again, counts by kind |
| ``search``, ``evaluate``, ``diagnose`` | the screens' numbers in a terminal |
| ``queries`` | ``import-queries FILE --workspace NAME --set SET``: a query-set file kept |

Who it trusts: it is an operator's tool, like ``psql``, trusting whoever holds the database
URL or the data folder; sign-in guards the app, not this (docs/command-line.md and
docs/sign-in.md say so first, with what keeps analysts off it; ``tests/unit/terminal/
test_trust.py`` holds it). Rejected: acting as a named person (``--as EMAIL``), which anyone
holding the URL could name falsely. An unknown workspace name lists no other workspace.

One package rather than a ``cli`` module beside this package, as it was: two homes for one
command line had two exit-code definitions and a dispatcher in each.

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
or query set, a set nobody graded, a bound on k, limit or the query), with one plain line (a
pydantic refusal too: ``common.refusal``), 141 when the reader went away (``| head``): the
output stops quietly, as ``cat``'s would. Rejected: restoring SIGPIPE's default action (the
process would die mid-write without closing the store). ``docs/command-line.md`` has examples.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Sequence
from typing import Final, TextIO

from rich.console import Console

from core.terminal.common import EXIT_PIPE_CLOSED, EXIT_UNUSABLE, PIPED_WIDTH
from core.terminal.db import db, repair
from core.terminal.diagnose import diagnose as diagnose_command
from core.terminal.evaluate import evaluate as evaluate_command
from core.terminal.load import load
from core.terminal.owner import set_owner
from core.terminal.parser import parser
from core.terminal.queries import import_queries
from core.terminal.reextract import reextract
from core.terminal.search import search as search_command

__all__ = ["QUERY_COMMANDS", "main"]

#: The query commands (the screens' numbers in a terminal), by name.
QUERY_COMMANDS: Final[dict[str, Callable[[argparse.Namespace, Console], int]]] = {
    "search": search_command,
    "evaluate": evaluate_command,
    "diagnose": diagnose_command,
    "import-queries": import_queries,
}


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, program: bool = False
) -> int:
    """Entry point of ``python -m core``; returns the exit status. ``program``: this process is
    the command (``core/__main__.py``), so ``load`` may lower its own priority (never that of
    a process that called ``main`` in passing, such as a test run). A reader that goes away
    (``| head``) ends the command quietly with ``EXIT_PIPE_CLOSED``."""
    stream = stdout or sys.stdout
    try:
        status = _run(argv, stream, program)
        stream.flush()
    except BrokenPipeError:
        if stream is sys.stdout:
            # Python flushes stdout again at exit: point it at nothing, or that flush fails too.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE_CLOSED
    return status


class _PipedConsole(Console):
    """rich's console, leaving a closed pipe to ``main`` (rich's own exits with status 1)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def _run(argv: Sequence[str] | None, stream: TextIO, program: bool) -> int:
    """Parse ``argv`` and run its command, writing to ``stream``."""
    args = parser().parse_args(argv)
    if args.command == "load":
        args.background = program and not args.full_priority
    # Piped output (logs, CI) gets wide tables so file paths are not folded mid-name.
    width = None if stream.isatty() else PIPED_WIDTH
    console = _PipedConsole(file=stream, soft_wrap=True, width=width)
    if args.command == "load":
        return asyncio.run(load(args, console))
    if args.command == "db" and args.action == "repair":
        return asyncio.run(repair(console))
    if args.command == "db":
        return db(args, console)
    if args.command == "owner":
        return asyncio.run(set_owner(args, console))
    if args.command == "reextract":
        return reextract(args, console)
    if args.command in QUERY_COMMANDS:
        return QUERY_COMMANDS[args.command](args, console)
    return EXIT_UNUSABLE  # pragma: no cover - argparse rejects unknown commands
