"""docs/sign-in.md's table of members' and owners' rights, read as the guard's tests use it:
each row's store calls and whether a member may make them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
#: The document whose table the guard is checked against.
SIGN_IN = ROOT / "docs" / "sign-in.md"
#: The table's header row, by which it is found.
HEADER = "| what | owner | member | store calls |"


def rights_rows() -> list[tuple[str, str, str, list[str]]]:
    """Every row of the rights table: what, owner, member ("yes"/"no") and its store calls."""
    lines = SIGN_IN.read_text(encoding="utf-8").splitlines()
    start = lines.index(HEADER) + 2  # past the header and its rule
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        what, owner, member, calls = (cell.strip() for cell in line.strip("|").split("|"))
        rows.append((what, owner, member, re.findall(r"`([a-z_]+)`", calls)))
    return rows


def owner_only_calls() -> set[str]:
    """The store calls the table says a member may not make."""
    return {call for _, _, member, calls in rights_rows() if member == "no" for call in calls}
