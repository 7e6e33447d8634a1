"""A result's "why this score" and "show all" as HTML ``<details>`` inside its one card.

The browser opens a ``<details>`` itself: no message to the server, no rerun, and no Streamlit
element per result. The alternative it replaces, a tracked ``st.expander`` per result for the
explanation and one for a clipped passage's whole text, was two elements a result on every
rerun (~0.1 ms of server time apiece) and a full rerun for every opening (16.2 ms of a
Search rerun's 19.3 ms on Cranfield, bench/bench_rerun.py). Built whole in HTML rather than
Markdown: inside an HTML block Markdown is not read, so the table, the formulas and the note
are HTML too, every cell formatted by ``sentences.cell_spec`` as the Markdown table's, every
number core's, every user-derived string escaped (``escape_text``). Styled by
``presentation.PASSAGE_STYLE``, which the page sends once. The table leaves out the end tags
HTML lets go (``</td>``, ``</th>``, ``</tr>``: a cell ends at the next cell, row or section, in
the browser as in Streamlit's parser): they were ~6 KB of a Search rerun's ~66 KB of cards, each
byte dedented, hashed and sent per rerun (bench/bench_rerun.py, issue 50).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from core.analysis.presentation import (
    EXPLANATION_COLUMNS,
    FORMULA,
    IDF_FORMULAS,
    SCORE_NOTE,
    explanation_tuples,
    formula_lines,
)
from core.analysis.sentences import cell_spec, escape_text
from core.domain.bm25 import ScoreExplanation

#: Class of a result's "why this score" details, and of its "show all" details.
WHY_CLASS, ALL_CLASS = "lx-why", "lx-all"
#: The summary line of the explanation, as the page always labelled it.
WHY_SUMMARY: Final = "why this score"
#: Said above an expanded query's table.
WEIGHTED_NOTE: Final = "Expanded query: each contribution is weight × idf × TF part."


def details_html(summary: str, body: str, css_class: str) -> str:
    """``body`` (HTML, its text already escaped) under a summary the browser opens and closes;
    ``summary`` is escaped here. No blank line inside, so Markdown keeps it one HTML block."""
    return f'<details class="{css_class}"><summary>{escape_text(summary)}</summary>{body}</details>'


def explanation_table_html(rows: Sequence[Mapping[str, object]]) -> str:
    """``explanation_rows`` as an HTML table, cell for cell ``table_cell``'s text (the Markdown
    table's). Each column's spec is read once, from the first row (a column holds one type),
    and a row is one ``str.format``: a cell at a time was ~0.6 ms of each Search rerun."""
    if not rows:
        return ""
    columns = list(rows[0])
    first = rows[0]
    text = [i for i, c in enumerate(columns) if not isinstance(first[c], int | float)]
    row_format = "<tr>" + "".join(
        f"<td>{{{i}:{cell_spec(c, first[c])}}}" for i, c in enumerate(columns)
    )
    body = []
    for row in rows:
        values = [row[c] for c in columns]
        for i in text:
            values[i] = escape_text(str(values[i]))
        body.append(row_format.format(*values))
    head = "".join(f"<th>{escape_text(column)}" for column in columns)
    return f"<table><thead><tr>{head}</thead><tbody>{''.join(body)}</tbody></table>"


#: The constant parts, escaped once (a Search rerun writes ten explanations).
_FORMULA_HTML: Final = f"<p><code>{escape_text(FORMULA)}</code> &nbsp; "
_IDF_HTML: Final = {
    form: f"<code>{escape_text(text)}</code>" for form, text in IDF_FORMULAS.items()
}
_WEIGHTED_HTML: Final = f"<p>{escape_text(WEIGHTED_NOTE)}</p>"
_NOTE_HTML: Final = f'<p class="lx-note">{escape_text(SCORE_NOTE)}</p>'


def _table_html(rows: Sequence[tuple[Any, ...]], weighted: bool) -> str:
    """``explanation_table_html`` of the same rows as dicts (without "weight" unless
    ``weighted``), from the tuples: each row one ``str.format`` reading its columns by place."""
    if not rows:
        return ""
    first = rows[0]
    places = [i for i in range(len(EXPLANATION_COLUMNS)) if weighted or i != 1]
    text = [i for i in places if not isinstance(first[i], int | float)]
    row_format = "<tr>" + "".join(
        f"<td>{{{i}:{cell_spec(EXPLANATION_COLUMNS[i], first[i])}}}" for i in places
    )
    if text == [0]:  # the term: the one text column
        body = [row_format.format(escape_text(str(row[0])), *row[1:]) for row in rows]
    else:
        body = []
        for row in rows:
            values = list(row)
            for i in text:
                values[i] = escape_text(str(values[i]))
            body.append(row_format.format(*values))
    head = "".join(f"<th>{escape_text(EXPLANATION_COLUMNS[i])}" for i in places)
    return f"<table><thead><tr>{head}</thead><tbody>{''.join(body)}</tbody></table>"


def explanation_html(explanation: ScoreExplanation, what: str = "the score above") -> str:
    """What the explanation shows, in order: the formula with k1 and b, the IDF with N, avgdl
    and dl, the expanded-query note when weighted, the total, every term's row, each matched
    term's formula written out, and the note on comparing scores."""
    e = explanation
    formulas = escape_text("\n".join(formula_lines(e)))
    return (
        f"{_FORMULA_HTML}k1 = {e.k1:g}, b = {e.b:g}<br>{_IDF_HTML[e.idf_form]} &nbsp; "
        f"N = {e.n_docs:,}, avgdl = {e.avg_doc_length:.2f}, dl = {e.doc_length}</p>"
        + (_WEIGHTED_HTML if e.weights else "")
        + f"<p><b>total = {e.score:.4f}</b> = {escape_text(what)} "
        "(the sum of the contribution column)</p>"
        + _table_html(explanation_tuples(e), bool(e.weights))
        + (f'<div class="lx-formulas">{formulas}</div>' if formulas else "")
        + _NOTE_HTML
    )


def why_details_html(explanation: ScoreExplanation) -> str:
    """A result's "why this score", closed until the analyst opens it in the browser."""
    return details_html(WHY_SUMMARY, explanation_html(explanation), WHY_CLASS)
