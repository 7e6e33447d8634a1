"""The pool the analyst chooses, and a rater's progress through a set: counted and resumed.

Expected pools come from the rankers themselves (``Ranker`` through Search's and Compare's
own paths), never from hard-coded ids.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from core.analysis.pooling import LIMITED
from core.analysis.rankers import Ranker, RankerKind
from core.service import (
    DEFAULT_POOL,
    SAMPLE_QUERY_SET,
    LexplainService,
    PoolSpec,
)
from core.settings import Settings


@pytest.fixture(scope="module")
def service() -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(Settings(store="memory"))
    svc.load_sample(workspace="default")
    yield svc
    svc.close()


def _first_query(service: LexplainService) -> str:
    return service.query_set(SAMPLE_QUERY_SET, workspace="default").queries[0].text


def test_a_pool_of_one_ranker_is_that_rankers_top_d(service: LexplainService) -> None:
    query = _first_query(service)
    spec = PoolSpec(rankers=(LIMITED,), depth=4, limit=50)
    pool = service.pool(SAMPLE_QUERY_SET, 0, workspace="default", spec=spec)
    top = service.search(query, k=4, limit=50, workspace="default").passages
    assert {p.chunk_id for p in pool.passages} == {p.chunk.id for p in top}


def test_the_k1_b_variant_pools_its_own_top_d(service: LexplainService) -> None:
    query = _first_query(service)
    variant = PoolSpec(rankers=(RankerKind.CUSTOM,), depth=10, limit=1000, k1=0.3, b=0.1)
    pool = service.pool(SAMPLE_QUERY_SET, 0, workspace="default", spec=variant)
    view = service.compare(
        query,
        Ranker.of(RankerKind.WORKSPACE),
        Ranker.of(RankerKind.CUSTOM, 0.3, 0.1),
        k=10,
        limit=10_000,
        workspace="default",
    )
    assert {p.chunk_id for p in pool.passages} == {r.chunk.id for r in view.comparison.b}
    plain = service.pool(SAMPLE_QUERY_SET, 0, workspace="default", spec=DEFAULT_POOL)
    assert {p.chunk_id for p in pool.passages} != {p.chunk_id for p in plain.passages}


def test_deeper_pools_hold_the_shallower_ones(service: LexplainService) -> None:
    shallow = service.pool(
        SAMPLE_QUERY_SET, 1, workspace="default", spec=DEFAULT_POOL.model_copy(update={"depth": 3})
    )
    deep = service.pool(
        SAMPLE_QUERY_SET, 1, workspace="default", spec=DEFAULT_POOL.model_copy(update={"depth": 20})
    )
    assert {p.chunk_id for p in shallow.passages} < {p.chunk_id for p in deep.passages}


def test_a_pool_without_rankers_or_too_deep_is_refused_by_name() -> None:
    with pytest.raises(ValidationError, match="at least one ranker"):
        PoolSpec(rankers=(), limit=10)
    with pytest.raises(ValidationError, match="less than or equal to 100"):
        PoolSpec(depth=101, limit=10)


def test_progress_counts_finished_queries_and_resumes_at_the_last_unfinished_one() -> None:
    svc = LexplainService.from_settings(Settings(store="memory"))
    try:
        svc.load_sample(workspace="default")
        spec = PoolSpec(rankers=(LIMITED,), depth=2, limit=1000)
        fresh = svc.set_progress(SAMPLE_QUERY_SET, workspace="default", spec=spec)
        assert (fresh.queries, fresh.started, fresh.finished, fresh.resume_at) == (
            225,
            frozenset(),
            frozenset(),
            0,
        )
        first = svc.pool(SAMPLE_QUERY_SET, 0, workspace="default", spec=spec)
        for passage in first.passages:  # the whole pool of query 1
            svc.grade(first.query, passage.chunk_id, 1, workspace="default")
        fifth = svc.pool(SAMPLE_QUERY_SET, 4, workspace="default", spec=spec)
        svc.grade(fifth.query, fifth.passages[0].chunk_id, 2, workspace="default")
        progress = svc.set_progress(SAMPLE_QUERY_SET, workspace="default", spec=spec)
        assert progress.finished == {first.query}
        assert progress.started == {first.query, fifth.query}
        assert progress.resume_at == 4  # the last grade's query, unfinished
        svc.grade(fifth.query, fifth.passages[1].chunk_id, 0, workspace="default")
        again = svc.set_progress(SAMPLE_QUERY_SET, workspace="default", spec=spec)
        assert again.resume_at == 5  # finished: the next query
        moved = progress.with_pool(
            fifth.graded_as(fifth.passages[0].chunk_id, 2).graded_as(fifth.passages[1].chunk_id, 0)
        )
        assert moved.finished == again.finished
        assert moved.started == again.started
        half = progress.with_pool(fifth.graded_as(fifth.passages[0].chunk_id, 2))
        assert half.finished == {first.query}  # one of two graded: started, not finished
    finally:
        svc.close()
