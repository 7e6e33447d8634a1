"""Judge: walk a query set and grade its pooled passages 0-3 from the keyboard. Rendering only.

The pool, the order that hides which ranker found a passage, the rater, the progress and
the agreement are core's (``core.service.judging``); this page shows one passage at a time
with the query's terms highlighted and turns keys into grades: 0-3 grade and move on,
right/left move without grading, up/down change query. It opens at the first passage the
rater has not graded, so judging resumes where it stopped.
"""

from __future__ import annotations

import streamlit as st

from core.analysis.presentation import count, escape_text, highlight_html, term_spans
from core.service import GRADE_NAMES, JudgmentError, JudgmentFormat, QueryFormat
from pages.common import offer_sample, screen, workspace

#: Session keys: the query set, and the query and passage shown, per workspace.
SET_KEY, QUERY_KEY, PASSAGE_KEY = "judge_set", "judge_query", "judge_passage"

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
        except (JudgmentError, ValueError) as exc:
            st.error(f"Not saved: {exc}")
        else:
            st.session_state[SET_KEY] = saved.name
            st.success(f"Saved “{saved.name}”: {count(saved.queries, 'query', 'queries')}.")

sets = [s.name for s in service.query_sets(workspace=ws)]
if not sets:
    st.info("Make a query set above to start judging.")
    st.stop()
chosen = st.selectbox("Query set", sets, key=SET_KEY)
position = int(st.session_state.get(QUERY_KEY, 0))
try:
    pool = service.pool(chosen, position, workspace=ws)
except IndexError:  # another set, shorter than where the last one stood
    pool = service.pool(chosen, 0, workspace=ws)
position = pool.position
at = int(st.session_state.get(PASSAGE_KEY, pool.next_ungraded or 0))
at = min(max(at, 0), max(len(pool.passages) - 1, 0))

st.markdown(
    f"Query **{position + 1} of {pool.queries}**: {escape_text(pool.query)} · "
    f"graded {pool.graded} of {count(len(pool.passages), 'pooled passage')}"
)
st.progress(pool.graded / len(pool.passages) if pool.passages else 1.0)


def go(query: int, passage: int | None) -> None:
    st.session_state[QUERY_KEY] = min(max(query, 0), pool.queries - 1)
    if passage is None:
        st.session_state.pop(PASSAGE_KEY, None)
    else:
        st.session_state[PASSAGE_KEY] = passage


if not pool.passages:
    st.info("No passage of this workspace contains a term of this query: nothing to grade.")
else:
    passage = pool.passages[at]
    graded = "not graded yet" if passage.grade is None else f"your grade: {passage.grade}"
    st.caption(f"Passage {at + 1} of {len(pool.passages)} · {graded}")
    spans = term_spans(passage.text, pool.terms, service.workspace_profile(ws))
    st.markdown(highlight_html(passage.text, spans), unsafe_allow_html=True)
    columns = st.columns(len(GRADE_NAMES))
    for grade, label in enumerate(GRADE_NAMES):
        if columns[grade].button(f"{grade} · {label}", key=f"grade_{grade}", shortcut=str(grade)):
            service.grade(pool.query, passage.chunk_id, grade, workspace=ws)
            if at + 1 < len(pool.passages):
                go(position, at + 1)
            else:
                go(position + 1, None)
            st.rerun()
moves = st.columns(4)
if moves[0].button("← passage", key="judge_back", shortcut="left"):
    go(position, at - 1)
    st.rerun()
if moves[1].button("passage →", key="judge_skip", shortcut="right"):
    go(position, at + 1)
    st.rerun()
if moves[2].button("↑ query", key="judge_prev_query", shortcut="up"):
    go(position - 1, None)
    st.rerun()
if moves[3].button("query ↓", key="judge_next_query", shortcut="down"):
    go(position + 1, None)
    st.rerun()

st.subheader("Agreement")
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
    st.download_button(label, data, file_name=f"{chosen}.{fmt_name}", key=f"export_{label}")
