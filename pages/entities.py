"""Entities: who and what the passages mention, and where. Rendering only.

Counts by kind, a table searched by name, filtered by kind and sorted by the passages that
mention an entity (all from ``service.entity_overview``: the page filters and counts nothing),
then one entity's passages in the store's order with its mentions marked (offsets recorded at
ingest, not re-extracted), and a button that runs a search for it. The extractor's limits are
stated, not hidden.
"""

from __future__ import annotations

from uuid import UUID

import streamlit as st

from core.analysis.marking import Span
from core.analysis.presentation import clip_end, highlight_html
from core.analysis.sentences import count, escape_text
from core.service import (
    DEFAULT_K,
    DEFAULT_LIMIT,
    ENTITY_KIND_HEADINGS,
    ENTITY_KINDS,
    ENTITY_ORDERS,
    EXAMPLE_WITH_NAMES,
    EXAMPLE_WORKSPACE,
    EXTRACTOR_LIMITS,
    PASSAGE_MARK,
    EntityOrder,
)
from pages.common import WORKSPACE_PARAM, offer_sample, screen, workspace
from pages.narrowing import entity_search_params

#: The query parameters of a search for an entity: core's default k and limit.
SEARCH_PARAMS = {"k": str(DEFAULT_K), "limit": str(DEFAULT_LIMIT)}
#: What each order is called on the screen.
ORDER_LABELS: dict[EntityOrder, str] = {"passages": "passages mentioned", "name": "name"}
#: A one-time message: the example added elsewhere, or a merge refused and why.
EXAMPLE_NOTICE = "_example_notice"
#: The last re-extraction's report, shown once after the rerun it asks for.
REEXTRACTION_REPORT = "_reextraction_report"


def add_example_elsewhere() -> None:
    """Button callback: the example goes into its own workspace, which the link then opens
    (app.py follows a ``ws`` that differs from the current workspace)."""
    try:
        name = service.create_workspace(EXAMPLE_WORKSPACE)
    except ValueError as exc:  # with sign-in, someone else may hold the name
        st.session_state[EXAMPLE_NOTICE] = f"The example was not added: {exc}."
        return
    service.load_example_with_names(workspace=name)
    st.query_params[WORKSPACE_PARAM] = name


def merge_chosen(entity_id: UUID, into: UUID | None, workspace_name: str) -> None:
    """Button callback: merge, or say in words why not (a merge loop)."""
    if into is None:
        return
    try:
        service.merge_entity(entity_id, into, workspace=workspace_name)
    except ValueError as exc:
        st.session_state[EXAMPLE_NOTICE] = f"Not merged: {exc}."


def reextraction(workspace_name: str) -> None:
    """The button that finds the workspace's entities again, and what the last run changed."""
    if report := st.session_state.pop(REEXTRACTION_REPORT, None):
        st.success(
            f"Entities found again in {count(report.passages, 'passage')} of "
            f"{count(report.sources, 'source')}; the entities of {report.changed:,} changed."
        )
        st.table(
            [
                {
                    "kind": ENTITY_KIND_HEADINGS[kind],
                    "before": report.before[kind],
                    "after": report.after[kind],
                }
                for kind in ENTITY_KINDS
            ]
        )
    with st.expander("Find the entities again (after an upgrade of the extractor)"):
        st.caption(
            "Runs this version's extractor over every passage of the workspace, document by "
            "document as an upload does, in one atomic write: until it is done every screen "
            "sees the entities as they were. Corrections stay. An entity list given to "
            "`load --entities` is not kept: to use one again, run `python -m core reextract "
            "--workspace NAME --entities LIST.csv`."
        )
        if st.button("Find the entities again", key="reextract"):
            with st.spinner("Finding the entities again…"):
                found = service.reextract_entities(workspace=workspace_name)
            st.session_state[REEXTRACTION_REPORT] = found
            st.rerun()


service = screen()
ws = workspace()
st.title("Entities")
st.caption(EXTRACTOR_LIMITS)
# One facade call; the search box, kind and order below are read from the session state
# (a widget's value is there before it is drawn again).
overview = service.entity_overview(
    workspace=ws,
    name=st.session_state.get("entity_filter", ""),
    kind=st.session_state.get("entity_kind"),
    order=st.session_state.get("entity_order", ENTITY_ORDERS[0]),
)
if not overview.total and not overview.hidden:
    if service.is_empty(workspace=ws):
        offer_sample(service)
    else:
        st.info(
            "No names were found in this workspace's passages. Names are found by their capital "
            "letters, so lower-case text has none to find — the Cranfield sample is such a text. "
            f"The bundled example `{EXAMPLE_WITH_NAMES.name}` names people, organisations and "
            "places; add it to see this screen at work, or upload your own files."
        )
        if notice := st.session_state.pop(EXAMPLE_NOTICE, None):
            st.warning(escape_text(notice))
        left, right = st.columns(2)
        left.button(
            f"Add the example to a new workspace “{EXAMPLE_WORKSPACE}”",
            key="load_example_elsewhere",
            type="primary",
            on_click=add_example_elsewhere,
        )
        left.caption(
            f"Opens that workspace; “{escape_text(ws)}” stays as it is, so its counts and every "
            "score in it do not change."
        )
        if right.button(f"Add the example to “{ws}”", key="load_example"):
            service.load_example_with_names(workspace=ws)
            st.rerun()
        right.caption(
            f"Adds a document to “{escape_text(ws)}”: its passage count N, avgdl and so every "
            "idf and score in it change."
        )
        reextraction(ws)
    st.stop()

if notice := st.session_state.pop(EXAMPLE_NOTICE, None):
    st.warning(escape_text(notice))
reextraction(ws)
st.text_input("Search names", key="entity_filter", placeholder="e.g. warhol")
for column, kind in zip(st.columns(len(ENTITY_KINDS)), ENTITY_KINDS, strict=True):
    column.metric(ENTITY_KIND_HEADINGS[kind], f"{overview.by_kind[kind]:,}")
left, right = st.columns(2)
left.selectbox(
    "Kind",
    ENTITY_KINDS,
    index=None,
    key="entity_kind",
    placeholder="any kind",
    format_func=lambda kind: ENTITY_KIND_HEADINGS[kind],
)
right.radio(
    "Sort by", ENTITY_ORDERS, key="entity_order", horizontal=True, format_func=ORDER_LABELS.get
)
shown = overview.shown
st.caption(f"{len(shown):,} of {count(overview.total, 'entity', 'entities')} shown")
st.dataframe(
    [{"name": e.entity.name, "kind": e.entity.kind, "passages": e.passages} for e in shown],
    hide_index=True,
    key="entity-table",
)
if overview.hidden:
    with st.expander(f"Hidden from browsing: {count(len(overview.hidden), 'entity', 'entities')}"):
        for summary in overview.hidden:
            entity = summary.entity
            line, undo = st.columns([4, 1])
            line.markdown(
                f"{escape_text(entity.name)} ({entity.kind}, {count(summary.passages, 'passage')})"
            )
            undo.button(
                "Show again",
                key=f"unhide-{entity.entity_id}",
                on_click=service.hide_entity,
                args=(entity.entity_id, False),
                kwargs={"workspace": ws},
            )
if not shown:
    st.info("No entity matches the search.")
    st.stop()
by_id = {str(e.entity.entity_id): e for e in shown}
chosen_id = st.selectbox(
    "Show the passages of",
    list(by_id),
    key="entity_choice",
    format_func=lambda i: (
        f"{by_id[i].entity.name} ({by_id[i].entity.kind}, {count(by_id[i].passages, 'passage')})"
    ),
)
chosen = by_id[chosen_id].entity
left, right = st.columns(2)
if left.button(f"Search for “{chosen.name}”", key="search_entity"):
    st.switch_page(
        "pages/search.py", query_params={"q": chosen.name, **SEARCH_PARAMS, WORKSPACE_PARAM: ws}
    )
right.page_link(
    "pages/search.py",
    label=f"Search within its {count(by_id[chosen_id].passages, 'passage')}",
    icon=":material/filter_alt:",
    # No "q": Search keeps the query the analyst last typed, now narrowed to these passages.
    query_params={WORKSPACE_PARAM: ws, **entity_search_params(chosen.entity_id)},
)
for merged in overview.merged.get(chosen.entity_id, []):
    line, undo = st.columns([4, 1])
    line.caption(f"Also written “{escape_text(merged.name)}” ({merged.kind}): merged into it.")
    undo.button(
        "Separate",
        key=f"unmerge-{merged.entity_id}",
        on_click=service.unmerge_entity,
        args=(merged.entity_id,),
        kwargs={"workspace": ws},
    )
with st.expander(f"Correct “{escape_text(chosen.name)}”"):
    st.caption(
        "Corrections are kept for this workspace and hold for every upload to it: the list, "
        "the counts, the filters and the entities shown with each search result follow them."
    )
    kind_column, merge_column = st.columns(2)
    new_kind = kind_column.selectbox(
        "Kind",
        ENTITY_KINDS,
        index=ENTITY_KINDS.index(chosen.kind),
        key=f"kind-{chosen.entity_id}",
        format_func=lambda kind: ENTITY_KIND_HEADINGS[kind],
    )
    kind_column.button(
        "Change the kind",
        key="change_kind",
        disabled=new_kind == chosen.kind,
        on_click=service.set_entity_kind,
        args=(chosen.entity_id, new_kind),
        kwargs={"workspace": ws},
    )
    others = [s.entity for s in overview.shown if s.entity.entity_id != chosen.entity_id]
    into = merge_column.selectbox(
        f"Merge “{chosen.name}” into",
        others,
        index=None,
        key="merge_into",
        placeholder="another entity (e.g. the full name)",
        format_func=lambda entity: f"{entity.name} ({entity.kind})",
    )
    merge_column.button(
        "Merge",
        key="merge_entity",
        disabled=into is None,
        on_click=merge_chosen,
        args=(chosen.entity_id, into.entity_id if into is not None else None, ws),
    )
    st.button(
        "Hide from browsing",
        key="hide_entity",
        on_click=service.hide_entity,
        args=(chosen.entity_id,),
        kwargs={"workspace": ws},
        help="Leaves it out of this list, the narrowing choices and the search results' "
        "entities; a filter or a link naming it still works, and it can be shown again.",
    )
for passage in service.entity_passages(chosen.entity_id, workspace=ws):
    chunk = passage.chunk
    spans = [Span(start=m.start, end=m.end, label=chosen.name) for m in passage.mentions]
    end = clip_end(chunk.text, spans)
    with st.container(border=True):
        st.markdown(
            f"source {escape_text(chunk.source_id)} · passage {chunk.chunk_index + 1} · "
            f"chars {chunk.start_char}–{chunk.end_char} · {count(len(spans), 'mention')}",
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
                **SEARCH_PARAMS,
                WORKSPACE_PARAM: ws,
                "why": f"{chunk.source_id}{PASSAGE_MARK}{chunk.chunk_index + 1}",
            },
        )
