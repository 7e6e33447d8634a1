"""``python -m core reextract --workspace NAME [--entities LIST.csv]``: find its entities again.

After an extractor upgrade (or with an entity list a load did not have) a workspace's passages
keep the entities found when they were loaded. This runs the facade's ``reextract_entities``,
as the Entities screen's button does: one atomic write, then the entities of each kind before
and after. Rejected: re-loading the files, which needs them at hand and writes every posting
again for entities alone.
"""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from core.domain.entities import ENTITY_KINDS, EntityListError
from core.ingest.names import terminal_safe
from core.terminal.common import (
    EXIT_UNUSABLE,
    _known_workspace,
    _open_service,
    number_column,
)


def reextract(args: argparse.Namespace, console: Console) -> int:
    """0 when the entities were found again, 2 when the command cannot run (the store, an
    unknown workspace, an entity list that cannot be read or used)."""
    service = _open_service(args.database_url, console)
    if service is None:
        return EXIT_UNUSABLE
    try:
        workspace = _known_workspace(service, args.workspace, console)
        if workspace is None:
            return EXIT_UNUSABLE
        try:
            listed = args.entities.read_text(encoding="utf-8") if args.entities else None
            report = service.reextract_entities(workspace=workspace, entity_list=listed)
        except (OSError, UnicodeDecodeError, EntityListError) as exc:
            console.print(
                terminal_safe(f"error: nothing changed: {exc}"), markup=False, highlight=False
            )
            return EXIT_UNUSABLE
    finally:
        service.close()
    table = Table(title=terminal_safe(f"Entities of {workspace!r}, found again"))
    table.add_column("kind")
    number_column(table, "before")
    number_column(table, "after")
    for kind in ENTITY_KINDS:
        table.add_row(kind, f"{report.before[kind]:,}", f"{report.after[kind]:,}")
    console.print(table)
    console.print(
        f"{report.passages:,} passages of {report.sources:,} sources read; the entities of "
        f"{report.changed:,} changed.",
        markup=False,
        highlight=False,
    )
    return 0
