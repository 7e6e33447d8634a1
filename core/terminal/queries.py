"""``python -m core import-queries FILE --workspace NAME --set SET``: a query-set file kept as
the Judge screen's "New query set" keeps it, each refused line listed.

The same facade call as the screen (``LexplainService.save_query_set``), so the same rule
decides (``core.domain.query_cost``): a line whose query costs more than a query may is left
out and printed with its number and core's sentence, the rest kept; exit status 1 then, as
``load`` says some documents were rejected, so a script notices. A file that cannot be read,
or whose every query is refused, stores nothing and is status 2 with one line. Rejected:
refusing the whole file for one costly line (issue 48: CISI's 8 long questions lost its 76).
"""

from __future__ import annotations

import argparse

from rich.console import Console

from core.analysis.judgment_files import refused_heading
from core.analysis.sentences import count
from core.ingest.names import terminal_safe
from core.service.judging import SavedQuerySet
from core.terminal.common import EXIT_REJECTED, EXIT_UNUSABLE, _json_line, on_a_set


def _read(args: argparse.Namespace, console: Console) -> bytes | None:
    try:
        data: bytes = args.file.read_bytes()
    except OSError as exc:
        said = f"error: cannot read {args.file}: {exc.strerror or exc}"
        console.print(terminal_safe(said), markup=False, highlight=False)
        return None
    return data


def import_queries(args: argparse.Namespace, console: Console) -> int:
    """0 when every query was kept, 1 when some lines were refused (the rest kept), 2 when
    nothing was stored (the store, the workspace, an unreadable file, every query refused)."""
    data = _read(args, console)
    if data is None:
        return EXIT_UNUSABLE
    saved: SavedQuerySet | None = on_a_set(
        args,
        console,
        lambda service, workspace: service.save_query_set(
            args.query_set, data, args.format, workspace=workspace
        ),
    )
    if saved is None:
        return EXIT_UNUSABLE
    if args.json:
        _json_line(
            console.file,
            {"kind": "set", "name": saved.name, "queries": saved.queries,
             "refused": len(saved.refused)},
        )  # fmt: skip
        for refused in saved.refused:
            line = {"kind": "refused", "line": refused.line, "sentence": refused.sentence}
            _json_line(console.file, line)
    else:
        kept = count(saved.queries, "query", "queries")
        said = f"saved {saved.name!r} in {args.workspace!r}: {kept}"
        console.print(terminal_safe(said), markup=False, highlight=False)
        if saved.refused:
            console.print(refused_heading(saved.refused), markup=False, highlight=False)
            for refused in saved.refused:
                console.print(f"  {refused.sentence}", markup=False, highlight=False)
    return EXIT_REJECTED if saved.refused else 0
