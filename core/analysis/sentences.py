"""An analyst's words: the sentences, counts and number formats the screens share.

What a link's odd parameter became, an unknown filter value, an empty query, a list's "N shown
of M", a score's decimals, a log axis's ticks, and how user text is escaped: written once here,
so every screen says a thing the same way. Apart from ``presentation`` (highlighting,
explanation tables, comparisons), which had grown past 600 lines; pages may import both
(tests/test_layering.py's PAGE_ALLOWED_CORE).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Final
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from core.domain.judging import SavedRunSummary

#: HTML and Markdown-significant characters, encoded as entities in one pass: text stays text.
ESCAPED_CHARACTERS: Final = "&<>\"'\\`*_{}[]#|~$:"
_ENTITIES: Final = {c: f"&#{ord(c)};" for c in ESCAPED_CHARACTERS}
#: Each of them, found by one pattern and replaced by its entity (``_entity``): most pieces of
#: a passage hold none or a few, and a pattern's walk is several times quicker than
#: ``str.translate`` with a table of strings, which walks the text a character at a time in
#: Python objects (a Search rerun escapes ~400 pieces and ten explanations' formulas, each line
#: holding a colon: 24 against 7 us a formula block; bench/bench_rerun.py, issue 50).
_NEEDS_ESCAPING: Final = re.compile("[" + re.escape(ESCAPED_CHARACTERS) + "]")


def _entity(match: re.Match[str]) -> str:
    return _ENTITIES[match.group()]


def escape_text(text: str) -> str:
    """HTML-escape and neutralise Markdown in one pass, keeping line breaks as ``<br>``."""
    escaped = _NEEDS_ESCAPING.sub(_entity, text)
    if "\r" in escaped:
        escaped = escaped.replace("\r\n", "\n").replace("\r", "\n")
    return escaped.replace("\n", "<br>")


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with thousands separators and the noun in the right number: "1 candidate"."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


class LinkValue(BaseModel):
    """A number a link asked for, the number a screen uses, and the sentence saying why they
    differ (None when the link's value is used as given)."""

    model_config = ConfigDict(frozen=True)

    value: float
    note: str | None = None


def _link_number(
    name: str, raw: str | None, default: float, low: float, high: float, whole: bool
) -> LinkValue:
    """One rule for every number a link carries: used as given when it is one and in range,
    else replaced by the default (not a number) or the nearest bound, with a sentence naming
    what was asked, what is used and why. Clamping silently was rejected (issue 48): a link's
    ``k=0`` became 1 and its reader never knew."""

    def shown(v: float) -> str:
        return f"{v:,.0f}" if whole else f"{v:g}"

    asked = f"The link asked for {name}={raw!r}" if raw is not None else ""
    try:
        number = float(int(raw or "")) if whole else float(raw or "")
    except ValueError:
        kind = "a whole number" if whole else "a number"
        return LinkValue(
            value=default,
            note=f"{asked}, which is not {kind}: the default {name}={shown(default)} is used.",
        )
    if number != number:  # NaN
        return LinkValue(
            value=default,
            note=f"{asked}, which is not a number: the default {name}={shown(default)} is used.",
        )
    if number < low:
        return LinkValue(
            value=low,
            note=f"{asked}, but {name} is at least {shown(low)}: {name}={shown(low)} is used.",
        )
    if number > high:
        return LinkValue(
            value=high,
            note=f"{asked}, but {name} is at most {shown(high)} here: "
            f"{name}={shown(high)} is used.",
        )
    return LinkValue(value=number)


def link_int(name: str, raw: str | None, default: int, low: int, high: int) -> LinkValue:
    """A whole-number URL parameter (k, limit) read by ``_link_number``'s rule; absent is the
    default, without a sentence."""
    if raw is None:
        return LinkValue(value=default)
    return _link_number(name, raw.strip(), default, low, high, whole=True)


def link_float(name: str, raw: str | None, default: float, low: float, high: float) -> LinkValue:
    """A decimal URL parameter (a ranker's k1 or b) read by ``_link_number``'s rule."""
    if raw is None:
        return LinkValue(value=default)
    return _link_number(name, raw.strip(), default, low, high, whole=False)


def unknown_filter_line(what: str, plural: str, unknown: Sequence[str], kept: int) -> str:
    """The sentence naming a link's filter values this workspace does not have (``what``:
    "source", "entity"; ``plural`` its plural), and what the filter does without them (``kept``:
    the link's values it has); empty for none."""
    if not unknown:
        return ""
    names = ", ".join(f"“{escape_text(u)}”" for u in unknown)
    consequence = (
        f"; the link's other {count(kept, what, plural)} still narrow the results"
        if kept
        else f", so the results are not narrowed by {what}"
    )
    return (
        f"The link narrows to {count(len(unknown), what, plural)} "
        f"this workspace does not have: {names}. Left out of the filter{consequence}."
    )


#: What Compare says when the passage it explained is not among the results any more (the
#: workspace, query, k, limit or a ranker changed): the analyst's own choice, not a link's.
CHOICE_GONE_NOTE: Final = (
    "The passage explained before is not among these results (the workspace, query, k, limit "
    "or a ranker changed): the passage below is explained instead."
)


#: What a query screen says before anything is typed (or after Enter on an empty box).
EMPTY_QUERY_NOTE: Final = (
    "Type the words to search for and press Enter, e.g. “aeroelastic models of heated "
    "aircraft”: a query is its words (runs of letters and digits), stopwords aside."
)
#: What a query screen says when the query is only spaces.
SPACES_QUERY_NOTE: Final = "The query is only spaces: type words to search for."
#: The longer sentence a query screen shows for each reason its list is empty (core's reasons).
EMPTY_REASON_SENTENCES: Final[dict[str, str]] = {
    "no letters or digits to search for": (
        "no letters or digits to search for (a query is searched by its words, runs of "
        "letters and digits; the characters listed as dropped above are not searched)"
    ),
    "no terms left after stopwords": (
        "no terms left after stopwords (every word of the query is a stopword, and stopwords "
        "are never indexed)"
    ),
}


def _counted(items: Sequence[str], code: bool) -> str:
    """Each distinct item once, in first-seen order, with ``×n`` when it occurs n > 1 times."""
    counts = Counter(items)
    shown = (f"`{escape_text(t)}`" if code else escape_text(t) for t in counts)
    return ", ".join(
        f"{s} ×{counts[t]}" if counts[t] > 1 else s for s, t in zip(shown, counts, strict=True)
    )


#: What the query screens and ``python -m core search`` call the characters no term holds.
DROPPED_CHARACTERS: Final = "dropped as neither letters nor digits"


def dropped_characters_line(characters: Sequence[str], escape: Callable[[str], str] = str) -> str:
    """``dropped as neither letters nor digits: “!” “🙂”``, each character passed through
    ``escape`` (a screen's ``escape_text``; the terminal's own); "" when none was dropped."""
    if not characters:
        return ""
    return f"{DROPPED_CHARACTERS}: " + " ".join(f"“{escape(c)}”" for c in characters)


def query_terms_markdown(
    terms: Sequence[str], stopwords: Sequence[str], characters: Sequence[str]
) -> str:
    """The query as tokenised, for the top of a query screen: each distinct term once with
    its count (a pasted page of 500 words showed 500 chips), the stopwords dropped likewise,
    and the characters no term holds (emoji, punctuation), which were dropped without a word.
    """
    line = f"**Terms:** {_counted(terms, code=True) or '(none)'}"
    line += f"  \ndropped as stopwords: {_counted(stopwords, code=False) or 'none'}"
    if characters:
        line += "  \n" + dropped_characters_line(characters, escape_text)
    return line


def passage_label(source_id: str, chunk_index: int) -> str:
    """A passage as every screen names it: "source 184 · passage 1" (1-based; unescaped)."""
    return f"source {source_id} · passage {chunk_index + 1}"


#: Decimals of a score in a result list (Search, Truncation, Compare); an explanation's total
#: and its table carry 4, as the per-term numbers that sum to it.
SCORE_PLACES: Final = 2
#: Plotly/Streamlit number format of a listed score (``SCORE_PLACES``).
SCORE_FORMAT: Final = f"%.{SCORE_PLACES}f"


def score_text(score: float) -> str:
    """A listed score as every screen writes it (``SCORE_PLACES`` decimals): Compare showed
    4 where Search showed 2 for the same passage."""
    return f"{score:.{SCORE_PLACES}f}"


#: Decimals of each fractional column of an explanation or expansion table (the screens' one
#: format, for Markdown tables, HTML tables and data frames alike).
COLUMN_DECIMALS: Final = {
    "weight": 4, "idf": 4, "avgdl": 2, "TF part": 4, "contribution": 4, "query part": 4,
    "feedback part": 4,
}  # fmt: skip


def cell_spec(column: str, value: object) -> str:
    """The format spec of ``column``'s cell holding ``value``: fractions at ``COLUMN_DECIMALS``,
    counts with thousands separators, other numbers ``g``, text as it is (escaped first)."""
    if isinstance(value, float) and column in COLUMN_DECIMALS:
        return f".{COLUMN_DECIMALS[column]}f"
    if isinstance(value, int):
        return ","
    return "g" if isinstance(value, float) else ""


def table_cell(column: str, value: object) -> str:
    """One cell of an explanation table as shown (``cell_spec``; text escaped): one rule for
    the Markdown table and the HTML table."""
    shown = value if isinstance(value, int | float) else escape_text(str(value))
    return format(shown, cell_spec(column, value))


def shown_of_matching(shown: int, matching: int, filtered: bool) -> str:
    """ "**10 shown** of 631 matching passages" (English for one or many; "the filter admits"
    when a filter decided the candidates): it read "1 of 1 matching passages admitted shown"."""
    admitted = " the filter admits" if filtered else ""
    return f"**{shown:,} shown** of {count(matching, 'matching passage')}{admitted}"


def limit_of_matching(limit: int, matching: int, filtered: bool) -> str:
    """The limit against the matching passages in words: "limit 20 of 631 matching passages",
    or, when the limit is not below them, "limit 1,000: all 635 matching passages are
    candidates" (it read "limit 1,000 of 635 matching passages")."""
    what = "matching passages the filter admits" if filtered else "matching passages"
    if limit >= matching:
        return f"limit {limit:,}: all {matching:,} {what} are candidates"
    return f"limit {limit:,} of {matching:,} {what}"


def log_ticks(high: int) -> list[int]:
    """Tick values of a log axis from 1 up to the first of 1, 2, 5 × 10^n at or above ``high``,
    each to be labelled with its whole value (Plotly's own labels read "1 2 5 10 2 5 100")."""
    ticks, decade = [], 1
    while True:
        for step in (1, 2, 5):
            ticks.append(step * decade)
            if step * decade >= max(high, 1):
                return ticks
        decade *= 10


def saved_run_labels(runs: Sequence[SavedRunSummary]) -> dict[str, UUID]:
    """Each saved run's label in a list to pick from, to its id: its name and when it was
    saved, to the second; two runs of one name saved in one second get " · 2", " · 3" in the
    order given. Keyed by the bare label they were one option, and the analyst who picked
    "both" compared a run with itself (0 wins, 225 ties, p 1.0)."""
    labels: dict[str, UUID] = {}
    for run in runs:
        label = base = f"{run.name} · {run.saved_at:%Y-%m-%d %H:%M:%S}"
        repeat = 1
        while label in labels:
            repeat += 1
            label = f"{base} · {repeat}"
        labels[label] = run.run_id
    return labels


def other_workspace_results(held: str, workspace: str) -> str:
    """What a screen says once when the results it held were computed in another workspace
    and it drops them (escaped: both are names people typed)."""
    return (
        f"The results computed in the workspace “{escape_text(held)}” are not shown here: they "
        f"are that workspace's. Run them again for “{escape_text(workspace)}”."
    )
