"""Who may open which workspace: a signed-in person's view of the service.

With sign-in (Streamlit's ``st.login``, OpenID Connect) each workspace has an owner and
members, kept in the store (``Workspace.owner``/``members``). ``for_user(email)`` returns a
view of the one process-wide service whose store is a ``WorkspaceGuard``: every store call
that names a tenant is checked against that workspace's owner and members first, so every
action of every screen family (search, analysis, library, corpus, rankings), present or
added later, is checked without a line of its own. The rejected alternative, a check at the
top of each facade method, is some forty checks in six modules, and the one forgotten in a
new action is a hole nobody sees. The cost here is one workspace read per tenant per view
(a view lives for one script run, so a removed member loses access on their next click).

A workspace someone may not open and one that does not exist look the same
(``NoAccess``: "not found or no access"), so a link never reveals which. Names are global
(the tenant id is derived from the name), so creating a name someone else holds is refused:
that much is unavoidable. Without sign-in (``email`` None) the service is the single-user
local tool it always was: the raw store, every workspace visible.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Final, Literal, Self
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from core.domain.chunks import StoredChunk
from core.domain.entities import Entity
from core.domain.filters import PassageFilter
from core.domain.judging import (
    Judgment,
    QuerySet,
    QuerySetSummary,
    SavedRun,
    SavedRunSummary,
)
from core.domain.ranking import LexicalCandidates
from core.domain.tokenize import Profile
from core.service.common import NOT_FOUND_OR_NO_ACCESS, NoAccess, lookalike
from core.service.library import LibraryActions
from core.service.runner import StoreRunner
from core.stores.port import (
    ChunkStore,
    CorpusSummary,
    EntitySummary,
    ReindexProgress,
    SourceSummary,
    TermFrequency,
    Workspace,
    member_email,
)

#: The one string value of ``email_verified`` read as verified (some providers send strings).
VERIFIED_STRING: Final = "true"


class NotOwner(PermissionError):
    """Only the workspace's owner may do this (manage members, delete the workspace)."""


class WorkspaceGuard:
    """A ``ChunkStore`` that lets one signed-in person reach only their workspaces.

    Reads and writes of a tenant need its owner or a member; deleting the workspace and
    managing members need its owner; ``list_workspaces`` shows only theirs; a new workspace
    is always created with them as its owner and no members.
    """

    def __init__(self, inner: ChunkStore, email: str) -> None:
        self._inner = inner
        self.email = member_email(email)
        #: Tenants already checked in this view's life (one script run).
        self._admitted: set[UUID] = set()

    async def _workspace(self, tenant_id: UUID) -> Workspace:
        found = await self._inner.get_workspace(tenant_id)
        if found is None or not found.admits(self.email):
            self._admitted.discard(tenant_id)
            raise NoAccess(f"the workspace was {NOT_FOUND_OR_NO_ACCESS}")
        self._admitted.add(tenant_id)
        return found

    async def _check(self, tenant_id: UUID) -> None:
        if tenant_id not in self._admitted:
            await self._workspace(tenant_id)

    async def _check_owner(self, tenant_id: UUID, what: str) -> None:
        found = await self._workspace(tenant_id)
        if found.owner != self.email:
            raise NotOwner(f"only the workspace's owner ({found.owner or 'nobody'}) can {what}")

    async def _check_all(self, tenant_ids: Sequence[UUID]) -> None:
        for tenant_id in dict.fromkeys(tenant_ids):
            await self._check(tenant_id)

    # -- writes -----------------------------------------------------------------------

    async def upsert_many(self, chunks: Sequence[StoredChunk]) -> int:
        await self._check_all([c.tenant_id for c in chunks])
        return await self._inner.upsert_many(chunks)

    async def replace_source(
        self, source_id: str, tenant_id: UUID, chunks: Sequence[StoredChunk]
    ) -> int:
        await self._check(tenant_id)
        return await self._inner.replace_source(source_id, tenant_id, chunks)

    async def replace_sources(
        self,
        tenant_id: UUID,
        sources: Sequence[tuple[str, Sequence[StoredChunk]]],
        entities: Sequence[Entity] = (),
    ) -> list[int]:
        await self._check(tenant_id)
        return await self._inner.replace_sources(tenant_id, sources, entities)

    async def delete_by_source(self, source_id: str, tenant_id: UUID) -> int:
        await self._check(tenant_id)
        return await self._inner.delete_by_source(source_id, tenant_id)

    async def delete_by_tenant(self, tenant_id: UUID) -> int:
        await self._check_owner(tenant_id, "empty the workspace")
        return await self._inner.delete_by_tenant(tenant_id)

    async def delete_workspace(self, tenant_id: UUID) -> int:
        await self._check_owner(tenant_id, "delete the workspace")
        return await self._inner.delete_workspace(tenant_id)

    async def upsert_entities(self, entities: Sequence[Entity], tenant_id: UUID) -> int:
        await self._check(tenant_id)
        return await self._inner.upsert_entities(entities, tenant_id)

    async def upsert_workspace(self, workspace: Workspace) -> None:
        """Rename a workspace of theirs, or create a new one that they own.

        A name that looks like anyone's workspace (``lookalike``, over every workspace, not
        only theirs) is refused like a name someone holds.
        """
        if lookalike(workspace.name, workspace.tenant_id, await self._inner.list_workspaces()):
            raise NoAccess(f"the workspace name “{workspace.name}” is taken")
        if await self._inner.get_workspace(workspace.tenant_id) is None:
            workspace = Workspace(
                tenant_id=workspace.tenant_id,
                name=workspace.name,
                profile=workspace.profile,
                owner=self.email,
            )
        else:
            await self._check(workspace.tenant_id)
        await self._inner.upsert_workspace(workspace)
        # Two people creating one name at once: the store kept the first owner.
        await self._workspace(workspace.tenant_id)

    async def reindex(
        self, tenant_id: UUID, profile: Profile, on_progress: ReindexProgress | None = None
    ) -> int:
        await self._check(tenant_id)
        return await self._inner.reindex(tenant_id, profile, on_progress)

    async def add_member(self, tenant_id: UUID, email: str) -> bool:
        await self._check_owner(tenant_id, "add members")
        return await self._inner.add_member(tenant_id, email)

    async def set_owner(self, tenant_id: UUID, email: str) -> None:
        await self._check_owner(tenant_id, "hand the workspace over")
        await self._inner.set_owner(tenant_id, email)

    async def remove_member(self, tenant_id: UUID, email: str) -> bool:
        await self._check_owner(tenant_id, "remove members")
        return await self._inner.remove_member(tenant_id, email)

    # -- reads ------------------------------------------------------------------------

    async def get(self, chunk_id: str, tenant_id: UUID) -> StoredChunk | None:
        await self._check(tenant_id)
        return await self._inner.get(chunk_id, tenant_id)

    async def get_by_source(self, source_id: str, tenant_id: UUID) -> list[StoredChunk]:
        await self._check(tenant_id)
        return await self._inner.get_by_source(source_id, tenant_id)

    async def get_by_entity(self, entity_id: UUID, tenant_id: UUID) -> list[StoredChunk]:
        await self._check(tenant_id)
        return await self._inner.get_by_entity(entity_id, tenant_id)

    async def lexical_candidates(
        self,
        terms: Sequence[str],
        tenant_id: UUID,
        limit: int,
        within: PassageFilter | None = None,
    ) -> LexicalCandidates:
        await self._check(tenant_id)
        return await self._inner.lexical_candidates(terms, tenant_id, limit, within)

    async def list_sources(self, tenant_id: UUID) -> list[SourceSummary]:
        await self._check(tenant_id)
        return await self._inner.list_sources(tenant_id)

    async def source_passage_counts(self, tenant_id: UUID) -> dict[str, int]:
        await self._check(tenant_id)
        return await self._inner.source_passage_counts(tenant_id)

    async def list_entities(self, tenant_id: UUID) -> list[EntitySummary]:
        await self._check(tenant_id)
        return await self._inner.list_entities(tenant_id)

    async def corpus_summary(self, tenant_id: UUID) -> CorpusSummary:
        await self._check(tenant_id)
        return await self._inner.corpus_summary(tenant_id)

    async def passage_count(self, tenant_id: UUID) -> int:
        await self._check(tenant_id)
        return await self._inner.passage_count(tenant_id)

    async def generation(self, tenant_id: UUID) -> int:
        await self._check(tenant_id)
        return await self._inner.generation(tenant_id)

    async def doc_lengths(self, tenant_id: UUID) -> list[int]:
        await self._check(tenant_id)
        return await self._inner.doc_lengths(tenant_id)

    async def terms_with_prefix(
        self, prefix: str, tenant_id: UUID, limit: int
    ) -> list[TermFrequency]:
        await self._check(tenant_id)
        return await self._inner.terms_with_prefix(prefix, tenant_id, limit)

    async def get_entities(self, entity_ids: Sequence[UUID], tenant_id: UUID) -> list[Entity]:
        await self._check(tenant_id)
        return await self._inner.get_entities(entity_ids, tenant_id)

    # -- judging: every call names its workspace, checked like any other ----------------

    async def save_query_set(self, query_set: QuerySet) -> None:
        await self._check(query_set.tenant_id)
        await self._inner.save_query_set(query_set)

    async def list_query_sets(self, tenant_id: UUID) -> list[QuerySetSummary]:
        await self._check(tenant_id)
        return await self._inner.list_query_sets(tenant_id)

    async def get_query_set(self, tenant_id: UUID, name: str) -> QuerySet | None:
        await self._check(tenant_id)
        return await self._inner.get_query_set(tenant_id, name)

    async def delete_query_set(self, tenant_id: UUID, name: str) -> bool:
        await self._check(tenant_id)
        return await self._inner.delete_query_set(tenant_id, name)

    async def put_judgments(self, tenant_id: UUID, judgments: Sequence[Judgment]) -> int:
        await self._check(tenant_id)
        return await self._inner.put_judgments(tenant_id, judgments)

    async def list_judgments(
        self, tenant_id: UUID, queries: Sequence[str] | None = None
    ) -> list[Judgment]:
        await self._check(tenant_id)
        return await self._inner.list_judgments(tenant_id, queries)

    async def delete_judgment(self, tenant_id: UUID, query: str, chunk_id: str, rater: str) -> bool:
        await self._check(tenant_id)
        return await self._inner.delete_judgment(tenant_id, query, chunk_id, rater)

    async def save_run(self, run: SavedRun) -> None:
        await self._check(run.tenant_id)
        await self._inner.save_run(run)

    async def list_runs(self, tenant_id: UUID) -> list[SavedRunSummary]:
        await self._check(tenant_id)
        return await self._inner.list_runs(tenant_id)

    async def get_run(self, tenant_id: UUID, run_id: UUID) -> SavedRun | None:
        await self._check(tenant_id)
        return await self._inner.get_run(tenant_id, run_id)

    async def delete_run(self, tenant_id: UUID, run_id: UUID) -> bool:
        await self._check(tenant_id)
        return await self._inner.delete_run(tenant_id, run_id)

    async def get_workspace(self, tenant_id: UUID) -> Workspace | None:
        found = await self._inner.get_workspace(tenant_id)
        return found if found is not None and found.admits(self.email) else None

    async def retired(self, tenant_id: UUID) -> bool:
        """An id's past, not a workspace's content: anyone may ask (a new id is chosen so)."""
        return await self._inner.retired(tenant_id)

    async def find_workspace(self, name: str) -> Workspace | None:
        """Their workspace of that name; None for anyone else's (a name they cannot open
        reads as no workspace, so its owner and members stay unknown to them)."""
        found = await self._inner.find_workspace(name)
        return found if found is not None and found.admits(self.email) else None

    async def list_workspaces(self) -> list[Workspace]:
        return [w for w in await self._inner.list_workspaces() if w.admits(self.email)]

    async def close(self) -> None:
        """A view never closes the store it shares with every other session."""


class WorkspaceAccess(BaseModel):
    """Who may open a workspace, as the sidebar shows it to the person signed in."""

    model_config = ConfigDict(frozen=True)

    name: str
    #: The owner's e-mail; None for a workspace made without sign-in.
    owner: str | None
    members: tuple[str, ...]
    #: Whether the person signed in owns it: may add and remove members and delete it.
    you_own: bool


class LinkedWorkspace(BaseModel):
    """What a link's ``?ws=NAME`` leads to for the person using it."""

    model_config = ConfigDict(frozen=True)

    #: The cleaned name (the link's own text when it cannot be a name at all); for a name that
    #: only looks like one this person may open, that workspace's own name.
    name: str
    #: ``open``: theirs, show it; ``create``: unknown here and they may create it (no sign-in
    #: only); ``not found or no access``: with sign-in, unknown or someone else's, never which.
    outcome: Literal["open", "create", "not found or no access"]


class AccessActions(StoreRunner):
    """Sign-in: the signed-in view, members, and what a workspace link opens."""

    #: The signed-in person's e-mail in a ``for_user`` view; None without sign-in.
    user: str | None = None

    def for_user(self, email: str | None) -> Self:
        """This service as ``email`` may use it; itself when ``email`` is None (no sign-in).

        The view shares the store, its loop and settings; only its store calls are guarded.
        """
        if email is None:
            return self
        view = copy.copy(self)
        view._store = WorkspaceGuard(self._store, email)
        view.user = view._store.email
        return view

    def unowned_workspaces(self) -> int:
        """How many workspaces holding passages have no owner (made before sign-in, or by
        ``load``): with sign-in nobody can open them until whoever runs the server gives each
        an owner (``python -m core owner NAME EMAIL``). A count, never names: a signed-in
        person learns no workspace's name this way. Empty ones (the default workspace every
        start creates) are not counted.
        """
        store = self._store._inner if isinstance(self._store, WorkspaceGuard) else self._store

        async def unowned() -> int:
            found = 0
            for known in await store.list_workspaces():
                if known.owner is None and await store.passage_count(known.tenant_id):
                    found += 1
            return found

        return self._call(unowned())

    def close(self) -> None:
        """Close the store, unless this is a signed-in view of it (the service outlives it)."""
        if self.user is None:
            super().close()

    def workspace_access(self, name: str) -> WorkspaceAccess:
        """Owner and members of a workspace; ``NoAccess`` if they may not open it."""
        found = self._call(self._store.get_workspace(self._tenant(name)))
        if found is None:
            if self.user is not None:
                raise NoAccess(f"the workspace “{name}” was {NOT_FOUND_OR_NO_ACCESS}")
            return WorkspaceAccess(name=name, owner=None, members=(), you_own=False)
        return WorkspaceAccess(
            name=found.name,
            owner=found.owner,
            members=found.members,
            you_own=self.user is not None and found.owner == self.user,
        )

    def add_member(self, name: str, email: str) -> str:
        """Let ``email`` open the workspace ``name``; returns the address as kept.

        ``ValueError`` in plain words for an address that is not one, or one already
        there; ``NotOwner`` unless the person signed in owns the workspace.
        """
        cleaned = member_email(email)
        if not self._call(self._store.add_member(self._tenant(name), cleaned)):
            raise ValueError(f"{cleaned} can already open “{name}”")
        return cleaned

    def remove_member(self, name: str, email: str) -> bool:
        """Take ``email`` off the workspace's members; False if it was not one."""
        return self._call(self._store.remove_member(self._tenant(name), email))

    def linked_workspace(self, name: str) -> LinkedWorkspace:
        """What a link naming ``name`` opens for the person using it.

        Raises ``ValueError`` (plain words) when ``name`` cannot be a workspace name at all.
        """
        cleaned = LibraryActions.workspace_name(name)
        found = self._call(self._store.find_workspace(cleaned))
        if found is not None:  # by what a person sees: "secret" opens "Secret"
            return LinkedWorkspace(name=found.name, outcome="open")
        # A link to "Default" or a Cyrillic "Ѕecret" opens the workspace it looks like, when
        # this person may open it: the name is taken, so it can never be created.
        tenant = self._tenant(cleaned)
        seen = lookalike(cleaned, tenant, self._call(self._store.list_workspaces()))
        if seen is not None:
            return LinkedWorkspace(name=seen.name, outcome="open")
        if self.user is None:
            return LinkedWorkspace(name=cleaned, outcome="create")
        return LinkedWorkspace(name=cleaned, outcome=NOT_FOUND_OR_NO_ACCESS)


def signed_in_email(claims: Mapping[str, object]) -> str | None:
    """The e-mail a sign-in proves, from the identity provider's claims; None if it proves none.

    Workspaces are shared by e-mail, and some providers let anyone type any address, so only
    an address the provider says it verified opens anything: ``email_verified`` the boolean
    true, or the exact string "true" that some providers send. Anything else ("False", "0",
    "no", 1, a missing claim) opens nothing: reading a missing claim as verified let any
    account of a provider that never checks addresses claim anyone's workspaces.
    """
    email = claims.get("email")
    verified = claims.get("email_verified")
    if not isinstance(email, str) or not (verified is True or verified == VERIFIED_STRING):
        return None
    try:
        return member_email(email)
    except ValueError:
        return None


#: Addresses only this machine reaches (Streamlit's default, no address, is every interface).
LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "::1"})


class LocalMode(BaseModel):
    """What the sidebar says when no sign-in is configured: who can reach this tool."""

    model_config = ConfigDict(frozen=True)

    #: True when only this machine can reach it.
    loopback_only: bool
    message: str


def local_mode(address: str | None) -> LocalMode:
    """Without sign-in lexplain is a single-user local tool: say where it listens, and warn
    when that is more than this machine (anyone who reaches it reads and deletes everything).
    """
    if address and address.strip() in LOOPBACK:
        return LocalMode(
            loopback_only=True,
            message=f"Single-user local mode (no sign-in configured): listening on "
            f"{address.strip()} only, so only this machine can open it.",
        )
    where = f"on {address.strip()}" if address and address.strip() else "on every interface"
    return LocalMode(
        loopback_only=False,
        message=f"No sign-in is configured and lexplain is listening {where}: anyone who can "
        "reach it sees, changes and deletes every workspace. Configure sign-in ([auth] in "
        ".streamlit/secrets.toml) or run it with --server.address 127.0.0.1.",
    )
