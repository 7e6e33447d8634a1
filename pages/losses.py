"""How a run's lost relevant passages are shown (Runs and Evaluate): rendering only.

Every number is core's (``core.analysis.diagnosis`` through the facade): the share of each
cause, the ceiling sentence, the queries by nDCG lost, each lost passage's evidence. One module
for both screens, so the two show a diagnosis in one way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from core.analysis.sentences import count, escape_text
from core.service import CAUSE_NOTES, LostCause, LostPassage, RunDiagnosis


def difference_rows(lost: LostPassage, k: int) -> list[dict[str, Any]]:
    """An outranked passage's per-term evidence under an analyst's headers (the fields'
    snake_case names, ``lost_tf_part`` and ``kth_contribution``, were the table's headers)."""
    return [
        {
            "term": d.term,
            "idf": d.idf,
            "tf here": d.lost_tf,
            "TF part here": d.lost_tf_part,
            "contribution here": d.lost_contribution,
            f"tf at rank {k}": d.kth_tf,
            f"TF part at rank {k}": d.kth_tf_part,
            f"contribution at rank {k}": d.kth_contribution,
            "gap": d.gap,
        }
        for d in lost.differences
    ]


def render_diagnosis(run: RunDiagnosis, key: str, label: Callable[[str], str]) -> None:
    """The share of each cause (a bar chart), the ceiling in words, the queries by nDCG lost,
    and one query's lost passages with the evidence for each cause; ``key`` keeps two screens'
    widgets apart; ``label`` names a lost unit as Search does (``service.unit_label``), read
    only for the query shown."""
    st.markdown(
        f"**{count(run.lost, 'relevant passage')}** of {run.relevant:,} are outside the top "
        f"{run.k} at limit {run.limit:,}; {count(run.unjudged, 'passage')} of the top {run.k}s "
        "have no grade (Judged@k's hole: unknown, not lost)."
    )
    causes = list(run.by_cause)
    chart = go.Figure(
        go.Bar(
            x=[run.share(c) for c in causes],
            y=[c.value for c in causes],
            orientation="h",
            text=[f"{run.by_cause[c]:,} ({run.share(c):.0%})" for c in causes],
            textposition="auto",
        )
    )
    chart.update_layout(height=200, margin={"t": 10, "b": 10}, xaxis={"tickformat": ".0%"})
    st.plotly_chart(chart, key=f"{key}_diagnosis_chart", config={"displayModeBar": False})
    st.info(run.ceiling_note)
    table = [
        {
            "query": q.query,
            f"nDCG@{run.k}": q.ndcg,
            "nDCG lost": q.ndcg_lost,
            "relevant": q.relevant,
            "lost": len(q.lost),
            **{c.value: sum(1 for p in q.lost if p.cause is c) for c in causes},
            "unjudged in top k": len(q.unjudged),
        }
        for q in run.queries
    ]
    st.dataframe(table, hide_index=True, key=f"{key}_diagnosis_table")
    lossy = [q for q in run.queries if q.lost]
    if not lossy:
        return
    picked = st.selectbox(
        "Lost passages of",
        range(len(lossy)),
        format_func=lambda i: f"{lossy[i].query} (nDCG lost {lossy[i].ndcg_lost:.3f})",
        key=f"{key}_diagnosis_query",
    )
    query = lossy[picked or 0]
    for lost in query.lost:
        with st.container(border=True):
            st.markdown(
                lost_passage_markdown(lost, run.k, label(lost.chunk_id)), unsafe_allow_html=True
            )
            if lost.cause is LostCause.OUTRANKED:
                st.dataframe(
                    difference_rows(lost, run.k),
                    hide_index=True,
                    key=f"{key}-diff-{query.query_id}-{lost.chunk_id}",
                )


def lost_passage_markdown(lost: LostPassage, k: int, label: str) -> str:
    """One lost passage in words, named by ``label`` ("source 184 · passage 1"), every number
    core's (escaped: ids and terms are user data)."""
    head = (
        f"**{escape_text(lost.cause.value)}** · grade {lost.grade} · {escape_text(label)} — "
        f"{escape_text(CAUSE_NOTES[lost.cause])}"
    )
    lacks = ", ".join(escape_text(t) for t in lost.missing_terms) or "none"
    if lost.cause is LostCause.VOCABULARY:
        own = ", ".join(
            f"{escape_text(o.term)} (tf {o.tf}, idf {o.idf:.2f})" for o in lost.own_terms
        )
        return f"{head}  \nlacks every query term: {lacks}  \nits own terms: {own or '—'}"
    if lost.cause is LostCause.LIMIT:
        return (
            f"{head}  \nmatches {count(lost.matched_terms or 0, 'query term')} (lacks {lacks}); "
            "candidate "
            f"#{lost.position:,}, while the last one kept matched {lost.matched_at_cut}; a "
            f"limit of **{lost.smallest_limit:,}** makes it a candidate"
        )
    if lost.cause is LostCause.OUTRANKED:
        deciding = lost.deciding_term
        decided = (
            f"decided on **{escape_text(deciding.term)}** (idf {deciding.idf:.4f}): TF part "
            f"{deciding.lost_tf_part:.4f} here against {deciding.kth_tf_part:.4f} at rank {k}, "
            f"a gap of {deciding.gap:.4f}"
            if deciding is not None
            else ""
        )
        return (
            f"{head}  \nrank {lost.rank}, score {lost.score:.4f} against {lost.kth_score:.4f} "
            f"at rank {k}; {decided}"
        )
    return head
