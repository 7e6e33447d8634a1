"""Search's result cards as text, written once per result list and kept for the reruns that
draw the same list again.

A card is one Markdown element (header, contribution bar, marked text, the whole text and "why
this score" as ``<details>``, marks line, entities); ten of them were ~2-3 ms of a Search rerun
to write (marking the terms, the bar, the explanation; bench/bench_rerun.py, issue 50). Many
reruns draw the same list: a grade given or the comparison or "why not?" opened reruns the
results' fragment with the result it drew, and a full rerun whose search inputs did not change
gets the very same ``SearchResult`` back from the service's cache. So the cards are kept in
session state with the result they were written for, held by the object itself (so its id is
never another's) and reused only for that object: a new search is a new object, new cards. Only
the last list is kept, per session. The grade a card says ("your grade: ...") is not kept: it
is added when drawn. Rejected: a process-wide cache keyed by query and workspace (the service's
result cache already is one; a second key would have to follow the workspace's generation and
entity corrections as it does).

With grading off, nothing goes between two cards, so the ten are drawn as ONE Markdown element
(``all_cards``), each card's text as before, ``CARD_GAP`` between two: each element is a message
the server builds, hashes and queues (~0.08 ms apiece on top of its bytes), ten of them ~0.6 ms
of a typed query's rerun (bench/bench_rerun.py, issue 50 item 3). With grading on, each card
stays an element of its own with its grade's radio under it. Rejected: ``st.fragment`` around
the query input so a typed query reruns less (AppTest and a server's full rerun on a link
would still pay it all, and the URL, k and limit would have to move inside it).
"""

from __future__ import annotations

import streamlit as st

from core.analysis.explanation_html import ALL_CLASS, details_html, why_details_html
from core.analysis.marking import mark_counts, term_spans
from core.analysis.presentation import (
    chip_html,
    clip_end,
    contribution_bar_html,
    highlight_html,
    term_colours,
)
from core.analysis.sentences import escape_text, score_text
from core.service import RankedPassage, SearchResult

#: Session key of the last result list's cards: (the ``SearchResult``, its cards).
CARDS_KEY = "_search_cards"
#: Between two cards drawn as one element (``all_cards``): an empty block of its own (blank
#: lines around it) that keeps the card before it its last block's margin, so the cards stand
#: where ten elements put them (Chromium: every box to the pixel, issue 50). ``lx-gap`` has no
#: rule in core's ``PASSAGE_STYLE``: it only names the break (tests split the cards at it).
CARD_GAP = '\n\n<div class="lx-gap"></div>\n\n'


def marked_terms(result: SearchResult) -> list[str]:
    """The terms marked in every passage: an expanded search's added terms are scored like the
    typed ones, so they are marked too."""
    return result.distinct_terms + (result.expansion.added if result.expansion else [])


def card(
    passage: RankedPassage, result: SearchResult, scale: float, colours: dict[str, str]
) -> tuple[str, str]:
    """One result's card as the Markdown before and after where its marks line may add the
    analyst's grade. ``scale`` (the top score) and ``colours`` (one per marked term) are the
    result list's."""
    chunk = passage.chunk
    spans = term_spans(chunk.text, marked_terms(result), result.profile)
    end = clip_end(chunk.text, spans)
    counts = mark_counts(spans)
    marks = (
        "marks: "
        + ", ".join(f"{escape_text(t)} ×{n}" for t, n in sorted(counts.items()))
        + f" · candidate #{passage.candidate_position} in the store's order"
    )
    moved = ""
    if result.expansion is not None:
        was = "not ranked before" if passage.rank_before is None else f"was #{passage.rank_before}"
        brought = (
            f" · entered the top {result.k} by “{escape_text(passage.brought_by)}”"
            if passage.brought_by
            else ""
        )
        moved = f"({was}{brought}) &nbsp; "
    entities = (
        '\n\n<div class="lx-entities">entities: '
        + chip_html(e.name for e in passage.entities)
        + "</div>"
        if passage.entities
        else ""
    )
    # The first result's text carries the stylesheet of every mark, bar, chip and details on
    # the page (core's PASSAGE_STYLE): styled inline, they were ~1.2 KB of each card's ~4 KB.
    # One element for the header, bar, text, marks, entities, the whole text and the
    # explanation: each element is a message the server builds, hashes and sends and the
    # browser lays out, ~0.1 ms of server time apiece (bench/bench_rerun.py). "show all" and
    # "why this score" are HTML <details> the browser opens without asking the server: as
    # tracked expanders they were two elements a result and a full rerun per opening.
    whole = (
        details_html(
            f"show all ({len(chunk.text):,} characters)",
            highlight_html(chunk.text, spans, colours, styled=False),
            ALL_CLASS,
        )
        + "\n\n"
        if end < len(chunk.text)
        else ""
    )
    before = (
        f"**#{passage.rank}** {moved}&nbsp; **{score_text(passage.score)}** &nbsp; "
        f"source {escape_text(chunk.source_id)} · passage {chunk.chunk_index + 1} · "
        f"chars {chunk.start_char}–{chunk.end_char}\n\n"
        + contribution_bar_html(passage.explanation, colours, scale)
        + "\n\n"
        + highlight_html(chunk.text, spans, colours, end, styled=passage is result.passages[0])
        + "\n\n"
        + whole
        + f'<div class="lx-marks">{marks}'
    )
    return before, "</div>" + entities + "\n\n" + why_details_html(passage.explanation)


def cards(result: SearchResult) -> list[tuple[str, str]]:
    """Every passage's ``card``: the kept ones when they were written for this very result."""
    kept = st.session_state.get(CARDS_KEY)
    if kept is not None and kept[0] is result:
        written: list[tuple[str, str]] = kept[1]
        return written
    top = max(p.score for p in result.passages)
    colours = term_colours(marked_terms(result))  # one per result list, as every bar shares
    written = [card(passage, result, top, colours) for passage in result.passages]
    st.session_state[CARDS_KEY] = (result, written)
    return written


def all_cards(result: SearchResult) -> str:
    """Every card (``cards``, no grade said) as the Markdown of one element, ``CARD_GAP`` between
    two."""
    return CARD_GAP.join(before + after for before, after in cards(result))
