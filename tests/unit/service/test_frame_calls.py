"""What every rerun of every screen asks the service (the sidebar's workspace access, the
screen's "is it empty?") is one call to the store's loop each (issue 50 item 3): each call is a
hop to the loop's thread and back, and the workspace's lookup rode a hop of its own."""

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
