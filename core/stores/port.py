"""The store port: what every chunk store must do, async and tenant-scoped.

A Protocol rather than an abstract base class: adapters need no import of each
other's base, and mypy checks conformance structurally. The contract that types
cannot say (orders, truncation, statistics over the whole corpus, isolation of
returned objects) is held by ``tests.stores.compliance``, one suite for all.

Candidates cross the port as columns (``core.domain.ranking.LexicalCandidates``): the corpus
statistics; ``terms``, the requested terms distinct and sorted; one row per candidate in
the truncation order (distinct requested terms matched desc, then chunk id asc) with
``ids`` (chunk id, object array), ``id_order`` (integers ordered as the ids, so the
score tie-break is an integer compare), ``doc_lengths`` and ``tfs`` (rows x terms, int64);
``matching``; and ``lookup``, rows -> the caller's own ``StoredChunk`` copies from the
same snapshot, which ranking calls only for the k it returns. A store may build the
columns from per-passage rows (``LexicalCandidates(stats=..., candidates=[...])``) at the
cost of one model per row; the in-memory store builds them from arrays.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.domain.chunks import (
    StoredChunk,
    storable_text_problem,
    workspace_tenant_id,
)
from core.domain.entities import Entity
from core.domain.filters import PassageFilter
from core.domain.judging import (
    Judgment,
    QuerySet,
    QuerySetSummary,
    SavedRun,
    SavedRunSummary,
)
from core.domain.names import format_problem
from core.domain.ranking import LexicalCandidates
from core.domain.tokenize import DEFAULT_PROFILE, Profile, tokenize

#: Largest offset or index any store keeps (PostgreSQL bigint); larger ones are rejected everywhere.
MAX_POSITION = 2**63 - 1
#: Longest e-mail address kept as a workspace owner or member (RFC 5321's path limit).
MAX_EMAIL_CHARS = 254


class StoreUnavailable(RuntimeError):
    """A store could not do a call for a reason no document causes, after its own retries.

    Its database is gone, out of a resource (connections, memory, lock slots, disk) or did not
    answer in time. A write that raises it stored nothing. Callers writing many documents stop
    and report instead of retrying document by document: every document would fail the same way.
    """


class ConnectionLost(StoreUnavailable):
    """A store lost its database while working and gave up after its retries.

    Raised instead of the driver's own errors (``InterfaceError: cannot call
    Transaction.__aexit__ ...``), whose wording tells a user nothing; the message says what
    was being done and, for a write, that nothing of it was stored.
    """


class WorkspaceGone(StoreUnavailable):
    """A write reached a workspace that was deleted (or deleted and created again) since the
    writer looked it up. Nothing of the write was stored: the write and the deletion take
    the workspace itself in turn, and a deleted workspace's id is never used again."""

    def __init__(self, tenant_id: UUID) -> None:
        super().__init__(
            "the workspace was deleted while this was being written; nothing of it was stored "
            "(if it was created again under the same name, that one is a new, empty workspace)"
        )
        self.tenant_id = tenant_id


class NameTaken(ValueError):
    """Another workspace has a name a person cannot tell from this one (``name_key``)."""


class StoreInconsistent(RuntimeError):
    """A read found a workspace's counters, df or passages disagreeing (never expected: each
    write keeps them in one transaction); ``python -m core db repair`` recomputes them."""


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


#: A-Z to a-z and nothing else: the only case folding an e-mail address gets.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def email_key(value: str) -> str:
    """An address as addresses are compared: trimmed, ASCII letters lower-cased, nothing else.

    ``str.lower`` was rejected: it folds by compatibility too, so the Kelvin sign in
    "\u212aate@example.org" became the "k" of kate@example.org, another person's address.
    """
    return value.strip().translate(_ASCII_LOWER)


def member_email(value: str) -> str:
    """An owner's or member's e-mail as every store keeps it: trimmed, ASCII lower case.

    ``ValueError`` in plain words for anything that is not one address (spaces, control
    characters, no or two ``@``, too long). Lower case because identity providers differ in
    the case they return, and a member added as ``Ada@Example.org`` must match her sign-in;
    ASCII only (``email_key``), so no other character becomes a letter it resembles.
    """
    cleaned = email_key(value)
    local, at, domain = cleaned.partition("@")
    if (
        not at
        or not local
        or not domain
        or "@" in domain
        or len(cleaned) > MAX_EMAIL_CHARS
        or any(c.isspace() or not c.isprintable() for c in cleaned)
        or not is_storable(cleaned)
    ):
        shown = value if len(value) <= 60 else value[:60] + "…"
        raise ValueError(f"{shown!r} is not an e-mail address")
    return cleaned


class Workspace(BaseModel):
    """A named tenant, the tokenizer profile every write and query of it uses, and who may open it.

    ``owner`` is None for a workspace made without sign-in (the single-user local tool); with
    sign-in, the creator owns it and only the owner and ``members`` may open it.
    """

    model_config = ConfigDict(frozen=True)

    tenant_id: UUID
    name: str = Field(min_length=1)
    #: Chosen at creation; changed only by ``ChunkStore.reindex`` (which re-tokenises everything).
    profile: Profile = DEFAULT_PROFILE
    #: The e-mail of who created it (with sign-in); None without sign-in.
    owner: str | None = None
    #: E-mails of the other people who may open it: distinct, sorted, never the owner.
    members: tuple[str, ...] = ()

    @field_validator("owner")
    @classmethod
    def _owner_email(cls, value: str | None) -> str | None:
        return None if value is None else member_email(value)

    @field_validator("members")
    @classmethod
    def _member_emails(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted({member_email(m) for m in value}))

    @model_validator(mode="after")
    def _owner_is_not_a_member(self) -> Workspace:
        if self.owner is not None and self.owner in self.members:
            object.__setattr__(self, "members", tuple(m for m in self.members if m != self.owner))
        return self

    def admits(self, email: str | None) -> bool:
        """Whether the signed-in ``email`` may open this workspace (its owner or a member)."""
        if email is None:
            return False
        email = email_key(email)
        return email == self.owner or email in self.members


#: Called during a re-index with (passages done, passages in all).
ReindexProgress = Callable[[int, int], None]


@runtime_checkable
class ChunkStore(Protocol):
    """Passages, their term index and entities, per tenant."""

    async def upsert_many(self, chunks: Sequence[StoredChunk]) -> int:
        """Insert or replace passages by (tenant_id, id); returns how many were written."""
        ...

    async def replace_source(
        self, source_id: str, tenant_id: UUID, chunks: Sequence[StoredChunk]
    ) -> int:
        """Atomically make ``chunks`` the source's passages; returns orphans removed.

        Chunks of another source or tenant are rejected (ValueError) before anything is written.
        """
        ...

    async def replace_sources(
        self,
        tenant_id: UUID,
        sources: Sequence[tuple[str, Sequence[StoredChunk]]],
        entities: Sequence[Entity] = (),
    ) -> list[int]:
        """``replace_source`` for many sources plus ``upsert_entities``, all in one atomic
        write (bulk loading); returns the orphans removed per source, in the order given.

        Everything is checked before anything is written; a source named twice is rejected.
        """
        ...

    async def delete_by_source(self, source_id: str, tenant_id: UUID) -> int:
        """Delete a source's passages; returns how many."""
        ...

    async def delete_by_tenant(self, tenant_id: UUID) -> int:
        """Delete every passage and entity of a tenant; returns passages deleted."""
        ...

    async def delete_workspace(self, tenant_id: UUID) -> int:
        """Delete a workspace: its record, members, passages and entities, together or not at all.

        Returns passages deleted; an unknown tenant deletes nothing and returns 0. Its id is
        never used again: a write to it, waiting or later, raises ``WorkspaceGone``.
        """
        ...

    async def get(self, chunk_id: str, tenant_id: UUID) -> StoredChunk | None: ...

    async def get_by_source(self, source_id: str, tenant_id: UUID) -> list[StoredChunk]:
        """Ordered by chunk_index, then id."""
        ...

    async def get_by_entity(self, entity_id: UUID, tenant_id: UUID) -> list[StoredChunk]:
        """Ordered by source_id, chunk_index, id."""
        ...

    async def lexical_candidates(
        self,
        terms: Sequence[str],
        tenant_id: UUID,
        limit: int,
        within: PassageFilter | None = None,
    ) -> LexicalCandidates:
        """Whole-corpus statistics and up to ``limit`` candidates, see DESIGN.md.

        ``within`` (``core.domain.filters``) restricts which passages may be candidates,
        before the limit; the statistics stay the whole workspace's, and the matching
        passages it excluded are counted apart (``filtered_out``). An empty filter is none.
        """
        ...

    async def list_sources(self, tenant_id: UUID) -> list[SourceSummary]:
        """Ordered by source_id."""
        ...

    async def source_passage_counts(self, tenant_id: UUID) -> dict[str, int]:
        """Each source's passages, as ``list_sources`` counts them, in no order: for a caller
        that only compares counts (an upload's report), without a model per source."""
        ...

    async def list_entities(self, tenant_id: UUID) -> list[EntitySummary]:
        """Entities mentioned by at least one passage; passages descending, then name, id."""
        ...

    async def corpus_summary(self, tenant_id: UUID) -> CorpusSummary: ...

    async def passage_count(self, tenant_id: UUID) -> int:
        """How many passages the tenant holds, without reading them (0 for an unknown tenant).

        What a page asks on every run ("is this workspace empty?"); ``list_sources`` answered
        it by listing every source, about 4 s a page at a million passages.
        """
        ...

    async def generation(self, tenant_id: UUID) -> int:
        """A number that changes with every write to the tenant's passages, by any process.

        Equal numbers mean the same passages and lengths (so the same rankings), which is what
        a cache of search results keys on; 0 for an unknown tenant. Cheap: one row or a field.
        """
        ...

    async def doc_lengths(self, tenant_id: UUID) -> list[int]:
        """Every passage's token length, ascending (for a histogram)."""
        ...

    async def terms_with_prefix(
        self, prefix: str, tenant_id: UUID, limit: int
    ) -> list[TermFrequency]:
        """Terms starting with ``prefix`` (already normalised), by df descending, then term."""
        ...

    async def upsert_entities(self, entities: Sequence[Entity], tenant_id: UUID) -> int: ...

    async def get_entities(self, entity_ids: Sequence[UUID], tenant_id: UUID) -> list[Entity]:
        """The known entities among ``entity_ids``, in the order asked; unknown ids omitted."""
        ...

    async def upsert_workspace(self, workspace: Workspace) -> None:
        """Create a workspace, or rename it; an existing workspace keeps its profile,
        owner and members.

        A deleted workspace's id raises ``WorkspaceGone`` (ids are never used twice); a name
        whose ``name_key`` another workspace holds raises ``NameTaken``.

        A tenant's passages are tokenised with the profile of its workspace (``plain`` when
        the tenant has none); a new workspace's profile, owner and members are taken from
        ``workspace``.
        """
        ...

    async def get_workspace(self, tenant_id: UUID) -> Workspace | None:
        """The workspace of ``tenant_id`` with its owner and members; None when unknown."""
        ...

    async def find_workspace(self, name: str) -> Workspace | None:
        """The workspace a person knows by ``name`` (same ``name_key``); None when none is."""
        ...

    async def retired(self, tenant_id: UUID) -> bool:
        """Whether a deleted workspace had ``tenant_id`` (it is never used again)."""
        ...

    async def add_member(self, tenant_id: UUID, email: str) -> bool:
        """Let ``email`` (normalised by ``member_email``) open the workspace.

        Returns False when it already could (a member, or the owner). An unknown workspace
        raises KeyError; an address ``member_email`` refuses raises ValueError.
        """
        ...

    async def set_owner(self, tenant_id: UUID, email: str) -> None:
        """Make ``email`` the workspace's owner: for one made without sign-in, or a hand-over.

        A member who becomes the owner is no longer listed as a member; the previous owner
        keeps no access unless added as a member. An unknown workspace raises KeyError.
        """
        ...

    async def remove_member(self, tenant_id: UUID, email: str) -> bool:
        """Take ``email`` off the members; returns False when it was not one.

        The owner is not a member and cannot be removed (ValueError). An unknown workspace
        raises KeyError.
        """
        ...

    async def reindex(
        self, tenant_id: UUID, profile: Profile, on_progress: ReindexProgress | None = None
    ) -> int:
        """Re-tokenise every passage of the tenant under ``profile`` and make it the workspace's.

        Atomic: until the new index is complete, every read sees the old one, whole; then
        passages, term index, statistics and the workspace's profile change together.
        Returns the passages re-indexed. An unknown workspace raises KeyError.
        """
        ...

    async def list_workspaces(self) -> list[Workspace]:
        """Ordered by name, each with its owner and members."""
        ...

    # -- judging: query sets, judgments, saved runs (see core.domain.judging) ----------
    # Each belongs to a workspace: writing one for an unknown workspace raises KeyError (so
    # nothing can be written into a deleted one), and ``delete_workspace`` deletes them all.

    async def save_query_set(self, query_set: QuerySet) -> None:
        """Create the set, or replace the one of the same name in its workspace."""
        ...

    async def list_query_sets(self, tenant_id: UUID) -> list[QuerySetSummary]:
        """Ordered by name."""
        ...

    async def get_query_set(self, tenant_id: UUID, name: str) -> QuerySet | None: ...

    async def delete_query_set(self, tenant_id: UUID, name: str) -> bool:
        """Returns False when there was no such set. Its queries' judgments stay."""
        ...

    async def put_judgments(self, tenant_id: UUID, judgments: Sequence[Judgment]) -> int:
        """Insert or replace by (query, passage, rater), all or nothing; returns how many.

        A judgment of another tenant is rejected (ValueError) before anything is written;
        a key named twice in one call keeps the last.
        """
        ...

    async def list_judgments(
        self, tenant_id: UUID, queries: Sequence[str] | None = None
    ) -> list[Judgment]:
        """The workspace's judgments (of ``queries`` only, when given), ordered by query,
        passage, rater."""
        ...

    async def delete_judgment(
        self, tenant_id: UUID, query: str, chunk_id: str, rater: str
    ) -> bool: ...

    async def save_run(self, run: SavedRun) -> None:
        """Keep a saved run (a run id saved again replaces it)."""
        ...

    async def list_runs(self, tenant_id: UUID) -> list[SavedRunSummary]:
        """Ordered by when they were saved, then run id."""
        ...

    async def get_run(self, tenant_id: UUID, run_id: UUID) -> SavedRun | None: ...

    async def delete_run(self, tenant_id: UUID, run_id: UUID) -> bool: ...

    async def close(self) -> None: ...


async def tenant_of(store: ChunkStore, name: str) -> UUID:
    """The id of the workspace a person knows by ``name`` now.

    A name no workspace has gives the name's derived id (``workspace_tenant_id``): reads of
    it find nothing, and a write to it is refused if a deleted workspace had it.
    """
    found = await store.find_workspace(name)
    return workspace_tenant_id(name) if found is None else found.tenant_id


async def new_tenant_id(store: ChunkStore, name: str) -> UUID:
    """An id no workspace has had, for a new workspace called ``name``: the name's derived id
    when the store never used it (a database from before, whose ids were derived, and a
    fresh one agree), else a random one."""
    derived = workspace_tenant_id(name)
    if await store.get_workspace(derived) is None and not await store.retired(derived):
        return derived
    return uuid.uuid4()


async def open_workspace(
    store: ChunkStore, name: str, profile: Profile = DEFAULT_PROFILE
) -> Workspace:
    """The workspace called ``name``, created if no workspace has that name.

    Each creation gets an id no workspace had: the name's derived id when the store never
    used it (so a database from before, whose ids were derived, and a fresh one agree), else
    a random one. A name re-created after a deletion is therefore a new, empty workspace,
    and a write still aimed at the deleted one fails (``WorkspaceGone``). Two creators of one
    name at once end with one workspace (the store's unique ``name_key``).
    """
    for _ in range(3):
        found = await store.find_workspace(name)
        if found is not None:
            return found
        fresh = await new_tenant_id(store, name)
        for tenant_id in dict.fromkeys((fresh, uuid.uuid4())):
            try:
                await store.upsert_workspace(
                    Workspace(tenant_id=tenant_id, name=name, profile=profile)
                )
            except WorkspaceGone:
                continue  # a deleted workspace had the derived id: take a random one
            except NameTaken:
                break  # created by someone else meanwhile: find it
            made = await store.get_workspace(tenant_id)
            if made is not None:
                return made
    raise NameTaken(f"the workspace “{name}” could not be created; try again")


def passage_terms(text: str, profile: Profile = DEFAULT_PROFILE) -> tuple[int, Counter[str]]:
    """A passage's doc_length (tokens, repeats included) and tf per term: one tokenisation."""
    tokens = tokenize(text, profile)
    return len(tokens), Counter(tokens)


def is_storable(value: str) -> bool:
    """False for text no store can hold (a term or key with NUL or a lone surrogate)."""
    return storable_text_problem(value) is None


def check_name(name: str, what: str) -> None:
    """Reject a name no store can hold; the Entity and Workspace models allow NUL.

    A workspace name also refuses format characters (zero-width, bidi controls): invisible,
    they make two names that print alike. Entity names keep them (a zero-width non-joiner
    spells Persian words), and the models allow them so that a stored name stays readable.
    """
    if not is_storable(name):
        raise ValueError(f"{what} name {name!r} contains a NUL or a lone surrogate")
    problem = format_problem(name) if what == "workspace" else None
    if problem is not None:
        raise ValueError(f"{what} name {name!r} {problem}")


def distinct_terms(terms: Iterable[str]) -> list[str]:
    """The requested terms, deduplicated and sorted: the keys of ``doc_frequencies``."""
    return sorted(set(terms))
