"""The Runs screen through AppTest: evaluate from in-app grades, save, compare saved runs.

Expected numbers come from the service (``evaluate_judged``, ``compare_saved_runs``).
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.service import SAMPLE_CORPUS, SAMPLE_QUERY_SET, RunSpec

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")

pytestmark = pytest.mark.usefixtures("in_memory_store")


def page(workspace: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    at.run()
    at.switch_page("pages/runs.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_two_runs_from_in_app_grades_are_saved_and_compared_with_a_p_value(
    cranfield: str,
) -> None:
    from pages.common import get_service

    service = get_service()
    queries = service.query_set(SAMPLE_QUERY_SET, workspace=cranfield).queries[:6]
    for query in queries:  # grade the top 3 of each query, from core's own ranking
        for rank, hit in enumerate(service.search(query.text, k=3, workspace=cranfield).passages):
            service.grade(query.text, hit.chunk.id, 3 - rank, workspace=cranfield)
    at = page(cranfield)
    at.number_input(key="runs_k").set_value(5)
    at.button(key="runs_evaluate").click().run()
    (want,) = service.evaluate_judged(
        SAMPLE_QUERY_SET, 5, [RunSpec(workspace=cranfield, limit=1000)], workspace=cranfield
    )
    shown = {m.label: m.value for m in at.metric}
    assert shown["nDCG@5"] == f"{want.mean_ndcg:.4f}"
    assert shown["Judged@5"] == f"{want.mean_judged_share:.4f}"
    at.text_input(key="runs_name").input("wide")
    at.button(key="runs_save").click().run()
    at.number_input(key="runs_limit").set_value(3)
    at.button(key="runs_evaluate").click().run()
    at.text_input(key="runs_name").input("narrow")
    at.button(key="runs_save").click().run()
    assert not at.exception
    saved = service.saved_runs(workspace=cranfield)
    assert [r.name for r in saved] == ["wide", "narrow"]
    at.multiselect(key="runs_pick").set_value(at.multiselect(key="runs_pick").options).run()
    result = service.compare_saved_runs([r.run_id for r in saved], workspace=cranfield)
    versus = at.dataframe[-1].value  # the table of each run against the baseline
    (v,) = result.versus
    assert list(versus["wins"]) == [v.outcome.wins]
    assert list(versus["t-test p"]) == [v.t_test.p_value]
    assert any("Only 6 queries" in w.value for w in at.warning)
