"""A result's explanation as HTML says what the Markdown one says, escaped, in one block.

``core.analysis.explanation_html`` builds the "why this score" a Search card carries inside a
``<details>``; these hold that its table's cells are ``table_cell``'s (the Markdown table's),
that every line of the explanation is there with core's numbers, that a term or a summary
holding markup stays text, and that nothing in it ends the Markdown HTML block early.
"""

from __future__ import annotations

import re
from collections import Counter

from core.analysis.explanation_html import (
    details_html,
    explanation_html,
    explanation_table_html,
    why_details_html,
)
from core.analysis.presentation import explanation_rows, formula_lines
from core.analysis.sentences import table_cell
from core.domain.bm25 import CorpusStats, QueryScorer, ScoreExplanation
from tests.fixtures.screens import html_cells, shown_text

HOSTILE = "</details><script>x</script>"


def explanation(weights: dict[str, float] | None = None) -> ScoreExplanation:
    stats = CorpusStats(
        n_docs=1_398, avg_doc_length=111.17, doc_frequencies={"heat": 28, HOSTILE: 3, "wing": 9}
    )
    tf = Counter({"heat": 2, HOSTILE: 1})
    return QueryScorer(["heat", HOSTILE, "wing", "flutter"], stats, weights=weights).explain(tf, 96)


def test_the_html_table_has_the_markdown_tables_cells_for_every_term() -> None:
    for weights in (None, {"heat": 0.5, HOSTILE: 0.25, "wing": 0.125, "flutter": 0.125}):
        e = explanation(weights)
        rows = explanation_rows(e)
        want = [{c: shown_text(table_cell(c, v)) for c, v in row.items()} for row in rows]
        assert html_cells(explanation_table_html(rows)) == want
        assert len(want) == 4 and ("weight" in want[0]) == (weights is not None)
    assert explanation_table_html([]) == ""


def test_the_explanation_says_the_formulas_the_total_each_line_and_the_note() -> None:
    e = explanation()
    said = shown_text(explanation_html(e))
    assert "k1 = 1.2, b = 0.75" in said
    assert f"N = 1,398, avgdl = 111.17, dl = {e.doc_length}" in said
    assert f"total = {e.score:.4f} = the score above (the sum of the contribution column)" in said
    for line in formula_lines(e):
        assert line in said
    assert "divided by 2.2" in said
    assert "Expanded query" not in said
    assert "Expanded query: each contribution is weight" in shown_text(
        explanation_html(explanation({"heat": 0.5}))
    )


def test_markup_in_a_term_or_a_summary_stays_text_and_the_block_has_no_blank_line() -> None:
    html = why_details_html(explanation())
    assert html.startswith('<details class="lx-why"><summary>why this score</summary>')
    assert html.count("<details") == html.count("</details>") == 1
    assert "<script" not in html
    assert HOSTILE in shown_text(html)
    assert "\n\n" not in html  # a blank line would end Markdown's HTML block
    assert re.fullmatch(
        r'<details class="k"><summary>&#60;b&#62; \(1,759\)</summary>body</details>',
        details_html("<b> (1,759)", "body", "k"),
    )
