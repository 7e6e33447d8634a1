"""Corpus: what the statistics behind every score are. Rendering only.

Counts, the passage-length histogram with avgdl marked (the dl/avgdl of every
explanation), and a term browser (df and idf per term, then its passages with tf).
"""

from __future__ import annotations

import streamlit as st

from core.analysis.marking import term_spans
from core.analysis.presentation import PROFILE_DESCRIPTIONS, highlight_html
from core.analysis.sentences import count, escape_text
from core.service import PARITY_QUERIES, Profile, TermInfo
from pages.common import length_histogram, offer_sample, screen, workspace

#: How many passages of a chosen term are shown with their text.
PREVIEW_PASSAGES = 5
#: Most passages of one term fetched for the table (a common term in a large corpus has many).
TERM_PASSAGES_SHOWN = 2000

service = screen()
ws = workspace()
profile = service.workspace_profile(ws)
st.title("Corpus")
view = service.corpus(workspace=ws)
summary = view.summary
if summary.passages == 0:
    offer_sample(service)
    st.stop()

cols = st.columns(5)
cols[0].metric("Sources", f"{summary.sources:,}")
cols[1].metric("Passages (N)", f"{summary.passages:,}")
cols[2].metric("Tokens", f"{summary.tokens:,}", help="Stopwords excluded, repeats included.")
cols[3].metric("Vocabulary", f"{summary.vocabulary:,}", help="Distinct terms.")
cols[4].metric("Average length (avgdl)", f"{summary.avg_doc_length:.2f}")
st.plotly_chart(
    length_histogram(view.doc_lengths, summary.avg_doc_length),
    key="lengths",
    config={"displayModeBar": False},
)

st.subheader("Tokenizer profile")
other = next(p for p in Profile if p is not profile)  # the one other profile
st.markdown(
    f"This workspace is tokenised with the **{profile.value}** profile "
    f"({PROFILE_DESCRIPTIONS[profile]}). Switching to **{other.value}** "
    f"({PROFILE_DESCRIPTIONS[other]}) re-indexes every passage; searches use the current "
    "index until the new one is complete."
)
if st.button(f"Re-index as {other.value}", key="reindex"):
    bar = st.progress(0.0, text="Re-indexing…")

    def reindexed(done: int, total: int, _label: str) -> None:
        bar.progress(done / total if total else 1.0, text=f"Re-indexing… {done:,} of {total:,}")

    passages = service.change_profile(ws, other, on_progress=reindexed)
    bar.empty()
    st.session_state["reindexed"] = (
        f"Re-indexed {count(passages, 'passage')} with the {other.value} profile."
    )
    st.rerun()
if done := st.session_state.pop("reindexed", None):
    st.success(done)

st.subheader("Term browser")
prefix = st.text_input(
    "Terms starting with", key="term_prefix", help="Normalised like every term: NFKC, casefold."
)
# Before a prefix is typed: the most frequent terms, so the browser is never a blank box.
terms: list[TermInfo] = (
    service.terms_with_prefix(prefix, workspace=ws) if prefix else service.top_terms(workspace=ws)
)
if prefix and not terms:
    st.info(f"No term starts with “{escape_text(prefix)}”.")
if not prefix and terms:
    st.caption(
        f"The {count(len(terms), 'most frequent term')} (by df, the passages containing it); "
        "type a prefix to find others."
    )
if terms:
    st.dataframe(
        [{"term": t.term, "df": t.df, "idf": t.idf} for t in terms],
        column_config={"idf": st.column_config.NumberColumn("idf", format="%.4f")},
        hide_index=True,
        key="term-table",
    )
    chosen = st.selectbox(
        "Passages containing",
        [t.term for t in terms],
        key="term_choice",
        format_func=lambda t: f"{t} (df {next(x.df for x in terms if x.term == t):,})",
    )
    rows = service.term_passages(chosen, workspace=ws, limit=TERM_PASSAGES_SHOWN)
    df = next(x.df for x in terms if x.term == chosen)
    if df > len(rows):
        st.caption(
            f"{len(rows):,} of the {df:,} passages containing “{escape_text(chosen)}” "
            "(the first by passage id), ordered by tf."
        )
    st.dataframe(
        [
            {
                "source": r.chunk.source_id,
                "passage": r.chunk.chunk_index + 1,
                "chars": f"{r.chunk.start_char}–{r.chunk.end_char}",
                "tf": r.tf,
                "dl": r.doc_length,
            }
            for r in rows
        ],
        hide_index=True,
        key="term-passages",
    )
    for r in rows[:PREVIEW_PASSAGES]:
        with st.container(border=True):
            st.markdown(
                f"source {escape_text(r.chunk.source_id)} · passage {r.chunk.chunk_index + 1}"
                f" · tf {r.tf}",
                unsafe_allow_html=True,
            )
            st.markdown(
                highlight_html(r.chunk.text, term_spans(r.chunk.text, [chosen], profile)),
                unsafe_allow_html=True,
            )

st.subheader("Parity check")
st.caption(
    f"Copies this workspace's passages into memory and asks both the same {PARITY_QUERIES} "
    "sampled queries (from its query sets, else from its terms) at the default limit and "
    "unlimited: every candidate and score must be identical to the bit."
)
if st.button("Check parity", key="parity"):
    with st.spinner("Comparing…"):
        report = service.parity(workspace=ws)
    if report.difference is None:
        st.success(escape_text(report.summary()))
    else:
        st.error(escape_text(report.summary()))
        sides = st.columns(2)
        for col, label, side in (
            (sides[0], "In memory (reference)", report.difference.reference),
            (sides[1], "This store", report.difference.checked),
        ):
            col.markdown(f"**{label}**: {escape_text(side.words())}")
            col.dataframe(side.rows(), hide_index=True)
