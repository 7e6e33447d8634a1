"""Evaluate from the workspace's own grades, Judged@k and unjudged marks, through AppTest.

Expected numbers come from the service the page calls (``evaluate_judged``, ``evaluate``),
run directly with the same settings, never recomputed here.
"""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from core.service import SAMPLE_CORPUS, SAMPLE_QUERY_SET, LexplainService, RunSpec
from pages.common import get_service

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")
#: Queries of the sample set graded in these tests, and how deep each is graded.
GRADED_QUERIES, GRADED_DEPTH = 4, 3
#: A result list's line: rank, what was ranked, its grade or the unjudged mark.
LIST_LINE = re.compile(r"^(\d+)\. (.+?) &nbsp; (grade \d+|<span class='lx-unjudged'.*)$")

pytestmark = pytest.mark.usefixtures("in_memory_store")


@pytest.fixture(scope="module")
def graded(cranfield: str) -> str:
    """The top 3 passages of the set's first 4 queries graded 3, 2, 1 (by the service)."""
    service = get_service()
    for query in service.query_set(SAMPLE_QUERY_SET, workspace=cranfield).queries[:GRADED_QUERIES]:
        hits = service.search(query.text, k=GRADED_DEPTH, workspace=cranfield).passages
        for rank, hit in enumerate(hits):
            service.grade(query.text, hit.chunk.id, 3 - rank, workspace=cranfield)
    return cranfield


def page(workspace: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    at.run()
    at.switch_page("pages/evaluate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def from_grades(at: AppTest, k: int, *, by_document: bool = False) -> AppTest:
    at.radio(key="ev_source").set_value("this workspace's grades").run()
    at.selectbox(key="ev_set").set_value(SAMPLE_QUERY_SET)
    at.toggle(key="ev_by_document").set_value(by_document)
    at.number_input(key="ev_k").set_value(k)
    at.checkbox(key="ev_compare").uncheck()
    at.button(key="ev_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def list_lines(at: AppTest) -> list[tuple[int, str, str]]:
    """The result list of the chosen query: (rank, label, mark) per line."""
    (shown,) = [m.value for m in at.markdown if m.value.startswith("**A: ")]
    found = [LIST_LINE.match(line) for line in shown.split("  \n")[1:]]
    return [(int(m[1]), m[2], m[3]) for m in found if m is not None]


def test_evaluate_from_in_app_grades_shows_the_services_means_and_judged_at_k(
    graded: str,
) -> None:
    service: LexplainService = get_service()
    at = from_grades(page(graded), 5)
    (want,) = service.evaluate_judged(
        SAMPLE_QUERY_SET, 5, [RunSpec(workspace=graded, limit=1000)], workspace=graded
    )
    shown = {m.label.split(" · ")[0]: m.value for m in at.metric}
    assert shown["nDCG@5"] == f"{want.mean_ndcg:.4f}"
    assert shown["Judged@5"] == f"{want.mean_judged_share:.4f}"
    assert len(want.rows) == GRADED_QUERIES
    table = at.dataframe[0].value
    assert list(table["query id"]) == [r.query_id for r in want.rows]
    assert list(table["Judged@k A"]) == [r.judged_share for r in want.rows]
    # Three of each top 5 graded: Judged@5 is 0.6, and the page says the scores are lower bounds.
    assert want.mean_judged_share < 1
    assert any("Judged@5 of A" in w.value and "lower bounds" in w.value for w in at.warning)


def test_the_result_list_marks_every_unjudged_passage_and_names_the_graded_ones(
    graded: str,
) -> None:
    service = get_service()
    at = from_grades(page(graded), 5)
    (want,) = service.evaluate_judged(
        SAMPLE_QUERY_SET, 5, [RunSpec(workspace=graded, limit=1000)], workspace=graded
    )
    first = want.rows[0].query_id
    lines = list_lines(at)
    assert [rank for rank, _, _ in lines] == list(range(1, len(want.ranked[first]) + 1))
    marks = [mark for _, _, mark in lines]
    expected = ["unjudged" if g is None else f"grade {g}" for g in want.grades[first]]
    assert ["unjudged" if "lx-unjudged" in m else m for m in marks] == expected
    assert expected.count("unjudged") == 2  # 3 of the top 5 were graded
    for (_, label, _), chunk_id in zip(lines, want.ranked[first], strict=True):
        chunk = service.passage(chunk_id, workspace=graded)
        assert chunk is not None
        assert label == f"source {chunk.source_id} · passage {chunk.chunk_index + 1}"


def test_evaluate_by_document_judges_a_document_at_its_best_passage(graded: str) -> None:
    service = get_service()
    at = from_grades(page(graded), 10, by_document=True)
    (want,) = service.evaluate_judged(
        SAMPLE_QUERY_SET,
        10,
        [RunSpec(workspace=graded, limit=1000)],
        workspace=graded,
        by_document=True,
    )
    shown = {m.label.split(" · ")[0]: m.value for m in at.metric}
    assert shown["nDCG@10"] == f"{want.mean_ndcg:.4f}"
    assert shown["Judged@10"] == f"{want.mean_judged_share:.4f}"
    labels = [label for _, label, _ in list_lines(at)]
    assert labels == [f"document {d}" for d in want.ranked[want.rows[0].query_id]]


def test_judgment_files_show_judged_at_k_for_every_run(cranfield: str) -> None:
    service = get_service()
    at = page(cranfield)
    at.button(key="ev_sample").click().run()
    at.button(key="ev_run").click().run()
    assert not at.exception
    queries, qrels = LexplainService.sample_judgments()
    a, b = service.evaluate(queries, qrels, 10, [1000, 100], workspace=cranfield)
    shown = {m.label: m.value for m in at.metric}
    assert shown["Judged@10 · limit 1,000"] == f"{a.mean_judged_share:.4f}"
    assert shown["Judged@10 · limit 100"] == f"{b.mean_judged_share:.4f}"
    table = at.dataframe[0].value
    assert list(table["Judged@k A"]) == [r.judged_share for r in a.rows]
    assert list(table["Judged@k B"]) == [r.judged_share for r in b.rows]


def test_a_workspace_without_query_sets_says_where_to_make_one(in_memory_store: None) -> None:
    name = "evaluate-no-sets"
    get_service().create_workspace(name)
    at = page(name)
    at.radio(key="ev_source").set_value("this workspace's grades").run()
    assert not at.exception
    assert any("no query set yet" in i.value for i in at.info)
    assert at.button(key="ev_run").disabled
