"""Search writes each result list's cards once: a rerun drawing the same list reuses them, a
new search writes its own (pages.search_cards, issue 50).

Marking the terms, the bars and the explanations of ten cards was ~2-3 ms of every Search
rerun; a grade given, the comparison opened or a full rerun with unchanged inputs draws the
very result it drew before. These hold that such a rerun writes no card again and still says
each grade, and that any new result (another query, another k, back to an earlier query) gets
cards written for it, the ones a fresh session gets.
"""

from __future__ import annotations

import hashlib
import re

import pytest
from streamlit.testing.v1 import AppTest

import pages.search_cards
from core.service import SAMPLE_CORPUS
from pages.common import get_service
from tests.fixtures.screens import cards

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")
QUERY, OTHER = "boundary layer transition on a flat plate", "aeroelastic models of heated aircraft"
MARKS = re.compile(r'<div class="lx-marks">(marks: .*?)</div>')

pytestmark = pytest.mark.usefixtures("in_memory_store")


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each passage whose card is written while a test runs (its text marked)."""
    calls: list[str] = []
    original = pages.search_cards.term_spans

    def counted(text: str, *args: object) -> object:
        calls.append(text)
        return original(text, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(pages.search_cards, "term_spans", counted)
    return calls


def search(workspace: str, query: str = QUERY, k: int = 10) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"ws": workspace, "q": query, "k": str(k), "limit": "1000"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def marks(at: AppTest) -> list[str]:
    return [m[1] for v in cards(at) if (m := MARKS.search(v))]


def test_a_rerun_drawing_the_same_result_list_writes_no_card_again(
    cranfield: str, written: list[str]
) -> None:
    at = search(cranfield)
    first = cards(at)
    assert len(written) == len(first) == 10
    written.clear()
    at.toggle(key="grading").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert written == []
    assert all(m.endswith(" · unjudged") for m in marks(at))
    top = get_service().search(QUERY, 10, 1000, workspace=cranfield).passages[0].chunk.id
    digest = hashlib.sha256(QUERY.encode()).hexdigest()[:12]
    at.radio(key=f"grade-{digest}-{top}").set_value(2).run()
    assert not at.exception, [e.value for e in at.exception]
    assert written == []
    assert marks(at)[0].endswith(" · your grade: 2 relevant")
    assert all(m.endswith(" · unjudged") for m in marks(at)[1:])
    at.toggle(key="grading").set_value(False).run()
    assert written == [] and cards(at) == first


def test_every_new_result_gets_the_cards_a_fresh_session_writes_for_it(
    cranfield: str, written: list[str]
) -> None:
    at = search(cranfield)
    first = cards(at)
    written.clear()
    at.text_input(key="q").input(OTHER).run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(written) == 10
    assert cards(at) == cards(search(cranfield, OTHER)) != first
    at.number_input(key="k").set_value(5).run()
    assert cards(at) == cards(search(cranfield, OTHER, k=5))
    written.clear()
    at.number_input(key="k").set_value(10).run()  # the service's kept result, not the last drawn
    assert len(written) == 10
    at.text_input(key="q").input(QUERY).run()
    assert len(written) == 20
    assert cards(at) == first
