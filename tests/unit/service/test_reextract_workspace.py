"""Re-extraction of a workspace (issue 46 item 6), through the facade on the in-memory store.

The documents are cut into overlapping passages, so putting a document back together from its
passages is tested where it can go wrong; expected entities come from the extractor run here
on the original texts, never from the service.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from core.domain.chunks import StoredChunk
from core.domain.entities import (
    Entity,
    EntityListError,
    RuleBasedExtractor,
    document_text,
    reextracted,
)
from core.service import LexplainService
from core.settings import Settings

DOCS = {
    "a.txt": (
        "Andy Warhol painted soup cans in New York for years. Later, in Paris, Warhol met "
        "engineers from NASA and talked with them about rockets, paint and the Moon."
    ),
    "b.txt": "The Louvre in Paris hosted Andy Warhol and Marcel Duchamp for one long winter.",
}


@pytest.fixture(scope="module")
def service() -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(Settings(store="memory"))
    yield svc
    svc.close()


@pytest.fixture
def ws(service: LexplainService) -> str:
    name = service.create_workspace(f"re-{uuid.uuid4().hex[:8]}")
    chunking = service.chunking(size=60, overlap=20)
    reports = service.upload_files(
        [(n, t.encode()) for n, t in DOCS.items()], workspace=name, chunking=chunking
    )
    assert all(r.error is None for r in reports)
    return name


def stored(service: LexplainService, ws: str) -> dict[str, list[StoredChunk]]:
    """Each source's passages as the store holds them (no screen lists them whole)."""
    tenant = service.tenant(ws)
    return {
        s.source_id: service._call(service._store.get_by_source(s.source_id, tenant))
        for s in service.list_sources(workspace=ws)
    }


def test_a_document_is_put_back_together_from_its_overlapping_passages(
    service: LexplainService, ws: str
) -> None:
    for source, chunks in stored(service, ws).items():
        assert len(chunks) > 1
        rebuilt = document_text(chunks)
        for chunk in chunks:
            assert rebuilt[chunk.start_char : chunk.end_char] == chunk.text
        assert rebuilt.split() == DOCS[source].split()


def test_re_extracting_with_the_same_extractor_changes_nothing(
    service: LexplainService, ws: str
) -> None:
    before = stored(service, ws)
    report = service.reextract_entities(workspace=ws)
    assert report.before == report.after and report.changed == 0
    assert report.sources == 2 and report.passages == sum(len(c) for c in before.values())
    after = stored(service, ws)
    assert {s: [(c.id, c.entity_ids, c.metadata) for c in cs] for s, cs in after.items()} == {
        s: [(c.id, c.entity_ids, c.metadata) for c in cs] for s, cs in before.items()
    }


def test_the_passages_get_the_entities_the_extractor_finds_in_the_whole_document() -> None:
    # What an upload of a.txt would find: "Warhol" after "Andy Warhol" is that person.
    whole = RuleBasedExtractor().extract(DOCS["a.txt"])
    warhols = {m.entity for m in whole if "Warhol" in m.text}
    assert warhols == {Entity(name="Andy Warhol", kind="person")}


def test_an_extractor_with_an_entity_list_moves_counts_between_kinds_and_back(
    service: LexplainService, ws: str
) -> None:
    report = service.reextract_entities(workspace=ws, entity_list="Louvre,place\n")
    assert report.after["place"] == report.before["place"] + 1
    assert report.after["other"] == report.before["other"] - 1
    assert report.changed >= 1
    assert report.after == service.entity_overview(workspace=ws).by_kind
    back = service.reextract_entities(workspace=ws)
    assert back.after == report.before


def test_corrections_hold_through_a_re_extraction(service: LexplainService, ws: str) -> None:
    duchamp = Entity(name="Marcel Duchamp", kind="person").entity_id
    service.hide_entity(duchamp, workspace=ws)
    service.reextract_entities(workspace=ws)
    assert [s.entity.name for s in service.entity_overview(workspace=ws).hidden] == [
        "Marcel Duchamp"
    ]


def test_a_bad_entity_list_is_refused_before_anything_changes(
    service: LexplainService, ws: str
) -> None:
    before = stored(service, ws)
    with pytest.raises(EntityListError, match="line 1"):
        service.reextract_entities(workspace=ws, entity_list="Louvre,castle\n")
    assert stored(service, ws) == before


def test_a_source_without_passages_re_extracts_to_nothing() -> None:
    assert reextracted([], RuleBasedExtractor()) == ([], [])
