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
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, Literal, Self, cast
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from core.service.common import NOT_FOUND_OR_NO_ACCESS, NoAccess, lookalike
from core.service.library import LibraryActions
from core.service.runner import StoreRunner
from core.stores.port import (
    ChunkStore,
    Workspace,
    member_email,
    tenant_of,
)

#: The one string value of ``email_verified`` read as verified (some providers send strings).
VERIFIED_STRING: Final = "true"


class NotOwner(PermissionError):
    """Only the workspace's owner may do this (manage members, delete the workspace)."""


class WorkspaceGuard:
    """A ``ChunkStore`` that lets one signed-in person reach only their workspaces.

    Its checked calls are derived from the port (``_guarded``, below the class) rather than
    written out: 41 hand-written delegations were four copies of each signature to keep in
    step. Written here are only the calls whose answer the guard shapes (workspaces).

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


#: The port's calls only a workspace's owner may make, with what the refusal says they tried.
OWNER_ONLY: Final[Mapping[str, str]] = {
    "delete_by_tenant": "empty the workspace",
    "delete_workspace": "delete the workspace",
    "add_member": "add members",
    "set_owner": "hand the workspace over",
    "remove_member": "remove members",
}
#: The port's calls that name their workspace otherwise than by a ``tenant_id`` argument.
TENANTS_OF: Final[Mapping[str, Callable[[Mapping[str, Any]], list[UUID]]]] = {
    "upsert_many": lambda arguments: [chunk.tenant_id for chunk in arguments["chunks"]],
    "save_query_set": lambda arguments: [arguments["query_set"].tenant_id],
    "save_run": lambda arguments: [arguments["run"].tenant_id],
}


def port_calls() -> list[str]:
    """Every call of the store port (``ChunkStore`` and the capabilities it unites)."""
    return sorted(
        name
        for name, _ in inspect.getmembers(ChunkStore, inspect.isfunction)
        if not name.startswith("_")
    )


def _guarded(name: str) -> Callable[..., Awaitable[Any]]:
    """The guard's ``name``: check the workspace the call names, then make it on the store.

    A member may make it, unless ``OWNER_ONLY`` names it; the workspace is the call's
    ``tenant_id`` unless ``TENANTS_OF`` says how to find it. A call with neither is refused
    when the guard is built (``TypeError`` at import), so a port method added later can
    never pass through unchecked.
    """
    signature = inspect.signature(getattr(ChunkStore, name))
    tenants = TENANTS_OF.get(name)
    if tenants is None and "tenant_id" not in signature.parameters:
        raise TypeError(f"WorkspaceGuard cannot tell which workspace the port's {name} names")
    owner_only = OWNER_ONLY.get(name)

    async def call(self: WorkspaceGuard, *args: Any, **kwargs: Any) -> Any:
        arguments = signature.bind(self, *args, **kwargs).arguments
        if owner_only is not None:
            await self._check_owner(arguments["tenant_id"], owner_only)
        else:
            await self._check_all(
                tenants(arguments) if tenants is not None else [arguments["tenant_id"]]
            )
        return await getattr(self._inner, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``ChunkStore.{name}`` for {'the owner' if owner_only else 'a member'} only."
    return call


for _name in port_calls():
    if _name not in vars(WorkspaceGuard):
        setattr(WorkspaceGuard, _name, _guarded(_name))


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


class WorkspaceFrame(BaseModel):
    """What the frame of every screen reads of the store on every rerun (``frame``): the
    workspaces the person may open and, for the one asked about when it is among them, who
    may open it and whether it holds a passage."""

    model_config = ConfigDict(frozen=True)

    names: list[str]
    #: The workspace asked about.
    asked: str
    #: ``workspace_access(asked)``; None when ``asked`` is not among ``names``.
    access: WorkspaceAccess | None
    #: ``is_empty(workspace=asked)``; None when ``asked`` is not among ``names``.
    empty: bool | None


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
        guard = WorkspaceGuard(self._store, email)
        # The guard's checked calls are set on it at import, so mypy cannot see them.
        view._store = cast(ChunkStore, guard)
        view.user = guard.email
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
        """Owner and members of a workspace; ``NoAccess`` if they may not open it.

        One call to the store's loop, the workspace looked up on it: the sidebar asks on every
        rerun of every screen, and each call is a hop to the loop's thread and back.
        """
        found = self._call(self._found_workspace(name))
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

    def frame(self, name: str) -> WorkspaceFrame:
        """``list_workspaces``, and for ``name`` (when among them) ``workspace_access`` and
        ``is_empty``, in one call to the store's loop: the frame asks all three on every rerun
        of every screen, and each call is a hop to the loop's thread and back (~0.3 ms on
        Cranfield in memory, bench/bench_rerun.py, issue 50). Nothing is kept between calls:
        a workspace another person created, deleted or shared shows on the next rerun, as it
        did with three calls. Keeping the answers per session until a generation changed was
        rejected: a workspace's generation does not move when another's is made or deleted.
        """
        workspaces, count = self._call(self._frame(name))
        names = [w.name for w in workspaces]
        found = next((w for w in workspaces if w.name == name), None)
        if found is None or count is None:
            return WorkspaceFrame(names=names, asked=name, access=None, empty=None)
        access = WorkspaceAccess(
            name=found.name,
            owner=found.owner,
            members=found.members,
            you_own=self.user is not None and found.owner == self.user,
        )
        return WorkspaceFrame(names=names, asked=name, access=access, empty=count == 0)

    async def _frame(self, name: str) -> tuple[list[Workspace], int | None]:
        workspaces = await self._store.list_workspaces()
        found = next((w for w in workspaces if w.name == name), None)
        if found is None:
            return workspaces, None
        try:
            return workspaces, await self._store.passage_count(found.tenant_id)
        except NoAccess:  # taken away meanwhile: the frame asks again, call by call
            return workspaces, None

    async def _found_workspace(self, name: str) -> Workspace | None:
        return await self._store.get_workspace(await tenant_of(self._store, name))

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
