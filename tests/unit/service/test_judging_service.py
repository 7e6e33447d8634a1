"""Query sets and grades through the facade: raters, passages looked up, files out and back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from core.analysis.evaluation import parse_qrels
from core.analysis.judgment_files import JudgmentError, JudgmentFormat, QueryFormat, read_judgments
from core.domain.agreement import cohen_kappa, fleiss_kappa
from core.domain.judging import LOCAL_RATER
from core.service import (
    SAMPLE_QRELS,
    SAMPLE_QUERIES,
    SAMPLE_QUERY_SET,
    LexplainService,
    NoAccess,
    RunSpec,
)
from core.settings import Settings

ADA, BOB = "ada@example.org", "bob@example.org"
NOTES = (
    "notes.txt",
    b"Swept wings delay compressibility drag.\n\nBoundary layers thicken downstream.\n\n"
    b"Flutter of a panel at supersonic speed.",
)


@pytest.fixture
def service() -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(Settings(store="memory"))
    yield svc
    svc.close()


def _passage(service: LexplainService, query: str, workspace: str) -> str:
    return service.search(query, workspace=workspace).passages[0].chunk.id


def test_the_sample_arrives_with_its_225_queries_as_a_set(service: LexplainService) -> None:
    service.load_sample(workspace="default")
    (summary,) = service.query_sets(workspace="default")
    assert (summary.name, summary.queries) == (SAMPLE_QUERY_SET, 225)
    assert service.query_set(SAMPLE_QUERY_SET, workspace="default").queries[0].query_id == "1"


def test_a_pasted_query_set_is_kept_and_exports_in_every_format(
    service: LexplainService,
) -> None:
    saved = service.save_query_set("mine", "swept wings\n\nflutter\n", "lines", workspace="default")
    assert saved.queries == 2
    kept = service.query_set("mine", workspace="default")
    assert [q.text for q in kept.queries] == ["swept wings", "flutter"]
    trec = service.export_query_set("mine", QueryFormat.TREC, workspace="default")
    service.save_query_set("again", trec, "trec", workspace="default")
    assert service.query_set("again", workspace="default").queries == kept.queries


def test_grades_keep_the_rater_and_the_passages_source(service: LexplainService) -> None:
    service.upload_files([NOTES], workspace="default")
    passage = _passage(service, "flutter", "default")
    local = service.grade("flutter", passage, 3, workspace="default")
    assert (local.rater, local.source_id, local.grade) == (LOCAL_RATER, "notes.txt", 3)
    with pytest.raises(KeyError, match="holds no passage"):
        service.grade("flutter", "f" * 64, 2, workspace="default")
    with pytest.raises(ValidationError):
        service.grade("flutter", passage, 4, workspace="default")
    assert [j.grade for j in service.judgments(workspace="default")] == [3]


def test_two_raters_grades_combine_and_export_as_qrels_that_read_back(
    service: LexplainService,
) -> None:
    ada, bob = service.for_user(ADA), service.for_user(BOB)
    ada.create_workspace("wind")
    ada.add_member("wind", BOB)
    ada.upload_files([NOTES], workspace="wind")
    ada.save_query_set("core", "flutter\nswept wings\n", "lines", workspace="wind")
    flutter = _passage(ada, "flutter", "wind")
    ada.grade("flutter", flutter, 3, workspace="wind")
    bob.grade("flutter", flutter, 1, workspace="wind")
    assert {j.rater for j in ada.judgments(workspace="wind")} == {ADA, BOB}
    assert ada.combined_judgments(workspace="wind") == {"flutter": {flutter: 1}}
    assert ada.combined_judgments(workspace="wind", by_document=True) == {
        "flutter": {"notes.txt": 1}
    }
    trec = ada.export_judgments("core", JudgmentFormat.TREC, workspace="wind", by_document=False)
    (pair,) = read_judgments(trec, JudgmentFormat.TREC)
    assert (pair.query, pair.doc_id, pair.grade) == ("1", flutter, 1)
    csv = ada.export_judgments("core", "csv", workspace="wind", by_document=True)
    assert csv == "query,docid,rating\nflutter,notes.txt,1\n"


def test_someone_who_may_not_open_the_workspace_sees_none_of_its_judging(
    service: LexplainService,
) -> None:
    ada, bob = service.for_user(ADA), service.for_user(BOB)
    ada.create_workspace("private")
    ada.save_query_set("core", "flutter\n", "lines", workspace="private")
    for action in (
        lambda: bob.query_sets(workspace="private"),
        lambda: bob.query_set("core", workspace="private"),
        lambda: bob.judgments(workspace="private"),
        lambda: bob.save_query_set("x", "a\n", "lines", workspace="private"),
    ):
        with pytest.raises(NoAccess):
            action()


def test_judging_goes_with_the_workspace(service: LexplainService) -> None:
    service.create_workspace("brief")
    service.upload_files([NOTES], workspace="brief")
    service.save_query_set("core", "flutter\n", "lines", workspace="brief")
    service.grade("flutter", _passage(service, "flutter", "brief"), 2, workspace="brief")
    service.delete_workspace("brief")
    service.create_workspace("brief")
    assert service.query_sets(workspace="brief") == []
    assert service.judgments(workspace="brief") == []


def _grade_from_cranfield(
    service: LexplainService, query_ids: list[str]
) -> dict[str, dict[str, int]]:
    """Grade, in the app, every top-100 passage Cranfield judges (grades above 3 become 3)."""
    queries = {
        q.query_id: q.text for q in service.query_set(SAMPLE_QUERY_SET, workspace="default").queries
    }
    qrels = parse_qrels(SAMPLE_QRELS.read_bytes())
    given: dict[str, dict[str, int]] = {}
    for query_id in query_ids:
        for hit in service.search(queries[query_id], k=100, workspace="default").passages:
            grade = qrels[query_id].get(hit.chunk.source_id)
            if grade is not None:
                service.grade(queries[query_id], hit.chunk.id, min(grade, 3), workspace="default")
                given.setdefault(query_id, {})[hit.chunk.source_id] = min(grade, 3)
    return given


def test_evaluating_from_in_app_grades_matches_evaluating_the_same_grades_from_a_file(
    service: LexplainService,
) -> None:
    service.load_sample(workspace="default")
    given = _grade_from_cranfield(service, ["1", "2", "3", "5", "8"])
    spec = RunSpec(workspace="default", limit=1000)
    (judged,) = service.evaluate_judged(
        SAMPLE_QUERY_SET, 10, [spec], workspace="default", by_document=True
    )
    trec = "".join(f"{q} 0 {d} {g}\n" for q, docs in given.items() for d, g in docs.items())
    (from_file,) = service.evaluate_runs(SAMPLE_QUERIES.read_bytes(), trec.encode(), 10, [spec])
    assert judged.rows == from_file.rows
    assert judged.mean_ndcg == from_file.mean_ndcg
    assert 0 < judged.mean_judged_share < 1


def test_passage_level_evaluation_ranks_passages_and_reports_judged_at_k(
    service: LexplainService,
) -> None:
    service.upload_files([NOTES], workspace="default")
    service.save_query_set(
        "core", "flutter\nboundary layers\nunjudged words\n", "lines", workspace="default"
    )
    top = service.search("flutter", workspace="default").passages
    service.grade("flutter", top[0].chunk.id, 2, workspace="default")
    (run,) = service.evaluate_judged(
        "core", 3, [RunSpec(workspace="default", limit=1000)], workspace="default"
    )
    (row,) = run.rows
    assert (row.query, row.ndcg, row.precision) == ("flutter", 1.0, 1 / 3)
    assert row.judged_share == 1 / len(run.ranked["1"])
    assert run.ranked["1"][0] == top[0].chunk.id
    service.save_query_set("empty", "wing\n", "lines", workspace="default")
    with pytest.raises(JudgmentError, match="has a grade yet"):
        service.evaluate_judged(
            "empty", 3, [RunSpec(workspace="default", limit=10)], workspace="default"
        )


def test_two_saved_runs_compare_and_stay_readable_after_more_grading_and_a_reindex(
    service: LexplainService,
) -> None:
    service.load_sample(workspace="default")
    given = _grade_from_cranfield(service, ["1", "2", "3", "5", "8", "13"])
    wide, narrow = RunSpec(workspace="default", limit=1000), RunSpec(workspace="default", limit=5)
    runs = service.evaluate_judged(
        SAMPLE_QUERY_SET, 10, [wide, narrow], workspace="default", by_document=True
    )
    ids = [
        service.save_run(
            name, run, spec.ranker, SAMPLE_QUERY_SET, workspace="default", by_document=True
        ).run_id
        for name, run, spec in zip(("wide", "narrow"), runs, (wide, narrow), strict=True)
    ]
    before = service.saved_run(ids[0], workspace="default")
    assert before.record.limit == 1000 and before.record.level == "document"
    assert len(before.record.judgments) == len(given)
    comparison = service.compare_saved_runs(ids, workspace="default")
    (versus,) = comparison.versus
    assert versus.outcome.wins + versus.outcome.ties + versus.outcome.losses == len(given)
    assert versus.t_test.p_value is not None and versus.randomisation.p_value is not None
    assert comparison.means[0].mean == pytest.approx(runs[0].mean_ndcg, abs=1e-15)
    _grade_from_cranfield(service, ["21"])
    service.change_profile("default", "english")
    assert service.saved_run(ids[0], workspace="default") == before
    assert [r.name for r in service.saved_runs(workspace="default")] == ["wide", "narrow"]


def test_agreement_is_cohens_kappa_for_two_raters_and_fleiss_for_three(
    service: LexplainService,
) -> None:
    ada, bob, cleo = (service.for_user(e) for e in (ADA, BOB, "cleo@example.org"))
    ada.create_workspace("wind")
    ada.add_member("wind", BOB)
    ada.add_member("wind", "cleo@example.org")
    ada.upload_files([NOTES], workspace="wind")
    ada.save_query_set("core", "flutter\nboundary layers\n", "lines", workspace="wind")
    hits = {
        q: [p.chunk.id for p in ada.search(q, workspace="wind").passages]
        for q in ("flutter", "boundary layers")
    }
    for rater, grades in ((ada, (3, 0)), (bob, (3, 1))):
        rater.grade("flutter", hits["flutter"][0], grades[0], workspace="wind")
        rater.grade("boundary layers", hits["boundary layers"][0], grades[1], workspace="wind")
    two = ada.agreement("core", workspace="wind")
    pairs = [("flutter", hits["flutter"][0]), ("boundary layers", hits["boundary layers"][0])]
    assert (two.raters, two.shared_pairs, two.method) == ([ADA, BOB], 2, "Cohen")
    assert two.kappa == cohen_kappa(
        dict(zip(pairs, (3, 0), strict=True)), dict(zip(pairs, (3, 1), strict=True))
    )
    assert "lower median" in two.rule
    cleo.grade("flutter", hits["flutter"][0], 2, workspace="wind")
    three = ada.agreement("core", workspace="wind")
    assert three.method == "Fleiss"
    assert three.kappa == fleiss_kappa({pairs[0]: [3, 3, 2], pairs[1]: [0, 1]})


def test_a_judgments_file_is_stored_with_what_it_names_that_is_not_here_listed(
    service: LexplainService,
) -> None:
    service.upload_files([NOTES], workspace="default")
    service.save_query_set("core", "flutter\nswept wings\n", "lines", workspace="default")
    data = (
        "query,docid,rating\nflutter,notes.txt,2\nflutter,gone.pdf,1\nnot in the set,notes.txt,3\n"
    )
    result = service.import_judgments(data, "csv", "core", workspace="default")
    passages = service.list_sources(workspace="default")[0].passages
    assert (result.stored, result.unknown_ids, result.unknown_queries) == (
        passages,
        ["gone.pdf"],
        ["not in the set"],
    )
    assert {j.rater for j in service.judgments(workspace="default")} == {"local (imported)"}
    with pytest.raises(JudgmentError, match="line 2: grade '4'"):
        service.import_judgments(
            "query,docid,rating\nflutter,notes.txt,4\n", "csv", "core", workspace="default"
        )


def test_judgments_exported_as_trec_qrels_reimport_to_the_same_metrics(
    service: LexplainService,
) -> None:
    service.load_sample(workspace="default")
    _grade_from_cranfield(service, ["1", "2", "3"])
    spec = RunSpec(workspace="default", limit=1000)
    (before,) = service.evaluate_judged(
        SAMPLE_QUERY_SET, 10, [spec], workspace="default", by_document=True
    )
    trec = service.export_judgments(SAMPLE_QUERY_SET, "trec", workspace="default", by_document=True)
    service.create_workspace("again")
    service.load_sample(workspace="again")
    imported = service.import_judgments(trec, "trec", SAMPLE_QUERY_SET, workspace="again")
    assert imported.unknown_ids == imported.unknown_queries == []
    again = RunSpec(workspace="again", limit=1000)
    (after,) = service.evaluate_judged(
        SAMPLE_QUERY_SET, 10, [again], workspace="again", by_document=True
    )
    assert after.rows == before.rows


def test_the_pool_holds_the_passages_the_limit_cut_in_an_order_that_hides_the_ranker(
    service: LexplainService,
) -> None:
    service.load_sample(workspace="default")
    query = service.query_set(SAMPLE_QUERY_SET, workspace="default").queries[0].text
    pool = service.pool(SAMPLE_QUERY_SET, 0, workspace="default", limit=3)
    unlimited = service.search(query, k=10, limit=10_000, workspace="default").passages
    ids = [p.chunk_id for p in pool.passages]
    assert {p.chunk.id for p in unlimited} <= set(ids)
    assert ids != [p.chunk.id for p in unlimited][: len(ids)]
    assert pool.next_ungraded == 0 and pool.graded == 0
    with pytest.raises(IndexError):
        service.pool(SAMPLE_QUERY_SET, 225, workspace="default")
