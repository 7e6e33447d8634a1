"""Search's Expand control (issue 47 item 4): an RM3 search shows the expanded query with each
term's weight and source, each passage's rank before, the passages that entered and the term
that brought them, and a weight column in the explanation — every number the facade's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from core.service import ExpansionSpec, expansion_rows
from pages.common import get_service
from tests.fixtures.screens import cards, html_cells, shown_text, why_html

APP = str(Path(__file__).resolve().parents[2] / "app.py")
#: Cranfield query 1.
QUERY = (
    "what similarity laws must be obeyed when constructing aeroelastic models of heated "
    "high speed aircraft ."
)

pytestmark = pytest.mark.usefixtures("in_memory_store")


def searched(workspace: str, expand: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    at.run()
    at.text_input(key="q").input(QUERY)
    at.selectbox(key="expand").set_value(expand)
    return at.run()


def table_with(at: AppTest, column: str) -> list[dict[str, Any]]:
    for frame in at.dataframe:
        if column in frame.value.columns:
            return list(frame.value.to_dict(orient="records"))
    raise AssertionError(f"no table with a column {column!r}")


def test_an_rm3_search_shows_its_expanded_query_and_where_each_passage_stood(
    cranfield: str,
) -> None:
    at = searched(cranfield, "rm3")
    assert not at.exception, [e.value for e in at.exception]
    expected = get_service().search(QUERY, 10, 1000, workspace=cranfield, expand=ExpansionSpec())
    assert expected.expansion is not None
    assert table_with(at, "feedback part") == expansion_rows(expected.expansion)
    text = "\n".join(m.value for m in at.markdown)
    assert "**Expanded query** (RM3" in text
    for passage in expected.passages:
        was = "not ranked before" if passage.rank_before is None else f"was #{passage.rank_before}"
        assert f"**#{passage.rank}** ({was}" in text
        if passage.brought_by:
            assert f"entered the top 10 by “{passage.brought_by}”" in text
    assert any(p.brought_by for p in expected.passages), "RM3 brought no passage in on query 1"
    why = why_html(cards(at)[0])
    assert "Expanded query: each contribution is weight × idf × TF part." in shown_text(why)
    rows = html_cells(why)
    top = expected.passages[0].explanation
    assert {r["term"]: (r["weight"], r["contribution"]) for r in rows} == {
        p.term: (f"{p.weight:.4f}", f"{p.contribution:.4f}") for p in top.every_term()
    }


def test_without_expansion_search_shows_no_expansion_and_no_weight_column(
    cranfield: str,
) -> None:
    at = searched(cranfield, "none")
    assert not at.exception
    assert not any("feedback part" in f.value.columns for f in at.dataframe)
    assert "Expanded query" not in "\n".join(m.value for m in at.markdown)
    assert not any("weight" in f.value.columns for f in at.dataframe)
    assert "weight" not in html_cells(why_html(cards(at)[0]))[0]


def test_from_my_grades_expands_with_the_querys_graded_passages_and_says_what_it_learned_from(
    cranfield: str,
) -> None:
    service = get_service()
    top = service.search(QUERY, 3, 1000, workspace=cranfield).passages
    for passage, grade in zip(top, (3, 2, 0), strict=True):
        service.grade(QUERY, passage.chunk.id, grade, workspace=cranfield)
    at = searched(cranfield, "rocchio")
    assert not at.exception, [e.value for e in at.exception]
    expected = get_service().search(
        QUERY, 10, 1000, workspace=cranfield, expand=ExpansionSpec.rocchio()
    )
    assert expected.expansion is not None
    assert table_with(at, "feedback part") == expansion_rows(expected.expansion)
    captions = "\n".join(c.value for c in at.caption)
    assert "judging this ranking by the same grades would flatter it" in captions
