"""The "narrow to" controls a query screen shares: sources, entities, metadata values -> a filter.

Rendering and URL state only: the filter is ``core.domain.filters.PassageFilter`` (through
``core.service``), applied by the store before the limit. The choices live in the URL (``src``,
``ent``, ``meta`` as ``field=value``, each repeated), so a link reproduces a narrowed view and
the Entities screen can open Search within one entity's passages. One module rather than the
controls in each page: Search and Truncation would otherwise read the URL two ways.

The controls are built only while their expander is open (a tracked expander, as Search's "why
this score"): listing every source in natural order and every entity, and sending them to the
page as two multiselects' options, on every rerun of a closed expander was a third of a Search
rerun's server time on Cranfield (bench/bench_rerun.py, issue 50). While they are closed the
filter is the last choices, kept in a non-widget copy (Streamlit drops a widget's state on a run
that does not draw it), checked against the workspace's lists only when they came from a link or
another workspace. Rejected: caching the lists per workspace generation (a read of the
generation each rerun, and the options still sent to the page every time).
"""

from __future__ import annotations

from functools import cached_property
from typing import NamedTuple
from uuid import UUID

import streamlit as st

from core.analysis.sentences import count, unknown_filter_line
from core.service import LexplainService, MetadataMatch, PassageFilter, one_sentence

#: URL names of the three kinds of choice.
SOURCE_PARAM, ENTITY_PARAM, META_PARAM = "src", "ent", "meta"
#: Session keys of the widgets, and of the URL they last adopted.
SOURCES_KEY, ENTITIES_KEY, META_KEY, URL_KEY = "narrow_src", "narrow_ent", "narrow_meta", "_narrow"
#: Session key of the expander: tracked, so a closed one builds no control.
OPEN_KEY = "narrow_open"
#: Session key of the choices' non-widget copy (a ``Chosen``): the filter while the controls
#: are closed, and what they start from when opened.
CHOSEN_KEY = "_narrow_chosen"
#: Session key saying whether the last run drew the controls (their state is then the latest).
DRAWN_KEY = "_narrow_drawn"
#: Session key of the link's sources and entities this workspace does not have (named on screen
#: until another link is adopted: dropping them silently showed every match unfiltered).
UNKNOWN_KEY = "_narrow_unknown"
#: The expander's label.
LABEL = "Narrow to sources, entities or metadata"
#: What a filter does to the numbers, said where it is set.
RULE = (
    "A filter only decides which passages may be candidates, before the limit: IDF and avgdl "
    "stay those of the whole workspace, so every score is the one it has unfiltered."
)


class Chosen(NamedTuple):
    """The analyst's choices, and the workspace they were last checked against (None: a link's,
    not yet checked)."""

    checked_in: str | None
    sources: tuple[str, ...]
    entities: tuple[str, ...]
    metadata: str


#: No choice yet.
NOTHING = Chosen(None, (), (), "")


class Lists:
    """The workspace's source ids and entities, read from the store on first use in a run."""

    def __init__(self, service: LexplainService, workspace: str) -> None:
        self._service, self._workspace = service, workspace

    @cached_property
    def sources(self) -> list[str]:
        return [s.source_id for s in self._service.list_sources(workspace=self._workspace)]

    @cached_property
    def entities(self) -> dict[str, str]:
        """Entity id -> its label in the control (name and passage count)."""
        return {
            str(e.entity.entity_id): f"{e.entity.name} ({count(e.passages, 'passage')})"
            for e in self._service.list_entities(workspace=self._workspace)
        }


def _adopt_url() -> None:
    params = st.query_params
    url = (
        tuple(params.get_all(SOURCE_PARAM)),
        tuple(params.get_all(ENTITY_PARAM)),
        tuple(params.get_all(META_PARAM)),
    )
    if url != st.session_state.get(URL_KEY):
        st.session_state[URL_KEY] = url
        st.session_state[CHOSEN_KEY] = Chosen(None, url[0], url[1], "\n".join(url[2]))
        st.session_state[DRAWN_KEY] = False  # the controls start from the link's choices
        st.session_state[UNKNOWN_KEY] = None  # decided against the workspace's lists below


def _unknown_named(chosen: Chosen, lists: Lists) -> tuple[set[str], set[str]]:
    """Name the link's values this workspace does not have (core's sentence), once decided
    per adopted link; they are left out of the filter, which the sentence says. Returns them
    (sources, entities)."""
    unknown = st.session_state.get(UNKNOWN_KEY)
    if unknown is None:
        sources = set(lists.sources) if chosen.sources else set()
        entities = set(lists.entities) if chosen.entities else set()
        unknown = (
            [s for s in chosen.sources if s not in sources],
            len([s for s in chosen.sources if s in sources]),
            [e for e in chosen.entities if e not in entities],
            len([e for e in chosen.entities if e in entities]),
        )
        st.session_state[UNKNOWN_KEY] = unknown
    bad_sources, known_sources, bad_entities, known_entities = unknown
    for line in (
        unknown_filter_line("source", "sources", bad_sources, known_sources),
        unknown_filter_line("entity", "entities", bad_entities, known_entities),
    ):
        if line:
            st.warning(line, icon=":material/filter_alt_off:")
    return set(bad_sources), set(bad_entities)


def _metadata(lines: str) -> tuple[tuple[MetadataMatch, ...], list[str], list[str]]:
    """``field=value`` lines -> matches (values of one field are alternatives), the lines
    that are not of that form, and core's sentences for the values it refused."""
    values: dict[str, list[str]] = {}
    bad = []
    for line in lines.splitlines():
        field, sep, value = line.partition("=")
        if not line.strip():
            continue
        if not sep or not field.strip():
            bad.append(line)
            continue
        values.setdefault(field.strip(), []).append(value.strip())
    matches, refused = [], []
    for field, wanted in values.items():
        try:
            matches.append(MetadataMatch(field=field, values=tuple(wanted)))
        except ValueError as exc:  # NUL or a lone surrogate (from a link): core's sentence
            refused.append(f"Left out: {one_sentence(exc)}.")
    return tuple(matches), bad, refused


def _write(name: str, values: list[str]) -> None:
    if values:
        st.query_params[name] = values
    else:
        st.query_params.pop(name, None)


def _current(chosen: Chosen) -> Chosen:
    """The choices as this run starts: the controls' state when the last run drew them (an
    edit of the analyst's is in it), else the copy."""
    if not st.session_state.get(DRAWN_KEY):
        return chosen
    return chosen._replace(
        sources=tuple(st.session_state.get(SOURCES_KEY, chosen.sources)),
        entities=tuple(st.session_state.get(ENTITIES_KEY, chosen.entities)),
        metadata=str(st.session_state.get(META_KEY, chosen.metadata)),
    )


def _controls(current: Chosen, lists: Lists) -> tuple[list[str], list[str], str]:
    """The multiselects and the metadata box, inside the open expander; their values."""
    st.caption(RULE)
    sources, entities = set(lists.sources), lists.entities
    # Assigned before the widgets are built: a link's values, or the copy when they were not
    # drawn last run, without a source or entity this workspace does not have.
    st.session_state[SOURCES_KEY] = [s for s in current.sources if s in sources]
    chosen_sources = st.multiselect(
        "Sources", lists.sources, key=SOURCES_KEY, placeholder="any source"
    )
    st.session_state[ENTITIES_KEY] = [e for e in current.entities if e in entities]
    chosen_entities = st.multiselect(
        "Entities",
        list(entities),
        key=ENTITIES_KEY,
        format_func=entities.__getitem__,
        placeholder="any entity",
    )
    st.session_state[META_KEY] = current.metadata
    lines = st.text_area(
        "Metadata (one field=value a line; e.g. title=...)", key=META_KEY, height=68
    )
    return chosen_sources, chosen_entities, lines


def narrowing(service: LexplainService, workspace: str) -> PassageFilter | None:
    """The controls, in an expander (open while a filter is set); the filter they make, None
    for none. The choices are written back to the URL."""
    _adopt_url()
    lists = Lists(service, workspace)
    chosen = st.session_state.get(CHOSEN_KEY, NOTHING)
    # Above the expander: said even while it is closed.
    bad_sources, bad_entities = _unknown_named(chosen, lists)
    current = _current(chosen)
    active = bool(current.sources or current.entities or current.metadata.strip())
    box = st.expander(LABEL, expanded=active, key=OPEN_KEY, on_change="rerun")
    if box.open:
        with box:
            chosen_sources, chosen_entities, lines = _controls(current, lists)
            matches, bad, refused = _metadata(lines)
            for sentence in refused:
                st.warning(sentence)
            if bad:
                st.warning(f"Not field=value, left out: {', '.join(repr(b) for b in bad[:3])}")
    else:
        chosen_sources = [s for s in current.sources if s not in bad_sources]
        chosen_entities = [e for e in current.entities if e not in bad_entities]
        # A link's choices, or another workspace's: only this workspace's sources and entities.
        if current.checked_in != workspace and (chosen_sources or chosen_entities):
            known = set(lists.sources)
            chosen_sources = [s for s in chosen_sources if s in known]
            chosen_entities = [e for e in chosen_entities if e in lists.entities]
        lines = current.metadata
        matches, _, _ = _metadata(lines)
    st.session_state[DRAWN_KEY] = box.open
    st.session_state[CHOSEN_KEY] = Chosen(
        workspace, tuple(chosen_sources), tuple(chosen_entities), lines
    )
    _write(SOURCE_PARAM, chosen_sources)
    _write(ENTITY_PARAM, chosen_entities)
    _write(META_PARAM, [m.field + "=" + v for m in matches for v in m.values])
    st.session_state[URL_KEY] = (
        tuple(chosen_sources),
        tuple(chosen_entities),
        tuple(st.query_params.get_all(META_PARAM)),
    )
    within = PassageFilter(
        sources=tuple(chosen_sources),
        entities=tuple(UUID(e) for e in chosen_entities),
        metadata=matches,
    )
    return None if within.empty else within


def entity_search_params(entity_id: UUID) -> dict[str, str]:
    """URL parameters that open a query screen narrowed to one entity's passages."""
    return {ENTITY_PARAM: str(entity_id)}
