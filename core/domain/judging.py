"""What judging keeps per workspace: query sets, judgments and saved evaluation runs.

Models, not behaviour: they cross the store port and are checked here once, so no store can
hold a grade of 7 or a set of 20,000 queries. A judgment names its query by TEXT, not by a
set's id: the same question asked in two sets shares its judgments, and Quepid's CSV names
queries by text too (TREC and BEIR ids are mapped through a set when files are read). A
saved run keeps everything needed to read it later (its settings, the judgments as they
stood, per-query metrics and ranked lists) as one document rather than references into the
corpus: it must stay readable after a re-index or after judgments change, which a run
pointing at live rows would not.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.domain.chunks import check_storable
from core.domain.query_cost import MAX_QUERY_CHARS

#: The app's grades: 0 not relevant, 1 related, 2 relevant, 3 perfect.
TOP_GRADE: Final[int] = 3
#: What each grade means, as the Judge screen and exports say it.
GRADE_NAMES: Final[tuple[str, ...]] = ("not relevant", "related", "relevant", "perfect")
#: Queries in one set: a judging effort larger than this is several sets (a TREC track has
#: 50-250 topics; 10,000 keeps a pasted log from becoming a set nobody can finish).
MAX_QUERIES: Final[int] = 10_000
#: Characters in a query's id (TREC and BEIR ids are a few; an id is a name, not a question).
MAX_QUERY_ID_CHARS: Final[int] = 1_000
#: Most UTF-8 bytes of a query a grade is kept under. PostgreSQL keys a grade by its query's
#: text in a btree, whose entries hold at most 2,704 bytes (grading an 8,864-character query
#: failed there: "index row size 4432 exceeds btree version 4 maximum"); 2,000 leaves room for
#: the passage id and the rater, in every store alike. Far above CISI's longest question (1,462
#: characters), far below what a query may be searched with (``query_cost``): keying grades by
#: a hash of the text would lift it (not done yet).
MAX_GRADED_QUERY_BYTES: Final[int] = 2_000
#: Characters in the name of a query set or a saved run.
MAX_NAME_CHARS: Final[int] = 200
#: The rater of a judgment made without sign-in.
LOCAL_RATER: Final[str] = "local"


def graded_query_refusal(query: str) -> str:
    """The sentence refusing a grade for ``query`` (too long to key a grade by), or ""."""
    size = len(query.encode("utf-8", "surrogatepass"))
    if size <= MAX_GRADED_QUERY_BYTES:
        return ""
    return (
        f"a query of {size:,} bytes cannot be graded: a grade is kept under its query's text, "
        f"at most {MAX_GRADED_QUERY_BYTES:,} bytes (UTF-8)"
    )


def _name(value: str, what: str) -> str:
    cleaned = " ".join(value.split())
    if not cleaned or len(cleaned) > MAX_NAME_CHARS:
        raise ValueError(
            f"a {what} name has 1 to {MAX_NAME_CHARS} characters (spaces at either end and "
            f"repeated spaces aside), not {len(cleaned):,}"
        )
    return check_storable(cleaned, f"the {what} name")


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("a time needs its time zone")
    return value.astimezone(UTC)


class SetQuery(BaseModel):
    """One query of a set: its id (what TREC and BEIR judgments name) and its text."""

    model_config = ConfigDict(frozen=True)

    query_id: str = Field(min_length=1, max_length=MAX_QUERY_ID_CHARS)
    text: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)

    @field_validator("query_id", "text")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return check_storable(value, "a query")


class QuerySet(BaseModel):
    """A named list of queries of one workspace, ids and texts each distinct."""

    model_config = ConfigDict(frozen=True)

    tenant_id: UUID
    name: str
    queries: tuple[SetQuery, ...] = Field(min_length=1, max_length=MAX_QUERIES)
    created_at: datetime

    @field_validator("name")
    @classmethod
    def _set_name(cls, value: str) -> str:
        return _name(value, "query set")

    @field_validator("created_at")
    @classmethod
    def _created(cls, value: datetime) -> datetime:
        return _utc(value)

    @model_validator(mode="after")
    def _distinct(self) -> QuerySet:
        for what, values in (
            ("id", [q.query_id for q in self.queries]),
            ("text", [q.text for q in self.queries]),
        ):
            if len(set(values)) != len(values):
                raise ValueError(f"a query set holds each query {what} once")
        return self


class QuerySetSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    queries: int
    created_at: datetime


class Judgment(BaseModel):
    """One rater's grade of one passage for one query, with the passage's source document.

    The key is (tenant, query, passage, rater): a rater grading a pair again replaces their
    grade; another rater's grade of the same pair stands beside it.
    """

    model_config = ConfigDict(frozen=True)

    tenant_id: UUID
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    chunk_id: str = Field(min_length=1)
    source_id: str = Field(min_length=1)
    grade: int = Field(ge=0, le=TOP_GRADE)
    #: The signed-in e-mail, or ``LOCAL_RATER`` without sign-in.
    rater: str = Field(min_length=1)
    judged_at: datetime

    @field_validator("query", "chunk_id", "source_id", "rater")
    @classmethod
    def _text(cls, value: str) -> str:
        return check_storable(value, "a judgment's text")

    @field_validator("query")
    @classmethod
    def _keyable(cls, value: str) -> str:
        refusal = graded_query_refusal(value)
        if refusal:
            raise ValueError(refusal)
        return value

    @field_validator("judged_at")
    @classmethod
    def _time(cls, value: datetime) -> datetime:
        return _utc(value)


class RunRecord(BaseModel):
    """What a saved evaluation run was and what it measured, self-contained."""

    model_config = ConfigDict(frozen=True)

    ranker: str
    k1: float | None = None
    b: float | None = None
    profile: str
    limit: int = Field(ge=0)
    k: int = Field(ge=1)
    query_set: str
    #: ``passage`` (in-app grades) or ``document`` (a document's best passage, as for qrels).
    level: str = "passage"
    #: query text -> judged id -> the grade the run was measured against.
    judgments: dict[str, dict[str, int]] = Field(default_factory=dict)
    #: query text -> metric name -> value.
    metrics: dict[str, dict[str, float]] = Field(default_factory=dict)
    #: query text -> the ranked ids (at most k).
    ranked: dict[str, list[str]] = Field(default_factory=dict)
    #: How each query was expanded before it was ranked (``ExpansionSpec.label``); None: as typed.
    expansion: str | None = None


class SavedRun(BaseModel):
    """An evaluation run kept under a name, with everything needed to read it later."""

    model_config = ConfigDict(frozen=True)

    tenant_id: UUID
    run_id: UUID
    name: str
    saved_at: datetime
    record: RunRecord

    @field_validator("name")
    @classmethod
    def _run_name(cls, value: str) -> str:
        return _name(value, "saved run")

    @field_validator("saved_at")
    @classmethod
    def _saved(cls, value: datetime) -> datetime:
        return _utc(value)


class SavedRunSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: UUID
    name: str
    saved_at: datetime
    query_set: str
