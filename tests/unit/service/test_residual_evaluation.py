"""Feedback from the grades measured honestly (issue 47 item 3): on Cranfield's grades, the
passages Rocchio learned from are the graded ones of each query's typed top ``fb_docs`` (as
Evaluate ranks it), and they are in neither residual ranking nor the judged set."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from core.analysis.expansion import ExpansionSpec
from core.service import SAMPLE_QUERY_SET, LexplainService, RunSpec
from core.settings import Settings

K, LIMIT, FB_DOCS = 10, 200, 5


@pytest.fixture(scope="module")
def cranfield() -> Iterator[tuple[LexplainService, str, dict[str, dict[str, int]]]]:
    service = LexplainService.from_settings(Settings(store="memory"))
    ws = f"residual-{uuid.uuid4().hex[:6]}"
    service.load_sample(workspace=ws)
    service.import_sample_grades(workspace=ws)
    first = service.query_set(SAMPLE_QUERY_SET, workspace=ws).queries[:30]
    service.save_query_set("first 30", "\n".join(q.text for q in first), "lines", workspace=ws)
    grades: dict[str, dict[str, int]] = {}
    for judgment in service.judgments(workspace=ws, queries=[q.text for q in first]):
        grades.setdefault(judgment.query, {})[judgment.chunk_id] = judgment.grade
    yield service, ws, grades
    service.close()


def test_the_fed_back_passages_are_in_neither_residual_ranking_nor_the_judged_set(
    cranfield: tuple[LexplainService, str, dict[str, dict[str, int]]],
) -> None:
    service, ws, grades = cranfield
    spec = ExpansionSpec.rocchio().model_copy(update={"fb_docs": FB_DOCS})
    result = service.evaluate_residual("first 30", K, LIMIT, workspace=ws, expand=spec)
    (deep,) = service.evaluate_judged(
        "first 30", K + FB_DOCS, [RunSpec(workspace=ws, limit=LIMIT)], workspace=ws
    )
    text = {r.query_id: r.query for r in deep.rows}
    assert set(result.fed_back) == set(text)
    assert sum(map(len, result.fed_back.values())) > 0
    measured = {r.query_id for r in result.typed.rows}
    assert (
        measured == {r.query_id for r in result.expanded.rows} == set(text) - set(result.unmeasured)
    )
    for query_id, fed in result.fed_back.items():
        graded = grades[text[query_id]]
        assert fed == [u for u in deep.ranked[query_id][:FB_DOCS] if u in graded]
        if query_id not in measured:
            assert not any(g >= 1 for u, g in graded.items() if u not in fed)
            continue
        assert not set(fed) & set(result.typed.ranked[query_id])
        assert not set(fed) & set(result.expanded.ranked[query_id])
        rest = [u for u in deep.ranked[query_id] if u not in fed][:K]
        assert result.typed.ranked[query_id] == rest
        relevant_left = sum(1 for u, g in graded.items() if g > 0 and u not in fed)
        (row,) = [r for r in result.expanded.rows if r.query_id == query_id]
        assert row.judged == relevant_left
    assert "residual" in result.typed.label and "Rocchio" in result.expanded.label
    assert result.significance.queries == len(measured)


def test_residual_ranking_of_rm3_is_refused_in_one_sentence(
    cranfield: tuple[LexplainService, str, dict[str, dict[str, int]]],
) -> None:
    service, ws, _ = cranfield
    with pytest.raises(ValueError, match="learns from no grade"):
        service.evaluate_residual("first 30", K, LIMIT, workspace=ws, expand=ExpansionSpec())


def test_rocchio_learns_only_from_the_fed_back_grades_as_search_learns_from_those_alone(
    cranfield: tuple[LexplainService, str, dict[str, dict[str, int]]],
) -> None:
    # A workspace holding only the fed-back grades of a query: Search's Rocchio there learns
    # from exactly those, so its ranking, the fed-back passages left out, is the residual one.
    service, ws, grades = cranfield
    spec = ExpansionSpec.rocchio().model_copy(update={"fb_docs": FB_DOCS})
    result = service.evaluate_residual("first 30", K, LIMIT, workspace=ws, expand=spec)
    alone = f"fed-only-{uuid.uuid4().hex[:6]}"
    service.load_sample(workspace=alone)
    checked = 0
    for row in result.typed.rows[:8]:
        fed = result.fed_back[row.query_id]
        if not any(grades[row.query][u] >= 1 for u in fed):
            continue
        for unit in fed:
            service.grade(row.query, unit, grades[row.query][unit], workspace=alone)
        found = service.search(row.query, K + len(fed), LIMIT, workspace=alone, expand=spec)
        assert found.expansion is not None
        assert sorted(f.chunk_id for f in found.expansion.feedback) == sorted(fed)
        ranked = [p.chunk.id for p in found.passages if p.chunk.id not in fed][:K]
        assert result.expanded.ranked[row.query_id] == ranked
        checked += 1
    assert checked >= 3
