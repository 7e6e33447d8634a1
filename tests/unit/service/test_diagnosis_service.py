"""The diagnosis and the k1/b grid through the facade, on Cranfield with its qrels as grades.

Cross-checked against the facade's other answers, never against themselves: a cut passage is
one Search's "why not?" says the limit cut, a mismatch one it says contains no query term; the
grid's value at the workspace's own k1 and b is Evaluate's mean, exactly.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from core.domain.ranking import LexicalCandidates
from core.service import (
    SAMPLE_QUERY_SET,
    GridSpec,
    LexplainService,
    LostCause,
    RunSpec,
)
from core.settings import Settings

K, LIMIT = 10, 100


@pytest.fixture(scope="module")
def graded() -> Iterator[tuple[LexplainService, str]]:
    service = LexplainService.from_settings(Settings(store="memory"))
    name = f"diag-{uuid.uuid4().hex[:6]}"
    service.load_sample(workspace=name)
    service.import_sample_grades(workspace=name)
    yield service, name
    service.close()


def test_every_lost_relevant_passage_has_the_cause_search_gives_it(
    graded: tuple[LexplainService, str],
) -> None:
    service, ws = graded
    run = service.diagnose(SAMPLE_QUERY_SET, K, LIMIT, workspace=ws)
    assert run.lost > 100 and len(run.queries) == 225
    assert sum(run.by_cause.values()) == run.lost
    assert set(run.by_cause) == {LostCause.VOCABULARY, LostCause.LIMIT, LostCause.OUTRANKED}
    assert all(n > 0 for n in run.by_cause.values())
    assert [q.ndcg_lost for q in run.queries] == sorted(
        (q.ndcg_lost for q in run.queries), reverse=True
    )
    checked = set()
    for query in run.queries:
        for lost in query.lost:
            if lost.cause in checked:
                continue
            why = service.why_not(query.query, lost.chunk_id, K, LIMIT, workspace=ws)
            if lost.cause is LostCause.VOCABULARY:
                assert why.position is None and lost.own_terms
            elif lost.cause is LostCause.LIMIT:
                assert why.cut_by_limit and why.position == lost.smallest_limit
            else:
                assert not why.cut_by_limit and why.limited_rank is None
                assert lost.rank is not None and lost.rank > K
            checked.add(lost.cause)
    assert len(checked) == 3


def test_the_grid_at_the_workspaces_setting_is_evaluates_mean_and_its_best_is_its_maximum(
    graded: tuple[LexplainService, str],
) -> None:
    service, ws = graded
    grid = service.tune(
        SAMPLE_QUERY_SET, K, LIMIT, workspace=ws, grid=GridSpec(k1s=(0.5, 1.2, 2.0), bs=(0.3, 0.75))
    )
    (run,) = service.evaluate_judged(
        SAMPLE_QUERY_SET, K, [RunSpec(workspace=ws, limit=LIMIT)], workspace=ws
    )
    assert grid.workspace.mean == run.mean_ndcg
    assert grid.means[1][1] == run.mean_ndcg  # b 0.75, k1 1.2 is on this grid
    assert grid.best.mean == max(max(row) for row in grid.means)
    assert grid.significance.queries == len(grid.query_ids) == len(run.rows)
    assert "randomisation" in grid.verdict or "no setting" in grid.verdict


def test_a_grid_by_document_at_the_workspaces_setting_is_evaluates_by_document_mean(
    graded: tuple[LexplainService, str],
) -> None:
    service, ws = graded
    grid = service.tune(
        SAMPLE_QUERY_SET, K, LIMIT, workspace=ws, grid=GridSpec(k1s=(1.2,), bs=(0.75,)),
        by_document=True,
    )  # fmt: skip
    (run,) = service.evaluate_judged(
        SAMPLE_QUERY_SET, K, [RunSpec(workspace=ws, limit=LIMIT)], workspace=ws, by_document=True
    )
    assert grid.workspace.mean == run.mean_ndcg == grid.best.mean


def test_by_document_and_from_judgment_files_the_causes_are_the_passages_on_cranfield(
    graded: tuple[LexplainService, str],
) -> None:
    # Cranfield's documents are one passage each: judged by document, every lost document has
    # the cause its passage has; from the qrels file (grades 1-4) the same relevant set is lost.
    service, ws = graded
    passages = service.diagnose(SAMPLE_QUERY_SET, K, LIMIT, workspace=ws)
    documents = service.diagnose(SAMPLE_QUERY_SET, K, LIMIT, workspace=ws, by_document=True)
    queries, qrels = LexplainService.sample_judgments()
    files = service.diagnose_files(queries, qrels, K, LIMIT, workspace=ws)
    source_of = {
        p.chunk_id: service.passage(p.chunk_id, workspace=ws).source_id  # type: ignore[union-attr]
        for q in passages.queries
        for p in q.lost
    }

    def causes(run: object, mapped: bool) -> set[tuple[str, str, str, int | None]]:
        return {
            (q.query_id, source_of[p.chunk_id] if mapped else p.chunk_id, p.cause.value, p.rank)
            for q in run.queries  # type: ignore[attr-defined]
            for p in q.lost
        }

    assert causes(documents, False) == causes(passages, True)
    assert documents.by_cause == passages.by_cause
    # The qrels also judge Cranfield's two empty records, which were never loaded.
    absent = {c for c in causes(files, False) if c[2] == LostCause.GONE.value}
    held = {s.source_id for s in service.list_sources(workspace=ws)}
    assert absent and all(c[1] not in held for c in absent)
    assert causes(files, False) - absent == causes(passages, True)


@pytest.mark.parametrize("limit", [100, 1000])
def test_the_diagnosis_read_at_the_limit_equals_the_one_read_unlimited(
    graded: tuple[LexplainService, str], limit: int
) -> None:
    # The service reads unlimited only for a query with a relevant passage past the limit
    # that holds a query term; every query diagnosed from an unlimited read gives the same.
    from core.analysis.diagnosis import diagnose_query, summarise
    from core.analysis.rankers import Ranker, RankerKind
    from core.domain.tokenize import tokenize
    from core.service.common import UNLIMITED, combine_judgments

    service, ws = graded
    got = service.diagnose(SAMPLE_QUERY_SET, K, limit, workspace=ws)
    store, tenant = service._store, service.tenant(ws)
    queries = service.query_set(SAMPLE_QUERY_SET, workspace=ws).queries
    grades = combine_judgments(
        service._call(store.list_judgments(tenant, [q.text for q in queries]))
    )
    ranker = Ranker.of(RankerKind.WORKSPACE)
    reference = []
    for query in queries:
        if query.text not in grades:
            continue
        terms = tokenize(query.text)
        full = service._call(store.lexical_candidates(terms, tenant, UNLIMITED))
        reference.append(
            diagnose_query(
                query.query_id, query.text, terms, full, grades[query.text], K, limit, ranker
            )
        )
    want = summarise(K, limit, reference)
    assert [(q.query_id, [(p.chunk_id, p.cause, p.rank, p.smallest_limit) for p in q.lost])
            for q in got.queries] == [
        (q.query_id, [(p.chunk_id, p.cause, p.rank, p.smallest_limit) for p in q.lost])
        for q in want.queries
    ]  # fmt: skip


def test_by_document_every_candidates_source_is_read_from_its_column_with_no_lookup(
    graded: tuple[LexplainService, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    service, ws = graded
    store = service._store
    asked: list[int] = []

    async def counted(chunk_ids: Sequence[str], tenant_id: uuid.UUID) -> dict[str, str]:
        asked.append(len(chunk_ids))
        return await type(store).source_ids(store, chunk_ids, tenant_id)

    monkeypatch.setattr(store, "source_ids", counted)
    found = service.diagnose(SAMPLE_QUERY_SET, K, LIMIT, workspace=ws, by_document=True)
    assert found.lost and asked == []


def test_by_document_a_candidate_deleted_after_the_read_is_diagnosed_as_the_read_saw_it(
    graded: tuple[LexplainService, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store that hands over no source column is asked ``source_ids`` once a query; it
    # answers for the passages still held, and one it leaves out (deleted since the read)
    # is looked up in the read's own snapshot, so the diagnosis does not change.
    from core.service import diagnosis

    service, ws = graded
    held = service.diagnose(SAMPLE_QUERY_SET, K, LIMIT, workspace=ws, by_document=True)
    store = service._store
    asked: list[int] = []
    original = diagnosis.bounded_candidates

    async def no_column(*args: Any, **kwargs: Any) -> LexicalCandidates:
        handed = await original(*args, **kwargs)
        return handed.model_copy(update={"source_pool": np.empty(0, dtype=object)})

    async def every_other(chunk_ids: Sequence[str], tenant_id: uuid.UUID) -> dict[str, str]:
        asked.append(len(chunk_ids))
        found = await type(store).source_ids(store, chunk_ids[::2], tenant_id)
        return dict(found)

    monkeypatch.setattr(diagnosis, "bounded_candidates", no_column)
    monkeypatch.setattr(store, "source_ids", every_other)
    gone = service.diagnose(SAMPLE_QUERY_SET, K, LIMIT, workspace=ws, by_document=True)
    assert len(asked) == 225 and sum(asked) > 1_000
    assert gone == held


def test_tuning_holds_one_querys_candidates_at_a_time(
    graded: tuple[LexplainService, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc
    import weakref

    from core.service import diagnosis

    service, ws = graded
    read: list[weakref.ref[object]] = []
    alive_at_each_read: list[int] = []
    original = diagnosis.bounded_candidates

    async def counted(*args: object, **kwargs: object) -> object:
        gc.collect()
        alive_at_each_read.append(sum(ref() is not None for ref in read))
        handed = await original(*args, **kwargs)  # type: ignore[arg-type]
        read.append(weakref.ref(handed))
        return handed

    monkeypatch.setattr(diagnosis, "bounded_candidates", counted)
    spec = GridSpec(k1s=(0.5, 1.2, 2.0), bs=(0.3, 0.75))
    grid = service.tune(SAMPLE_QUERY_SET, K, LIMIT, workspace=ws, grid=spec, by_document=True)
    assert len(alive_at_each_read) == len(grid.query_ids) > 200
    # Streamed: when a query is read, at most the last one's columns are alive (still named by
    # the loop's variable until the read returns); held, all earlier queries' were.
    assert max(alive_at_each_read) <= 1


def test_a_query_judging_many_documents_past_the_limit_reads_them_a_few_hundred_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A qrels line may name thousands of relevant documents: their passages are read in
    # bounded groups, and each document cut by the limit is at the place Search gives it.
    from core.service.diagnosis import _SOURCES_READ

    service = LexplainService.from_settings(Settings(store="memory"))
    try:
        service.create_workspace("many")
        docs = 2 * _SOURCES_READ + 100
        corpus = "".join(f'{{"_id": "d{n}", "text": "alpha w{n}"}}\n' for n in range(docs))
        service.upload_files([("c.jsonl", corpus.encode())], workspace="many")
        store, asked = service._store, []
        read = store.passage_ids_by_source

        async def counted(sources: Sequence[str], tenant: Any) -> Any:
            asked.append(len(sources))
            return await read(sources, tenant)

        monkeypatch.setattr(store, "passage_ids_by_source", counted)
        qrels = "".join(f"q 0 d{n} 1\n" for n in range(docs)).encode()
        run = service.diagnose_files(
            b'{"_id": "q", "text": "alpha"}\n', qrels, K, 10, workspace="many"
        )
        (query,) = run.queries
        cut = [lost for lost in query.lost if lost.cause is LostCause.LIMIT]
        assert len(cut) == docs - 10 and max(asked) <= _SOURCES_READ
        for lost in cut[:: docs // 7]:
            why = service.why_not("alpha", lost.chunk_id, K, 10, workspace="many")
            assert (lost.position, lost.smallest_limit) == (why.position, why.position)
    finally:
        service.close()


def test_a_diagnosis_reads_the_next_queries_while_it_diagnoses_one(
    graded: tuple[LexplainService, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As an Evaluate reads (common.read_ahead): on PostgreSQL a query's round trips were
    # waited for alone. The diagnosis is the one read one query at a time gives.
    from core.service import diagnosis

    service, ws = graded
    alone = service.diagnose(SAMPLE_QUERY_SET, K, LIMIT, workspace=ws)
    store, reads, seen = service._store, [], []
    read, diagnose_query = store.lexical_candidates, diagnosis.diagnose_query

    async def counted(*args: Any, **kwargs: Any) -> LexicalCandidates:
        reads.append(args[0])
        return await read(*args, **kwargs)

    def noted(*args: Any, **kwargs: Any) -> Any:
        seen.append(len(reads))
        return diagnose_query(*args, **kwargs)

    monkeypatch.setattr(store, "lexical_candidates", counted)
    monkeypatch.setattr(diagnosis, "diagnose_query", noted)
    ahead = service.diagnose(SAMPLE_QUERY_SET, K, LIMIT, workspace=ws)
    assert seen[0] == 3, "two queries' reads under way when the first is diagnosed"
    assert ahead == alone


@pytest.mark.parametrize("by_document", [False, True])
def test_a_store_whose_reads_do_not_place_is_diagnosed_alike_from_an_unlimited_read(
    graded: tuple[LexplainService, str], monkeypatch: pytest.MonkeyPatch, by_document: bool
) -> None:
    # The fallback of _placed: a cut read without places (a store not built on the kernel).
    service, ws = graded
    placed = service.diagnose(SAMPLE_QUERY_SET, K, LIMIT, workspace=ws, by_document=by_document)
    store = service._store
    read = store.lexical_candidates

    async def unplaced(*args: Any, **kwargs: Any) -> LexicalCandidates:
        return (await read(*args, **kwargs)).model_copy(update={"places": None})

    monkeypatch.setattr(store, "lexical_candidates", unplaced)
    assert (
        service.diagnose(SAMPLE_QUERY_SET, K, LIMIT, workspace=ws, by_document=by_document)
        == placed
    )
    assert placed.by_cause[LostCause.LIMIT] > 0
