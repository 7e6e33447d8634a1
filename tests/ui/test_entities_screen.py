"""The Entities screen an analyst can use: counts by kind, a name search, a kind, an order, and
a search narrowed to an entity that names it.

The numbers on screen are compared with the facade's (``entity_overview``), which
tests/unit/service/test_entity_overview.py checks against the extractor: the page must show
them, not count again.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.sentences import escape_text
from core.service import ENTITY_KIND_HEADINGS, ENTITY_KINDS, EntityOverview
from pages.common import get_service

APP = str(Path(__file__).resolve().parents[2] / "app.py")
DOCS = {
    "a.txt": "Andy Warhol painted soup in Paris for NASA.",
    "b.txt": "The Louvre in Paris hosted Andy Warhol and Marcel Duchamp.",
    "c.txt": "Later, Warhol met NASA engineers in Paris.",
}

pytestmark = pytest.mark.usefixtures("in_memory_store")


def loaded() -> str:
    workspace = f"ui-{uuid.uuid4().hex[:8]}"
    service = get_service()
    service.create_workspace(workspace)
    reports = service.upload_files([(n, t.encode()) for n, t in DOCS.items()], workspace=workspace)
    assert all(r.error is None for r in reports)
    return workspace


def screen(workspace: str, page: str = "pages/entities.py", **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def table(at: AppTest) -> list[dict[str, Any]]:
    return list(at.dataframe[0].value.to_dict(orient="records"))


def test_the_screen_shows_the_facades_count_of_each_kind() -> None:
    workspace = loaded()
    at = screen(workspace)
    overview = get_service().entity_overview(workspace=workspace)
    shown = {m.label: m.value for m in at.metric}
    assert shown == {ENTITY_KIND_HEADINGS[k]: f"{overview.by_kind[k]:,}" for k in ENTITY_KINDS}
    assert shown["People"] == str(overview.by_kind["person"]) != "0"


def test_the_name_search_kind_and_order_change_the_table_as_the_facade_says() -> None:
    workspace = loaded()
    at = screen(workspace)
    # By passages mentioned by default: Paris is in all three.
    assert table(at)[0] == {"name": "Paris", "kind": "place", "passages": 3}
    at.text_input(key="entity_filter").input("WARHOL").run()
    want = get_service().entity_overview(workspace=workspace, name="WARHOL").shown
    assert [r["name"] for r in table(at)] == [s.entity.name for s in want]
    assert "Andy Warhol" in [r["name"] for r in table(at)]
    at.text_input(key="entity_filter").input("").run()
    at.radio(key="entity_order").set_value("name").run()
    names = [r["name"] for r in table(at)]
    assert names == sorted(names, key=str.casefold) and names[0] == "Andy Warhol"
    at.selectbox(key="entity_kind").set_value("place").run()
    assert table(at) == [{"name": "Paris", "kind": "place", "passages": 3}]
    at.text_input(key="entity_filter").input("zeppelin").run()
    assert any("No entity matches the search" in i.value for i in at.info)


def test_searching_within_an_entity_names_it_instead_of_its_id() -> None:
    workspace = loaded()
    at = screen(workspace)
    at.text_input(key="entity_filter").input("andy warhol").run()
    [within] = [link for link in at.get("page_link") if "ent=" in link.proto.query_string]
    params = dict(parse_qsl(within.proto.query_string))
    follow = screen(workspace, "pages/search.py", q="soup paris", **params)
    [narrowed] = [c.value for c in follow.caption if c.value.startswith("Narrowed to")]
    named = escape_text('entity "Andy Warhol"')
    assert narrowed.startswith(f"Narrowed to {named}.")
    assert params["ent"] not in narrowed


def choose(at: AppTest, workspace: str, name: str) -> None:
    """Pick ``name`` in "Show the passages of" (its options are entity ids)."""
    ids = {s.entity.name: str(s.entity.entity_id) for s in overview(workspace).shown}
    at.selectbox(key="entity_choice").set_value(ids[name]).run()
    assert not at.exception, [e.value for e in at.exception]


def overview(workspace: str) -> EntityOverview:
    return get_service().entity_overview(workspace=workspace)


def passages_of(at: AppTest) -> dict[str, int]:
    return {r["name"]: r["passages"] for r in table(at)}


def test_an_analyst_merges_two_entities_and_separates_them_again() -> None:
    workspace = loaded()
    at = screen(workspace)
    assert passages_of(at)["Warhol"] == 1 and passages_of(at)["Andy Warhol"] == 2
    choose(at, workspace, "Warhol")
    [andy] = [s.entity for s in overview(workspace).shown if s.entity.name == "Andy Warhol"]
    at.selectbox(key="merge_into").set_value(andy).run()
    at.button(key="merge_entity").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Warhol" not in passages_of(at) and passages_of(at)["Andy Warhol"] == 3
    choose(at, workspace, "Andy Warhol")
    assert any("Also written “Warhol” (other)" in c.value for c in at.caption)
    [separate] = [b for b in at.button if b.label == "Separate"]
    separate.click().run()
    assert passages_of(at)["Warhol"] == 1 and passages_of(at)["Andy Warhol"] == 2


def test_an_analyst_changes_a_kind_and_the_counts_follow() -> None:
    workspace = loaded()
    at = screen(workspace)
    places = int(next(m.value for m in at.metric if m.label == "Places"))
    choose(at, workspace, "Louvre")
    [kind_box] = [s for s in at.selectbox if s.key and s.key.startswith("kind-")]
    kind_box.set_value("place").run()
    at.button(key="change_kind").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert {"name": "Louvre", "kind": "place", "passages": 1} in table(at)
    assert next(m.value for m in at.metric if m.label == "Places") == str(places + 1)


def test_an_analyst_hides_an_entity_and_shows_it_again() -> None:
    workspace = loaded()
    at = screen(workspace)
    choose(at, workspace, "NASA")
    at.button(key="hide_entity").click().run()
    assert "NASA" not in passages_of(at)
    assert next(m.value for m in at.metric if m.label == "Organisations") == "0"
    [show] = [b for b in at.button if b.label == "Show again"]
    show.click().run()
    assert passages_of(at)["NASA"] == 2


def test_search_results_show_the_entities_as_corrected() -> None:
    workspace = loaded()
    at = screen(workspace)
    choose(at, workspace, "Warhol")
    [andy] = [s.entity for s in overview(workspace).shown if s.entity.name == "Andy Warhol"]
    at.selectbox(key="merge_into").set_value(andy).run()
    at.button(key="merge_entity").click().run()
    search = screen(workspace, "pages/search.py", q="engineers")
    # A result's entities close its card (one element with its header and text).
    [chips] = [
        m.value.split('<div class="lx-entities">entities: ', 1)[1]
        for m in search.markdown
        if '<div class="lx-entities">entities: ' in m.value
    ]
    assert "Andy Warhol" in chips and ">Warhol<" not in chips


def strip_entities(workspace: str) -> None:
    """The workspace as an extractor that found nothing left it (its passages, no entities)."""
    service = get_service()
    tenant = service.tenant(workspace)
    store = service._store
    sources = []
    for source in service.list_sources(workspace=workspace):
        chunks = service._call(store.get_by_source(source.source_id, tenant))
        bare = [
            c.model_copy(
                update={
                    "entity_ids": [],
                    "metadata": {k: v for k, v in c.metadata.items() if k != "mentions"},
                }
            )
            for c in chunks
        ]
        sources.append((source.source_id, bare))
    service._call(store.replace_sources(tenant, sources))


def test_after_an_extractor_upgrade_one_button_finds_the_entities_and_shows_before_and_after() -> (
    None
):
    workspace = loaded()
    want = overview(workspace).by_kind
    strip_entities(workspace)
    at = screen(workspace)
    assert any("No names were found" in i.value for i in at.info)
    at.button(key="reextract").click().run()
    assert not at.exception, [e.value for e in at.exception]
    [done] = [s.value for s in at.success]
    assert done.startswith("Entities found again in 3 passages of 3 sources")
    [report] = at.table
    shown = {r["kind"]: (r["before"], r["after"]) for r in report.value.to_dict("records")}
    assert shown == {ENTITY_KIND_HEADINGS[k]: (0, want[k]) for k in ENTITY_KINDS}
    assert passages_of(at)["Paris"] == 3  # the table of entities is back
