"""Formatting for the screens: escaped highlighting, formula strings, comparisons.

Pure functions over values core already computed. Nothing here scores: every number printed
comes from a ``ScoreExplanation``; the only arithmetic is the difference of two contributions in
``compare_explanations`` (kept here, in core, so no page ever subtracts scores itself). Where
the terms stand in a passage (the spans it marks) is ``core.analysis.marking``'s.

All HTML built here escapes user text first (``html.escape``) and then encodes
the characters Streamlit's Markdown would interpret (``*``, ``_``, ``$``, ...),
so a passage containing ``<script>`` or ``<img onerror=...>`` shows as text.
"""

from __future__ import annotations

import colorsys
import html
import re
from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from core.analysis.marking import Span
from core.analysis.sentences import escape_text, table_cell
from core.domain.bm25 import IDF_FUNCTIONS, IdfForm, ScoreExplanation, TermContribution
from core.domain.tokenize import Profile

#: A qualitative palette (Tableau 10) whose colours are far apart; used while a query has at most
#: this many distinct terms. More terms get evenly spaced hues instead (``term_colours``): cycling
#: the palette gave two terms the same colour, and a 12-colour palette had two near-twins.
PALETTE: Final[tuple[str, ...]] = (
    "#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2",
    "#B279A2", "#EECA3B", "#9D755D", "#FF9DA6", "#79706E",
)  # fmt: skip
#: Passages longer than this many characters are clipped, with a "show all" next to them.
CLIP_CHARS: Final = 1500
#: Runs of ASCII digits, kept by ``re.split`` (natural order of source ids).
_DIGIT_RUNS: Final = re.compile(r"([0-9]+)")

#: What each tokenizer profile does, in the words of the sidebar and the Corpus screen.
PROFILE_DESCRIPTIONS: Final[dict[Profile, str]] = {
    Profile.PLAIN: "words as typed: NFKC, casefold, stopwords removed",
    Profile.ENGLISH: "plain, then Snowball English stemming: models → model",
}
#: The columns of a per-term table beside another ranker's (Compare): what differs between
#: rankers. N, dl and avgdl are the same under both and stated once above; df is in each idf
#: line. All nine columns in two half-width tables hid TF part and contribution at 1280 px.
RANKER_COLUMNS: Final = ("term", "tf", "idf", "TF part", "contribution")
#: The formula, as the page prints it above the table.
FORMULA: Final = "score = Σ over query terms idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))"
#: The IDF, as the page prints it.
IDF_FORMULA: Final = "idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))"
#: The textbook IDF (core.domain.classic), as the Compare screen prints it.
CLASSIC_IDF_FORMULA: Final = "idf(t) = ln((N − df + 0.5) / (df + 0.5))"
#: The IDF formula of each form.
IDF_FORMULAS: Final = {IdfForm.LUCENE: IDF_FORMULA, IdfForm.CLASSIC: CLASSIC_IDF_FORMULA}
#: The store's candidate order, in words (one definition for every screen that shows it).
CANDIDATE_ORDER: Final = "most query terms matched first; ties by passage id"
#: Why ties go by passage id, for the places where a tie decides what the limit cuts.
TIE_NOTE: Final = (
    "Passages matching the same number of query terms are ordered by their passage id, an "
    "internal SHA-256 of source and text: arbitrary to a reader, but a total order that every "
    "store gives the same way, so the same limit cuts the same passages in memory and in "
    "PostgreSQL. Relevance plays no part before scoring."
)
#: Why Elasticsearch users see other numbers, and what a score can be compared with.
SCORE_NOTE: Final = (
    "Lucene 8+ and Elasticsearch drop the constant (k1+1) from the numerator, so their scores "
    "are these divided by 2.2, in the same order. A BM25 score is only comparable within one "
    "result list: it grows with the number and rarity of query terms, so never compare scores "
    "of two different queries or corpora."
)


#: The one stylesheet of marks, bars, chips and a card's details (a mark carries only its two
#: colours, --c and --b): inline, they were ~1.2 KB of a Search card's ~4 KB (issue 50).
PASSAGE_STYLE: Final = (
    "<style>.lx-passage{line-height:1.6}.lx-passage mark[data-term]{background:var(--b);"
    "border-bottom:2px solid var(--c);padding:0 1px}.lx-bar{display:"
    "flex;height:1.6em;line-height:1.6em;font-size:0.8em;margin:2px 0 6px 0}.lx-bar>span[data-term]"
    "{color:#fff;overflow:hidden;white-space:nowrap;text-overflow:clip;padding:0 4px;box-sizing:"
    "border-box}.lx-chip{display:inline-block;border:1px solid #999;border-radius:10px;padding:"
    "0 8px;margin:2px;font-size:0.85em}.lx-marks,.lx-note{font-size:0.875rem;opacity:0.6}"
    ".lx-why>summary,.lx-all>summary{cursor:pointer;font-size:0.875rem;margin:2px 0}"
    ".lx-why :is(td,th){text-align:right}.lx-why :is(td,th):first-child{text-align:left}"
    ".lx-formulas{font-family:monospace;font-size:0.8em;margin:0 0 8px 0}</style>"
)


def spread_colours(n: int) -> list[str]:
    """``n`` distinguishable colours: the palette, or evenly spaced hues in two lightnesses."""
    if n <= len(PALETTE):
        return list(PALETTE[:n])
    colours = []
    for i in range(n):
        # Hues walk around the circle; neighbours in hue differ in lightness too.
        red, green, blue = colorsys.hls_to_rgb(i / n, 0.42 if i % 2 else 0.62, 0.75)
        colours.append(f"#{round(red * 255):02X}{round(green * 255):02X}{round(blue * 255):02X}")
    return colours


def term_colours(terms: Iterable[str]) -> dict[str, str]:
    """One distinct colour per distinct term, by sorted order: every result uses the same ones."""
    distinct = sorted(set(terms))
    return dict(zip(distinct, spread_colours(len(distinct)), strict=True))


def clip_end(text: str, spans: Sequence[Span], max_chars: int = CLIP_CHARS) -> int:
    """Where to clip ``text`` for a short view: at most ``max_chars``, never inside a span."""
    if len(text) <= max_chars:
        return len(text)
    end = max_chars
    for span in spans:
        if span.start < end < span.end:
            end = span.start
    space = text.rfind(" ", 0, end)
    return space if space > max_chars // 2 else end


def highlight_html(
    text: str,
    spans: Sequence[Span],
    colours: Mapping[str, str] | None = None,
    end: int | None = None,
    styled: bool = True,
) -> str:
    """``text[:end]`` as escaped HTML, each span in a ``<mark>``, then ``PASSAGE_STYLE`` if
    ``styled`` (a screen of many passages sends it with one: it styles the whole page)."""
    stop = len(text) if end is None else end
    out: list[str] = []
    cursor = 0
    opened: dict[str, str] = {}  # each label's opening tag, written once
    for span in sorted(spans, key=lambda s: s.start):
        if span.start < cursor or span.end > stop:
            continue
        out.append(escape_text(text[cursor : span.start]))
        if (tag := opened.get(span.label)) is None:
            c = (colours or {}).get(span.label, "#FFE08A")
            term = html.escape(span.label, quote=True)
            tag = opened[span.label] = f'<mark data-term="{term}" style="--c:{c};--b:{c}33">'
        word = text[span.start : span.end]  # letters and digits have nothing to escape
        out.append(f"{tag}{word if word.isalnum() else escape_text(word)}</mark>")
        cursor = span.end
    out.append(escape_text(text[cursor:stop]))
    if stop < len(text):
        out.append(" …")
    return f'<div class="lx-passage">{"".join(out)}</div>' + (PASSAGE_STYLE if styled else "")


def chip_html(names: Iterable[str]) -> str:
    """Entity names as escaped chips (styled by ``PASSAGE_STYLE``)."""
    return "".join(f'<span class="lx-chip">{escape_text(name)}</span>' for name in names)


def contribution_bar_html(
    explanation: ScoreExplanation, colours: Mapping[str, str], scale: float
) -> str:
    """One passage's per-term contributions as a stacked bar of HTML (``PASSAGE_STYLE``).

    ``scale`` is the score drawn at full width, shared by every bar of a result list (the top
    score), so a bar's length is its score. Segments go largest first; each is labelled with
    its term and contribution and says ``idf × TF part = contribution`` on hover. Ten Plotly
    figures per result list (the alternative) cost the server ~16 ms each to build and
    validate per rerun, and the browser ten chart mounts (bench/bench_rerun.py).
    """
    segments = []
    for part in sorted(explanation.terms, key=lambda p: (-p.contribution, p.term)):
        if part.contribution <= 0:
            continue
        term = escape_text(part.term)
        width = 100.0 * part.contribution / scale if scale > 0 else 0.0
        segments.append(
            f'<span data-term="{term}" title="{term}: idf {part.idf:.4f} × TF part '
            f'{part.tf_part:.4f} = {part.contribution:.4f}" style="width:{width:.4f}%;background:'
            f'{colours.get(part.term, "#999999")}">{term} {part.contribution:.2f}</span>'
        )
    return f'<div class="lx-bar">{"".join(segments)}</div>'


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that orders digit runs by number: "2" < "10" < "100", "doc9" < "doc10".

    Source ids are often numbers (a BEIR corpus's ids); sorted as text they run 1, 10, 100.
    """
    return tuple(
        (0, int(piece)) if piece.isdigit() else (1, piece.casefold())
        for piece in _DIGIT_RUNS.split(text)
        if piece
    )


def _num(value: float, places: int = 4) -> str:
    return f"{value:.{places}f}"


def formula_line(part: TermContribution, k1: float, b: float) -> str:
    """One term's contribution written out with its numbers substituted."""
    if part.tf == 0:
        return f"{part.term}: tf = 0, contributes 0 (idf would be {_num(part.idf)})"
    return _written(part, *_k1_b_texts(k1, b))


def _k1_b_texts(k1: float, b: float) -> tuple[str, str]:
    """The parts of a written-out formula holding k1 and b (once an explanation)."""
    return f"·{k1 + 1:g} / (", f" + {k1:g}·({1 - b:g} + {b:g}·"


def _written(part: TermContribution, saturation: str, norm: str) -> str:
    """A matched term's formula with its numbers, around ``_k1_b_texts``' parts (each number
    as ``_num`` writes it, its spec spelt out: a call per number was ~30% of a line)."""
    idf = f"{part.idf:.4f}"
    return (
        f"{part.term}: {idf} × {part.tf}{saturation}{part.tf}{norm}{part.doc_length}"
        f"/{part.avg_doc_length:.2f})) = {idf} × {part.tf_part:.4f} = {part.contribution:.4f}"
    )


def stemming_line(pairs: Sequence[tuple[str, str]]) -> str:
    """The query words a profile changed, as escaped "models → model"; empty when none did."""
    changed = [f"{escape_text(s)} → {escape_text(t)}" for s, t in pairs if s != t]
    return ", ".join(changed)


def idf_line(part: TermContribution, idf_form: IdfForm) -> str:
    """One term's IDF written out with its numbers substituted, in the ranker's form."""
    one = "1 + " if idf_form is IdfForm.LUCENE else ""
    return (
        f"idf({part.term}) = ln({one}({part.n_docs} − {part.df} + 0.5) / ({part.df} + 0.5))"
        f" = {_num(part.idf)}"
    )


def formula_lines(explanation: ScoreExplanation) -> list[str]:
    """The written-out formula of every matched term, largest contribution first."""
    parts = sorted(
        (p for p in explanation.terms if p.tf > 0), key=lambda p: (-p.contribution, p.term)
    )
    texts = _k1_b_texts(explanation.k1, explanation.b)
    return [_written(p, *texts) for p in parts]


#: The explanation table's columns in order; "weight" (second) only when the query is weighted.
EXPLANATION_COLUMNS: Final = (
    "term", "weight", "tf", "df", "N", "idf", "dl", "avgdl", "TF part", "contribution"
)  # fmt: skip


def explanation_tuples(e: ScoreExplanation) -> list[tuple[Any, ...]]:
    """The rows as tuples of ``EXPLANATION_COLUMNS``' values: matched terms by contribution,
    then unmatched by idf, then term. A model per unmatched term (``every_term``) and a dict
    per row were half the ~1.2 ms a Search rerun spent on ten explanations (issue 50)."""
    idf, n, dl, avgdl = IDF_FUNCTIONS[e.idf_form], e.n_docs, e.doc_length, e.avg_doc_length
    rows: list[tuple[Any, ...]] = [
        (p.term, p.weight, p.tf, p.df, p.n_docs, p.idf, p.doc_length, p.avg_doc_length,
         p.tf_part, p.contribution)
        for p in e.terms
    ] + [
        (term, e.weights.get(term, 1.0), 0, df, n, idf(df, n), dl, avgdl, 0.0, 0.0)
        for term, df in zip(e.unmatched, e.unmatched_df, strict=True)
    ]  # fmt: skip
    rows.sort(key=itemgetter(0))
    rows.sort(key=lambda r: (r[2] == 0, -r[9], -r[5], r[0]))  # tf, contribution, idf
    return rows


def explanation_rows(
    explanation: ScoreExplanation, columns: Sequence[str] | None = None
) -> list[dict[str, object]]:
    """``explanation_tuples`` as dicts by column name, only ``columns`` when given; "weight"
    only for an expanded query's (contribution = weight * idf * TF part)."""
    weighted = bool(explanation.weights)
    names = columns or [c for c in EXPLANATION_COLUMNS if weighted or c != "weight"]
    at = [EXPLANATION_COLUMNS.index(name) for name in names]
    return [
        {name: row[i] for name, i in zip(names, at, strict=True)}
        for row in explanation_tuples(explanation)
    ]


def explanation_markdown(rows: Sequence[Mapping[str, object]]) -> str:
    """``explanation_rows`` as a Markdown table: text cells escaped, counts with thousands
    separators, fractions at ``COLUMN_DECIMALS``. Drawn as HTML rather than a data frame:
    the first data frame a session draws loads its grid's code in the browser and converts the
    rows through pyarrow, ~0.7-0.8 s of a newcomer's first explanation (bench_first_result,
    issue 50 item 1) for a table of a few rows that needs no sorting."""
    if not rows:
        return ""
    columns = list(rows[0])
    aligned = ["---" if column == "term" else "---:" for column in columns]
    lines = ["| " + " | ".join(columns) + " |", "| " + " | ".join(aligned) + " |"]
    lines += ["| " + " | ".join(table_cell(c, row[c]) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


class TermDifference(BaseModel):
    """One term's contribution in A and in B, and A minus B."""

    model_config = ConfigDict(frozen=True)

    term: str
    a: float
    b: float
    difference: float


class ExplanationComparison(BaseModel):
    """Why A scores above (or below) B, term by term."""

    model_config = ConfigDict(frozen=True)

    score_a: float
    score_b: float
    score_difference: float
    #: Terms where the contributions differ, by absolute difference descending.
    terms: list[TermDifference]
    summary: str


def compare_explanations(
    a: ScoreExplanation, b: ScoreExplanation, names: tuple[str, str] = ("A", "B")
) -> ExplanationComparison:
    """The per-term differences between two explanations of the same query."""
    terms_a = {p.term: p.contribution for p in a.every_term()}
    terms_b = {p.term: p.contribution for p in b.every_term()}
    if set(terms_a) != set(terms_b):
        raise ValueError("the two explanations are for different queries")
    diffs = [
        TermDifference(term=t, a=terms_a[t], b=terms_b[t], difference=terms_a[t] - terms_b[t])
        for t in sorted(terms_a)
        if terms_a[t] != terms_b[t]
    ]
    diffs.sort(key=lambda d: (-abs(d.difference), d.term))
    wins = [f"{d.term} +{d.difference:.1f}" for d in diffs if d.difference > 0]
    losses = [f"{d.term} −{-d.difference:.1f}" for d in diffs if d.difference < 0]
    first, second = names
    gap = a.score - b.score
    clauses = []
    if wins:
        clauses.append("wins on " + ", ".join(wins))
    if losses:
        clauses.append("loses on " + ", ".join(losses))
    detail = f"{first} " + "; ".join(clauses) if clauses else "every term contributes the same"
    if gap == 0:
        summary = f"{first} and {second} score the same, {a.score:.4f}: {detail}."
    else:
        verb = "outscores" if gap > 0 else "scores below"
        summary = f"{first} {verb} {second} by {abs(gap):.4f}: {detail}."
    return ExplanationComparison(
        score_a=a.score, score_b=b.score, score_difference=gap, terms=diffs, summary=summary
    )


def ordinal(n: int) -> str:
    """``n`` as an English ordinal: 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n:,}{suffix}"


def score_shares(explanation: ScoreExplanation) -> dict[str, float]:
    """Each matched term's share of the score (contribution / score); empty for a score <= 0."""
    if explanation.score <= 0:
        return {}
    return {p.term: p.contribution / explanation.score for p in explanation.terms if p.tf > 0}


def rankers_summary(
    a: ScoreExplanation,
    b: ScoreExplanation,
    ranks: tuple[int, int] | None,
    names: tuple[str, str] = ("A", "B"),
) -> str:
    """One passage under two rankers, in words that never set one score against the other.

    Two rankers' scores are on different scales (another k1, another IDF), so a difference
    of scores would say nothing; the ranks and each term's share of its own ranker's score
    are comparable, and those are what the sentence states.
    """
    first, second = names
    if ranks is None:
        where = "This passage is not in the top k of either ranker"
    elif ranks[0] == ranks[1]:
        where = f"This passage ranks {ordinal(ranks[0])} under both {first} and {second}"
    else:
        where = (
            f"This passage ranks {ordinal(ranks[0])} under {first} and {ordinal(ranks[1])} "
            f"under {second}"
        )
    shares_a, shares_b = score_shares(a), score_shares(b)
    terms = sorted(
        set(shares_a) | set(shares_b),
        key=lambda t: (-abs(shares_a.get(t, 0.0) - shares_b.get(t, 0.0)), t),
    )
    moved = [
        f"{t} {shares_a.get(t, 0.0):.0%} → {shares_b.get(t, 0.0):.0%}"
        for t in terms
        if round(shares_a.get(t, 0.0), 2) != round(shares_b.get(t, 0.0), 2)
    ]
    weights = (
        f"each term's share of its ranker's score, {first} → {second}: " + ", ".join(moved)
        if moved
        else f"every term carries the same share of the score under {first} and {second}"
    )
    return (
        f"{where}. Scores of two rankers are on different scales and are not compared; {weights}."
    )
