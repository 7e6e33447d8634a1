"""The ceiling of a limit on the Truncation screen, through AppTest.

The numbers are the service's (``limit_ceiling``, the call the page makes; its definition is
hand-checked in tests/unit/analysis/test_limit_ceiling.py); what this adds is the screen: the
choice of judgments, the chart's two lines, the table and the summary at the current limit.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.service import SAMPLE_CORPUS, CeilingJudgments, LexplainService
from pages.common import get_service

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")
#: Cranfield query 1: limit 20 cuts three of its unlimited top-10.
QUERY = (
    "what similarity laws must be obeyed when constructing aeroelastic models of heated "
    "high speed aircraft ."
)
LIMIT = 20

pytestmark = pytest.mark.usefixtures("in_memory_store")


@pytest.fixture(scope="module")
def graded(cranfield: str) -> str:
    """The query's unlimited top 5 graded 1, 2, 3, 2, 3 (BM25's order is not the best one);
    the limit cuts some of them."""
    service = get_service()
    view = service.truncation(QUERY, 10, LIMIT, workspace=cranfield)
    assert any(e.cut for e in view.unlimited[:5])
    for entry, grade in zip(view.unlimited[:5], (1, 2, 3, 2, 3), strict=True):
        service.grade(QUERY, entry.chunk.id, grade, workspace=cranfield)
    return cranfield


def page(workspace: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"ws": workspace, "q": QUERY, "k": "10", "limit": str(LIMIT)})
    at.run()
    at.switch_page("pages/truncation.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def sweep_limits(workspace: str) -> list[int]:
    view = get_service().truncation(QUERY, 10, LIMIT, workspace=workspace)
    return [p.limit for p in view.report.sweep]


def test_without_judgments_the_sweep_has_no_ceiling(graded: str) -> None:
    at = page(graded)
    assert at.selectbox(key="t_ceiling").value == "none"
    assert "nDCG" not in at.get("plotly_chart")[0].proto.spec
    assert not [d for d in at.dataframe if "best of the kept" in d.value.columns]


def test_the_ceiling_from_in_app_grades_is_drawn_and_tabled_beside_bm25(graded: str) -> None:
    at = page(graded)
    at.selectbox(key="t_ceiling").set_value("this workspace's grades").run()
    assert not at.exception, [e.value for e in at.exception]
    want = get_service().limit_ceiling(
        QUERY, 10, sweep_limits(graded), CeilingJudgments(), workspace=graded
    )
    (table,) = [d.value for d in at.dataframe if "best of the kept" in d.value.columns]
    assert list(table["limit"]) == [p.limit for p in want.points]
    assert list(table["BM25 nDCG@10"]) == [p.ndcg for p in want.points]
    assert list(table["best of the kept"]) == [p.ceiling for p in want.points]
    at_limit = next(p for p in want.points if p.limit == LIMIT)
    # The limit cut graded passages: even a perfect ordering of what it kept falls short,
    # while every match kept allows the ideal (all five graded passages match the query).
    assert at_limit.ceiling < 1.0
    assert want.points[-1].ceiling == pytest.approx(1.0)
    assert want.points[-1].ndcg < want.points[-1].ceiling  # and the ranking costs too
    summary = [m.value for m in at.markdown if m.value.startswith(f"**At limit {LIMIT}:**")]
    assert summary and f"**{at_limit.ndcg:.3f}**" in summary[0]
    assert f"**{at_limit.ceiling:.3f}**" in summary[0]
    assert "5 relevant of 5 judged passages" in summary[0]
    chart = at.get("plotly_chart")[0].proto.spec
    assert "BM25 nDCG@10" in chart and "best nDCG@10 of the kept candidates" in chart


def test_the_ceiling_from_evaluates_judgment_files_judges_documents(graded: str) -> None:
    at = page(graded)
    queries, qrels = LexplainService.sample_judgments()
    at.session_state["ev_judgments"] = ("the sample's judgments (Cranfield)", queries, qrels)
    at.run()
    at.selectbox(key="t_ceiling").set_value("the judgment files chosen on Evaluate").run()
    assert not at.exception, [e.value for e in at.exception]
    want = get_service().limit_ceiling(
        QUERY,
        10,
        sweep_limits(graded),
        CeilingJudgments(by_document=True, files=(queries, qrels)),
        workspace=graded,
    )
    assert want.by_document and want.relevant > 0
    (table,) = [d.value for d in at.dataframe if "best of the kept" in d.value.columns]
    assert list(table["best of the kept"]) == [p.ceiling for p in want.points]
    assert list(table["BM25 nDCG@10"]) == [p.ndcg for p in want.points]


def test_a_query_nobody_judged_says_how_to_get_a_ceiling(graded: str) -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"ws": graded, "q": "boundary layer transition", "k": "10"})
    at.run()
    at.switch_page("pages/truncation.py").run()
    at.selectbox(key="t_ceiling").set_value("this workspace's grades").run()
    assert not at.exception
    assert any("Nothing judges this query" in i.value for i in at.info)
