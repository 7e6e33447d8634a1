"""Entities: who and what the passages mention, and where. Rendering only.

A filterable table, then one entity's passages in the store's order with its
mentions marked (offsets recorded at ingest, not re-extracted), and a button
that runs a search for it. The extractor's limits are stated, not hidden.
"""

from __future__ import annotations

import streamlit as st

from core.analysis.presentation import Span, clip_end, escape_text, highlight_html
from core.service import EXAMPLE_WITH_NAMES, EXTRACTOR_LIMITS, PASSAGE_MARK
from pages.common import offer_sample, screen, workspace

service = screen()
ws = workspace()
st.title("Entities")
st.caption(EXTRACTOR_LIMITS)
entities = service.list_entities(workspace=ws)
if not entities:
    if service.is_empty(workspace=ws):
        offer_sample(service)
    else:
        st.info(
            "No names were found in this workspace's passages. Names are found by their capital "
            "letters, so lower-case text has none to find — the Cranfield sample is such a text. "
            f"The bundled example `{EXAMPLE_WITH_NAMES.name}` names people, organisations and "
            "places; add it to see this screen at work, or upload your own files."
        )
        if st.button("Add the example with names", key="load_example"):
            service.load_example_with_names(workspace=ws)
            st.rerun()
    st.stop()

needle = st.text_input("Filter by name", key="entity_filter").casefold().strip()
shown = [e for e in entities if needle in e.entity.name.casefold()]
st.dataframe(
    [{"name": e.entity.name, "kind": e.entity.kind, "passages": e.passages} for e in shown],
    hide_index=True,
    key="entity-table",
)
if not shown:
    st.info("No entity matches the filter.")
    st.stop()
by_id = {str(e.entity.entity_id): e for e in shown}
chosen_id = st.selectbox(
    "Show the passages of",
    list(by_id),
    key="entity_choice",
    format_func=lambda i: (
        f"{by_id[i].entity.name} ({by_id[i].entity.kind}, {by_id[i].passages} passages)"
    ),
)
chosen = by_id[chosen_id].entity
if st.button(f"Search for “{chosen.name}”", key="search_entity"):
    st.switch_page(
        "pages/search.py", query_params={"q": chosen.name, "k": "10", "limit": "1000", "ws": ws}
    )
for passage in service.entity_passages(chosen.entity_id, workspace=ws):
    chunk = passage.chunk
    spans = [Span(start=m.start, end=m.end, label=chosen.name) for m in passage.mentions]
    end = clip_end(chunk.text, spans)
    with st.container(border=True):
        st.markdown(
            f"source {escape_text(chunk.source_id)} · passage {chunk.chunk_index + 1} · "
            f"chars {chunk.start_char}–{chunk.end_char} · {len(spans)} mention(s)",
            unsafe_allow_html=True,
        )
        st.markdown(highlight_html(chunk.text, spans, end=end), unsafe_allow_html=True)
        if end < len(chunk.text):
            with st.expander("show all"):
                st.markdown(highlight_html(chunk.text, spans), unsafe_allow_html=True)
        st.page_link(
            "pages/search.py",
            label="why not? — where this passage stands in a search for the entity",
            icon=":material/help:",
            query_params={
                "q": chosen.name,
                "k": "10",
                "limit": "1000",
                "ws": ws,
                "why": f"{chunk.source_id}{PASSAGE_MARK}{chunk.chunk_index + 1}",
            },
        )
