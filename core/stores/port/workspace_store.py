"""Workspaces: the record (name, profile, owner, members), how e-mails are kept, the
``WorkspaceStore`` capability of the port, and ``open_workspace``, the one way a name becomes
a workspace for every caller.

One module for the record and the calls on it: the rules (an address is ASCII-folded only, a
name re-created after a deletion is a new workspace) hold whichever store keeps it. Split in
two, the record's module and the protocol's imported each other.
"""

from __future__ import annotations

import uuid
from typing import Protocol, runtime_checkable
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.domain.chunks import workspace_tenant_id
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.stores.port.errors import NameTaken, WorkspaceGone
from core.stores.port.text import is_storable

#: Longest e-mail address kept as a workspace owner or member (RFC 5321's path limit).
MAX_EMAIL_CHARS = 254


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


@runtime_checkable
class WorkspaceStore(Protocol):
    """Workspaces: their records, owners and members, and their deletion."""

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

    async def list_workspaces(self) -> list[Workspace]:
        """Ordered by name, each with its owner and members."""
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

    async def delete_workspace(self, tenant_id: UUID) -> int:
        """Delete a workspace: its record, members, passages and entities, together or not at all.

        Returns passages deleted; an unknown tenant deletes nothing and returns 0. Its id is
        never used again: a write to it, waiting or later, raises ``WorkspaceGone``.
        """
        ...


async def tenant_of(store: WorkspaceStore, name: str) -> UUID:
    """The id of the workspace a person knows by ``name`` now.

    A name no workspace has gives the name's derived id (``workspace_tenant_id``): reads of
    it find nothing, and a write to it is refused if a deleted workspace had it.
    """
    found = await store.find_workspace(name)
    return workspace_tenant_id(name) if found is None else found.tenant_id


async def new_tenant_id(store: WorkspaceStore, name: str) -> UUID:
    """An id no workspace has had, for a new workspace called ``name``: the name's derived id
    when the store never used it (a database from before, whose ids were derived, and a
    fresh one agree), else a random one."""
    derived = workspace_tenant_id(name)
    if await store.get_workspace(derived) is None and not await store.retired(derived):
        return derived
    return uuid.uuid4()


async def open_workspace(
    store: WorkspaceStore, name: str, profile: Profile = DEFAULT_PROFILE
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
