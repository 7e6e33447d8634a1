"""The Entities screen's numbers from the facade: counts by kind, the name search, the order.

Expected values come from the extractor run here on the same texts (one passage per file), not
from the service, so a facade that counted or matched differently would differ.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from core.domain.entities import ENTITY_KINDS, RuleBasedExtractor
from core.domain.filters import PassageFilter
from core.service import LexplainService
from core.settings import Settings

DOCS = {
    "a.txt": "Andy Warhol painted soup in Paris for NASA.",
    "b.txt": "The Louvre in Paris hosted Andy Warhol and Marcel Duchamp.",
    "c.txt": "Later, Warhol met NASA engineers in Paris.",
}
WS = "overview"


@pytest.fixture(scope="module")
def service() -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(Settings(store="memory"))
    reports = svc.upload_files([(n, t.encode()) for n, t in DOCS.items()], workspace=WS)
    assert all(r.error is None for r in reports)
    yield svc
    svc.close()


def extracted() -> dict[tuple[str, str], int]:
    """(name, kind) -> passages mentioning it, by the extractor alone."""
    passages: Counter[tuple[str, str]] = Counter()
    for text in DOCS.values():
        found = {(m.entity.name, m.entity.kind) for m in RuleBasedExtractor().extract(text)}
        passages.update(found)
    return dict(passages)


def test_the_counts_by_kind_are_the_extractors_entities_of_each_kind(
    service: LexplainService,
) -> None:
    overview = service.entity_overview(workspace=WS)
    want = Counter(kind for _, kind in extracted())
    assert overview.by_kind == {kind: want.get(kind, 0) for kind in ENTITY_KINDS}
    assert overview.total == len(extracted()) == len(overview.shown)
    assert overview.by_kind["person"] >= 2 and overview.by_kind["place"] == 1


def test_the_counts_stay_those_of_the_whole_workspace_while_a_search_narrows_the_list(
    service: LexplainService,
) -> None:
    whole = service.entity_overview(workspace=WS)
    narrowed = service.entity_overview(workspace=WS, name="warhol", kind="person")
    assert narrowed.by_kind == whole.by_kind and narrowed.total == whole.total
    assert len(narrowed.shown) < len(whole.shown)


def test_a_name_search_ignores_case_and_spacing_and_matches_inside_a_name(
    service: LexplainService,
) -> None:
    shown = service.entity_overview(workspace=WS, name="  WARHOL ").shown
    want = {name for name, _ in extracted() if "warhol" in name.casefold()}
    assert {s.entity.name for s in shown} == want
    assert "Andy Warhol" in want
    assert [
        s.entity.name for s in service.entity_overview(workspace=WS, name="andy  warhol").shown
    ] == ["Andy Warhol"]
    assert service.entity_overview(workspace=WS, name="zeppelin").shown == []


def test_a_kind_keeps_only_entities_of_that_kind(service: LexplainService) -> None:
    for kind in ENTITY_KINDS:
        shown = service.entity_overview(workspace=WS, kind=kind).shown
        assert {(s.entity.name, s.entity.kind) for s in shown} == {
            key for key in extracted() if key[1] == kind
        }


def test_the_list_sorts_by_passages_mentioned_most_first_or_by_name(
    service: LexplainService,
) -> None:
    by_passages = service.entity_overview(workspace=WS, order="passages").shown
    counts = [s.passages for s in by_passages]
    assert counts == sorted(counts, reverse=True)
    assert counts[0] == 3 and by_passages[0].entity.name == "Paris"
    assert {(s.entity.name, s.entity.kind): s.passages for s in by_passages} == extracted()
    by_name = [
        s.entity.name.casefold() for s in service.entity_overview(workspace=WS, order="name").shown
    ]
    assert by_name == sorted(by_name)
    assert by_name != [s.entity.name.casefold() for s in by_passages]


def test_a_search_narrowed_to_an_entity_names_it_in_words_not_by_its_id(
    service: LexplainService,
) -> None:
    [warhol] = service.entity_overview(workspace=WS, name="andy warhol").shown
    within = PassageFilter(entities=(warhol.entity.entity_id,))
    result = service.search("soup paris", workspace=WS, within=within)
    assert result.within_words == 'entity "Andy Warhol"'
    view = service.truncation("soup paris", 10, 100, workspace=WS, within=within)
    assert view.within_words == 'entity "Andy Warhol"'
    assert service.search("soup paris", workspace=WS).within_words == ""
