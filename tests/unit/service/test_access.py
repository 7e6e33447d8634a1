"""Sign-in rules at the service: who lists, opens, changes and deletes which workspace.

Two people (Ada, Bob) share one in-memory service as two sessions share the server's; each
acts through ``for_user``. The store-level rules (owners and members kept, normalised) are in
the compliance suite; these are the decisions the pages only show.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from core.domain.chunks import workspace_tenant_id
from core.domain.entities import Entity, EntityCorrection
from core.domain.filters import PassageFilter
from core.domain.tokenize import Profile
from core.service import (
    NOT_FOUND_OR_NO_ACCESS,
    LexplainService,
    NoAccess,
    NotOwner,
    WorkspaceGuard,
    signed_in_email,
)
from core.settings import Settings
from core.stores.memory import InMemoryChunkStore
from core.stores.port import ChunkStore, Workspace, member_email
from tests.stores.compliance import make_chunk
from tests.stores.compliance_judging import judgment, query_set, saved_run
from tests.unit.service.rights_table import owner_only_calls, rights_rows

ADA, BOB = "ada@example.org", "bob@example.org"
FILE = ("wings.txt", b"Swept wings delay the onset of compressibility drag at high speed.")


@pytest.fixture
def service() -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(Settings(store="memory"))
    yield svc
    svc.close()


def test_a_signed_in_person_lists_only_the_workspaces_they_created_and_owns_them(
    service: LexplainService,
) -> None:
    ada, bob = service.for_user(ADA), service.for_user(BOB)
    assert ada.list_workspaces() == []  # the ownerless default is nobody's
    assert ada.create_workspace("ada-notes") == "ada-notes"
    bob.create_workspace("bob-notes")
    assert ada.list_workspaces() == ["ada-notes"]
    assert bob.list_workspaces() == ["bob-notes"]
    access = ada.workspace_access("ada-notes")
    assert (access.owner, access.members, access.you_own) == (ADA, (), True)
    assert service.list_workspaces() == ["ada-notes", "bob-notes", "default"]


def test_someone_elses_workspace_cannot_be_read_written_or_deleted(
    service: LexplainService,
) -> None:
    ada, bob = service.for_user(ADA), service.for_user(BOB)
    ada.create_workspace("ada-notes")
    ada.upload_files([FILE], workspace="ada-notes")
    for action in (
        lambda: bob.search("wings", workspace="ada-notes"),
        lambda: bob.search(
            "wings", workspace="ada-notes", within=PassageFilter(sources=("wings.txt",))
        ),
        lambda: bob.truncation(
            "wings", workspace="ada-notes", within=PassageFilter(sources=("wings.txt",))
        ),
        lambda: bob.list_sources(workspace="ada-notes"),
        lambda: bob.corpus(workspace="ada-notes"),
        lambda: bob.upload_files([FILE], workspace="ada-notes"),
        lambda: bob.delete_source("wings.txt", workspace="ada-notes"),
        lambda: bob.delete_workspace("ada-notes"),
        lambda: bob.add_member("ada-notes", BOB),
        lambda: bob.workspace_access("ada-notes"),
        lambda: bob.change_profile("ada-notes", Profile.ENGLISH),
    ):
        with pytest.raises(NoAccess, match=NOT_FOUND_OR_NO_ACCESS):
            action()
    assert [s.source_id for s in ada.list_sources(workspace="ada-notes")] == ["wings.txt"]
    assert ada.workspace_profile("ada-notes") is Profile.PLAIN


def test_a_link_to_someone_elses_workspace_reads_like_one_that_does_not_exist(
    service: LexplainService,
) -> None:
    ada, bob = service.for_user(ADA), service.for_user(BOB)
    ada.create_workspace("ada-notes")
    theirs, missing = bob.linked_workspace("ada-notes"), bob.linked_workspace("no-such")
    assert (theirs.outcome, missing.outcome) == (NOT_FOUND_OR_NO_ACCESS, NOT_FOUND_OR_NO_ACCESS)
    assert ada.linked_workspace(" ada-notes ").outcome == "open"
    assert service.linked_workspace("no-such").outcome == "create"  # no sign-in: offer it


def test_a_member_opens_searches_and_uploads_but_only_the_owner_manages_and_deletes(
    service: LexplainService,
) -> None:
    ada, bob = service.for_user(ADA), service.for_user(BOB)
    ada.create_workspace("shared")
    ada.upload_files([FILE], workspace="shared")
    assert ada.add_member("shared", " Bob@Example.org ") == BOB
    with pytest.raises(ValueError, match="can already open"):
        ada.add_member("shared", BOB)
    bob = service.for_user(BOB)  # the next script run
    assert bob.list_workspaces() == ["shared"]
    assert bob.linked_workspace("shared").outcome == "open"
    assert [p.chunk.source_id for p in bob.search("wings", workspace="shared").passages] == [
        "wings.txt"
    ]
    bob.upload_files([("more.txt", b"Delta wings at high speed.")], workspace="shared")
    access = bob.workspace_access("shared")
    assert (access.owner, access.members, access.you_own) == (ADA, (BOB,), False)
    with pytest.raises(NotOwner, match="owner"):
        bob.add_member("shared", "eve@example.org")
    with pytest.raises(NotOwner, match="owner"):
        bob.delete_workspace("shared")
    assert ada.remove_member("shared", BOB) is True
    bob = service.for_user(BOB)
    assert bob.list_workspaces() == []
    with pytest.raises(NoAccess):
        bob.search("wings", workspace="shared")
    assert ada.delete_workspace("shared") == 2
    assert ada.list_workspaces() == []


def test_a_name_someone_else_holds_is_refused_and_stays_theirs(service: LexplainService) -> None:
    ada, bob = service.for_user(ADA), service.for_user(BOB)
    ada.create_workspace("notes")
    with pytest.raises(ValueError, match="taken"):
        bob.create_workspace("notes")
    with pytest.raises(ValueError, match="taken"):
        bob.create_workspace("default")  # made without sign-in: nobody's, not claimable
    assert ada.workspace_access("notes").owner == ADA
    assert bob.list_workspaces() == []


def test_a_signed_in_view_shares_the_store_and_closing_it_keeps_the_store_open(
    service: LexplainService,
) -> None:
    ada = service.for_user(ADA)
    ada.create_workspace("kept")
    ada.close()
    assert "kept" in service.list_workspaces()
    assert service.for_user(None) is service


def test_without_sign_in_every_workspace_is_visible_and_the_default_is_kept(
    service: LexplainService,
) -> None:
    service.for_user(ADA).create_workspace("ada-notes")
    service.create_workspace("local")
    assert service.list_workspaces() == ["ada-notes", "default", "local"]
    assert service.workspace_access("local").owner is None
    service.delete_workspace("default")
    assert "default" in service.list_workspaces()


def call_values(tenant: uuid.UUID) -> dict[str, Any]:
    """An argument of every name a port call takes, all naming ``tenant``."""
    theirs = tenant
    chunk = make_chunk(theirs, "s", "ocean waves")
    return {
        "tenant_id": theirs,
        "chunks": [chunk],
        "source_id": "s",
        "source_ids": ["s"],
        "sources": [("s", [chunk])],
        "entities": [Entity(name="Ada Lovelace")],
        "chunk_id": chunk.id,
        "chunk_ids": [chunk.id],
        "entity_id": uuid.uuid4(),
        "entity_ids": [uuid.uuid4()],
        "terms": ["ocean"],
        "limit": 10,
        "prefix": "oc",
        "profile": Profile.ENGLISH,
        "email": BOB,
        "workspace": Workspace(tenant_id=theirs, name="renamed"),
        "query_set": query_set(theirs),
        "name": "core",
        "judgments": [judgment(theirs)],
        "queries": ["wing"],
        "query": "wing",
        "rater": BOB,
        "run": saved_run(theirs),
        "run_id": uuid.uuid4(),
        "within": PassageFilter(sources=("s",)),
        "correction": EntityCorrection(entity_id=uuid.uuid4(), hidden=True),
    }


async def test_the_guard_implements_the_whole_port_and_refuses_every_call_on_a_foreign_tenant() -> (
    None
):
    inner = InMemoryChunkStore()
    theirs = workspace_tenant_id("theirs")
    await inner.upsert_workspace(Workspace(tenant_id=theirs, name="theirs", owner=ADA))
    guard = WorkspaceGuard(inner, BOB)
    assert isinstance(guard, ChunkStore)
    values = call_values(theirs)
    checked = []
    for name, _ in inspect.getmembers(ChunkStore, inspect.isfunction):
        if name.startswith("_") or name in {
            "close",
            "list_workspaces",
            "get_workspace",
            "retired",
            "find_workspace",
        }:
            continue
        parameters = inspect.signature(getattr(ChunkStore, name)).parameters
        arguments = {p: values[p] for p in parameters if p != "self" and p in values}
        with pytest.raises(NoAccess):
            await getattr(guard, name)(**arguments)
        checked.append(name)
    assert len(checked) >= 31
    assert await guard.list_workspaces() == [] and await guard.get_workspace(theirs) is None
    assert await inner.get_workspace(theirs) == Workspace(
        tenant_id=theirs, name="theirs", owner=ADA
    )
    assert (await inner.corpus_summary(theirs)).passages == 0


#: What only a workspace's owner may do at the store, by the port's call: docs/sign-in.md's
#: rights table, read (``test_rights_table.py`` holds the table to ``OWNER_ONLY``).
OWNER_ONLY_CALLS = owner_only_calls()


async def test_a_member_may_use_the_workspace_but_only_its_owner_may_empty_share_or_delete_it() -> (
    None
):
    inner = InMemoryChunkStore()
    shared = workspace_tenant_id("shared")
    await inner.upsert_workspace(
        Workspace(tenant_id=shared, name="shared", owner=ADA, members=(BOB,))
    )
    bob = WorkspaceGuard(inner, BOB)
    await bob.upsert_many([make_chunk(shared, "s", "ocean waves")])
    assert (await bob.corpus_summary(shared)).passages == 1
    for name in sorted(OWNER_ONLY_CALLS):
        arguments: dict[str, Any] = {"tenant_id": shared}
        if "email" in inspect.signature(getattr(ChunkStore, name)).parameters:
            arguments["email"] = "carol@example.org"
        with pytest.raises(NotOwner, match="only the workspace's owner"):
            await getattr(bob, name)(**arguments)
    assert await inner.get_workspace(shared) == Workspace(
        tenant_id=shared, name="shared", owner=ADA, members=(BOB,)
    )
    assert (await inner.corpus_summary(shared)).passages == 1


async def test_a_member_may_make_every_call_the_rights_table_says_yes_to() -> None:
    inner = InMemoryChunkStore()
    shared = workspace_tenant_id("shared")
    await inner.upsert_workspace(
        Workspace(tenant_id=shared, name="shared", owner=ADA, members=(BOB,))
    )
    bob = WorkspaceGuard(inner, BOB)
    values = call_values(shared)
    allowed = [call for _, _, member, calls in rights_rows() if member == "yes" for call in calls]
    for name in allowed:
        parameters = inspect.signature(getattr(ChunkStore, name)).parameters
        arguments = {p: values[p] for p in parameters if p != "self" and p in values}
        try:
            await getattr(bob, name)(**arguments)
        except (NoAccess, NotOwner) as exc:
            raise AssertionError(f"a member was refused {name}: {exc}") from None
    assert len(allowed) >= 30


async def test_of_two_people_creating_one_name_at_once_the_second_is_refused() -> None:
    tenant = workspace_tenant_id("contested")

    class Racing(InMemoryChunkStore):
        """Ada creates the name between Bob's look-up and Bob's write."""

        raced = False

        async def get_workspace(self, tenant_id: uuid.UUID) -> Workspace | None:
            if not self.raced:
                self.raced = True
                await self.upsert_workspace(
                    Workspace(tenant_id=tenant, name="contested", owner=ADA)
                )
                return None
            return await super().get_workspace(tenant_id)

    inner = Racing()
    with pytest.raises(NoAccess):
        await WorkspaceGuard(inner, BOB).upsert_workspace(
            Workspace(tenant_id=tenant, name="contested")
        )
    found = await inner.get_workspace(tenant)
    assert found is not None and (found.owner, found.members) == (ADA, ())


def test_a_signed_in_views_searches_count_as_pending_for_every_sessions_long_work(
    service: LexplainService,
) -> None:
    """The views share the runner's count of interactive calls, so long work of any session
    gives way to a search of any other (core.service.runner)."""
    ada = service.for_user(ADA)
    ada.create_workspace("counted")
    release = threading.Event()
    seen: list[int] = []

    async def blocked() -> list[str]:
        seen.append(service._interactive.count)
        await asyncio.to_thread(release.wait, 10)
        return []

    worker = threading.Thread(target=lambda: ada._call(blocked()))
    worker.start()
    while not seen:
        time.sleep(0.01)
    release.set()
    worker.join(10)
    assert seen == [1] and service._interactive.count == 0


@pytest.mark.parametrize(
    ("claims", "email"),
    [
        ({"email": " Ada@Example.org ", "email_verified": True}, ADA),
        ({"email": ADA, "email_verified": True}, ADA),
        ({"email": ADA, "email_verified": "true"}, ADA),
        ({"email": ADA, "email_verified": False}, None),
        ({"email": ADA, "email_verified": "false"}, None),
        ({"email": ADA, "email_verified": "False"}, None),
        ({"email": ADA, "email_verified": "0"}, None),
        ({"email": ADA, "email_verified": "no"}, None),
        ({"email": ADA, "email_verified": "TRUE"}, None),
        ({"email": ADA, "email_verified": 1}, None),
        ({"email": ADA, "email_verified": None}, None),
        ({"email": ADA}, None),
        ({"sub": "ada", "email_verified": True}, None),
        ({"email": "not an address", "email_verified": True}, None),
    ],
)
def test_only_an_address_the_provider_says_it_verified_opens_workspaces(
    claims: dict[str, object], email: str | None
) -> None:
    assert signed_in_email(claims) == email


KELVIN_KATE = "\u212aate@example.org"  # KELVIN SIGN, which str.lower() turns into "k"


def test_an_address_is_lower_cased_in_ascii_only_never_folded_into_another() -> None:
    assert signed_in_email({"email": KELVIN_KATE, "email_verified": True}) == KELVIN_KATE
    assert member_email(" KATE@Example.ORG ") == "kate@example.org"
    assert member_email(KELVIN_KATE) != "kate@example.org"
    kates = Workspace(tenant_id=uuid.uuid4(), name="k", owner="kate@example.org")
    assert kates.admits("Kate@example.org") and not kates.admits(KELVIN_KATE)


def test_a_kelvin_sign_address_does_not_open_kates_workspace(service: LexplainService) -> None:
    kate = service.for_user("kate@example.org")
    kate.create_workspace("kate-notes")
    impostor = service.for_user(KELVIN_KATE)
    assert impostor.list_workspaces() == []
    with pytest.raises(NoAccess):
        impostor.search("wings", workspace="kate-notes")


SECRET_LOOK_ALIKES = [
    "secret",
    "SECRET",
    "\u0405ecret",  # CYRILLIC CAPITAL LETTER DZE
    "S\u0435cret",  # CYRILLIC SMALL LETTER IE
    "Sec\u0433et",  # CYRILLIC SMALL LETTER GHE
]


@pytest.mark.parametrize("look_alike", SECRET_LOOK_ALIKES)
def test_a_name_that_looks_like_someone_elses_workspace_is_taken(
    service: LexplainService, look_alike: str
) -> None:
    alice, bob = service.for_user("alice@example.org"), service.for_user(BOB)
    alice.create_workspace("Secret")
    with pytest.raises(ValueError, match="taken"):
        bob.create_workspace(look_alike)
    assert bob.list_workspaces() == []
    assert service.list_workspaces() == ["Secret", "default"]


@pytest.mark.parametrize("look_alike", SECRET_LOOK_ALIKES)
def test_without_sign_in_a_look_alike_name_is_taken_and_names_the_one_it_copies(
    service: LexplainService, look_alike: str
) -> None:
    service.create_workspace("Secret")
    with pytest.raises(ValueError, match="taken: it looks the same as “Secret”"):
        service.create_workspace(look_alike)
    assert service.create_workspace("Secret") == "Secret"  # the name itself opens it
    assert service.list_workspaces() == ["Secret", "default"]


def test_a_decomposed_accent_is_the_same_workspace_as_the_composed_one(
    service: LexplainService,
) -> None:
    alice, bob = service.for_user("alice@example.org"), service.for_user(BOB)
    alice.create_workspace("Caf\u00e9")
    with pytest.raises(ValueError, match="taken"):
        bob.create_workspace("Cafe\u0301")
    assert bob.list_workspaces() == []


@pytest.mark.parametrize(
    ("name", "named"),
    [
        ("Secret\u200b", "U+200B (ZERO WIDTH SPACE)"),
        ("Se\u200ccret", "U+200C (ZERO WIDTH NON-JOINER)"),
        ("\u202eSecret", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("Secret\u2069", "U+2069 (POP DIRECTIONAL ISOLATE)"),
    ],
)
def test_a_workspace_name_with_an_invisible_character_is_refused_naming_it(
    service: LexplainService, name: str, named: str
) -> None:
    for who in (service, service.for_user(ADA)):
        with pytest.raises(ValueError, match=re.escape(named)):
            who.create_workspace(name)
        with pytest.raises(ValueError, match="invisible"):
            who.linked_workspace(name)
    assert service.list_workspaces() == ["default"]


async def test_a_store_refuses_a_workspace_name_with_a_format_character() -> None:
    store = InMemoryChunkStore()
    with pytest.raises(ValueError, match="U\\+200B"):
        await store.upsert_workspace(Workspace(tenant_id=uuid.uuid4(), name="Secret\u200b"))
    assert await store.list_workspaces() == []


def test_a_link_to_a_look_alike_opens_the_workspace_it_looks_like_only_for_who_may(
    service: LexplainService,
) -> None:
    alice = service.for_user("alice@example.org")
    alice.create_workspace("Secret")
    assert alice.linked_workspace("\u0405ecret").model_dump() == {
        "name": "Secret",
        "outcome": "open",
    }
    assert service.linked_workspace("secret").name == "Secret"  # without sign-in: all visible
    bob = service.for_user(BOB)
    assert bob.linked_workspace("\u0405ecret").outcome == NOT_FOUND_OR_NO_ACCESS


def test_a_stranger_who_creates_a_deleted_name_through_the_service_sees_nothing_of_it(
    service: LexplainService,
) -> None:
    """Issue 21's three people, signed in: Alice owns "Secret", Bob (a member) uploads,
    Alice deletes it, Carol creates "Secret" and owns a new, empty workspace."""
    alice, bob = service.for_user(ADA), service.for_user(BOB)
    carol = service.for_user("carol@example.org")
    alice.create_workspace("Secret")
    alice.add_member("Secret", BOB)
    bob.upload_files([FILE], workspace="Secret")
    assert [s.source_id for s in alice.list_sources(workspace="Secret")] == ["wings.txt"]
    alice.delete_workspace("Secret")
    assert carol.create_workspace("Secret") == "Secret"
    assert carol.workspace_access("Secret").you_own
    assert carol.list_sources(workspace="Secret") == []
    assert carol.is_empty(workspace="Secret")
    with pytest.raises(NoAccess):  # Bob's name now means Carol's workspace: not his
        bob.upload_files([FILE], workspace="Secret")
    assert carol.list_sources(workspace="Secret") == []
