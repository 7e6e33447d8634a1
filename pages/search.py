"""Search: ranked passages with the arithmetic behind every score. Rendering only.

Every number comes from ``service.search`` (``ScoreExplanation``); this page
formats. Query, k, limit live in the URL so a link reproduces the view.

Each result can be graded 0-3 for the typed query (``service.grade``, under the signed-in
e-mail or "local"); the query joins a query set (``service.add_to_query_set``: the
workspace's "Graded from Search" unless the analyst picks another) so Evaluate counts the
grade. The grading controls are built only when the analyst turns grading on: ten radios and
a read of the grades on every rerun would tax every search for the few that grade.
"""

from __future__ import annotations

import hashlib

import streamlit as st

from core.analysis.presentation import (
    CANDIDATE_ORDER,
    SCORE_NOTE,
    compare_explanations,
    explanation_markdown,
    explanation_rows,
    stemming_line,
)
from core.analysis.sentences import (
    COLUMN_DECIMALS,
    EMPTY_QUERY_NOTE,
    EMPTY_REASON_SENTENCES,
    SPACES_QUERY_NOTE,
    count,
    escape_text,
    query_terms_markdown,
    shown_of_matching,
)
from core.service import (
    FB_DOCS,
    FB_TERMS,
    GRADE_NAMES,
    MAX_FEEDBACK,
    ORIGINAL_WEIGHT,
    PASSAGE_MARK,
    QUERY_BOUNDS_NOTE,
    SEARCH_SET,
    ExpansionSpec,
    RankedPassage,
    ScoreExplanation,
    SearchResult,
    expansion_rows,
    one_sentence,
)
from pages.common import (
    K_MAX,
    LIMIT_MAX,
    QUERY_DEFAULTS,
    offer_sample,
    screen,
    sync_query_params,
    workspace,
    write_query_params,
)
from pages.narrowing import narrowing
from pages.search_cards import all_cards, cards

#: What the limit means, next to its input.
LIMIT_HELP = (
    "limit = how many candidates the store hands to BM25, chosen by matched-term count, "
    "before any scoring"
)
#: Width in pixels of the k and limit inputs (a fifth of a wide page, as their columns were).
NUMBER_WIDTH = 240
#: This page's widget keys per URL name (the same names).
KEYS = {"q": "q", "k": "k", "limit": "limit"}
#: Session key of the URL this page last adopted.
URL_MARKER = "_search_url"
#: URL parameter naming a passage for "why not?" (links from other screens set it).
WHY_PARAM = "why"
#: Session key of the "why not?" expander: tracked, so a closed one builds no control (its
#: caption and text box were ~1 ms of every Search rerun on Cranfield, bench/bench_rerun.py).
WHY_NOT_OPEN = "why_not_open"

#: Data-frame formats of the fractional columns: core's decimals, as the Markdown tables use.
NUMBER_FORMATS = {
    column: st.column_config.NumberColumn(column, format=f"%.{decimals}f")
    for column, decimals in COLUMN_DECIMALS.items()
}
#: The Expand control's choices, as offered.
EXPAND_CHOICES = {
    "none": "none (the query as typed)",
    "rm3": "RM3: feedback from the top passages",
    "rocchio": "from my grades (Rocchio: this query's graded passages)",
}
#: Said under a search whose expansion learned from the grades.
GRADES_NOTE = (
    "Learned from this query's grades: the passages graded 1-3 pull their terms in (beta "
    "0.75), those graded 0 push theirs out (gamma 0.15). The graded passages are the ones it "
    "was taught, so judging this ranking by the same grades would flatter it; Runs measures "
    "it by residual ranking instead, the passages fed back left out."
)
#: What an expanded search changes, said under its expanded query.
EXPANDED_NOTE = (
    "Ranked again with the expanded query: each term's contribution is weight × idf × TF part. "
    "The candidate rule applies to the expanded terms: the passages matching the most distinct "
    "expanded terms (then by id) up to the limit are scored, so N, df and the counts above are "
    "the expanded read's."
)


def expand_controls() -> ExpansionSpec | None:
    """The Expand choice and, for RM3, its parameters (Anserini's defaults, from core)."""
    chosen = st.selectbox(
        "Expand",
        list(EXPAND_CHOICES),
        format_func=EXPAND_CHOICES.__getitem__,
        key="expand",
        help="RM3 adds weighted terms from the unexpanded ranking's top passages, then ranks "
        "again; every added term's weight and source is shown.",
    )
    if chosen == "rocchio":
        st.caption(GRADES_NOTE)
        return ExpansionSpec.rocchio()
    if chosen != "rm3":
        return None
    a, b, c = st.columns(3)
    return ExpansionSpec(
        fb_docs=int(a.number_input("feedback passages", 1, MAX_FEEDBACK, FB_DOCS, key="fb_docs")),
        fb_terms=int(b.number_input("terms kept", 1, MAX_FEEDBACK, FB_TERMS, key="fb_terms")),
        original_weight=float(
            c.number_input(
                "original weight", 0.0, 1.0, ORIGINAL_WEIGHT, 0.05, key="fb_alpha",
                help="The typed query's share of the weights; the feedback has the rest.",
            )
        ),
    )  # fmt: skip


def render_expansion(result: SearchResult) -> None:
    """The expanded query: each term's weight, its parts, and which feedback passages gave it."""
    expansion = result.expansion
    if expansion is None:
        return
    st.markdown(
        f"**Expanded query** ({escape_text(expansion.spec.label)}): "
        + ", ".join(escape_text(t) for t in expansion.added)
        + " added"
    )
    if expansion.note:
        st.info(f"Expansion: {escape_text(expansion.note)}.")
    st.dataframe(expansion_rows(expansion), column_config=NUMBER_FORMATS, hide_index=True)
    st.caption(EXPANDED_NOTE)


def sync_from_url() -> None:
    sync_query_params(KEYS, QUERY_DEFAULTS, URL_MARKER)


def write_url(query: str, k: int, limit: int) -> None:
    write_query_params(KEYS, URL_MARKER, query, k, limit)


def explanation_table(explanation: ScoreExplanation, what: str = "the score above") -> None:
    """Every term's numbers, all rows visible, with the total stated above (never scrolled to)."""
    rows = explanation_rows(explanation)
    st.markdown(
        f"**total = {explanation.score:.4f}** = {what} (the sum of the contribution column)"
    )
    st.markdown(explanation_markdown(rows))


#: Session keys of the grading toggle, the set a grade's query joins, and the last refusal.
GRADING_KEY, GRADE_SET_KEY, GRADE_ERROR_KEY = "grading", "grade_set", "_grade_error"


def grade_key(query: str, chunk_id: str) -> str:
    """One radio per query and passage: a new query starts from its own grades."""
    return f"grade-{hashlib.sha256(query.encode()).hexdigest()[:12]}-{chunk_id}"


def grade_label(grade: int) -> str:
    return f"{grade} {GRADE_NAMES[grade]}"


def give_grade(query: str, chunk_id: str, key: str, query_set: str) -> None:
    """Radio callback: keep the grade, the query joining ``query_set`` first."""
    grade = st.session_state.get(key)
    if grade is None:
        return
    try:
        service.add_to_query_set(query, query_set, workspace=workspace())
        service.grade(query, chunk_id, int(grade), workspace=workspace())
    except ValueError as exc:
        st.session_state[GRADE_ERROR_KEY] = one_sentence(exc)
    except KeyError as exc:
        st.session_state[GRADE_ERROR_KEY] = str(exc)


def grading_controls(query: str) -> tuple[str, dict[str, int]] | None:
    """The grading toggle; when on, the set a grade's query joins and this rater's grades."""
    if not st.toggle(
        "Grade these results",
        key=GRADING_KEY,
        help="Grade each result 0-3 for this query; Evaluate and Truncation can use the grades.",
    ):
        return None
    sets = [s.name for s in service.query_sets(workspace=workspace())]
    options = sets if SEARCH_SET in sets else [SEARCH_SET, *sets]
    chosen = str(
        st.selectbox(
            "Query set the query joins",
            options,
            key=GRADE_SET_KEY,
            help="Evaluate finds a graded query through a set; a grade counts in every set "
            "holding the same query text.",
        )
    )
    st.caption(f"Grading as {escape_text(service.rater)}; a second grade replaces the first.")
    if error := st.session_state.pop(GRADE_ERROR_KEY, None):
        st.error(f"Not graded: {escape_text(error)}")
    return chosen, service.my_grades(query, workspace=workspace())


def render_grade(passage: RankedPassage, query: str, grading: tuple[str, dict[str, int]]) -> None:
    query_set, grades = grading
    key = grade_key(query, passage.chunk.id)
    given = grades.get(passage.chunk.id)
    st.radio(
        "grade",
        list(range(len(GRADE_NAMES))),
        index=given,
        format_func=grade_label,
        horizontal=True,
        key=key,
        on_change=give_grade,
        args=(query, passage.chunk.id, key, query_set),
        label_visibility="collapsed",
    )


def render_compare(result: SearchResult) -> None:
    by_rank = {p.rank: p for p in result.passages}
    ranks = list(by_rank)

    def label(rank: int) -> str:
        p = by_rank[rank]
        return f"#{rank} · {p.chunk.source_id} · {p.score:.2f}"

    opened = st.expander("Compare two results", key="cmp-open", on_change="rerun")
    if not opened.open:
        return
    with opened:
        left, right = st.columns(2)
        rank_a = left.selectbox("A", ranks, index=0, format_func=label, key="cmp_a")
        rank_b = right.selectbox("B", ranks, index=1, format_func=label, key="cmp_b")
        a, b = by_rank[rank_a], by_rank[rank_b]
        comparison = compare_explanations(
            a.explanation, b.explanation, names=(f"#{rank_a}", f"#{rank_b}")
        )
        # The point first: who wins and on which terms; the full arithmetic below, full width.
        st.markdown(escape_text(comparison.summary))
        st.dataframe(
            [{"term": d.term, "A": d.a, "B": d.b, "A − B": d.difference} for d in comparison.terms],
            column_config={
                name: st.column_config.NumberColumn(name, format="%.4f")
                for name in ("A", "B", "A − B")
            },
            hide_index=True,
            key="cmp-diff",
        )
        for name, passage in (("A", a), ("B", b)):
            st.caption(f"{name}: " + escape_text(label(passage.rank)))
            explanation_table(passage.explanation)


def adopt_why_param() -> None:
    """A link may name the passage to look up (``why=<passage id>``), e.g. from Entities."""
    wanted = st.query_params.get(WHY_PARAM)
    if wanted and wanted != st.session_state.get("_why_url"):
        st.session_state["_why_url"] = wanted
        st.session_state["why_not_id"] = wanted
        st.session_state[WHY_NOT_OPEN] = True


def render_why_not(result: SearchResult) -> None:
    """Where one chosen passage stands for this query, and what the limit does to it."""
    adopt_why_param()
    opened = st.expander(
        "why not? — where a passage you expected stands", key=WHY_NOT_OPEN, on_change="rerun"
    )
    if not opened.open:
        return
    with opened:
        st.caption(
            f"Type a source id (e.g. the number after “source” above) for its first passage, "
            f"or source{PASSAGE_MARK}n for its n-th passage (e.g. 184{PASSAGE_MARK}1)."
        )
        wanted = st.text_input("Source id, source#n or passage id", key="why_not_id").strip()
        if not wanted:
            return
        try:
            why = service.why_not(
                result.query, wanted, result.k, result.limit, workspace=workspace()
            )
        except KeyError:
            st.warning(f"No passage or source “{escape_text(wanted)}” in this workspace.")
            return
        chunk = service.passage(why.chunk_id, workspace=workspace())
        where = (
            f"source {escape_text(chunk.source_id)} · passage {chunk.chunk_index + 1}"
            if chunk is not None
            else escape_text(why.chunk_id)
        )
        contains = ", ".join(f"`{escape_text(t)}`" for t in why.contained_terms) or "none"
        lacks = ", ".join(f"`{escape_text(t)}`" for t in why.missing_terms) or "none"
        lines = [f"**{where}**", f"contains: {contains}  \nlacks: {lacks}"]
        if why.position is None:
            lines.append(
                "It contains no query term: no limit makes it a candidate, so it never ranks."
            )
        else:
            verdict = (
                f"**the limit {why.limit:,} cut it** before scoring"
                if why.cut_by_limit
                else f"the limit {why.limit:,} kept it"
            )
            ahead = (
                "no candidate ahead of it"
                if why.position == 1
                else count(why.position - 1, "candidate") + " ahead of it"
            )
            lines.append(
                f"Candidate #{why.position:,} in the store's order ({ahead}; "
                f"{CANDIDATE_ORDER}), so {verdict}."
            )
            unlimited = (
                f"rank {why.unlimited_rank:,}" if why.unlimited_rank is not None else "no rank"
            )
            lines.append(f"Unlimited (every match scored): {unlimited}, score {why.score:.2f}.")
            limited = (
                f"rank {why.limited_rank} of the top-{why.k}"
                if why.limited_rank is not None
                else f"not in the top-{why.k}"
            )
            lines.append(f"At limit {why.limit:,}: {limited}.")
            lines.append(
                f"The smallest limit that would put it in the top-{why.k}: "
                f"**{why.smallest_limit:,}**."
                if why.smallest_limit is not None
                else f"Even with no limit it would not be in the top-{why.k}: "
                + (
                    f"every match scored, it would rank {why.unlimited_rank:,}."
                    if why.unlimited_rank is not None
                    else "it would not rank at all."
                )
            )
        st.markdown("  \n".join(lines), unsafe_allow_html=True)
        if why.position is not None:
            # What it scores, term by term: the answer to "why not higher?".
            explanation_table(
                service.explain(result.query, why.chunk_id, workspace=workspace()),
                what="its score, every match scored",
            )


@st.fragment
def render_results(result: SearchResult) -> None:
    """The results and what opens on them: opening the comparison, or grading, reruns only
    this part (Streamlit keeps ``result`` from the run that drew it), not the frame, the
    sidebar and the search (bench/bench_users.py: half an analyst's runs). An explanation or
    a long text opens in the browser, with no rerun at all."""
    # Above the results: an answer below ten long passages went unseen.
    render_why_not(result)
    st.caption(SCORE_NOTE)
    grading = grading_controls(result.query)
    # Each card written once per result list (pages.search_cards): a rerun drawing the same
    # list, a grade given or the comparison opened, only adds the grade to each marks line.
    # Not grading, the ten are one element: nothing goes between two.
    if grading is None:
        st.markdown(all_cards(result), unsafe_allow_html=True)
    else:
        for passage, (before, after) in zip(result.passages, cards(result), strict=True):
            given = grading[1].get(passage.chunk.id)
            said = " · unjudged" if given is None else f" · your grade: {grade_label(given)}"
            st.markdown(before + said + after, unsafe_allow_html=True)
            render_grade(passage, result.query, grading)
    if len(result.passages) >= 2:
        render_compare(result)
    # The exports are built on click (a callable), not on every rerun. One row, not two
    # columns: a block each is a message per rerun (bench/bench_rerun.py).
    row = st.container(horizontal=True)
    row.download_button(
        "Export CSV (with explanations)",
        result.to_csv,
        file_name="lexplain-results.csv",
        mime="text/csv",
    )
    row.download_button(
        "Export JSON (with explanations)",
        result.to_json,
        file_name="lexplain-results.json",
        mime="application/json",
    )


service = screen()
st.title("Search")
st.markdown(
    "**lexplain** ranks passages with BM25 and shows the arithmetic behind every score: "
    "each query term's idf, its TF part and its contribution."
)
offer_sample(service, query_key="q")
sync_from_url()
query = st.text_input(
    "Query",
    key="q",
    placeholder="e.g. aeroelastic models of heated aircraft",
    help=QUERY_BOUNDS_NOTE,
)
# One row of fixed-width inputs, not three columns: each block is a message per rerun.
numbers = st.container(horizontal=True)
k = int(
    numbers.number_input(
        "k", min_value=1, max_value=K_MAX, key="k", help="Results shown.", width=NUMBER_WIDTH
    )
)
limit = int(
    numbers.number_input(
        "limit", min_value=0, max_value=LIMIT_MAX, step=100, key="limit", help=LIMIT_HELP,
        width=NUMBER_WIDTH,
    )
)  # fmt: skip
write_url(query, k, limit)
within = narrowing(service, workspace())
expand = expand_controls()

if not query:  # a fresh screen, or Enter on an empty box: say what to type
    st.info(EMPTY_QUERY_NOTE)
elif not query.strip():
    st.info(SPACES_QUERY_NOTE)
else:
    try:
        result = service.search(
            query, k, limit, workspace=workspace(), within=within, expand=expand
        )
    except ValueError as exc:  # a bound of core.service.bounds, in its own words
        st.error(f"Not searched: {escape_text(str(exc))}.")
        st.stop()
    st.markdown(
        query_terms_markdown(result.terms, result.stopwords_dropped, result.characters_dropped)
    )
    if stemmed := stemming_line(result.surface_terms):
        st.markdown(f"**Indexed as** ({result.profile.value} profile): {stemmed}")
    corpus_line = (
        f"**Corpus:** N = {count(result.n_docs, 'passage')}, "
        f"avgdl = {result.avg_doc_length:.2f} tokens"
    )
    if result.terms:
        excluded = (
            ""
            if result.within is None
            else f" &nbsp;·&nbsp; {result.filtered_out:,} excluded by the filter"
        )
        corpus_line += (
            " &nbsp;·&nbsp; "
            + shown_of_matching(
                len(result.passages), result.matching_passages, result.within is not None
            )
            + f"{excluded} &nbsp;·&nbsp; {result.cut_by_limit:,} cut by the limit "
            f"({count(result.candidates_returned, 'candidate')} scored)"
        )
    st.markdown(corpus_line)
    if result.difficulty is not None and (hard := result.difficulty.line):
        st.caption(escape_text(hard))  # core's words (core.analysis.predictors)
    if result.within is not None:
        st.caption(
            f"Narrowed to {escape_text(result.within_words)}. IDF and avgdl are the whole "
            "workspace's (N above): the filter only decides which passages may be candidates."
        )
    if result.empty_reason:
        reason = result.empty_reason
        st.warning(f"No results: {EMPTY_REASON_SENTENCES.get(reason, reason)}.")
        if result.empty_reason == "every match cut by the limit":
            render_why_not(result)
    else:
        render_expansion(result)
        render_results(result)
