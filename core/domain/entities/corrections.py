"""An analyst's corrections: an entity merged into another, its kind changed, hidden.

Kept per workspace beside the entities and applied when entities are read (listed, shown on a
passage, used in a filter), never written into the passages: a correction names its entity by
id, which is the same for the same name and kind in every upload, so it holds for passages
uploaded later and is undone by removing it. Rejected: rewriting each passage's entity ids on a
merge, a write of every passage mentioning the entity that cannot be undone and is lost when
the source is uploaded again.

A kind changed is a merge too: "Louvre" (other) becomes another name of "Louvre" (place), the
entity of that name and kind, whose id derives from both as every entity's does. Rejected:
keeping the extracted id with another kind, which breaks the rule every store and link relies
on (an id is its kind and name), and would leave two entities where the text named one kind of
"Louvre" as a place already. What an uploaded entity list says is an entity of its own id, so a
correction of the extractor's guess for the same name never overrides the list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from uuid import UUID

from pydantic import BaseModel, ConfigDict, model_validator

from core.domain.entities.model import ENTITY_KINDS, Entity
from core.domain.entities.model import entity_id as entity_id_of
from core.domain.filters import PassageFilter


class EntityCorrection(BaseModel):
    """What an analyst said about one entity of a workspace (nothing said: no correction)."""

    model_config = ConfigDict(frozen=True)

    entity_id: UUID
    #: The entity this one is another name of ("Warhol" -> "Andy Warhol"); None: itself.
    merged_into: UUID | None = None
    #: Left out of browsing (the Entities list, the narrowing choices, a passage's chips).
    hidden: bool = False

    @model_validator(mode="after")
    def _not_into_itself(self) -> EntityCorrection:
        if self.merged_into == self.entity_id:
            raise ValueError("an entity cannot be merged into itself")
        return self

    @property
    def empty(self) -> bool:
        """True when it corrects nothing (kept as no correction at all)."""
        return self.merged_into is None and not self.hidden


class EntityCorrections:
    """A workspace's corrections, applied: which entity an id stands for, and how it shows."""

    def __init__(self, corrections: Iterable[EntityCorrection] = ()) -> None:
        self._by_id = {c.entity_id: c for c in corrections if not c.empty}

    def __bool__(self) -> bool:
        return bool(self._by_id)

    def of(self, entity_id: UUID) -> EntityCorrection:
        """The correction of ``entity_id`` itself (an empty one when there is none)."""
        return self._by_id.get(entity_id) or EntityCorrection(entity_id=entity_id)

    def canonical(self, entity_id: UUID) -> UUID:
        """The entity ``entity_id`` stands for, following merges (a merge loop stops where it
        would come back: the service refuses to make one)."""
        seen = {entity_id}
        current = entity_id
        while (target := self.of(current).merged_into) is not None and target not in seen:
            seen.add(target)
            current = target
        return current

    def members(self, entity_id: UUID) -> tuple[UUID, ...]:
        """Every id that stands for the same entity as ``entity_id`` (itself included), sorted."""
        target = self.canonical(entity_id)
        merged = {i for i in self._by_id if self.canonical(i) == target}
        return tuple(sorted(merged | {target}))

    def hidden(self, entity_id: UUID) -> bool:
        """Whether the entity ``entity_id`` stands for is hidden from browsing."""
        return self.of(self.canonical(entity_id)).hidden

    def entity(self, entity_id: UUID, known: Mapping[UUID, Entity]) -> Entity | None:
        """The entity ``entity_id`` stands for, from ``known`` (entities by id) or, when it is
        the target of a kind changed and so not stored, made from a known name it stands for."""
        target = self.canonical(entity_id)
        if target in known:
            return known[target]
        for member in self.members(target):
            if member in known:
                name = known[member].name
                for kind in ENTITY_KINDS:
                    if entity_id_of(kind, name) == target:
                        return Entity(name=name, kind=kind)
        return None

    def widened(self, within: PassageFilter) -> PassageFilter:
        """``within`` with every id merged into one of its entities (a filter on "Andy Warhol"
        admits a passage that only says "Warhol")."""
        if not within.entities or not self._by_id:
            return within
        ids = {member for e in within.entities for member in self.members(e)}
        return within.model_copy(update={"entities": tuple(sorted(ids))})
