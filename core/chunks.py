"""Passages: the content-addressed ``StoredChunk`` and the documents they come from.

A passage's id is SHA-256 over its source id, a NUL byte and its text, so the
same passage gets the same id in every store and under every tenant, and every
key is the pair (tenant_id, id). The id is derived, never supplied: accepting a
caller's id would let two different texts share one key.

Text must be storable everywhere: PostgreSQL's ``text`` cannot hold NUL and
UTF-8 cannot encode lone surrogates, so both are rejected here with a message
that names the position, rather than failing differently in each store.
Readers clean such input before it reaches this model.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


def chunk_id(source_id: str, text: str) -> str:
    """SHA-256 hex of ``source_id`` (UTF-8), one NUL byte, then ``text`` (UTF-8)."""
    digest = hashlib.sha256()
    digest.update(source_id.encode("utf-8"))
    digest.update(b"\x00")
    digest.update(text.encode("utf-8"))
    return digest.hexdigest()


def storable_text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored (NUL or lone surrogate), or None if it can."""
    nul = value.find("\x00")
    if nul >= 0:
        return f"contains a NUL character at offset {nul}"
    for offset, char in enumerate(value):
        if "\ud800" <= char <= "\udfff":
            return f"contains a lone surrogate U+{ord(char):04X} at offset {offset}"
    return None


def _check_storable(value: str, what: str) -> str:
    problem = storable_text_problem(value)
    if problem is not None:
        raise ValueError(f"{what} {problem}")
    return value


def _check_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    try:
        encoded = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"metadata must be plain JSON: {exc}") from exc
    _check_storable(encoded.replace("\\u0000", "\x00"), "metadata")
    return metadata


class SourceDocument(BaseModel):
    """One document as a reader produced it, before it is cut into passages."""

    model_config = ConfigDict(frozen=True)

    source_id: str = Field(min_length=1)
    text: str
    title: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("source_id", "text", "title")
    @classmethod
    def _storable(cls, value: str) -> str:
        return _check_storable(value, "text")

    @field_validator("metadata")
    @classmethod
    def _plain_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _check_metadata(value)


class StoredChunk(BaseModel):
    """A passage as every store keeps it; ``id`` is derived from source and text."""

    model_config = ConfigDict(frozen=True)

    tenant_id: UUID
    source_id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    chunk_index: int = Field(ge=0)
    #: Offset of the passage's first character in the source text.
    start_char: int = Field(ge=0)
    #: Offset one past the passage's last character in the source text.
    end_char: int = Field(ge=0)
    entity_ids: list[UUID] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    id: str = ""

    @field_validator("source_id")
    @classmethod
    def _storable_source(cls, value: str) -> str:
        return _check_storable(value, "source_id")

    @field_validator("text")
    @classmethod
    def _storable_text(cls, value: str) -> str:
        return _check_storable(value, "passage text")

    @field_validator("metadata")
    @classmethod
    def _plain_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _check_metadata(value)

    @model_validator(mode="after")
    def _derive_id(self) -> StoredChunk:
        if self.end_char < self.start_char:
            raise ValueError(f"end_char {self.end_char} is before start_char {self.start_char}")
        derived = chunk_id(self.source_id, self.text)
        if self.id and self.id != derived:
            raise ValueError(
                f"id {self.id!r} disagrees with the id derived from source and text ({derived})"
            )
        object.__setattr__(self, "id", derived)
        return self
