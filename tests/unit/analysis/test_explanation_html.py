"""A result's explanation as HTML says what the Markdown one says, escaped, in one block.

``core.analysis.explanation_html`` builds the "why this score" a Search card carries inside a
``<details>``; these hold that its table's cells are ``table_cell``'s (the Markdown table's),
that every line of the explanation is there with core's numbers, that a term or a summary
holding markup stays text, and that nothing in it ends the Markdown HTML block early.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from core.analysis.explanation_html import (
    _FORMULA_HTML,
    _IDF_HTML,
    _NOTE_HTML,
    _WEIGHTED_HTML,
    details_html,
    explanation_html,
    explanation_table_html,
    why_details_html,
)
from core.analysis.presentation import explanation_rows, formula_lines
from core.analysis.sentences import escape_text, table_cell
from core.domain.bm25 import CorpusStats, IdfForm, QueryScorer, ScoreExplanation
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


def composed(e: ScoreExplanation, what: str = "the score above") -> str:
    """The explanation's HTML as it was first written: ``explanation_rows``' dicts through
    ``explanation_table_html``, ``formula_lines`` joined and escaped whole."""
    formulas = escape_text("\n".join(formula_lines(e)))
    return (
        f"{_FORMULA_HTML}k1 = {e.k1:g}, b = {e.b:g}<br>{_IDF_HTML[e.idf_form]} &nbsp; "
        f"N = {e.n_docs:,}, avgdl = {e.avg_doc_length:.2f}, dl = {e.doc_length}</p>"
        + (_WEIGHTED_HTML if e.weights else "")
        + f"<p><b>total = {e.score:.4f}</b> = {escape_text(what)} "
        "(the sum of the contribution column)</p>"
        + explanation_table_html(explanation_rows(e))
        + (f'<div class="lx-formulas">{formulas}</div>' if formulas else "")
        + _NOTE_HTML
    )


#: Terms whose df tie (so do their idf and, unmatched, their zero contributions: the order
#: falls to the term), one with markup, and counts past a thousand (thousands separators).
TIED = {"heat": 28, "wing": 9, "flap": 9, "spar": 9, HOSTILE: 3, "rib": 1_200}


@pytest.mark.parametrize("idf_form", list(IdfForm))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    "tf", [{}, {"heat": 2}, {"wing": 1, "flap": 1}, {HOSTILE: 3, "rib": 1_100, "spar": 1}]
)
def test_the_explanation_is_byte_for_byte_the_rows_and_formulas_core_writes(
    idf_form: IdfForm, weighted: bool, tf: dict[str, int]
) -> None:
    """Built from the explanation's fields in one pass (no model per unmatched term, no dict
    per row, k1 and b written once), it is the HTML of ``explanation_rows`` and
    ``formula_lines``: the same rows in the same order, every cell and line the same text."""
    stats = CorpusStats(n_docs=2_398, avg_doc_length=111.17, doc_frequencies=TIED)
    terms = [*TIED, "flutter"]
    weights = {t: 1.0 / (i + 2) for i, t in enumerate(terms)} if weighted else None
    e = QueryScorer(terms, stats, idf_form=idf_form, weights=weights).explain(Counter(tf), 1_096)
    assert explanation_html(e) == composed(e)
    assert explanation_html(e, "its score, every match scored") == composed(
        e, "its score, every match scored"
    )
