"""An uncached search asks the store for its workspace once (issue 50 item 6): the tenant and
the profile come from one ``find_workspace``, not three."""

from __future__ import annotations

from core.service import LexplainService
from core.stores.memory import InMemoryChunkStore
from core.stores.port import Workspace

FILE = ("wings.txt", b"Swept wings delay the onset of compressibility drag at high speed.")


class Counting(InMemoryChunkStore):
    """The in-memory store, counting how often a workspace is looked up by name."""

    lookups = 0

    async def find_workspace(self, name: str) -> Workspace | None:
        self.lookups += 1
        return await super().find_workspace(name)


def test_an_uncached_search_looks_its_workspace_up_once() -> None:
    store = Counting()

    async def opened() -> Counting:
        return store

    service = LexplainService(opened)
    try:
        service.upload_files([FILE], workspace="wings")
        before = store.lookups
        result = service.search("swept wings", 10, 1000, workspace="wings")
        assert result.passages, "the search found nothing: the count would mean nothing"
        assert store.lookups - before == 1
    finally:
        service.close()
