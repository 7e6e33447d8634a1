"""Compare rankings: one query, two BM25 rankers side by side. Rendering only.

Both rankings come from ONE candidate read (``service.compare``), so they share
the statistics, tf and lengths and differ only in the formula: a what-if needs no
re-index. The rankers are the workspace's BM25 (the seed constants), the textbook
BM25 of ``core/domain/classic.py``, and BM25 with the analyst's k1 and b. Query, k, limit,
the rankers, their parameters and the chosen passage live in the URL, so a link
reproduces the view; a page per ranker pair was rejected (no side-by-side, no
movement). Every number comes from core; the page only formats.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.analysis.presentation import (
    FORMULA,
    IDF_FORMULAS,
    RANKER_COLUMNS,
    explanation_rows,
    formula_lines,
    idf_line,
    rankers_summary,
    stemming_line,
)
from core.analysis.sentences import (
    CHOICE_GONE_NOTE,
    EMPTY_QUERY_NOTE,
    EMPTY_REASON_SENTENCES,
    SCORE_FORMAT,
    SPACES_QUERY_NOTE,
    count,
    escape_text,
    link_float,
    query_terms_markdown,
    score_text,
)
from core.service import KIND_LABELS, MAX_K1, QUERY_BOUNDS_NOTE, CompareView, Ranker, RankerKind
from pages.common import (
    K_MAX,
    QUERY_DEFAULTS,
    offer_sample,
    screen,
    sync_query_params,
    workspace,
    write_query_params,
)
from pages.narrowing import narrowing

#: Session keys of the query widgets (own keys: Search's widgets keep theirs).
KEYS = {"q": "c_q", "k": "c_k", "limit": "c_limit"}
#: Session key of the URL this page last adopted.
URL_MARKER = "_compare_url"
#: Each side's URL names: kind, k1, b.
SIDES: dict[str, tuple[str, str, str]] = {"A": ("ra", "ka", "ba"), "B": ("rb", "kb", "bb")}
#: Each side's ranker before anyone chose: the workspace's against the textbook's.
SIDE_DEFAULTS: dict[str, RankerKind] = {"A": RankerKind.WORKSPACE, "B": RankerKind.CLASSIC}
#: Where a custom ranker's k1 and b start (the workspace's, core's constants).
CUSTOM_DEFAULT = Ranker.of(RankerKind.CUSTOM)
#: Number formats of the per-term tables (the numbers are core's, unrounded).
TERM_FORMATS = {
    "idf": st.column_config.NumberColumn("idf", format="%.4f"),
    "TF part": st.column_config.NumberColumn("TF part", format="%.4f"),
    "contribution": st.column_config.NumberColumn("contribution", format="%.4f"),
}
#: URL name of the chosen passage.
PASSAGE_PARAM = "p"


#: Session key of the passage a link asked to explain, until it is first checked against the
#: results: a passage the analyst's own earlier choice named is not "the link's".
LINKED_PASSAGE_KEY = "_compare_linked_passage"
#: Session key of the sentences about the link's rankers that were not used as given.
RANKER_NOTES_KEY = "_compare_rankers_notes"


def sync_rankers_from_url() -> None:
    """Adopt the rankers (and the chosen passage) when the URL carries them and they changed;
    a ranker, k1 or b the link asks for and that cannot be used is replaced with a sentence
    (core's rule, ``link_float``), never silently."""
    params = st.query_params
    url = tuple(params.get(name) for names in SIDES.values() for name in names)
    url += (params.get(PASSAGE_PARAM),)
    if url != st.session_state.get("_compare_rankers_url"):
        st.session_state["_compare_rankers_url"] = url
        notes: list[tuple[str, object, str]] = []
        for side, (kind, k1, b) in SIDES.items():
            asked = params.get(kind)
            try:
                chosen = RankerKind(asked or SIDE_DEFAULTS[side].value)
            except ValueError:
                chosen = SIDE_DEFAULTS[side]
                notes.append(
                    (
                        f"c_kind_{side}",
                        chosen,
                        f"The link asked for {kind}={asked!r}, which is not a ranker: ranker "
                        f"{side} is {KIND_LABELS[chosen]} instead.",
                    )
                )
            st.session_state[f"c_kind_{side}"] = chosen
            for name, key, start, high in (
                (k1, f"c_k1_{side}", CUSTOM_DEFAULT.k1, MAX_K1),
                (b, f"c_b_{side}", CUSTOM_DEFAULT.b, 1.0),
            ):
                number = link_float(name, params.get(name), start, 0.0, high)
                st.session_state[key] = number.value
                if number.note:
                    notes.append((key, number.value, number.note))
        st.session_state["c_passage"] = st.session_state[LINKED_PASSAGE_KEY] = params.get(
            PASSAGE_PARAM
        )
        st.session_state[RANKER_NOTES_KEY] = notes
    for side, default in SIDE_DEFAULTS.items():
        st.session_state.setdefault(f"c_kind_{side}", default)
        st.session_state.setdefault(f"c_k1_{side}", CUSTOM_DEFAULT.k1)
        st.session_state.setdefault(f"c_b_{side}", CUSTOM_DEFAULT.b)
    for key, used, note in st.session_state.get(RANKER_NOTES_KEY, []):
        if st.session_state.get(key) == used:  # said while the replacement stands
            st.warning(note, icon=":material/link:")


def ranker_inputs(side: str, column: Any) -> Ranker:
    kind = column.selectbox(
        f"Ranker {side}",
        list(RankerKind),
        key=f"c_kind_{side}",
        format_func=lambda k: KIND_LABELS[RankerKind(k)],
    )
    if RankerKind(kind) is RankerKind.CUSTOM:
        left, right = column.columns(2)
        k1 = left.number_input(
            f"k1 ({side})", min_value=0.0, max_value=MAX_K1, step=0.1, key=f"c_k1_{side}"
        )
        b = right.number_input(
            f"b ({side})", min_value=0.0, max_value=1.0, step=0.05, key=f"c_b_{side}"
        )
        return Ranker.of(kind, k1=float(k1), b=float(b))
    return Ranker.of(kind)


def write_url(view: CompareView, a: Ranker, b: Ranker) -> None:
    write_query_params(KEYS, URL_MARKER, view.query, view.k, view.limit)
    values: dict[str, str] = {}
    for (kind, k1, bb), ranker in zip(SIDES.values(), (a, b), strict=True):
        values[kind] = ranker.kind.value
        values[k1] = f"{ranker.k1:g}"
        values[bb] = f"{ranker.b:g}"
    if view.chosen:
        values[PASSAGE_PARAM] = view.chosen
    st.query_params.update(values)
    url = tuple(values[name] for names in SIDES.values() for name in names)
    st.session_state["_compare_rankers_url"] = (*url, values.get(PASSAGE_PARAM))


def label_of(source_id: str, chunk_index: int) -> str:
    return f"{escape_text(source_id)} · passage {chunk_index + 1}"


def render_lists(view: CompareView) -> None:
    comparison = view.comparison
    left, right = st.columns(2)
    movement = {m.chunk_id: m for m in comparison.movements}
    for column, ranked, ranker, side in (
        (left, comparison.a, comparison.ranker_a, "A"),
        (right, comparison.b, comparison.ranker_b, "B"),
    ):
        column.markdown(f"**{side}: {escape_text(ranker.label)}**")
        lines = []
        for rank, r in enumerate(ranked, start=1):
            m = movement[r.chunk.id]
            if side == "B":
                shift = m.movement
                arrow = f"▲{shift}" if shift > 0 else f"▼{-shift}" if shift < 0 else "="
                arrow += "" if m.in_top_a else " (new)"
            else:
                arrow = ""
            lines.append(
                f"{rank}. {label_of(r.chunk.source_id, r.chunk.chunk_index)} &nbsp; "
                f"**{score_text(r.score)}** {arrow}"
            )
        column.markdown("  \n".join(lines) or "_nothing_", unsafe_allow_html=True)


def render_movements(view: CompareView) -> None:
    rows = [
        {
            "passage": f"{m.source_id} · passage {m.chunk_index + 1}",
            "rank A": m.rank_a,
            "rank B": m.rank_b,
            "movement (A→B)": m.movement,
            "score A": m.score_a,
            "score B": m.score_b,
            "in top k of": "A and B" if m.in_top_a and m.in_top_b else "A" if m.in_top_a else "B",
        }
        for m in view.comparison.movements
    ]
    st.dataframe(
        rows,
        hide_index=True,
        key="c-movements",
        column_config={
            name: st.column_config.NumberColumn(name, format=SCORE_FORMAT)
            for name in ("score A", "score B")
        },
    )


def render_chosen(view: CompareView) -> None:
    comparison = view.comparison
    options = [m.chunk_id for m in comparison.movements]
    names = {
        m.chunk_id: f"{m.source_id} · passage {m.chunk_index + 1}" for m in comparison.movements
    }
    if not options:
        return
    linked = st.session_state.pop(LINKED_PASSAGE_KEY, None)
    if st.session_state.get("c_passage") not in options:
        asked = st.session_state.get("c_passage")
        if asked and asked == linked:
            st.warning(
                f"The link asked to explain passage p={escape_text(repr(asked))}, which is not "
                "among these results: the passage below is explained instead.",
                icon=":material/link:",
            )
        elif asked:  # the analyst's own earlier choice (CHOICE_GONE_NOTE says what changed)
            st.info(CHOICE_GONE_NOTE)
        st.session_state["c_passage"] = view.chosen if view.chosen in options else options[0]
    st.selectbox(
        "Passage to explain under both rankers",
        options,
        key="c_passage",
        format_func=lambda cid: names.get(cid, cid),
    )
    a, b = view.explanation_a, view.explanation_b
    if a is None or b is None:
        return
    st.markdown(f"`{FORMULA}`")
    st.markdown(f"N = {view.n_docs:,}, avgdl = {view.avg_doc_length:.2f}, dl = {a.doc_length}")
    chosen = next((m for m in comparison.movements if m.chunk_id == view.chosen), None)
    ranks = None if chosen is None else (chosen.rank_a, chosen.rank_b)
    st.markdown(escape_text(rankers_summary(a, b, ranks)))
    left, right = st.columns(2)
    for column, explanation, ranker, side in (
        (left, a, comparison.ranker_a, "A"),
        (right, b, comparison.ranker_b, "B"),
    ):
        column.markdown(
            f"**{side}: {escape_text(ranker.label)}** — score {explanation.score:.4f}  \n"
            f"`{IDF_FORMULAS[explanation.idf_form]}`"
        )
        column.dataframe(
            explanation_rows(explanation, RANKER_COLUMNS),
            column_config=TERM_FORMATS,
            hide_index=True,
            key=f"c-terms-{side}",
        )
        lines = [idf_line(p, explanation.idf_form) for p in explanation.terms if p.tf > 0]
        column.code(
            "\n".join([*lines, *formula_lines(explanation)]), language=None, wrap_lines=True
        )


service = screen()
ws = workspace()
st.title("Compare rankings")
st.caption(
    "One query, two rankers, ONE candidate read: both lists use the same statistics, tf and "
    "passage lengths, so what differs is only the formula. Scores compare only within one list."
)
sync_query_params(KEYS, QUERY_DEFAULTS, URL_MARKER)
sync_rankers_from_url()
offer_sample(service)

query = st.text_input(
    "Query",
    key=KEYS["q"],
    placeholder="e.g. aeroelastic models of heated wings",
    help=QUERY_BOUNDS_NOTE,
)
k_col, limit_col = st.columns(2)
k = int(k_col.number_input("k", min_value=1, max_value=K_MAX, key=KEYS["k"]))
limit = int(limit_col.number_input("limit", min_value=0, step=100, key=KEYS["limit"]))
side_a, side_b = st.columns(2)
ranker_a = ranker_inputs("A", side_a)
ranker_b = ranker_inputs("B", side_b)

within = narrowing(service, ws)
if query.strip():
    chosen = st.session_state.get("c_passage")
    try:
        view = service.compare(
            query, ranker_a, ranker_b, k, limit, workspace=ws, chosen=chosen or None,
            within=within,
        )  # fmt: skip
    except ValueError as exc:  # a bound of core.service.bounds, in its own words
        st.error(f"Not compared: {escape_text(str(exc))}.")
        st.stop()
    write_url(view, ranker_a, ranker_b)
    st.markdown(query_terms_markdown(view.terms, view.stopwords_dropped, view.characters_dropped))
    if stemmed := stemming_line(view.surface_terms):
        st.markdown(f"**Indexed as** ({view.profile.value} profile): {stemmed}")
    comparison = view.comparison
    if view.empty_reason:
        reason = view.empty_reason
        st.info(f"Nothing to compare: {EMPTY_REASON_SENTENCES.get(reason, reason)}.")
    else:
        excluded = "" if view.within is None else f", {view.filtered_out:,} excluded by the filter"
        st.markdown(
            f"Overlap at {view.k}: **{comparison.shared} of {len(comparison.a)}** "
            f"({comparison.overlap:.0%}) · {count(comparison.ranked, 'candidate')} ranked by both "
            f"(of {view.matching_passages:,} matching{excluded}, limit {view.limit:,})"
        )
        render_lists(view)
        st.subheader("Rank movement")
        render_movements(view)
        st.subheader("Per-term contributions under both rankers")
        render_chosen(view)
elif not query:
    st.info(EMPTY_QUERY_NOTE)
else:
    st.info(SPACES_QUERY_NOTE)
