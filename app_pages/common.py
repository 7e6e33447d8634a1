"""What every screen shares: the one service, the active workspace, chart builders.

Not a screen (app.py registers only the screen files with ``st.navigation``).
The service is created once per server process with ``st.cache_resource``: the
store and its event-loop thread must outlive reruns and be shared by sessions;
per-session creation would give every browser tab its own empty in-memory store.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
import streamlit as st

from core.presentation import term_colours
from core.service import DEFAULT_WORKSPACE, SAMPLE_LABEL, LexplainService, RankedPassage

#: Session-state key of the active workspace name.
WORKSPACE_KEY = "workspace"
#: URL query parameter of the workspace (shared by every page).
WORKSPACE_PARAM = "ws"


@st.cache_resource(show_spinner="Opening the store…")
def get_service() -> LexplainService:
    """The process-wide service, configured from ``LEXPLAIN_*`` settings."""
    return LexplainService.from_settings()


def workspace() -> str:
    """The workspace the sidebar selected."""
    name = st.session_state.get(WORKSPACE_KEY)
    return name if isinstance(name, str) and name else DEFAULT_WORKSPACE


def contribution_bar(passage: RankedPassage, terms: Sequence[str]) -> go.Figure:
    """A stacked horizontal bar of one passage's per-term contributions (numbers from core)."""
    colours = term_colours(terms)
    figure = go.Figure()
    for part in sorted(passage.explanation.terms, key=lambda p: (-p.contribution, p.term)):
        if part.contribution <= 0:
            continue
        figure.add_trace(
            go.Bar(
                x=[part.contribution],
                y=[""],
                orientation="h",
                name=part.term,
                marker_color=colours[part.term],
                text=[f"{part.term} {part.contribution:.2f}"],
                textposition="inside",
                insidetextanchor="middle",
                hovertemplate=(
                    f"{part.term}: idf {part.idf:.4f} × TF part {part.tf_part:.4f}"
                    f" = {part.contribution:.4f}<extra></extra>"
                ),
            )
        )
    figure.update_layout(
        barmode="stack",
        height=70,
        margin={"l": 0, "r": 0, "t": 0, "b": 0},
        showlegend=False,
        xaxis={"visible": False},
        yaxis={"visible": False},
    )
    return figure


def length_histogram(lengths: Sequence[int], avg_doc_length: float) -> go.Figure:
    """Passage lengths (tokens) with the corpus avgdl marked."""
    figure = go.Figure(go.Histogram(x=list(lengths), nbinsx=60, marker_color="#4C78A8"))
    figure.add_vline(
        x=avg_doc_length,
        line_dash="dash",
        line_color="#E45756",
        annotation_text=f"avgdl = {avg_doc_length:.2f}",
        annotation_position="top right",
    )
    figure.update_layout(
        height=320,
        margin={"l": 0, "r": 0, "t": 30, "b": 0},
        xaxis_title="passage length (tokens, stopwords excluded)",
        yaxis_title="passages",
        bargap=0.05,
    )
    return figure


def offer_sample(service: LexplainService) -> None:
    """On an empty workspace: one click loads the sample collection."""
    if service.list_sources(workspace=workspace()):
        return
    slot = st.empty()
    with slot.container():
        st.info(
            "This workspace is empty. Load the sample collection to get an explained ranking "
            "in seconds, or add your own files on the Upload page."
        )
        clicked = st.button(
            f"Load the sample collection ({SAMPLE_LABEL})", key="load_sample", type="primary"
        )
    if not clicked:
        return
    bar = slot.progress(0.0, text="Loading the sample…")

    def progress(done: int, total: int, _label: str) -> None:
        bar.progress(done / total, text=f"Loading the sample… {done:,} of {total:,} documents")

    report = service.load_sample(workspace=workspace(), on_progress=progress)
    slot.success(
        f"Loaded {report.passages_written:,} passages from {report.documents:,} documents"
        + (f" ({'; '.join(report.notes)})" if report.notes else "")
        + ". Try a query, e.g. “aeroelastic models of heated high speed aircraft”."
    )
