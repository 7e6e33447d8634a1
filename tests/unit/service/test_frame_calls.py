"""What every rerun of every screen asks the service (the sidebar's workspace access, the
screen's "is it empty?") is one call to the store's loop each (issue 50 item 3): each call is a
hop to the loop's thread and back, and the workspace's lookup rode a hop of its own. The frame
asks all of them (and the workspaces) at once (``frame``): one hop, nothing kept between calls."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from core.service import LexplainService
from core.stores.memory import InMemoryChunkStore

FILE = ("wings.txt", b"Swept wings delay the onset of compressibility drag at high speed.")


@pytest.fixture
def service() -> LexplainService:
    store = InMemoryChunkStore()

    async def opened() -> InMemoryChunkStore:
        return store

    service = LexplainService(opened)
    service.upload_files([FILE], workspace="wings")
    yield service  # type: ignore[misc]
    service.close()


def hops(service: LexplainService, call: Callable[[], object]) -> int:
    counted = 0
    submit = service._submit

    def counting(coro):  # type: ignore[no-untyped-def]
        nonlocal counted
        counted += 1
        return submit(coro)

    service._submit = counting  # type: ignore[method-assign]
    try:
        call()
    finally:
        del service._submit
    return counted


def test_is_empty_is_one_call_to_the_stores_loop(service: LexplainService) -> None:
    assert hops(service, lambda: service.is_empty(workspace="wings")) == 1
    assert service.is_empty(workspace="wings") is False
    assert service.is_empty(workspace="nothing here") is True


def test_workspace_access_is_one_call_to_the_stores_loop(service: LexplainService) -> None:
    assert hops(service, lambda: service.workspace_access("wings")) == 1
    assert service.workspace_access("wings").name == "wings"


def test_the_frame_is_one_call_to_the_stores_loop_answering_as_its_three_calls(
    service: LexplainService,
) -> None:
    service.create_workspace("nothing in it")
    assert hops(service, lambda: service.frame("wings")) == 1
    for name in ("wings", "nothing in it"):
        frame = service.frame(name)
        assert frame.names == service.list_workspaces()
        assert frame.asked == name
        assert frame.access == service.workspace_access(name)
        assert frame.empty is service.is_empty(workspace=name)
    assert service.frame("wings").empty is False
    assert service.frame("nothing in it").empty is True


def test_the_frame_says_nothing_of_a_workspace_that_is_not_listed(
    service: LexplainService,
) -> None:
    frame = service.frame("never made")
    assert frame.names == service.list_workspaces()
    assert "never made" not in frame.names
    assert (frame.access, frame.empty) == (None, None)


def test_the_frame_keeps_nothing_a_workspace_made_or_filled_meanwhile_shows_at_once(
    service: LexplainService,
) -> None:
    """Another person's session, on the same service: the next frame sees what they did."""
    assert "later" not in service.frame("wings").names
    service.create_workspace("later")
    assert service.frame("later").empty is True
    service.upload_files([FILE], workspace="later")
    assert service.frame("later").empty is False
    service.delete_workspace("later")
    assert "later" not in service.frame("wings").names


def test_a_signed_in_frame_lists_only_their_workspaces_and_says_nothing_of_anyone_elses(
    service: LexplainService,
) -> None:
    ada, bob = service.for_user("ada@example.org"), service.for_user("bob@example.org")
    ada.create_workspace("ada-notes")
    frame = ada.frame("ada-notes")
    assert frame.names == ["ada-notes"]
    assert frame.access is not None and frame.access.you_own
    assert frame.access == ada.workspace_access("ada-notes")
    assert frame.empty is True
    theirs = bob.frame("ada-notes")
    assert theirs.names == [] and (theirs.access, theirs.empty) == (None, None)
    ada.add_member("ada-notes", "bob@example.org")
    shared = bob.frame("ada-notes")
    assert shared.names == ["ada-notes"]
    assert shared.access is not None and not shared.access.you_own
