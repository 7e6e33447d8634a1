"""The uploaded entity list: CSV rows of a name, its kind and its aliases, checked.

An analyst's list of the entities that matter to them wins over what the rules guess (see
``rules.RuleBasedExtractor``). CSV, not JSON or YAML: the list is most often kept in a
spreadsheet, and a row per entity reads the same in both.
"""

from __future__ import annotations

import csv
import io
import re

from pydantic import BaseModel, ConfigDict, Field

from core.domain.entities.model import EntityKind

#: Separators for aliases in an entity list.
_ALIAS_SPLIT = re.compile(r"[;|]")
#: Kind spellings accepted in an entity list.
_KIND_SPELLINGS: dict[str, EntityKind] = {
    "person": "person",
    "people": "person",
    "organisation": "organisation",
    "organization": "organisation",
    "org": "organisation",
    "place": "place",
    "location": "place",
    "other": "other",
    "": "other",
}


class ListedEntity(BaseModel):
    """One row of a user-supplied entity list: a name, its kind, its other spellings."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    kind: EntityKind = "other"
    aliases: tuple[str, ...] = ()


class EntityListError(ValueError):
    """An entity list that cannot be used; the message names the line and the problem."""


def load_entity_list(text: str) -> list[ListedEntity]:
    """Parse CSV rows ``name,kind,aliases`` (aliases separated by ';' or '|').

    A first row reading ``name,kind,aliases`` is a header. Blank lines are skipped; a row
    without a name or with an unknown kind is an error naming its line.
    """
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))
    entries: list[ListedEntity] = []
    problems: list[str] = []
    for line, row in enumerate(rows, start=1):
        cells = [cell.strip() for cell in row]
        if not any(cells):
            continue
        if line == 1 and cells[0].casefold() == "name":
            continue
        name = cells[0]
        kind_text = cells[1].casefold() if len(cells) > 1 else ""
        kind = _KIND_SPELLINGS.get(kind_text)
        if not name:
            problems.append(f"line {line}: no name")
            continue
        if kind is None:
            problems.append(
                f"line {line}: unknown kind {cells[1]!r} (use person, organisation, place, other)"
            )
            continue
        aliases = tuple(
            alias.strip()
            for cell in cells[2:]
            for alias in _ALIAS_SPLIT.split(cell)
            if alias.strip() and alias.strip().casefold() != name.casefold()
        )
        entries.append(ListedEntity(name=name, kind=kind, aliases=aliases))
    if problems:
        raise EntityListError("entity list: " + "; ".join(problems))
    return entries
