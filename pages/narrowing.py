"""The "narrow to" controls a query screen shares: sources, entities, metadata values -> a filter.

Rendering and URL state only: the filter is ``core.domain.filters.PassageFilter`` (through
``core.service``), applied by the store before the limit. The choices live in the URL (``src``,
``ent``, ``meta`` as ``field=value``, each repeated), so a link reproduces a narrowed view and
the Entities screen can open Search within one entity's passages. One module rather than the
controls in each page: Search and Truncation would otherwise read the URL two ways.
"""

from __future__ import annotations

from uuid import UUID

import streamlit as st

from core.analysis.sentences import count, unknown_filter_line
from core.service import LexplainService, MetadataMatch, PassageFilter, one_sentence

#: URL names of the three kinds of choice.
SOURCE_PARAM, ENTITY_PARAM, META_PARAM = "src", "ent", "meta"
#: Session keys of the widgets, and of the URL they last adopted.
SOURCES_KEY, ENTITIES_KEY, META_KEY, URL_KEY = "narrow_src", "narrow_ent", "narrow_meta", "_narrow"
#: Session key of the link's sources and entities this workspace does not have (named on screen
#: until another link is adopted: dropping them silently showed every match unfiltered).
UNKNOWN_KEY = "_narrow_unknown"
#: What a filter does to the numbers, said where it is set.
RULE = (
    "A filter only decides which passages may be candidates, before the limit: IDF and avgdl "
    "stay those of the whole workspace, so every score is the one it has unfiltered."
)


def _adopt_url() -> None:
    params = st.query_params
    url = (
        tuple(params.get_all(SOURCE_PARAM)),
        tuple(params.get_all(ENTITY_PARAM)),
        tuple(params.get_all(META_PARAM)),
    )
    if url != st.session_state.get(URL_KEY):
        st.session_state[URL_KEY] = url
        st.session_state[SOURCES_KEY] = list(url[0])
        st.session_state[ENTITIES_KEY] = list(url[1])
        st.session_state[META_KEY] = "\n".join(url[2])
        st.session_state[UNKNOWN_KEY] = None  # decided against the workspace's lists below


def _unknown_named(sources: list[str], entities: set[str]) -> None:
    """Name the link's values this workspace does not have (core's sentence), once decided
    per adopted link; they are left out of the filter, which the sentence says."""
    unknown = st.session_state.get(UNKNOWN_KEY)
    if unknown is None:
        asked_sources, asked_entities = (
            st.session_state.get(SOURCES_KEY, []),
            st.session_state.get(ENTITIES_KEY, []),
        )
        unknown = (
            [s for s in asked_sources if s not in set(sources)],
            len([s for s in asked_sources if s in set(sources)]),
            [e for e in asked_entities if e not in entities],
            len([e for e in asked_entities if e in entities]),
        )
        st.session_state[UNKNOWN_KEY] = unknown
    bad_sources, known_sources, bad_entities, known_entities = unknown
    for line in (
        unknown_filter_line("source", "sources", bad_sources, known_sources),
        unknown_filter_line("entity", "entities", bad_entities, known_entities),
    ):
        if line:
            st.warning(line, icon=":material/filter_alt_off:")


def _metadata(lines: str) -> tuple[tuple[MetadataMatch, ...], list[str]]:
    """``field=value`` lines -> matches (values of one field are alternatives), and the lines
    that are not of that form."""
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
    matches = []
    for field, wanted in values.items():
        try:
            matches.append(MetadataMatch(field=field, values=tuple(wanted)))
        except ValueError as exc:  # NUL or a lone surrogate (from a link): core's sentence
            st.warning(f"Left out: {one_sentence(exc)}.")
    return tuple(matches), bad


def _write(name: str, values: list[str]) -> None:
    if values:
        st.query_params[name] = values
    else:
        st.query_params.pop(name, None)


def narrowing(service: LexplainService, workspace: str) -> PassageFilter | None:
    """The controls, in an expander (open while a filter is set); the filter they make, None
    for none. The choices are written back to the URL."""
    _adopt_url()
    sources = [s.source_id for s in service.list_sources(workspace=workspace)]
    entities = {str(e.entity.entity_id): e for e in service.list_entities(workspace=workspace)}
    _unknown_named(sources, set(entities))  # above the expander: said even while it is closed
    active = bool(
        st.session_state.get(SOURCES_KEY)
        or st.session_state.get(ENTITIES_KEY)
        or st.session_state.get(META_KEY, "").strip()
    )
    with st.expander("Narrow to sources, entities or metadata", expanded=active):
        st.caption(RULE)
        kept = [s for s in st.session_state.get(SOURCES_KEY, []) if s in set(sources)]
        st.session_state[SOURCES_KEY] = kept
        chosen_sources = st.multiselect(
            "Sources", sources, key=SOURCES_KEY, placeholder="any source"
        )
        st.session_state[ENTITIES_KEY] = [
            e for e in st.session_state.get(ENTITIES_KEY, []) if e in entities
        ]
        chosen_entities = st.multiselect(
            "Entities",
            list(entities),
            key=ENTITIES_KEY,
            format_func=lambda i: (
                f"{entities[i].entity.name} ({count(entities[i].passages, 'passage')})"
            ),
            placeholder="any entity",
        )
        lines = st.text_area(
            "Metadata (one field=value a line; e.g. title=...)", key=META_KEY, height=68
        )
        matches, bad = _metadata(lines)
        if bad:
            st.warning(f"Not field=value, left out: {', '.join(repr(b) for b in bad[:3])}")
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
