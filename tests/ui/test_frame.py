"""Every screen runs inside app.py's frame: the sidebar, the workspace selector, the store.

The screens live in ``pages/``, the folder name Streamlit's legacy multipage mode
auto-discovers. Until ``st.navigation`` has run once, Streamlit runs a requested
page file bare (no app.py, so no sidebar and no workspace); AppTest resets that
state before every run. These tests open each screen the two ways a user does
(navigation after the entry page, and a rerun on the screen itself) and look for
the frame every time.
"""

from __future__ import annotations

import ast
import uuid
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pages.common import get_service

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
#: Modules of pages/ that are not screens.
HELPERS = {"__init__.py", "common.py", "narrowing.py", "losses.py", "search_cards.py"}

pytestmark = pytest.mark.usefixtures("in_memory_store")
#: Keep AppTest's own pages manager: every run starts like a server's first request.
LEGACY_DISCOVERY = True


def screens() -> list[str]:
    return sorted(f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py") if p.name not in HELPERS)


def registered() -> list[str]:
    """The file of every ``st.Page`` (``screen_page``) app.py registers, read from its source."""
    found = []
    for node in ast.walk(ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and (
                (isinstance(node.func, ast.Attribute) and node.func.attr == "Page")
                or (isinstance(node.func, ast.Name) and node.func.id == "screen_page")
            )
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.append(str(node.args[0].value))
    return sorted(found)


def assert_framed(at: AppTest, workspace: str) -> None:
    assert not at.exception, [e.value for e in at.exception]
    selectors = [s for s in at.sidebar.selectbox if s.label == "Workspace"]
    assert len(selectors) == 1, "the page ran without app.py's sidebar"
    assert selectors[0].value == workspace
    assert any(c.value.startswith("Store: ") for c in at.sidebar.caption)


def test_every_screen_file_is_registered_with_the_navigation() -> None:
    assert registered() == screens()


@pytest.mark.parametrize("path", screens())
def test_every_screen_has_the_sidebar_and_the_workspace_selector(path: str) -> None:
    workspace = f"frame-{uuid.uuid4().hex[:8]}"
    get_service().create_workspace(workspace)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    at.run()
    assert_framed(at, workspace)
    at.switch_page(path).run()
    assert_framed(at, workspace)
    # A rerun on the screen itself (any widget change does this) keeps the frame too.
    at.run()
    assert_framed(at, workspace)


def test_the_navigation_is_set_before_the_store_is_opened(monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening the store can take seconds (the embedded server starts): until st.navigation
    runs, Streamlit shows its legacy menu of every file in pages/ (app, common, compare …)."""
    from streamlit.runtime.pages_manager import PagesManager

    import pages.common

    seen: list[bool | None] = []
    opened = pages.common.current_service

    def spy(*args: object) -> object:
        seen.append(PagesManager.uses_pages_directory)
        return opened(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(pages.common, "current_service", spy)
    AppTest.from_file(APP, default_timeout=60).run()
    assert seen and seen[0] is False, "the store was opened before st.navigation ran"


def test_the_url_names_the_workspace_and_is_written_only_when_it_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each write sends the browser the whole query string: a rerun that left the workspace as
    it was (Corpus writes nothing of its own) sends none; choosing another one writes it."""
    from streamlit.runtime.state.query_params import QueryParams

    first, second = (f"url-{uuid.uuid4().hex[:8]}" for _ in range(2))
    for name in (first, second):
        get_service().create_workspace(name)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = first
    at.run()
    at.switch_page("pages/corpus.py").run()
    sent: list[str | None] = []
    written = QueryParams._send_query_param_msg

    def spy(self: QueryParams) -> None:
        sent.append(self.get("ws"))
        written(self)

    monkeypatch.setattr(QueryParams, "_send_query_param_msg", spy)
    at.run()
    assert_framed(at, first)
    assert sent == []
    at.selectbox(key="workspace").set_value(second).run()
    assert_framed(at, second)
    assert sent == [second]
    assert at.query_params["ws"] == second
