"""A Search rerun builds only what the analyst sees: closed controls cost nothing (issue 50).

A rerun of Search cost the server 15x its search on Cranfield (bench/bench_rerun.py), a third
of it the "Narrow to" controls inside their closed expander: every source listed in natural
order, every entity, and both sent to the page as multiselect options on every rerun. These
tests hold that a closed expander reads and builds none of it, and that the filter it holds
still narrows the results, closed and opened again.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.presentation import PASSAGE_STYLE
from core.service import SAMPLE_CORPUS, LexplainService
from pages.common import get_service
from pages.narrowing import ENTITIES_KEY, OPEN_KEY, SOURCES_KEY
from tests.fixtures.screens import cards

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")
QUERY = "aeroelastic models of heated aircraft"

pytestmark = pytest.mark.usefixtures("in_memory_store")


def counting(name: str, calls: list[str]) -> Callable[..., object]:
    """The service's method ``name``, noting each call in ``calls``."""
    original = getattr(LexplainService, name)

    def counted(self: LexplainService, *, workspace: str) -> object:
        calls.append(name)
        return original(self, workspace=workspace)

    return counted


@pytest.fixture
def lists_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the service's list calls made while a test runs, in order."""
    calls: list[str] = []
    for name in ("list_sources", "list_entities"):
        monkeypatch.setattr(LexplainService, name, counting(name, calls))
    return calls


def search(workspace: str, **params: str | list[str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def sources_shown(at: AppTest) -> set[str]:
    """The sources of the results on screen (each result's header names its source)."""
    return {
        card.split(" source ", 1)[1].split(" · ", 1)[0] for card in cards(at) if " source " in card
    }


def controls(at: AppTest) -> list[object]:
    return [w for w in at.multiselect if w.key in (SOURCES_KEY, ENTITIES_KEY)]


def test_a_search_with_the_narrowing_closed_lists_no_source_and_builds_no_control(
    cranfield: str, lists_read: list[str]
) -> None:
    at = search(cranfield, q=QUERY)
    assert len(sources_shown(at)) > 1
    at.text_input(key="q").input("heated aircraft").run()
    assert not at.exception
    assert at.session_state[OPEN_KEY] is False
    assert controls(at) == []
    assert lists_read == []


def test_opening_the_narrowing_lists_the_sources_and_entities_to_choose_from(
    cranfield: str, lists_read: list[str]
) -> None:
    at = search(cranfield, q=QUERY)
    at.session_state[OPEN_KEY] = True
    at.run()
    assert not at.exception
    assert len(at.multiselect(key=SOURCES_KEY).options) == len(
        get_service().list_sources(workspace=cranfield)
    )
    assert sorted(set(lists_read)) == ["list_entities", "list_sources"]


def test_a_filter_closed_away_still_narrows_and_is_there_when_opened_again(
    cranfield: str, lists_read: list[str]
) -> None:
    at = search(cranfield, q=QUERY, src=["184", "486"])
    assert at.multiselect(key=SOURCES_KEY).value == ["184", "486"]  # a link's filter: open
    narrowed = sources_shown(at)
    assert narrowed and narrowed <= {"184", "486"}
    at.session_state[OPEN_KEY] = False
    at.run()
    lists_read.clear()
    at.text_input(key="q").input("aeroelastic models").run()
    assert not at.exception
    assert controls(at) == []
    assert lists_read == []
    assert sources_shown(at) and sources_shown(at) <= {"184", "486"}
    assert at.query_params["src"] == ["184", "486"]  # the link still reproduces it
    at.session_state[OPEN_KEY] = True
    at.run()
    assert at.multiselect(key=SOURCES_KEY).value == ["184", "486"]


def test_a_closed_filter_of_sources_another_workspace_lacks_is_dropped_on_switching(
    cranfield: str,
) -> None:
    other = "ui-narrow-other"
    service = get_service()
    service.create_workspace(other)
    service.upload_files(
        [("a.txt", b"Heated aircraft models were tested for flutter.")], workspace=other
    )
    at = search(cranfield, q="heated aircraft", src="184")
    at.session_state[OPEN_KEY] = False
    at.run()
    assert sources_shown(at) == {"184"}
    at.selectbox(key="workspace").set_value(other).run()
    assert not at.exception
    assert sources_shown(at) == {"a.txt"}
    assert not any(c.value.startswith("Narrowed to") for c in at.caption)


def test_sources_chosen_in_the_open_controls_narrow_each_rerun_until_cleared(
    cranfield: str,
) -> None:
    at = search(cranfield, q=QUERY)
    at.session_state[OPEN_KEY] = True
    at.run()
    at.multiselect(key=SOURCES_KEY).set_value(["184"]).run()
    assert sources_shown(at) == {"184"}
    at.multiselect(key=SOURCES_KEY).set_value(["184", "486"]).run()
    assert sources_shown(at) == {"184", "486"}
    at.text_input(key="q").input("aeroelastic models").run()
    assert sources_shown(at) <= {"184", "486"}
    at.multiselect(key=SOURCES_KEY).set_value([]).run()
    assert not at.exception
    assert len(sources_shown(at)) > 2


def test_a_rerun_asks_for_the_service_once_the_screen_taking_the_frames(
    cranfield: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """app.py gets the person's service and hands it to the screen it runs (pages.common
    ``framed``): asking again read the secrets and the user's claims twice more per rerun."""
    import pages.common

    asked: list[object] = []
    original = pages.common.current_service

    def spy(*args: bool | None) -> LexplainService:
        asked.append(args)
        return original(*args)

    at = search(cranfield)
    monkeypatch.setattr(pages.common, "current_service", spy)
    at.text_input(key="q").input(QUERY).run()
    assert not at.exception, [e.value for e in at.exception]
    assert cards(at), "no result: nothing ran"
    assert len(asked) == 1


def test_a_rerun_reads_the_frame_in_one_call_not_three(
    cranfield: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workspaces, the selected one's access and whether it is empty: one hop to the
    store's loop (``LexplainService.frame``), not one per question."""
    asked: list[str] = []
    for name in ("list_workspaces", "workspace_access", "is_empty", "frame"):
        original = getattr(LexplainService, name)

        def spy(*args: object, _name: str = name, _original: object = original, **kw: object):  # type: ignore[no-untyped-def]
            asked.append(_name)
            return _original(*args, **kw)  # type: ignore[operator]

        monkeypatch.setattr(LexplainService, name, spy)
    at = search(cranfield)
    asked.clear()
    at.text_input(key="q").input(QUERY).run()
    assert not at.exception, [e.value for e in at.exception]
    assert cards(at), "no result: nothing ran"
    assert asked == ["frame"]


def test_what_another_session_did_to_the_workspaces_shows_on_the_next_rerun(
    in_memory_store: None,
) -> None:
    """Nothing of the frame is kept between reruns: a workspace made elsewhere is listed, and
    one filled elsewhere no longer offers the sample."""
    service = get_service()
    mine, theirs = "ui-frame-mine", "ui-frame-theirs"
    service.create_workspace(mine)
    at = search(mine)
    assert any(i.value.startswith("This workspace is empty") for i in at.info)
    assert theirs not in at.selectbox(key="workspace").options
    service.create_workspace(theirs)
    service.upload_files([("a.txt", b"Heated aircraft models were tested.")], workspace=mine)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert theirs in at.selectbox(key="workspace").options
    assert not any(i.value.startswith("This workspace is empty") for i in at.info)
    service.delete_workspace(theirs)
    at.run()
    assert theirs not in at.selectbox(key="workspace").options


def test_the_stylesheet_of_marks_bars_and_chips_goes_once_with_the_first_result(
    cranfield: str,
) -> None:
    """Each card carries its marks' and segments' colours only; the one stylesheet styles the
    page (inline styles were ~1.2 KB of each card's ~4 KB, every KB a cost of each rerun)."""
    at = search(cranfield, q=QUERY)
    shown = cards(at)
    assert len(shown) == 10
    assert [PASSAGE_STYLE in card for card in shown] == [True] + [False] * 9
    for card in shown:
        inline = card.replace(PASSAGE_STYLE, "")
        assert "border-bottom" not in inline and "white-space" not in inline
        assert "font-size" not in inline and "line-height" not in inline


def test_a_rerun_makes_no_page_and_navigates_its_own_copies_of_the_screens(
    cranfield: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nine ``st.Page`` a rerun resolved their files on the disk (~0.6 ms); made once per
    process now, each run gets copies: the page st.navigation marks to run is that run's."""
    import streamlit as st
    from streamlit.navigation.page import StreamlitPage

    import pages.common

    at = search(cranfield)
    made: list[object] = []
    navigated: list[list[StreamlitPage]] = []
    make, navigate = StreamlitPage.__init__, st.navigation

    def making(self: StreamlitPage, *args: object, **kwargs: object) -> None:
        made.append(args)
        make(self, *args, **kwargs)  # type: ignore[arg-type]

    def navigating(pages: dict[str, list[StreamlitPage]], **kwargs: object) -> StreamlitPage:
        navigated.append([p for section in pages.values() for p in section])
        return navigate(pages, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(StreamlitPage, "__init__", making)
    monkeypatch.setattr(st, "navigation", navigating)
    at.text_input(key="q").input(QUERY).run()
    at.text_input(key="q").input("heated aircraft").run()
    assert not at.exception, [e.value for e in at.exception]
    assert cards(at), "no result: nothing ran"
    assert made == []
    assert len(navigated) == 2 and len(navigated[0]) == 9
    kept = {id(p) for p in pages.common._PAGES.values()}
    first, second = ({id(p) for p in run} for run in navigated)
    assert not first & second and not (first | second) & kept
    assert [p.url_path for p in navigated[0]] == [p.url_path for p in navigated[1]]
