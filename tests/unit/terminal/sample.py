"""What the terminal's tests share besides fixtures: running a command in this process, the
sample's workspace and query, and reading rich's tables back."""

from __future__ import annotations

import io

from core.terminal import main

#: The workspace the sample is loaded into, once per test module, through the facade.
SAMPLE = "cran"
#: A query whose 132 matching passages a limit of 50 cuts, with terms each passage lacks.
QUERY = "similarity laws for aeroelastic models"


def run(*argv: str) -> tuple[int, str]:
    """``python -m core ARGV`` in this process: its exit status and what it printed."""
    out = io.StringIO()
    status = main(list(argv), stdout=out)
    return status, out.getvalue()


def table_rows(out: str) -> list[list[str]]:
    """The cells of every table row printed (rich's body rows start with "│")."""
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines()]
    return [cells for cells in rows if cells and cells[0]]  # not a folded row's second line
