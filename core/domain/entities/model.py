"""The entity model: an ``Entity``, its stable id, a ``Mention``, the extractor protocol.

``EntityId`` is a UUIDv5 of the kind and the normalised name, so "Rolls-Royce
Ltd" found in two uploads is one entity without any lookup table; a random id
would need a name registry in every store and a race to fill it.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from typing import Literal, Protocol, get_args
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: What an entity can be; "other" covers acronyms and names of unknown kind.
EntityKind = Literal["person", "organisation", "place", "other"]
#: Every kind, in the order screens list them.
ENTITY_KINDS: tuple[EntityKind, ...] = get_args(EntityKind)
#: The namespace of every EntityId (a fixed, random UUID; never change it).
ENTITY_NAMESPACE: UUID = UUID("6f1d3c52-9a0e-4b8e-bb0b-2f5c1e7d4a91")
#: Runs of whitespace collapse to one space in a normalised name.
_SPACES = re.compile(r"\s+")

EntityId = UUID


def normalise_name(name: str) -> str:
    """NFKC, casefolded, whitespace collapsed: the form two mentions must share."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", name).casefold()).strip()


def entity_id(kind: EntityKind, name: str) -> EntityId:
    """The deterministic id of the entity ``name`` of ``kind``."""
    return uuid.uuid5(ENTITY_NAMESPACE, f"{kind}\x1f{normalise_name(name)}")


class Entity(BaseModel):
    """A named thing; ``id`` derives from kind and name when not given."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1)
    kind: EntityKind = "other"
    id: UUID | None = None

    @model_validator(mode="after")
    def _derive_id(self) -> Entity:
        derived = entity_id(self.kind, self.name)
        if self.id is not None and self.id != derived:
            raise ValueError(f"entity id {self.id} disagrees with kind and name ({derived})")
        object.__setattr__(self, "id", derived)
        return self

    @property
    def entity_id(self) -> EntityId:
        assert self.id is not None
        return self.id


class Mention(BaseModel):
    """A span of text that names an entity: ``text == source[start:end]``."""

    model_config = ConfigDict(frozen=True)

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str = Field(min_length=1)
    entity: Entity


class EntityExtractor(Protocol):
    """Finds the entity mentions in a text; mentions are sorted and never overlap."""

    def extract(self, text: str) -> list[Mention]: ...
