"""The Judge screen through AppTest: the sample's set, grading, resuming, agreement, export.

Expected values come from the service (``pool``, ``judgments``), never hard-coded. The keys
themselves (0-3, arrows) are Streamlit's button shortcuts; AppTest clicks the same buttons.
"""

from __future__ import annotations

import html
import json

import pytest
from streamlit.testing.v1 import AppTest

from core.service import SAMPLE_CORPUS, SAMPLE_QUERY_SET

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")

pytestmark = pytest.mark.usefixtures("in_memory_store")


def page(workspace: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    at.run()
    at.switch_page("pages/judge.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def text(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_grading_from_the_sample_set_moves_on_and_resumes_where_it_stopped(
    cranfield: str,
) -> None:
    from pages.common import get_service

    service = get_service()
    pool = service.pool(SAMPLE_QUERY_SET, 0, workspace=cranfield)
    at = page(cranfield)
    assert at.selectbox(key="judge_set").value == SAMPLE_QUERY_SET
    assert "Query **1 of 225**" in text(at)
    assert pool.passages[0].text[:40].split()[0] in text(at)
    at.button(key="grade_2").click().run()
    at.button(key="grade_0").click().run()
    assert not at.exception
    graded = {j.chunk_id: j.grade for j in service.judgments(workspace=cranfield)}
    assert graded == {pool.passages[0].chunk_id: 2, pool.passages[1].chunk_id: 0}
    assert {j.rater for j in service.judgments(workspace=cranfield)} == {"local"}
    again = page(cranfield)  # a new session opens at the first passage not graded
    assert f"Passage 3 of {len(pool.passages)}" in "\n".join(c.value for c in again.caption)
    assert "graded 2 of" in text(again)
    assert "Raters: local" in text(again)
    labels = [b.label for b in again.get("download_button")]
    assert "TREC qrels by document" in labels


def test_a_pasted_query_set_is_saved_and_a_bad_one_is_refused_naming_the_line(
    cranfield: str,
) -> None:
    at = page(cranfield)
    at.text_input(key="judge_new_name").input("mine")
    at.text_area(key="judge_new_text").input("wing flutter\n\nwing flutter\n")
    at.button(key="judge_new_save").click().run()
    assert "line 3: repeats the query of line 1" in html.unescape(at.error[0].value)
    at.text_area(key="judge_new_text").input("wing flutter\nshock waves\n")
    at.button(key="judge_new_save").click().run()
    assert "Saved “mine”: 2 queries." in at.success[0].value


def test_a_query_set_with_refusable_lines_keeps_the_rest_and_lists_each_refused_line(
    cranfield: str,
) -> None:
    """Issue 48 item 4 on screen: a question longer than CISI's longest is kept, and each line
    asking more than a query may is listed by number with core's sentence (AppTest rather than
    Chromium: the warning is Markdown whose entities the browser shows as the sentence)."""
    from core.domain.query_cost import MAX_QUERY_TERMS, query_refusal
    from tests.fixtures.queries import cranfield_questions, long_question, too_many_terms

    rows = [cranfield_questions()[0], ("56", long_question())]
    rows += [("57", too_many_terms(MAX_QUERY_TERMS + 1)), cranfield_questions()[1]]
    pasted = "".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in rows)
    at = page(cranfield)
    at.text_input(key="judge_new_name").input("cisi-like")
    at.selectbox(key="judge_new_format").select("beir")
    at.text_area(key="judge_new_text").input(pasted)
    at.button(key="judge_new_save").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "Saved “cisi-like”: 3 queries." in at.success[0].value
    shown = html.unescape(at.warning[0].value)
    assert "1 line left out, the rest kept: each asks more than a query may." in shown
    assert f"- line 3: {query_refusal(rows[2][1])}" in shown
    assert "line 3: the query has 1,025 distinct terms; at most 1,024 are searched" in shown
