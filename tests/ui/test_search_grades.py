"""Grading a Search result, through AppTest: the grade is stored for the typed query, the
query joins a query set, and Evaluate counts it. Stored state is read from the service."""

from __future__ import annotations

import hashlib
import re

import pytest
from streamlit.testing.v1 import AppTest

from core.service import SAMPLE_CORPUS, SAMPLE_QUERY_SET, SEARCH_SET, RunSpec
from pages.common import get_service
from tests.fixtures.screens import cards

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")
QUERY = "boundary layer transition on a flat plate"
MARKS = re.compile(r'<div class="lx-marks"[^>]*>(marks: .*?)</div>')

pytestmark = pytest.mark.usefixtures("in_memory_store")


def search(workspace: str, query: str = QUERY) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"ws": workspace, "q": query, "k": "10", "limit": "1000"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def grade_key(query: str, chunk_id: str) -> str:
    return f"grade-{hashlib.sha256(query.encode()).hexdigest()[:12]}-{chunk_id}"


def captions(at: AppTest) -> list[str]:
    """Each result's marks line."""
    return [m[1] for v in cards(at) if (m := MARKS.search(v))]


def test_grading_controls_are_built_only_when_asked(cranfield: str) -> None:
    at = search(cranfield)
    assert not at.toggle(key="grading").value
    assert not [r for r in at.radio if str(r.key).startswith("grade-")]
    assert all("unjudged" not in c for c in captions(at))


def test_a_grade_given_on_a_result_is_kept_and_its_query_joins_the_search_set(
    cranfield: str,
) -> None:
    service = get_service()
    hits = service.search(QUERY, 10, 1000, workspace=cranfield).passages
    at = search(cranfield)
    at.toggle(key="grading").set_value(True).run()
    assert at.selectbox(key="grade_set").value == SEARCH_SET
    assert len(captions(at)) == len(hits)
    assert all(c.endswith(" · unjudged") for c in captions(at))
    at.radio(key=grade_key(QUERY, hits[0].chunk.id)).set_value(2).run()
    assert not at.exception, [e.value for e in at.exception]

    (judgment,) = service.judgments(workspace=cranfield, queries=[QUERY])
    assert (judgment.chunk_id, judgment.grade, judgment.rater) == (hits[0].chunk.id, 2, "local")
    added = service.query_set(SEARCH_SET, workspace=cranfield).queries
    assert [q.text for q in added] == [QUERY]
    shown = captions(at)
    assert shown[0].endswith(" · your grade: 2 relevant")
    assert all(c.endswith(" · unjudged") for c in shown[1:])

    # Evaluate from that set counts the grade: Judged@10 is one passage in ten.
    at.switch_page("pages/evaluate.py").run()
    at.radio(key="ev_source").set_value("this workspace's grades").run()
    at.selectbox(key="ev_set").set_value(SEARCH_SET)
    at.checkbox(key="ev_compare").uncheck()
    at.button(key="ev_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    (want,) = service.evaluate_judged(
        SEARCH_SET, 10, [RunSpec(workspace=cranfield, limit=1000)], workspace=cranfield
    )
    assert want.mean_judged_share == pytest.approx(0.1)
    shown_means = {m.label.split(" · ")[0]: m.value for m in at.metric}
    assert shown_means["Judged@10"] == f"{want.mean_judged_share:.4f}"


def test_a_query_already_in_the_chosen_set_is_not_added_twice(cranfield: str) -> None:
    service = get_service()
    before = service.query_set(SAMPLE_QUERY_SET, workspace=cranfield).queries
    query = before[1].text
    hit = service.search(query, 10, 1000, workspace=cranfield).passages[0]
    at = search(cranfield, query)
    at.toggle(key="grading").set_value(True).run()
    at.selectbox(key="grade_set").set_value(SAMPLE_QUERY_SET).run()
    at.radio(key=grade_key(query, hit.chunk.id)).set_value(3).run()
    assert not at.exception, [e.value for e in at.exception]
    assert service.query_set(SAMPLE_QUERY_SET, workspace=cranfield).queries == before
    assert [
        (j.grade, j.rater) for j in service.judgments(workspace=cranfield, queries=[query])
    ] == [(3, "local")]


def test_a_new_query_joins_the_set_the_analyst_picked(cranfield: str) -> None:
    service = get_service()
    query = "heat transfer in hypersonic flow"
    hit = service.search(query, 10, 1000, workspace=cranfield).passages[0]
    at = search(cranfield, query)
    at.toggle(key="grading").set_value(True).run()
    at.selectbox(key="grade_set").set_value(SAMPLE_QUERY_SET).run()
    at.radio(key=grade_key(query, hit.chunk.id)).set_value(1).run()
    last = service.query_set(SAMPLE_QUERY_SET, workspace=cranfield).queries[-1]
    assert last.text == query and last.query_id.startswith("search-")
