"""Runs never shows a result as current after its grades or settings changed (issue 48 item 2).

After "Use Cranfield's own judgments as grades", the earlier Evaluate result (and its "Judged@10
is 40%… Grade more on Judge.") stayed under the new banner as if current; the button's tooltip
said 1,837 pairs and the banner 1,836 grades without saying why.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.service import SAMPLE_CORPUS, SAMPLE_QUERY_SET

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")

pytestmark = pytest.mark.usefixtures("in_memory_store")


def runs(workspace: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["ws"] = workspace
    at.run()
    at.switch_page("pages/runs.py").run()
    at.selectbox(key="runs_set").set_value(SAMPLE_QUERY_SET).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def stale(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if w.value.startswith("Out of date")]


def test_a_result_is_marked_out_of_date_once_the_grades_or_settings_change(
    cranfield: str,
) -> None:
    from pages.common import get_service

    service = get_service()
    query = service.query_set(SAMPLE_QUERY_SET, workspace=cranfield).queries[0].text
    top = service.search(query, 10, 1000, workspace=cranfield).passages[0]
    service.add_to_query_set(query, SAMPLE_QUERY_SET, workspace=cranfield)
    service.grade(query, top.chunk.id, 3, workspace=cranfield)
    at = runs(cranfield)
    at.button(key="runs_evaluate").click().run()
    assert at.metric and stale(at) == []
    at.button(key="runs_sample_grades").click().run()
    assert stale(at) == [
        "Out of date: the grades changed since this was computed. Click Evaluate again for "
        "current numbers."
    ]
    assert any(
        "Not stored: the judgments of 1 document this workspace does not hold (995)" in i.value
        for i in at.info
    )
    at.button(key="runs_evaluate").click().run()
    assert stale(at) == []
    at.number_input(key="runs_k").set_value(5).run()
    assert stale(at) == [
        "Out of date: the settings above changed since this was computed. Click Evaluate again "
        "for current numbers."
    ]
