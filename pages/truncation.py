"""Truncation: what the candidate limit costs one query. Rendering only.

The store hands BM25 at most ``limit`` candidates, chosen by matched-term count
then id, before scoring; this page puts the limited top-k beside the unlimited
one, names what was cut and where it stood, and sweeps the limit. Every number
comes from ``service.truncation`` (one unlimited candidate read, analysed by
``core.analysis.truncation``); re-reading the store per slider position was rejected (a
round trip per point, and two reads may see two snapshots). Query, k and limit
live in the URL under the Search page's names, so a link reproduces the view.

With judgments (the workspace's grades of the query, or the judgment files chosen on
Evaluate), the sweep also shows the ceiling of each limit (``service.limit_ceiling``): BM25's
nDCG@k beside the best nDCG@k any ordering of the kept candidates reaches, so the analyst
sees whether the limit or the ranking costs more. Asked for, not drawn by default: it reads
the candidates a second time.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.analysis.presentation import CANDIDATE_ORDER, TIE_NOTE, stemming_line
from core.analysis.sentences import (
    EMPTY_QUERY_NOTE,
    EMPTY_REASON_SENTENCES,
    SPACES_QUERY_NOTE,
    escape_text,
    limit_of_matching,
    query_terms_markdown,
)
from core.service import (
    QUERY_BOUNDS_NOTE,
    CeilingJudgments,
    JudgmentError,
    LimitCeiling,
    TruncationView,
)
from pages.common import (
    EVALUATE_JUDGMENTS_KEY,
    K_MAX,
    LIMIT_MAX,
    QUERY_DEFAULTS,
    offer_sample,
    score_scatter,
    screen,
    sweep_chart,
    sync_query_params,
    workspace,
    write_query_params,
)
from pages.narrowing import narrowing

#: Session keys of the widgets (own keys: Search's widgets keep theirs).
KEYS = {"q": "t_q", "k": "t_k", "limit": "t_limit"}
#: Session key of the URL this page last adopted.
URL_MARKER = "_truncation_url"


#: Session key of the exact-limit box beside the slider.
BOX_KEY = "t_limit_box"


def limit_typed() -> None:
    """The box's value becomes the limit (the slider follows on this run)."""
    st.session_state["t_limit"] = st.session_state[BOX_KEY]


def sync_from_url() -> None:
    sync_query_params(KEYS, QUERY_DEFAULTS, URL_MARKER)


def write_url(query: str, k: int, limit: int) -> None:
    write_query_params(KEYS, URL_MARKER, query, k, limit)


def passage_label(source_id: str, chunk_index: int) -> str:
    return f"{escape_text(source_id)} · passage {chunk_index + 1}"


#: The ceiling's judgments: no ceiling, or the workspace's grades by passage or by document
#: (the Evaluate screen's files are offered too when it holds some).
NO_CEILING, BY_PASSAGE, BY_DOCUMENT = (
    "none",
    "this workspace's grades",
    "this workspace's grades, by document",
)
#: The option naming Evaluate's judgment files.
FILES = "the judgment files chosen on Evaluate"


def ceiling_judgments() -> CeilingJudgments | None:
    """What the analyst chose to judge the ceiling by; None for no ceiling."""
    files = st.session_state.get(EVALUATE_JUDGMENTS_KEY)
    options = [NO_CEILING, BY_PASSAGE, BY_DOCUMENT] + ([FILES] if files is not None else [])
    chosen = st.selectbox(
        "Ceiling of each limit, judged by",
        options,
        key="t_ceiling",
        help="With judgments, the sweep also shows the best nDCG@k any ordering of the "
        "candidates a limit keeps could reach, beside what BM25 reaches.",
    )
    if chosen == FILES and files is not None:
        st.caption(f"Judgments: {escape_text(files[0])}")
        return CeilingJudgments(by_document=True, files=(files[1], files[2]))
    if chosen in (BY_PASSAGE, BY_DOCUMENT):
        return CeilingJudgments(by_document=chosen == BY_DOCUMENT)
    return None


def render_ceiling(view: TruncationView, ceiling: LimitCeiling) -> None:
    """The ceiling's summary at the current limit and its table (every number core's)."""
    what = "documents" if ceiling.by_document else "passages"
    at_limit = next((p for p in ceiling.points if p.limit == view.limit), None)
    unlimited = ceiling.points[-1]
    if at_limit is not None:
        st.markdown(
            f"**At limit {view.limit:,}:** BM25 reaches nDCG@{view.k} **{at_limit.ndcg:.3f}**; "
            f"the best ordering of the kept candidates would reach **{at_limit.ceiling:.3f}**; "
            f"with every match kept the best is **{unlimited.ceiling:.3f}** "
            f"({ceiling.relevant:,} relevant of {ceiling.judged:,} judged {what}). The gap "
            "between the first two is the ranking's cost, between the last two the limit's."
        )
    st.dataframe(
        [
            {"limit": p.limit, f"BM25 nDCG@{view.k}": p.ndcg, "best of the kept": p.ceiling}
            for p in ceiling.points
        ],
        column_config={
            f"BM25 nDCG@{view.k}": st.column_config.NumberColumn(format="%.3f"),
            "best of the kept": st.column_config.NumberColumn(format="%.3f"),
        },
        hide_index=True,
        key="t_ceiling_table",
        height=220,
    )


def render_unlimited(view: TruncationView, column: Any) -> None:
    column.markdown(f"**Unlimited top-{view.k}** (every matching passage scored)")
    total = len(view.distinct_terms)
    lines = []
    for entry in view.unlimited:
        line = (
            f"{entry.rank}. {passage_label(entry.chunk.source_id, entry.chunk.chunk_index)}"
            f" &nbsp; **{entry.score:.2f}**"
        )
        if entry.cut:
            tie = (
                ", as many as the last kept candidate: cut by the passage-id tie-break"
                if entry.matched_terms == view.last_kept_terms
                else ""
            )
            line += (
                f" &nbsp; <span class='lx-cut' style='color:#E45756'>──cut──▶ missing: "
                f"candidate #{entry.candidate_position:,} of {view.report.matching:,}, "
                f"matches {entry.matched_terms} of {total} terms{tie}</span>"
            )
        lines.append(line)
    column.markdown("  \n".join(lines), unsafe_allow_html=True)


def render_limited(view: TruncationView, column: Any) -> None:
    column.markdown(f"**Limited top-{view.k}** (limit {view.limit:,})")
    if not view.limited:
        column.markdown(f"_nothing: {view.empty_reason}_")
        return
    lines = []
    for entry in view.limited:
        move = f"▲{entry.movement}" if entry.movement > 0 else "="
        move += " (new)" if entry.new else ""
        lines.append(
            f"{entry.rank}. {passage_label(entry.chunk.source_id, entry.chunk.chunk_index)}"
            f" &nbsp; **{entry.score:.2f}** &nbsp; <span class='lx-move'>{move}</span>"
        )
    column.markdown("  \n".join(lines), unsafe_allow_html=True)


service = screen()
st.title("Truncation")
st.markdown(
    "A store hands BM25 at most **limit** candidates, chosen by how many query terms they "
    "contain, *before* any scoring — so a passage with one rare term can rank first over the "
    "whole corpus and still be cut. This page shows what the limit costs a query."
)
offer_sample(service, query_key="t_q")
sync_from_url()
query = st.text_input(
    "Query",
    key="t_q",
    placeholder="e.g. aeroelastic models of heated aircraft",
    help=QUERY_BOUNDS_NOTE,
)
k = int(
    st.columns([1, 4])[0].number_input(
        "k", min_value=1, max_value=K_MAX, key="t_k", help="Top-k compared."
    )
)
limit = int(st.session_state["t_limit"])
within = narrowing(service, workspace())
view = None
if query.strip():
    try:
        view = service.truncation(query, k, limit, workspace=workspace(), within=within)
    except ValueError as exc:  # a bound of core.service.bounds, in its own words
        st.error(f"Not analysed: {escape_text(str(exc))}.")
# The slider's range follows the query; a new range is a new widget, which would start at its
# minimum. Writing the value back first carries the limit over; the number box beside it shows
# the same value and sets an exact one (a slider over thousands of candidates cannot).
limit = max(limit, 1)  # core refused a 0 above; both inputs start at 1
st.session_state["t_limit"] = st.session_state[BOX_KEY] = limit
box, track = st.columns([1, 4], vertical_alignment="bottom")
box.number_input(
    "limit",
    min_value=1,
    max_value=LIMIT_MAX,
    step=1,
    key=BOX_KEY,
    on_change=limit_typed,
    help="How many candidates the store hands to BM25, in its order: " + CANDIDATE_ORDER,
)
if view is not None:
    # Drawn once the query's candidate count is known: a range guessed before it (1,000)
    # jumped to the count (631) at the first query.
    limit = int(
        track.slider(
            "limit (drag)",
            min_value=1,
            max_value=view.limit_max,
            key="t_limit",
            label_visibility="hidden",
        )
    )
write_url(query, k, limit)

if view is None:
    if not query:  # otherwise core's refusal is shown above
        st.info(EMPTY_QUERY_NOTE)
    elif not query.strip():
        st.info(SPACES_QUERY_NOTE)
else:
    st.markdown(query_terms_markdown(view.terms, view.stopwords_dropped, view.characters_dropped))
    if stemmed := stemming_line(view.surface_terms):
        st.markdown(f"**Indexed as** ({view.profile.value} profile): {stemmed}")
    report = view.report
    if view.empty_reason in (
        "no letters or digits to search for",
        "no terms left after stopwords",
        "no passage contains any term",
        "the filter excludes every passage that contains a term",
    ):
        reason = view.empty_reason
        st.warning(f"Nothing to compare: {EMPTY_REASON_SENTENCES.get(reason, reason)}.")
    else:
        if view.within is not None:
            st.caption(
                f"Narrowed to {escape_text(view.within_words)}: "
                f"{view.filtered_out:,} passages holding a query term excluded by the filter, "
                "before the limit; IDF and avgdl stay the whole workspace's."
            )
        st.markdown(
            f"**Candidate order:** {CANDIDATE_ORDER} &nbsp;·&nbsp; "
            f"{limit_of_matching(view.limit, report.matching, view.within is not None)}"
            " &nbsp;·&nbsp; "
            f"**{len(report.cut)} of the unlimited top-{view.k} cut**, overlap "
            f"{report.overlap:.0%} &nbsp;·&nbsp; "
            f"**smallest safe limit: {report.smallest_safe_limit:,}** "
            f"(the smallest limit whose top-{view.k} equals the unlimited one)"
        )
        st.caption(TIE_NOTE)
        left, right = st.columns(2)
        render_unlimited(view, left)
        render_limited(view, right)
        st.markdown("**Sweep:** how much of the unlimited top-k survives as the limit grows")
        judged = ceiling_judgments()
        ceiling = None
        if judged is not None:
            try:
                ceiling = service.limit_ceiling(
                    query,
                    view.k,
                    [p.limit for p in report.sweep],
                    judged,
                    workspace=workspace(),
                )
            except JudgmentError as exc:
                st.error(f"The judgments cannot be used: {escape_text(str(exc))}")
            if ceiling is not None and not ceiling.points:
                st.info(
                    "Nothing judges this query as relevant there: grade its results on the "
                    "Search or Judge screen (or choose judgments that hold it) to see the "
                    "ceiling."
                )
        st.plotly_chart(sweep_chart(view, ceiling), key="sweep", config={"displayModeBar": False})
        if ceiling is not None and ceiling.points:
            render_ceiling(view, ceiling)
        st.markdown(
            "**Every matching passage:** terms matched against score — the store keeps the "
            "right of this chart first, so high-scoring passages on the left can be cut"
        )
        st.plotly_chart(score_scatter(view), key="scatter", config={"displayModeBar": False})
