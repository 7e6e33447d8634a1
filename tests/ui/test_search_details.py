"""Each Search result's "why this score" and "show all" are ``<details>`` in its one card.

The browser opens a ``<details>`` without a message to the server: no rerun per opening, and
no Streamlit element per result (as tracked expanders they were two elements a result on every
rerun, and each opening a full rerun; bench/bench_rerun.py). These tests hold that every card
carries its explanation, with core's numbers for every query term, and its whole text when
clipped, that nothing of it is an expander any more, and that a passage's markup stays text
inside the details.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.presentation import explanation_rows
from core.analysis.sentences import table_cell
from core.domain.chunks import ChunkingOptions
from pages.common import get_service
from tests.fixtures.screens import cards, html_cells, shown_text, why_html

APP = str(Path(__file__).resolve().parents[2] / "app.py")
#: Cranfield query 1.
QUERY = (
    "what similarity laws must be obeyed when constructing aeroelastic models of heated "
    "high speed aircraft ."
)

pytestmark = pytest.mark.usefixtures("in_memory_store")


def search(workspace: str, query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    at.query_params["q"] = query
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_every_card_holds_its_explanation_with_every_query_terms_numbers_from_core(
    cranfield: str,
) -> None:
    at = search(cranfield, QUERY)
    result = get_service().search(QUERY, 10, 1000, workspace=cranfield)
    shown = cards(at)
    assert len(shown) == len(result.passages) == 10
    for card, passage in zip(shown, result.passages, strict=True):
        why = why_html(card)
        want = [
            {column: shown_text(table_cell(column, value)) for column, value in row.items()}
            for row in explanation_rows(passage.explanation)
        ]
        assert html_cells(why) == want
        said = shown_text(why)
        assert f"total = {passage.explanation.score:.4f} = the score above" in said
        assert "divided by 2.2" in said
    # Nothing of it is a Streamlit element, and no session key tracks an opening.
    labels = [e.label for e in at.expander]
    assert not any(label == "why this score" or label.startswith("show all") for label in labels)
    assert not at.code
    tracked = [f"{kind}-{rank}" for kind in ("why", "all") for rank in range(1, 11)]
    assert not [key for key in tracked if key in at.session_state]


def test_a_clipped_card_holds_its_whole_text_in_its_show_all_details(cranfield: str) -> None:
    at = search(cranfield, QUERY)
    result = get_service().search(QUERY, 10, 1000, workspace=cranfield)
    clipped = 0
    for card, passage in zip(cards(at), result.passages, strict=True):
        text = passage.chunk.text
        opening = f'<details class="lx-all"><summary>show all ({len(text):,} characters)</summary>'
        if opening not in card:
            continue
        clipped += 1
        whole = card.split(opening, 1)[1].split("</details>", 1)[0]
        assert shown_text(whole) == text
    assert clipped, "Cranfield query 1 shows at least one passage too long to show whole"


def test_markup_in_a_passage_stays_text_inside_its_details(in_memory_store: None) -> None:
    workspace = "ui-details-hostile"
    hostile = (
        "Engine notes. " * 120
        + "</details><script>alert('x')</script> <details open><summary>x</summary> engine"
    )
    get_service().upload_files(
        [("notes.txt", hostile.encode())],
        workspace=workspace,
        chunking=ChunkingOptions(whole_documents=True),
    )
    at = search(workspace, "engine script details summary")
    (card,) = cards(at)
    assert card.count("<details") == card.count("</details>") == 2  # why, and show all
    assert "<script" not in card and "<details open" not in card
    assert card.count("&#60;/") == 3  # the passage's </details>, </script> and </summary>
    whole = card.split('<details class="lx-all">', 1)[1]
    assert shown_text(whole.split("</summary>", 1)[1].split("</details>", 1)[0]) == hostile
    terms = {row["term"] for row in html_cells(why_html(card))}
    assert terms == {"engine", "script", "details", "summary"}
