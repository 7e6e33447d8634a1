"""Diagnose on an expanded run (issue 47 item 5): the causes are the expanded run's own.

A passage the typed query cannot reach (it holds no typed term) but an added term does is no
longer a vocabulary mismatch on the RM3 run; and every query's nDCG in the expanded diagnosis is
the expanded Evaluate run's, so the diagnosis judges the ranking Evaluate measured.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from core.analysis.expansion import ExpansionSpec
from core.service import SAMPLE_QUERY_SET, LexplainService, LostCause, RunSpec
from core.settings import Settings

#: Four passages about car engines that also say "automobile", and one that says only
#: "automobile gearbox": the typed "car engine" cannot reach it, RM3 adds "automobile".
DOCUMENTS = {
    "f1": "car engine automobile gearbox",
    "f2": "car engine automobile",
    "f3": "car engine automobile design",
    "f4": "car engine cooling",
    "target": "automobile gearbox repair",
    "tides": "ocean tides and the moon",
    "bread": "bread baking with yeast",
    "violin": "violin strings and bows",
}
QUERY = "car engine"
#: Every matching passage fits in the top k: a lost passage is one no term reaches.
K, LIMIT = 5, 100


@pytest.fixture(scope="module")
def small() -> Iterator[tuple[LexplainService, str, dict[str, str]]]:
    service = LexplainService.from_settings(Settings(store="memory"))
    ws = service.create_workspace(f"rm3-diag-{uuid.uuid4().hex[:6]}")
    lines = "\n".join(
        json.dumps({"_id": source, "title": "", "text": text}) for source, text in DOCUMENTS.items()
    )
    service.upload_files([("cars.jsonl", lines.encode())], workspace=ws)
    ids = {}
    for source, text in DOCUMENTS.items():
        (found,) = [
            p.chunk.id
            for p in service.search(text, 10, LIMIT, workspace=ws).passages
            if p.chunk.source_id == source
        ]
        ids[source] = found
    service.save_query_set("cars", QUERY, "lines", workspace=ws)
    service.grade(QUERY, ids["target"], 3, workspace=ws)
    service.grade(QUERY, ids["f1"], 2, workspace=ws)
    service.grade(QUERY, ids["tides"], 0, workspace=ws)
    yield service, ws, ids
    service.close()


def test_a_passage_only_an_added_term_reaches_is_lost_as_typed_and_not_on_the_rm3_run(
    small: tuple[LexplainService, str, dict[str, str]],
) -> None:
    service, ws, ids = small
    spec = ExpansionSpec()
    expanded = service.search(QUERY, K, LIMIT, workspace=ws, expand=spec).expansion
    assert expanded is not None and "automobile" in expanded.added

    typed = service.diagnose("cars", K, LIMIT, workspace=ws)
    (query,) = typed.queries
    assert [(p.chunk_id, p.cause) for p in query.lost] == [(ids["target"], LostCause.VOCABULARY)]
    assert typed.expansion is None and "no query term" in typed.ceiling_note

    run = service.diagnose("cars", K, LIMIT, workspace=ws, expand=spec)
    (query,) = run.queries
    assert query.lost == [] and run.lost == 0
    assert run.expansion == spec.label and "expanded query" in run.ceiling_note
    (evaluated,) = service.evaluate_judged(
        "cars", K, [RunSpec(workspace=ws, limit=LIMIT, expand=spec)], workspace=ws
    )
    assert ids["target"] in evaluated.ranked[query.query_id]
    assert query.ndcg == evaluated.rows[0].ndcg > typed.queries[0].ndcg


def test_on_the_rm3_run_a_lost_passage_lacks_the_expanded_terms_not_just_the_typed_ones(
    small: tuple[LexplainService, str, dict[str, str]],
) -> None:
    service, ws, ids = small
    service.grade(QUERY, ids["bread"], 1, workspace=ws)
    try:
        spec = ExpansionSpec()
        run = service.diagnose("cars", K, LIMIT, workspace=ws, expand=spec)
        (query,) = run.queries
        (lost,) = query.lost
        weights = service.search(QUERY, K, LIMIT, workspace=ws, expand=spec).expansion
        assert weights is not None
        assert lost.chunk_id == ids["bread"] and lost.cause is LostCause.VOCABULARY
        assert lost.missing_terms == sorted(weights.weights) != ["car", "engine"]
    finally:
        service.grade(QUERY, ids["bread"], 0, workspace=ws)


def test_rocchio_is_refused_as_a_diagnosed_run_in_one_sentence(
    small: tuple[LexplainService, str, dict[str, str]],
) -> None:
    service, ws, _ = small
    with pytest.raises(ValueError, match="grades it learned from"):
        service.diagnose("cars", K, LIMIT, workspace=ws, expand=ExpansionSpec.rocchio())


@pytest.fixture(scope="module")
def cranfield() -> Iterator[tuple[LexplainService, str]]:
    service = LexplainService.from_settings(Settings(store="memory"))
    ws = f"rm3-cran-{uuid.uuid4().hex[:6]}"
    service.load_sample(workspace=ws)
    service.import_sample_grades(workspace=ws)
    first = service.query_set(SAMPLE_QUERY_SET, workspace=ws).queries[:30]
    service.save_query_set("first 30", "\n".join(q.text for q in first), "lines", workspace=ws)
    yield service, ws
    service.close()


@pytest.mark.parametrize("by_document", [False, True])
def test_every_querys_ndcg_in_the_rm3_diagnosis_is_the_rm3_evaluate_runs(
    cranfield: tuple[LexplainService, str], by_document: bool
) -> None:
    service, ws = cranfield
    spec = ExpansionSpec(fb_docs=5, fb_terms=8, original_weight=0.6)
    run = service.diagnose("first 30", 10, 200, workspace=ws, expand=spec, by_document=by_document)
    typed = service.diagnose("first 30", 10, 200, workspace=ws, by_document=by_document)
    (evaluated,) = service.evaluate_judged(
        "first 30", 10, [RunSpec(workspace=ws, limit=200, expand=spec)], workspace=ws,
        by_document=by_document,
    )  # fmt: skip
    by_query = {r.query_id: r.ndcg for r in evaluated.rows}
    assert {q.query_id: q.ndcg for q in run.queries} == by_query
    assert {q.query_id: q.ndcg for q in typed.queries} != by_query
    assert run.relevant == typed.relevant and run.lost != typed.lost
