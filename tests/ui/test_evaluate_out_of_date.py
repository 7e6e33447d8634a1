"""Evaluate never shows a result or a diagnosis as current after its inputs changed (issue 48).

Before, a changed setting put a caption under the result, a changed grade nothing at all, and the
diagnosis of run A stayed as if current whatever changed.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.service import SAMPLE_CORPUS, SAMPLE_QUERY_SET

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")

pytestmark = pytest.mark.usefixtures("in_memory_store")


def evaluate_page(workspace: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["ws"] = workspace
    at.run()
    at.switch_page("pages/evaluate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def stale(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if w.value.startswith("Out of date")]


def test_a_result_and_a_diagnosis_from_grades_are_marked_once_a_grade_or_a_setting_changes(
    cranfield: str,
) -> None:
    from pages.common import get_service

    service = get_service()
    queries = service.query_set(SAMPLE_QUERY_SET, workspace=cranfield).queries
    first = service.search(queries[0].text, 10, 1000, workspace=cranfield).passages
    service.grade(queries[0].text, first[0].chunk.id, 3, workspace=cranfield)
    at = evaluate_page(cranfield)
    at.radio(key="ev_source").set_value("this workspace's grades").run()
    at.selectbox(key="ev_set").set_value(SAMPLE_QUERY_SET)
    at.checkbox(key="ev_compare").uncheck()
    at.button(key="ev_run").click().run()
    at.button(key="ev_diagnose").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.metric and stale(at) == []

    service.grade(queries[0].text, first[1].chunk.id, 2, workspace=cranfield)  # on Judge, say
    at.run()
    assert stale(at) == [
        "Out of date: the grades changed since this was computed. Click Run the evaluation "
        "again for current numbers.",
        "Out of date: the grades changed since this was computed. Click Diagnose run A again "
        "for current numbers.",
    ]
    at.button(key="ev_run").click().run()
    at.button(key="ev_diagnose").click().run()
    assert stale(at) == []
    at.number_input(key="ev_k").set_value(5).run()
    assert [line.split(" changed")[0] for line in stale(at)] == [
        "Out of date: the settings above",
        "Out of date: the settings above",
    ]


def test_a_result_from_judgment_files_is_marked_when_the_limit_changes(cranfield: str) -> None:
    at = evaluate_page(cranfield)
    at.button(key="ev_sample").click().run()
    at.button(key="ev_run").click().run()
    assert at.metric and stale(at) == []
    at.number_input(key="ev_limit_a").set_value(100).run()
    assert stale(at) == [
        "Out of date: the settings above changed since this was computed. Click Run the "
        "evaluation again for current numbers."
    ]
