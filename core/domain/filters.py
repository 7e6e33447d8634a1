"""Which passages may be candidates: a search narrowed to sources, entities and metadata values.

A filter only restricts the candidates, before the limit: the corpus statistics (N, avgdl, every
df) stay those of the whole workspace, as in the seed, so a passage's score is the same with or
without a filter and a filtered ranking is the unfiltered one with the excluded passages taken
out (before the limit picks its candidates, so the limit is spent on admitted passages).
Elasticsearch's ``filter`` clause and Solr's ``fq`` work the same way. Rejected: statistics of
the filtered subset (a "sub-corpus" search), which changes every score whenever the filter
changes and makes two filtered lists incomparable.

The rule, held by the compliance suite in every store: within one kind the values are
alternatives (any of these sources), across kinds all must hold (one of the sources AND one of
the entities AND each metadata field one of its values). A metadata field matches when its value
is one of the given texts, or a list holding one: a string as it is, an integer or a boolean as
JSON writes it (``1990``, ``true``); an object never matches. ``admits`` is the rule in Python,
the reference every store's reading of it (numpy rows, SQL) is tested against.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.domain.chunks import storable_text_problem

#: Values a filter may name in all: a filter is typed or clicked, never a list of a corpus.
MAX_FILTER_VALUES = 1_000


class MetadataMatch(BaseModel):
    """One metadata field and the values (as text) any of which it must have."""

    model_config = ConfigDict(frozen=True)

    field: str = Field(min_length=1)
    values: tuple[str, ...] = Field(min_length=1)

    @field_validator("values")
    @classmethod
    def _distinct(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(set(values)))

    @model_validator(mode="after")
    def _storable(self) -> MetadataMatch:
        problem = self.unstorable()
        if problem is not None:
            raise ValueError(problem)
        return self

    def unstorable(self) -> str | None:
        """Why no store could match this (its field or a value holds NUL or a lone
        surrogate, which PostgreSQL cannot hold), in one sentence; None if any can."""
        return _unstorable("metadata field", (self.field,)) or _unstorable(
            f"value of metadata field {self.field!r}", self.values
        )


def _unstorable(what: str, values: tuple[str, ...]) -> str | None:
    for value in values:
        problem = storable_text_problem(value)
        if problem is not None:
            return f"a filter's {what} {value!r} {problem}, which no store can hold"
    return None


class PassageFilter(BaseModel):
    """Sources, entities and metadata values a candidate must have (empty: no restriction)."""

    model_config = ConfigDict(frozen=True)

    sources: tuple[str, ...] = ()
    entities: tuple[UUID, ...] = ()
    metadata: tuple[MetadataMatch, ...] = ()

    @field_validator("sources")
    @classmethod
    def _sources(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(set(values)))

    @field_validator("entities")
    @classmethod
    def _entities(cls, values: tuple[UUID, ...]) -> tuple[UUID, ...]:
        return tuple(sorted(set(values)))

    @field_validator("metadata")
    @classmethod
    def _fields(cls, matches: tuple[MetadataMatch, ...]) -> tuple[MetadataMatch, ...]:
        fields = [m.field for m in matches]
        if len(set(fields)) != len(fields):
            raise ValueError("a metadata field is named twice: give its values in one match")
        total = sum(len(m.values) for m in matches)
        if total > MAX_FILTER_VALUES:
            raise ValueError(f"a filter names at most {MAX_FILTER_VALUES:,} values")
        return tuple(sorted(matches, key=lambda m: m.field))

    @field_validator("entities", "sources")
    @classmethod
    def _bounded(cls, values: tuple[Any, ...]) -> tuple[Any, ...]:
        if len(values) > MAX_FILTER_VALUES:
            raise ValueError(f"a filter names at most {MAX_FILTER_VALUES:,} values")
        return values

    @field_validator("sources")
    @classmethod
    def _storable_sources(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        problem = _unstorable("source id", values)
        if problem is not None:
            raise ValueError(problem)
        return values

    def unstorable(self) -> str | None:
        """Why no store could read this filter, in one sentence (a source id, metadata field or
        value holding NUL or a lone surrogate); None if every store can. Stores ask it again,
        since ``model_construct`` skips the validators."""
        return _unstorable("source id", tuple(self.sources)) or next(
            (p for m in self.metadata if (p := m.unstorable()) is not None), None
        )

    @property
    def empty(self) -> bool:
        """True when it restricts nothing."""
        return not (self.sources or self.entities or self.metadata)

    def admits(self, source_id: str, entity_ids: Any, metadata: dict[str, Any] | None) -> bool:
        """Whether a passage of ``source_id`` naming ``entity_ids`` with ``metadata`` may be a
        candidate (the rule every store implements)."""
        if self.sources and source_id not in self.sources:
            return False
        if self.entities and not set(self.entities).intersection(entity_ids):
            return False
        for match in self.metadata:
            if not metadata_matches((metadata or {}).get(match.field), match.values):
                return False
        return True

    def describe(self, entity_names: Mapping[UUID, str] | None = None) -> str:
        """The filter in words, for a screen or a terminal ("" when it restricts nothing).

        An entity is named by ``entity_names`` when it holds its id (an analyst reads
        "Andy Warhol", not a UUID), by its id otherwise.
        """
        names = entity_names or {}
        parts = []
        if self.sources:
            parts.append(_alternatives("source", self.sources))
        if self.entities:
            parts.append(_alternatives("entity", [names.get(e, str(e)) for e in self.entities]))
        for match in self.metadata:
            parts.append(_alternatives(match.field, match.values))
        return " and ".join(parts)


def _alternatives(what: str, values: Any) -> str:
    shown = [json.dumps(v, ensure_ascii=False) for v in list(values)[:5]]
    more = len(values) - len(shown)
    return f"{what} {' or '.join(shown)}" + (f" (+{more} more)" if more > 0 else "")


def metadata_text(value: Any) -> str | None:
    """A scalar metadata value as a filter compares it; None for what never matches."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int):
        return json.dumps(value)
    return None


def metadata_matches(value: Any, wanted: tuple[str, ...]) -> bool:
    """Whether a metadata field's ``value`` is one of ``wanted`` (or a list holding one)."""
    if isinstance(value, list):
        return any(metadata_text(item) in wanted for item in value)
    text = metadata_text(value)
    return text is not None and text in wanted


__all__ = [
    "MAX_FILTER_VALUES",
    "MetadataMatch",
    "PassageFilter",
    "metadata_matches",
    "metadata_text",
]
