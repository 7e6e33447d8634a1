"""Fixtures the AppTest modules share: the in-memory service and the loaded sample.

A module opts in with ``pytestmark = pytest.mark.usefixtures("in_memory_store")``;
the PostgreSQL AppTest module sets up its own store instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import app_test


class ServerPagesManager(PagesManager):
    """A pages manager as a running server has it after its first request.

    In a server, ``st.navigation`` turns Streamlit's legacy ``pages/`` discovery off for
    the whole process, once. AppTest resets that switch before EVERY run, so every run
    would start like a server's very first request (a screen run bare, then the rerun
    ``pages.common.screen`` asks for, which drops the click that started the run).
    tests/ui/test_frame.py keeps AppTest's own manager: that is where the bare run and
    its repair are tested.
    """

    def __init__(self, *args: object, **kwargs: object) -> None:
        PagesManager.uses_pages_directory = False
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def server_like_navigation(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every AppTest module but test_frame runs as a server past its first request."""
    if getattr(request.module, "LEGACY_DISCOVERY", False):
        yield
        return
    patch = pytest.MonkeyPatch()
    patch.setattr(app_test, "PagesManager", ServerPagesManager)
    yield
    patch.undo()


@pytest.fixture(scope="module")
def in_memory_store() -> Iterator[None]:
    """The AppTests run on the in-memory store, whatever the shell exports."""
    patch = pytest.MonkeyPatch()
    patch.delenv("LEXPLAIN_DATABASE_URL", raising=False)
    patch.setenv("LEXPLAIN_STORE", "memory")  # explicit: the default is the embedded server
    from pages.common import get_service

    get_service.clear()  # type: ignore[attr-defined]
    yield
    get_service().close()
    get_service.clear()  # type: ignore[attr-defined]
    patch.undo()


@pytest.fixture(scope="module")
def cranfield(in_memory_store: None) -> str:
    """A workspace holding the sample collection, loaded through the service once."""
    from pages.common import get_service

    name = f"cranfield-{uuid.uuid4().hex[:8]}"
    get_service().load_sample(workspace=name)
    return name
