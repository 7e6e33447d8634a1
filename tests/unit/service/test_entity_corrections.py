"""An analyst's corrections of the extractor, through the facade on the in-memory store: merge
two entities, change a kind, hide one; honoured by the list, the counts, an entity's passages,
a filter and the chips of a search result.

Expected passages come from the texts (which file names whom), never from the service.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from core.domain.entities import (
    Entity,
    EntityCorrection,
    EntityCorrections,
    RuleBasedExtractor,
    load_entity_list,
)
from core.domain.filters import PassageFilter
from core.service import LexplainService
from core.settings import Settings

DOCS = {
    "a.txt": "Andy Warhol painted soup in Paris for NASA.",
    "b.txt": "The Louvre in Paris hosted Andy Warhol and Marcel Duchamp.",
    "c.txt": "Later, Warhol met NASA engineers in Paris.",
}
ANDY = Entity(name="Andy Warhol", kind="person").entity_id
WARHOL = Entity(name="Warhol", kind="other").entity_id  # c.txt alone does not say
DUCHAMP = Entity(name="Marcel Duchamp", kind="person").entity_id
LOUVRE = Entity(name="Louvre", kind="other").entity_id
NASA = Entity(name="NASA", kind="organisation").entity_id


@pytest.fixture(scope="module")
def service() -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(Settings(store="memory"))
    yield svc
    svc.close()


@pytest.fixture
def ws(service: LexplainService) -> str:
    name = service.create_workspace(f"fix-{uuid.uuid4().hex[:8]}")
    reports = service.upload_files([(n, t.encode()) for n, t in DOCS.items()], workspace=name)
    assert all(r.error is None for r in reports)
    return name


def listed(service: LexplainService, ws: str) -> dict[str, tuple[str, int]]:
    return {s.entity.name: (s.entity.kind, s.passages) for s in service.list_entities(workspace=ws)}


def test_the_texts_give_the_entities_the_tests_correct() -> None:
    found = {m.entity.entity_id for t in DOCS.values() for m in RuleBasedExtractor().extract(t)}
    assert {ANDY, WARHOL, LOUVRE, NASA} <= found


def test_a_merged_name_is_one_entity_with_the_passages_of_both(
    service: LexplainService, ws: str
) -> None:
    assert listed(service, ws)["Warhol"] == ("other", 1)
    assert listed(service, ws)["Andy Warhol"] == ("person", 2)
    service.merge_entity(WARHOL, ANDY, workspace=ws)
    after = listed(service, ws)
    assert "Warhol" not in after
    assert after["Andy Warhol"] == ("person", 3)  # a.txt, b.txt and c.txt, each once
    overview = service.entity_overview(workspace=ws, name="warhol")
    assert [s.entity.name for s in overview.shown] == ["Andy Warhol"]
    assert overview.merged == {ANDY: [Entity(name="Warhol", kind="other")]}
    passages = service.entity_passages(ANDY, workspace=ws)
    assert [p.chunk.source_id for p in passages] == ["a.txt", "b.txt", "c.txt"]
    [later] = [p for p in passages if p.chunk.source_id == "c.txt"]
    assert [later.chunk.text[m.start : m.end] for m in later.mentions] == ["Warhol"]
    service.unmerge_entity(WARHOL, workspace=ws)
    assert listed(service, ws)["Warhol"] == ("other", 1)
    assert listed(service, ws)["Andy Warhol"] == ("person", 2)


def test_a_filter_on_an_entity_admits_the_passages_of_a_name_merged_into_it(
    service: LexplainService, ws: str
) -> None:
    within = PassageFilter(entities=(ANDY,))
    before = service.search("paris", workspace=ws, within=within)  # cached, then corrected
    assert {p.chunk.source_id for p in before.passages} == {"a.txt", "b.txt"}
    service.merge_entity(WARHOL, ANDY, workspace=ws)
    after = service.search("paris", workspace=ws, within=within)
    assert {p.chunk.source_id for p in after.passages} == {"a.txt", "b.txt", "c.txt"}
    truncation = service.truncation("paris", 10, 100, workspace=ws, within=within)
    assert {e.chunk.source_id for e in truncation.unlimited} == {"a.txt", "b.txt", "c.txt"}


def test_the_chips_of_a_search_result_show_the_corrected_entities(
    service: LexplainService, ws: str
) -> None:
    service.merge_entity(WARHOL, ANDY, workspace=ws)
    service.set_entity_kind(LOUVRE, "place", workspace=ws)
    service.hide_entity(NASA, workspace=ws)
    result = service.search("paris", workspace=ws)
    chips = {p.chunk.source_id: [(e.name, e.kind) for e in p.entities] for p in result.passages}
    assert ("Andy Warhol", "person") in chips["c.txt"] and ("Warhol", "person") not in chips[
        "c.txt"
    ]
    assert ("Louvre", "place") in chips["b.txt"]
    assert all(name != "NASA" for found in chips.values() for name, _ in found)
    # A passage naming two merged names shows the entity once.
    service.merge_entity(DUCHAMP, ANDY, workspace=ws)
    [louvre] = [p for p in service.search("louvre", workspace=ws).passages]
    assert [e.name for e in louvre.entities].count("Andy Warhol") == 1
    assert "Marcel Duchamp" not in [e.name for e in louvre.entities]
    # b.txt names both: counted once among the passages of the merged entity.
    assert listed(service, ws)["Andy Warhol"] == ("person", 3)  # a.txt, b.txt, c.txt


def test_a_changed_kind_moves_the_entity_between_the_counts_and_keeps_its_passages(
    service: LexplainService, ws: str
) -> None:
    before = service.entity_overview(workspace=ws)
    service.set_entity_kind(LOUVRE, "place", workspace=ws)
    after = service.entity_overview(workspace=ws)
    assert after.by_kind["place"] == before.by_kind["place"] + 1
    assert after.by_kind["other"] == before.by_kind["other"] - 1
    assert listed(service, ws)["Louvre"] == ("place", 1)
    # It is now the entity "Louvre" of kind place; the extracted id still leads to it.
    place = Entity(name="Louvre", kind="place").entity_id
    [summary] = service.entity_overview(workspace=ws, name="louvre").shown
    assert summary.entity.entity_id == place
    for asked in (LOUVRE, place):
        found = service.entity_passages(asked, workspace=ws)
        assert [p.chunk.source_id for p in found] == ["b.txt"]
        hits = service.search("hosted", workspace=ws, within=PassageFilter(entities=(asked,)))
        assert [p.chunk.source_id for p in hits.passages] == ["b.txt"]
    # Changed back, it is the extracted entity again (no loop, no leftover).
    service.set_entity_kind(place, "other", workspace=ws)
    assert listed(service, ws)["Louvre"] == ("other", 1)
    [summary] = service.entity_overview(workspace=ws, name="louvre").shown
    assert summary.entity.entity_id == LOUVRE
    service.set_entity_kind(LOUVRE, "organisation", workspace=ws)
    assert listed(service, ws)["Louvre"] == ("organisation", 1)


def test_a_merged_name_follows_its_entity_to_another_kind(
    service: LexplainService, ws: str
) -> None:
    service.merge_entity(WARHOL, ANDY, workspace=ws)
    service.set_entity_kind(WARHOL, "organisation", workspace=ws)  # the entity it stands for
    assert listed(service, ws)["Andy Warhol"] == ("organisation", 3)


def test_a_hidden_entity_leaves_browsing_and_comes_back_but_a_filter_on_it_still_works(
    service: LexplainService, ws: str
) -> None:
    service.hide_entity(NASA, workspace=ws)
    overview = service.entity_overview(workspace=ws)
    assert "NASA" not in listed(service, ws)
    assert [s.entity.name for s in overview.hidden] == ["NASA"]
    assert overview.by_kind["organisation"] == 0 and "NASA" not in [
        s.entity.name for s in overview.shown
    ]
    found = service.search("paris", workspace=ws, within=PassageFilter(entities=(NASA,)))
    assert {p.chunk.source_id for p in found.passages} == {"a.txt", "c.txt"}
    service.hide_entity(NASA, False, workspace=ws)
    assert listed(service, ws)["NASA"] == ("organisation", 2)
    assert service.entity_overview(workspace=ws).hidden == []


def test_a_merge_into_itself_or_into_a_name_merged_into_it_is_refused(
    service: LexplainService, ws: str
) -> None:
    with pytest.raises(ValueError, match="merged into itself"):
        service.merge_entity(ANDY, ANDY, workspace=ws)
    service.merge_entity(WARHOL, ANDY, workspace=ws)
    with pytest.raises(ValueError, match="merged into itself"):
        service.merge_entity(ANDY, WARHOL, workspace=ws)
    assert listed(service, ws)["Andy Warhol"] == ("person", 3)


def test_corrections_belong_to_their_workspace(service: LexplainService, ws: str) -> None:
    other = service.create_workspace(f"fix-{uuid.uuid4().hex[:8]}")
    service.upload_files([(n, t.encode()) for n, t in DOCS.items()], workspace=other)
    service.merge_entity(WARHOL, ANDY, workspace=ws)
    service.hide_entity(NASA, workspace=ws)
    assert "Warhol" in listed(service, other) and "NASA" in listed(service, other)


def test_an_uploaded_entity_lists_kind_is_not_overridden_by_a_correction_of_the_guess() -> None:
    """The list makes its own entity (its kind, so its id): correcting the extractor's guess
    for the same name elsewhere does not reach it."""
    text = "The Louvre in Paris hosted Andy Warhol."
    listed_extractor = RuleBasedExtractor(load_entity_list("Louvre,organisation\n"))
    [louvre] = [m.entity for m in listed_extractor.extract(text) if m.text == "Louvre"]
    assert louvre.kind == "organisation" and louvre.entity_id != LOUVRE
    guessed_to_place = Entity(name="Louvre", kind="place").entity_id
    fixes = EntityCorrections([EntityCorrection(entity_id=LOUVRE, merged_into=guessed_to_place)])
    assert fixes.canonical(louvre.entity_id) == louvre.entity_id
    assert fixes.entity(louvre.entity_id, {louvre.entity_id: louvre}) == louvre
