"""Profiles, Compare and Evaluate across rankers/workspaces through the facade, on both stores.

The done-when figures of issue 12 are pinned here: Cranfield loaded twice (profiles
``plain`` and ``english``), evaluated with no limit at k 10, gives nDCG@10 0.4098 and
0.4311, and the comparison between the two workspaces is their difference. The same
figures from an independent reference: tests/unit/domain/test_profile_reference.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.analysis.rankers import compare_rankers, rank_with
from core.domain.tokenize import tokenize
from core.service import (
    NO_LIMIT,
    LexplainService,
    Profile,
    Ranker,
    RunSpec,
    compare_runs,
)
from tests.fixtures.stores import settings_for

PLAIN, ENGLISH = "cranfield-plain", "cranfield-english"
QUERY = "what similarity laws must be obeyed when constructing aeroelastic models of heated"
DOCS = {
    "a.txt": "Models of heated wings. A model wing was heated.",
    "b.txt": "The modelling of flows; flow models.",
    "c.txt": "Heating and heat transfer at hypersonic speed.",
}


@pytest.fixture(scope="module", params=["memory", "postgres"])
def service(request: pytest.FixtureRequest) -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(settings_for(request))
    assert svc.create_workspace(PLAIN) == PLAIN
    assert svc.create_workspace(ENGLISH, Profile.ENGLISH) == ENGLISH
    for workspace in (PLAIN, ENGLISH):
        svc.load_sample(workspace=workspace)
    yield svc
    svc.close()


def test_cranfield_plain_and_english_evaluate_to_the_issues_figures(
    service: LexplainService,
) -> None:
    queries, qrels = service.sample_judgments()
    events: list[tuple[int, int, str]] = []
    runs = service.evaluate_runs(
        queries,
        qrels,
        10,
        [RunSpec(workspace=PLAIN, limit=NO_LIMIT), RunSpec(workspace=ENGLISH, limit=NO_LIMIT)],
        on_progress=lambda *event: events.append(event),
    )
    assert [round(run.mean_ndcg, 4) for run in runs] == [0.4098, 0.4311]
    assert events[-1][:2] == (450, 450)  # 225 judged queries, read once per workspace
    comparison = compare_runs(*runs)
    assert comparison.ndcg_delta == runs[1].mean_ndcg - runs[0].mean_ndcg
    header = comparison.to_csv().splitlines()[0]
    assert f"ndcg@10 {PLAIN} · no limit · workspace BM25 (k1 1.2, b 0.75) (A)" in header
    assert f"ndcg@10 {ENGLISH} · no limit" in header
    # A plain limit run of one workspace is the same as its spec run.
    (limit_run,) = service.evaluate(queries, qrels, 10, [NO_LIMIT], workspace=ENGLISH)
    assert limit_run.rows == runs[1].rows


def test_an_english_workspace_searches_stems_and_names_the_surface_forms(
    service: LexplainService,
) -> None:
    assert service.workspace_profile(ENGLISH) is Profile.ENGLISH
    assert service.workspace_profile(PLAIN) is Profile.PLAIN
    result = service.search(QUERY, 10, 1000, workspace=ENGLISH)
    assert result.profile is Profile.ENGLISH
    assert result.terms == tokenize(QUERY, Profile.ENGLISH)
    assert ("models", "model") in result.surface_terms
    assert ("similarity", "similar") in result.surface_terms
    assert "model" in result.distinct_terms and "models" not in result.distinct_terms
    plain = service.search(QUERY, 10, 1000, workspace=PLAIN)
    assert ("models", "models") in plain.surface_terms
    assert result.matching_passages > plain.matching_passages


def test_compare_ranks_one_read_under_two_rankers_and_the_workspace_side_is_search(
    service: LexplainService,
) -> None:
    workspace, classic = Ranker.of("workspace"), Ranker.of("classic")
    view = service.compare(QUERY, workspace, classic, 10, 100, workspace=ENGLISH)
    search = service.search(QUERY, 10, 100, workspace=ENGLISH)
    assert [(r.chunk.id, r.score) for r in view.comparison.a] == [
        (p.chunk.id, p.score) for p in search.passages
    ]
    assert view.candidates_returned == 100 and view.comparison.ranked == 100
    assert view.chosen == view.comparison.a[0].chunk.id
    assert view.explanation_a is not None and view.explanation_b is not None
    assert view.explanation_a.score == view.comparison.a[0].score
    assert view.explanation_b.idf_form.value == "classic"
    custom = Ranker.of("custom", k1=0.9, b=0.4)
    other = service.compare(
        QUERY, custom, classic, 5, 100, workspace=ENGLISH, chosen=view.comparison.b[-1].chunk.id
    )
    assert other.chosen == view.comparison.b[-1].chunk.id
    assert (other.explanation_a is not None) and (
        other.explanation_a.k1,
        other.explanation_a.b,
    ) == (
        0.9,
        0.4,
    )


def test_evaluate_across_rankers_of_one_workspace_labels_each_run(
    service: LexplainService,
) -> None:
    queries, qrels = service.sample_judgments()
    few = b"\n".join(queries.splitlines()[:20])
    runs = service.evaluate_runs(
        few,
        qrels,
        10,
        [
            RunSpec(workspace=PLAIN, limit=1000),
            RunSpec(workspace=PLAIN, limit=1000, ranker=Ranker.of("classic")),
        ],
    )
    assert runs[0].label != runs[1].label and "textbook" in runs[1].label
    assert runs[0].mean_ndcg != runs[1].mean_ndcg
    (plain_run,) = service.evaluate(few, qrels, 10, [1000], workspace=PLAIN)
    assert plain_run.rows == runs[0].rows and plain_run.label == ""


def test_changing_a_profile_reindexes_with_progress_and_queries_follow(
    service: LexplainService,
) -> None:
    name = "switching"
    service.create_workspace(name)
    service.upload_files([(n, t.encode()) for n, t in DOCS.items()], workspace=name)
    before = service.search("models", 10, 1000, workspace=name)
    assert {p.chunk.source_id for p in before.passages} == {"a.txt", "b.txt"}
    assert service.search("heating", 10, 1000, workspace=name).matching_passages == 1
    events: list[tuple[int, int, str]] = []
    assert service.change_profile(name, "english", on_progress=lambda *e: events.append(e)) == 3
    assert events[-1][:2] == (3, 3)
    assert service.workspace_profile(name) is Profile.ENGLISH
    after = service.search("models heating", 10, 1000, workspace=name)
    assert after.terms == ["model", "heat"]
    assert {p.chunk.source_id for p in after.passages} == {"a.txt", "b.txt", "c.txt"}
    # Creating it again keeps the profile it has.
    service.create_workspace(name)
    assert service.workspace_profile(name) is Profile.ENGLISH


def test_compare_equals_the_domain_over_the_same_read(service: LexplainService) -> None:
    """The facade adds nothing to ``compare_rankers``: same read, same lists."""
    view = service.compare("heated models", Ranker.of("classic"), Ranker.of("workspace"), 3, 10,
                           workspace="switching")  # fmt: skip
    handed = service._call(
        service._store.lexical_candidates(view.terms, service.tenant("switching"), 10)
    )
    want = compare_rankers(view.terms, handed, 3, Ranker.of("classic"), Ranker.of("workspace"))
    assert view.comparison == want
    assert want.a == rank_with(Ranker.of("classic"), view.terms, handed, 3)


async def test_the_load_command_creates_a_workspace_with_the_profile_asked(
    tmp_path: Path,
) -> None:

    from core.domain.chunks import ChunkingOptions, workspace_tenant_id
    from core.stores.memory import InMemoryChunkStore
    from core.terminal.load import load_into
    from core.terminal.parser import parser as _parser

    folder = tmp_path
    (folder / "m.txt").write_text("Models of heated models.", encoding="utf-8")
    args = _parser().parse_args(["load", str(folder), "--workspace", "w", "--profile", "english"])
    assert args.profile == "english"
    store = InMemoryChunkStore()
    await load_into(
        store, [folder], "w", profile=Profile(args.profile),
        chunking=ChunkingOptions(), extractor=None,
    )  # fmt: skip
    assert [w.profile for w in await store.list_workspaces()] == [Profile.ENGLISH]
    found = await store.lexical_candidates(["model"], workspace_tenant_id("w"), 10)
    assert found.candidates[0].term_frequencies == {"model": 2}
