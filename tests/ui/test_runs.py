"""The Runs screen through AppTest: evaluate from in-app grades, save, compare saved runs.

Expected numbers come from the service (``evaluate_judged``, ``compare_saved_runs``).
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.sentences import escape_text
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


def tuned(workspace: str, k1_range: tuple[float, float]) -> AppTest:
    """Runs on the sample's grades at limit 100, tuned over ``k1_range`` in steps of 0.5 and
    b 0.5-1 in steps of 0.25."""
    from pages.common import get_service

    get_service().import_sample_grades(workspace=workspace)
    at = page(workspace)
    at.number_input(key="runs_limit").set_value(100)
    at.slider(key="tune_k1").set_value(k1_range)
    at.number_input(key="tune_k1_step").set_value(0.5)
    at.slider(key="tune_b").set_value((0.5, 1.0))
    at.number_input(key="tune_b_step").set_value(0.25)
    return at.button(key="runs_tune").click().run()


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


def test_the_sample_diagnosis_says_which_share_no_lexical_setting_could_find(
    cranfield: str,
) -> None:
    from core.service import LostCause
    from pages.common import get_service

    at = page(cranfield)
    at.button(key="runs_sample_grades").click().run()
    at.number_input(key="runs_limit").set_value(100)
    at.button(key="runs_diagnose").click().run()
    assert not at.exception, [e.value for e in at.exception]
    want = get_service().diagnose(SAMPLE_QUERY_SET, 10, 100, workspace=cranfield)
    share = want.share(LostCause.VOCABULARY)
    assert any(
        f"{share:.0%} of the lost relevant passages contain no query term" in i.value
        for i in at.info
    )
    (table,) = [d.value for d in at.dataframe if "nDCG lost" in d.value.columns]
    assert list(table["query"]) == [q.query for q in want.queries]
    assert list(table["lost"]) == [len(q.lost) for q in want.queries]
    bars = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]
    assert bars["y"] == [c.value for c in want.by_cause]
    assert bars["x"] == [want.share(c) for c in want.by_cause]
    first = want.queries[0].lost[0]
    assert any(first.cause.value in m.value for m in at.markdown)


def test_tuning_draws_the_grid_marks_the_best_point_and_saves_it_as_a_run(
    cranfield: str,
) -> None:
    from core.service import GridSpec
    from pages.common import get_service

    service = get_service()
    at = tuned(cranfield, (0.5, 1.5))
    assert not at.exception, [e.value for e in at.exception]
    want = service.tune(
        SAMPLE_QUERY_SET, 10, 100, workspace=cranfield,
        grid=GridSpec(k1s=(0.5, 1.0, 1.5), bs=(0.5, 0.75, 1.0)),
    )  # fmt: skip
    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)
    heat, best, own = spec["data"]
    assert heat["z"] == want.means and heat["x"] == want.k1s and heat["y"] == want.bs
    assert (best["x"], best["y"]) == ([want.best.k1], [want.best.b])
    assert (own["x"], own["y"]) == ([1.2], [0.75])
    assert any(escape_text(want.verdict) in m.value for m in at.markdown)
    before = len(service.saved_runs(workspace=cranfield))
    at.button(key="tuning_save").click().run()
    saved = service.saved_runs(workspace=cranfield)
    assert len(saved) == before + 2 and "(tuned)" in saved[-1].name
    assert f"k1 {want.best.k1:g}, b {want.best.b:g}" in saved[-1].name
    assert saved[-2].name == "workspace BM25 (k1 1.2, b 0.75) · limit 100"
    # Both picked under Compare, the workspace's setting as the baseline: its p is shown.
    assert [label.split(" · 20")[0] for label in at.multiselect(key="runs_pick").value] == [
        saved[-2].name,
        saved[-1].name,
    ]
    versus = at.dataframe[-1].value
    assert list(versus["run"]) == [saved[-1].name]


def test_a_best_point_on_the_grids_edge_offers_a_wider_grid_and_tunes_it_in_one_click(
    cranfield: str,
) -> None:
    from core.service import GridSpec
    from pages.common import get_service

    service = get_service()
    at = tuned(cranfield, (0.0, 0.5))
    first = service.tune(
        SAMPLE_QUERY_SET, 10, 100, workspace=cranfield,
        grid=GridSpec(k1s=(0.0, 0.5), bs=(0.5, 0.75, 1.0)),
    )  # fmt: skip
    assert first.best.k1 == 0.5  # k1 0 ignores term frequency: the edge at 0.5 wins
    assert first.edge_note is not None
    assert any(escape_text(first.edge_note) in m.value for m in at.info)
    (k1_low, k1_high), (b_low, b_high) = first.widened((0.0, 5.0), (0.0, 1.0)) or ((0, 0), (0, 0))
    widen = at.button(key="tuning_widen")
    assert (
        widen.label == f"Widen to k1 {k1_low:g}–{k1_high:g}, b {b_low:g}–{b_high:g} and tune again"
    )
    widen.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.slider(key="tune_k1").value == (k1_low, k1_high)
    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)
    assert spec["data"][0]["x"] == [0.0, 0.5, 1.0]  # tuned again, on the wider grid
    assert not any("Out of date" in w.value for w in at.warning)
