"""An RM3 search through the facade (issue 47 items 1, 2 and 4): the passages are ranked with
the expansion's weights, every explanation row is weight * idf * TF part and the rows add up to
the score, and each passage says where it stood before and which added term brought it in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.analysis.diagnosis import LostCause
from core.analysis.expansion import ExpansionSpec
from core.domain.comparison import randomisation_test
from core.service import SAMPLE_QUERY_SET, LexplainService, RunSpec
from core.settings import Settings

QUERIES = Path(__file__).resolve().parents[3] / "data" / "cranfield" / "queries.jsonl"
#: Cranfield's first queries, the sample's own.
CHECKED = 8


@pytest.fixture(scope="module")
def service() -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(Settings(store="memory"))
    svc.load_sample(workspace="default")
    yield svc
    svc.close()


def queries() -> list[str]:
    with QUERIES.open(encoding="utf-8") as lines:
        return [json.loads(line)["text"] for _, line in zip(range(CHECKED), lines, strict=False)]


@pytest.mark.parametrize("query", queries())
def test_an_rm3_search_ranks_by_the_expansions_weights_and_every_explanation_adds_up(
    service: LexplainService, query: str
) -> None:
    result = service.search(query, 10, 1000, workspace="default", expand=ExpansionSpec())
    expansion = result.expansion
    assert expansion is not None and expansion.added, "RM3 added no term to a Cranfield query"
    weights = expansion.weights
    assert set(result.doc_frequencies) == set(weights)
    for passage in result.passages:
        total = 0.0
        for part in passage.explanation.terms:
            assert part.weight == weights[part.term]
            assert part.contribution == (part.weight * part.idf) * part.tf_part
            total += part.contribution
        assert total == passage.score


@pytest.mark.parametrize("query", queries())
def test_each_passage_says_its_rank_before_and_the_added_term_that_brought_it_in(
    service: LexplainService, query: str
) -> None:
    plain = service.search(query, 10, 1000, workspace="default")
    result = service.search(query, 10, 1000, workspace="default", expand=ExpansionSpec())
    assert result.expansion is not None
    before = {p.chunk.id: p.rank for p in plain.passages}
    added = set(result.expansion.added)
    for passage in result.passages:
        if passage.chunk.id in before:
            assert passage.rank_before == before[passage.chunk.id]
            assert passage.brought_by is None
        else:
            assert passage.rank_before is None or passage.rank_before > 10
            contributions = {
                p.term: p.contribution for p in passage.explanation.terms if p.term in added
            }
            if contributions:
                assert passage.brought_by == min(
                    contributions, key=lambda t: (-contributions[t], t)
                )
            else:
                assert passage.brought_by is None
    assert all(p.rank_before is None and p.brought_by is None for p in plain.passages)
    assert plain.expansion is None


def test_the_feedback_is_the_unexpanded_rankings_top_passages(service: LexplainService) -> None:
    query = queries()[0]
    plain = service.search(query, 10, 1000, workspace="default")
    result = service.search(query, 5, 1000, workspace="default", expand=ExpansionSpec(fb_docs=10))
    assert result.expansion is not None
    assert [f.chunk_id for f in result.expansion.feedback] == [p.chunk.id for p in plain.passages]
    assert [f.score for f in result.expansion.feedback] == [p.score for p in plain.passages]


@pytest.fixture(scope="module")
def graded(service: LexplainService) -> LexplainService:
    service.import_sample_grades(workspace="default")
    return service


def test_an_expanded_run_ranks_each_query_as_an_expanded_search_does(
    graded: LexplainService,
) -> None:
    spec = ExpansionSpec(fb_docs=5, fb_terms=8)
    (run,) = graded.evaluate_judged(
        SAMPLE_QUERY_SET, 10, [RunSpec(workspace="default", limit=500, expand=spec)],
        workspace="default",
    )  # fmt: skip
    assert "RM3" in run.label
    for row in run.rows[:CHECKED]:
        found = graded.search(row.query, 10, 500, workspace="default", expand=spec)
        assert run.ranked[row.query_id] == [p.chunk.id for p in found.passages]


def test_the_ledger_is_the_two_runs_query_by_query_with_the_paired_test(
    graded: LexplainService,
) -> None:
    spec = ExpansionSpec()
    ledger = graded.expansion_ledger(SAMPLE_QUERY_SET, 100, 1000, workspace="default", expand=spec)
    plain = RunSpec(workspace="default", limit=1000)
    runs = [plain, plain.model_copy(update={"expand": spec})]
    typed, expanded = graded.evaluate_judged(SAMPLE_QUERY_SET, 100, runs, workspace="default")
    assert ledger.mean_before == typed.mean_ndcg and ledger.mean_after == expanded.mean_ndcg
    before = {r.query_id: r.ndcg for r in typed.rows}
    after = {r.query_id: r.ndcg for r in expanded.rows}
    assert {r.query_id: (r.before, r.after) for r in ledger.rows} == {
        q: (before[q], after[q]) for q in before
    }
    assert ledger.helped + ledger.hurt + ledger.unchanged == len(typed.rows)
    assert [r.change for r in ledger.rows] == sorted((r.change for r in ledger.rows), reverse=True)
    ordered = [r.query_id for r in typed.rows]
    assert ledger.significance == randomisation_test(
        [after[q] for q in ordered], [before[q] for q in ordered]
    )
    diagnosis = graded.diagnose(SAMPLE_QUERY_SET, 100, 1000, workspace="default")
    mismatched = {
        (q.query_id, lost.chunk_id)
        for q in diagnosis.queries
        for lost in q.lost
        if lost.cause is LostCause.VOCABULARY
    }
    assert ledger.mismatch == len(mismatched)
    for row in ledger.rows:
        grades = dict(
            zip(expanded.ranked[row.query_id], expanded.grades[row.query_id], strict=True)
        )
        for chunk_id in row.recovered:
            assert (grades[chunk_id] or 0) >= 1 and chunk_id not in typed.ranked[row.query_id]
        assert {(row.query_id, c) for c in row.recovered_mismatch} <= mismatched
        assert set(row.recovered_mismatch) <= set(row.recovered)
    assert ledger.recovered_mismatch > 0, "RM3 recovered no vocabulary mismatch on Cranfield"


def test_feedback_from_the_grades_learns_from_the_querys_graded_passages_and_never_goes_stale(
    graded: LexplainService,
) -> None:
    query = queries()[1]
    spec = ExpansionSpec.rocchio()
    grades = graded.combined_judgments(workspace="default", queries=[query])[query]
    result = graded.search(query, 10, 1000, workspace="default", expand=spec)
    assert result.expansion is not None and result.expansion.added
    assert sorted(f.chunk_id for f in result.expansion.feedback) == sorted(grades)
    for passage in result.passages:
        total = 0.0
        for part in passage.explanation.terms:
            assert part.contribution == (part.weight * part.idf) * part.tf_part
            total += part.contribution
        assert total == passage.score
    ungraded = next(p.chunk.id for p in result.passages if p.chunk.id not in grades)
    graded.grade(query, ungraded, 0, workspace="default")
    again = graded.search(query, 10, 1000, workspace="default", expand=spec)
    assert again.expansion is not None
    assert ungraded in {f.chunk_id for f in again.expansion.feedback}
