"""Evaluate refuses a query file holding what no store holds (issue 49 item 2), in core's words.

A BEIR query ``aero\\x00`` was evaluated: it showed invisibly in the table, as ``%00`` in the
Search link, and its run could not be saved on PostgreSQL. The sentence expected is core's
(``parse_queries``), never written here.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.evaluation import JudgmentError, parse_queries
from core.analysis.sentences import escape_text
from core.service import SAMPLE_CORPUS
from pages.common import get_service

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")

pytestmark = pytest.mark.usefixtures("in_memory_store")


@pytest.mark.parametrize("text", ["aero\\u0000", "aero\\ud800"])
def test_evaluate_names_the_line_and_character_no_store_holds_and_shows_no_table(
    text: str,
) -> None:
    queries = ('{"_id": "1", "text": "' + text + '"}\n').encode()
    with pytest.raises(JudgmentError) as core_error:
        parse_queries(queries)
    get_service().load_sample(workspace="nul")
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = "nul"
    at.run()
    at.switch_page("pages/evaluate.py").run()
    at.file_uploader[0].set_value([("queries.jsonl", queries, "application/json")]).run()
    at.file_uploader[1].set_value([("qrels.tsv", b"1\t184\t1\n", "text/plain")]).run()
    at.button(key="ev_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    said = escape_text(f"queries file: {core_error.value}")
    assert errors == [f"The judgments cannot be used: {said}"]
    assert "line 1: a query contains a" in str(core_error.value)
    assert not at.dataframe
