"""Fixtures the AppTest modules share: the in-memory service and the loaded sample.

A module opts in with ``pytestmark = pytest.mark.usefixtures("in_memory_store")``;
the PostgreSQL AppTest module sets up its own store instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def in_memory_store() -> Iterator[None]:
    """The AppTests run on the in-memory store, whatever the shell exports."""
    patch = pytest.MonkeyPatch()
    patch.delenv("LEXPLAIN_DATABASE_URL", raising=False)
    patch.setenv("LEXPLAIN_STORE", "memory")  # explicit: the default is the embedded server
    from app_pages.common import get_service

    get_service.clear()  # type: ignore[attr-defined]
    yield
    get_service().close()
    get_service.clear()  # type: ignore[attr-defined]
    patch.undo()


@pytest.fixture(scope="module")
def cranfield(in_memory_store: None) -> str:
    """A workspace holding the sample collection, loaded through the service once."""
    from app_pages.common import get_service

    name = f"cranfield-{uuid.uuid4().hex[:8]}"
    get_service().load_sample(workspace=name)
    return name
