"""Judge: walk a query set and grade its pooled passages 0-3 from the keyboard. Rendering only.

The pool, the order that hides which ranker found a passage, the rater, the progress and
the agreement are core's (``core.service.judging``, ``core.service.judging_pool``); this page
shows one passage at a time with the query's terms highlighted and turns keys into grades:
0-3 grade and move on, right/left move without grading, up/down change query. It opens where
the rater stopped (``SetProgress.resume_at``).

"Order: hardest first" walks the set by core's pre-retrieval predictors
(``service.queries_hardest_first``: the queries Search would call likely hard first), so graders
start where rankings are weakest; up/down and "grade and move on" follow that order, and the
positions shown stay the set's own.

The grading panel is a fragment: a grade reruns the panel, not the page, and the panel reads
its pool from session state (computed once per query) and moves it and the set's progress
forward from the grade itself (``JudgingPool.graded_as``, ``SetProgress.with_pool``). Rerunning
the whole page per grade cost 0.7-1.3 s in Chromium (the set, the pool, agreement and three
exports each time). A full run of the page drops the cached pools, so a grade given
elsewhere (Search) shows here on the next visit.
"""

from __future__ import annotations

from typing import Any

import streamlit as st
from pydantic import ValidationError

from core.analysis.marking import term_spans
from core.analysis.presentation import highlight_html
from core.analysis.sentences import EMPTY_REASON_SENTENCES, count, escape_text
from core.service import (
    DEFAULT_LIMIT,
    DEFAULT_POOL,
    GRADE_NAMES,
    LIMIT_MAX,
    MAX_K1,
    MAX_POOL_DEPTH,
    POOL_DEPTH,
    POOL_RANKER_LABELS,
    POOL_RANKERS,
    JudgingPool,
    JudgmentError,
    JudgmentFormat,
    LexplainService,
    PoolSpec,
    Profile,
    QueryFormat,
    RankerKind,
    SetProgress,
    one_sentence,
    refused_heading,
)
from pages.common import offer_sample, screen, workspace

#: Session keys: the query and passage shown; the pools (position -> pool) and the progress
#: of the set being judged; which set and pool settings those belong to; a panel message.
QUERY_KEY, PASSAGE_KEY = "judge_query", "judge_passage"
POOLS_KEY, PROGRESS_KEY, ACTIVE_KEY = "judge_pools", "judge_progress", "judge_active"
NOTE_KEY = "judge_note"
#: Session key of the query set chosen.
SET_KEY = "judge_set"
#: Session key of the order the set is walked in, and of the (set, order) it was applied to.
ORDER_KEY, ORDERED_KEY = "judge_order", "judge_ordered"
#: The orders offered; the second is core's hardest-first order.
AS_SAVED, HARDEST_FIRST = "as saved", "hardest first"
#: The pool settings a rater starts from (core's).
DEFAULTS = DEFAULT_POOL

service = screen()
ws = workspace()
st.title("Judge")
if service.is_empty(workspace=ws):
    offer_sample(service)
    st.stop()

with st.expander("New query set", expanded=not service.query_sets(workspace=ws)):
    name = st.text_input("Name", key="judge_new_name")
    fmt = st.selectbox("Format", [f.value for f in QueryFormat], key="judge_new_format")
    pasted = st.text_area("Queries (one per line, or the file's text)", key="judge_new_text")
    upload = st.file_uploader("…or a file", key="judge_new_file")
    if st.button("Save the set", key="judge_new_save"):
        data = upload.getvalue() if upload is not None else pasted
        try:
            saved = service.save_query_set(name, data, fmt, workspace=ws)
        except (JudgmentError, ValueError) as exc:  # a bad line, or a name pydantic refused
            st.error(f"Not saved: {escape_text(one_sentence(exc))}")
        else:
            st.session_state[SET_KEY] = saved.name
            st.success(f"Saved “{saved.name}”: {count(saved.queries, 'query', 'queries')}.")
            if saved.refused:
                lines = "".join(f"\n- {escape_text(r.sentence)}" for r in saved.refused)
                st.warning(f"{escape_text(refused_heading(saved.refused))}{lines}")

sets = [s.name for s in service.query_sets(workspace=ws)]
if not sets:
    st.info("Make a query set above to start judging.")
    st.stop()
chosen = st.selectbox("Query set", sets, key=SET_KEY)
walk = st.selectbox(
    "Order",
    [AS_SAVED, HARDEST_FIRST],
    key=ORDER_KEY,
    help="Hardest first: the queries whose terms are common or whose matches the limit cuts "
    "first (pre-retrieval predictors), so grading starts where rankings are likely weakest.",
)

with st.expander("Pool: which rankers propose passages, and how deep"):
    cols = st.columns([3, 1, 1, 1, 1])
    rankers = cols[0].multiselect(
        "Rankers",
        list(POOL_RANKERS),
        default=list(DEFAULTS.rankers),
        format_func=lambda r: POOL_RANKER_LABELS[r],
        key="judge_rankers",
    )
    depth = cols[1].number_input("Depth d", 1, MAX_POOL_DEPTH, POOL_DEPTH, key="judge_depth")
    limit = cols[2].number_input("Limit", 1, LIMIT_MAX, DEFAULT_LIMIT, key="judge_limit")
    custom = RankerKind.CUSTOM in rankers
    k1 = cols[3].number_input(
        "k1", 0.0, MAX_K1, DEFAULTS.k1, 0.1, key="judge_k1", disabled=not custom
    )
    b = cols[4].number_input("b", 0.0, 1.0, DEFAULTS.b, 0.05, key="judge_b", disabled=not custom)
    st.caption(
        "Each ranker adds its top d passages for the query; the union is shown in an order that"
        " does not reveal which ranker found a passage. The unlimited rankers pool the passages"
        " the limit cut, so what the limit costs becomes measurable."
    )
try:
    spec = PoolSpec(
        rankers=tuple(rankers), depth=int(depth), limit=int(limit), k1=float(k1), b=float(b)
    )
except ValidationError as exc:
    st.error(f"Pool settings: {escape_text(one_sentence(exc))}.")
    st.stop()

state = st.session_state
active = (ws, chosen, spec.model_dump_json())
if state.get(ACTIVE_KEY) != active:  # another set or other pool settings: start afresh
    state[ACTIVE_KEY] = active
    state[PROGRESS_KEY] = service.set_progress(chosen, workspace=ws, spec=spec)
    for key in (QUERY_KEY, PASSAGE_KEY):
        state.pop(key, None)
state[POOLS_KEY] = {}  # a full run reads pools afresh (grades given on other screens)
profile = service.workspace_profile(ws)
hardest = service.queries_hardest_first(chosen, workspace=ws) if walk == HARDEST_FIRST else []
# The set's positions in the order walked, and where each stands in it.
order = [q.position for q in hardest] or list(range(state[PROGRESS_KEY].queries))
rank_of = {position: i for i, position in enumerate(order)}
if state.get(ORDERED_KEY) != (active, walk):  # another order: start at its first unfinished
    state[ORDERED_KEY] = (active, walk)
    state.pop(PASSAGE_KEY, None)
    if hardest:
        finished = state[PROGRESS_KEY].finished
        state[QUERY_KEY] = next((q.position for q in hardest if q.text not in finished), order[0])
    else:
        state.pop(QUERY_KEY, None)


def step(position: int, by: int) -> int:
    """The query ``by`` places from ``position`` in the order walked (staying at either end)."""
    at = min(max(rank_of.get(position, 0) + by, 0), len(order) - 1)
    return order[at]


def current_pool(position: int) -> JudgingPool:
    """The pool at ``position`` from session state, computed once per query."""
    pools: dict[int, JudgingPool] = state[POOLS_KEY]
    if position not in pools:
        pools[position] = service.pool(chosen, position, workspace=ws, spec=spec)
        state[PROGRESS_KEY] = state[PROGRESS_KEY].with_pool(pools[position])
    return pools[position]


def go(query: int, passage: int | None) -> None:
    progress: SetProgress = state[PROGRESS_KEY]
    state[QUERY_KEY] = min(max(query, 0), progress.queries - 1)
    if passage is None:
        state.pop(PASSAGE_KEY, None)
    else:
        state[PASSAGE_KEY] = passage


def give(pool: JudgingPool, at: int, grade: int, svc: LexplainService) -> None:
    """A grade key: store it, move the cached pool and progress on, show the next passage."""
    pool = state[POOLS_KEY].get(pool.position, pool)  # with a grade given since it was drawn
    passage = pool.passages[at]
    try:
        svc.grade(pool.query, passage.chunk_id, grade, workspace=ws)
    except ValueError as exc:  # a query too long to keep a grade under (core's sentence)
        state[NOTE_KEY] = f"Not graded: {one_sentence(exc)}"
        return
    except KeyError as exc:  # the passage went away (a re-index) since the pool was read
        state[NOTE_KEY] = f"Not graded: {exc}"
        state[POOLS_KEY].pop(pool.position, None)
        return
    after = pool.graded_as(passage.chunk_id, grade)
    state[POOLS_KEY][pool.position] = after
    state[PROGRESS_KEY] = state[PROGRESS_KEY].with_pool(after)
    if at + 1 < len(after.passages):
        go(pool.position, at + 1)
    else:
        go(step(pool.position, 1), None)


@st.fragment
def grading_panel(svc: LexplainService, profile: Profile) -> None:
    """The passage to grade and the keys; a key reruns only this panel."""
    progress: SetProgress = state[PROGRESS_KEY]
    position = min(max(int(state.get(QUERY_KEY, progress.resume_at)), 0), progress.queries - 1)
    pool = current_pool(position)
    progress = state[PROGRESS_KEY]
    at = state.get(PASSAGE_KEY)
    if at is None:
        at = pool.next_ungraded or 0
    at = min(max(int(at), 0), max(len(pool.passages) - 1, 0))
    st.markdown(
        f"Query **{position + 1} of {pool.queries}**: {escape_text(pool.query)} · "
        f"graded {pool.graded} of {count(len(pool.passages), 'pooled passage')}"
    )
    if hardest:
        where = rank_of.get(position, 0)
        difficulty = hardest[where].difficulty
        line = difficulty.line if difficulty is not None else None
        st.caption(
            f"{where + 1} of {len(order)}, hardest first"
            + (f" · {escape_text(line)}" if line else "")
        )
    st.progress(pool.graded / len(pool.passages) if pool.passages else 1.0)
    st.caption(
        f"This set, for you: {len(progress.finished)} of "
        f"{count(progress.queries, 'query', 'queries')} fully graded · "
        f"{len(progress.started)} started"
    )
    st.progress(len(progress.finished) / progress.queries)
    if note := state.pop(NOTE_KEY, None):
        st.warning(note)
    moves: list[tuple[str, str, str, Any]] = [
        ("← passage", "judge_back", "left", (position, at - 1)),
        ("passage →", "judge_skip", "right", (position, at + 1)),
        ("↑ query", "judge_prev_query", "up", (step(position, -1), None)),
        ("query ↓", "judge_next_query", "down", (step(position, 1), None)),
    ]
    if not pool.passages:
        reason = pool.empty_reason or "no passage contains any term"
        st.info(f"Nothing to grade: {EMPTY_REASON_SENTENCES.get(reason, reason)}.")
    else:
        passage = pool.passages[at]
        graded = "not graded yet" if passage.grade is None else f"your grade: {passage.grade}"
        st.caption(f"Passage {at + 1} of {len(pool.passages)} · {graded}")
        spans = term_spans(passage.text, pool.terms, profile)
        st.markdown(highlight_html(passage.text, spans), unsafe_allow_html=True)
        columns = st.columns(len(GRADE_NAMES))
        for grade, label in enumerate(GRADE_NAMES):
            columns[grade].button(
                f"{grade} · {label}",
                key=f"grade_{grade}",
                shortcut=str(grade),
                on_click=give,
                args=(pool, at, grade, svc),
            )
    for column, (label, key, shortcut, target) in zip(st.columns(4), moves, strict=True):
        column.button(label, key=key, shortcut=shortcut, on_click=go, args=target)


grading_panel(service, profile)

with st.expander("Import judgments (TREC qrels, BEIR TSV, CSV query,docid,rating)"):
    fmt_in = st.selectbox("Format", [f.value for f in JudgmentFormat], key="judge_import_format")
    qrels = st.file_uploader("Judgments file", key="judge_import_file")
    if st.button("Import into this set", key="judge_import", disabled=qrels is None):
        assert qrels is not None
        try:
            imported = service.import_judgments(qrels.getvalue(), fmt_in, chosen, workspace=ws)
        except (JudgmentError, KeyError) as exc:
            st.error(f"Not imported: {exc}")
        else:
            st.success(f"Imported {count(imported.stored, 'grade')}.")
            for what, plural, listed in (
                ("query not in this set", "queries not in this set", imported.unknown_queries),
                ("id this workspace does not hold", "ids this workspace does not hold",
                 imported.unknown_ids),
            ):  # fmt: skip
                if listed:
                    st.warning(
                        f"Not imported, the grades of {count(len(listed), what, plural)}: "
                        f"{escape_text(', '.join(listed))}"
                    )

st.subheader("Agreement")
st.button("Refresh agreement and exports", key="judge_refresh")
agreement = service.agreement(chosen, workspace=ws)
if agreement.kappa is None:
    st.markdown(
        f"Raters: {escape_text(', '.join(agreement.raters) or 'none yet')}. Agreement needs two"
        " raters grading the same passages with more than one grade between them."
    )
else:
    st.markdown(
        f"{agreement.method}'s kappa **{agreement.kappa:.3f}** over "
        f"{count(agreement.shared_pairs, 'pair')} graded by several of "
        f"{escape_text(', '.join(agreement.raters))}."
    )
st.caption(agreement.rule)

st.subheader("Export")
for fmt_name, by_document in (("trec", True), ("csv", True), ("trec", False)):
    label = f"{fmt_name.upper()} qrels by {'document' if by_document else 'passage'}"
    try:
        data = service.export_judgments(
            chosen, JudgmentFormat(fmt_name), workspace=ws, by_document=by_document
        )
    except JudgmentError as exc:
        st.caption(f"{label}: {exc}")
        continue
    st.download_button(
        label, data, file_name=f"{chosen}.{fmt_name}", key=f"export_{label}", on_click="ignore"
    )
