"""The small read models a store returns about a workspace's contents (sources, entities,
corpus counts, terms), apart from the protocols that return them so both can be read alone."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from core.domain.entities import Entity


class SourceSummary(BaseModel):
    """One source (uploaded document) of a tenant."""

    model_config = ConfigDict(frozen=True)

    source_id: str
    passages: int = Field(ge=0)


class EntitySummary(BaseModel):
    """An entity with the number of the tenant's passages that mention it."""

    model_config = ConfigDict(frozen=True)

    entity: Entity
    passages: int = Field(ge=0)


class CorpusSummary(BaseModel):
    """Counts over a tenant's whole corpus."""

    model_config = ConfigDict(frozen=True)

    sources: int = Field(ge=0)
    passages: int = Field(ge=0)
    #: Tokens over all passages, repeats included (stopwords excluded).
    tokens: int = Field(ge=0)
    #: tokens / passages, 0.0 for an empty corpus: the avgdl BM25 uses.
    avg_doc_length: float = Field(ge=0.0)
    #: Distinct terms over all passages.
    vocabulary: int = Field(ge=0)


class TermFrequency(BaseModel):
    """A term and its document frequency in a tenant's corpus."""

    model_config = ConfigDict(frozen=True)

    term: str
    df: int = Field(ge=0)
