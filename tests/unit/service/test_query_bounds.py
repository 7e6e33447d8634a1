"""No query takes the machine: each bound of ``core.service.bounds`` is a plain refusal.

Through the service (the API a caller uses without the pages): limit 0, k past ``MAX_K``
(10^9 with no limit among them), more than ``MAX_QUERY_TERMS`` distinct terms, more judged
queries than ``MAX_EVALUATE_QUERIES``, and a read whose candidates × terms would pass
``MAX_CANDIDATE_CELLS`` (lowered here, watched on every read the store answers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any
from uuid import UUID

import pytest

from core.domain.filters import PassageFilter
from core.domain.ranking import LexicalCandidates
from core.service import (
    MAX_EVALUATE_QUERIES,
    MAX_K,
    MAX_QUERY_TERMS,
    UNLIMITED,
    LexplainService,
    Ranker,
    RankerKind,
    bounds,
)
from core.stores.memory import InMemoryChunkStore
from tests.fixtures.stores import settings_for

WS = "bounds"
#: 40 passages all holding "wing", and each one word of its own.
DOCS = [(f"d{i}.txt", f"wing flutter word{i}".encode()) for i in range(40)]
A, B = Ranker.of(RankerKind.WORKSPACE), Ranker.of(RankerKind.CLASSIC)


class Watched(InMemoryChunkStore):
    """The in-memory store, remembering rows × terms of every candidate read it answers."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[int] = []

    async def lexical_candidates(
        self,
        terms: Sequence[str],
        tenant_id: UUID,
        limit: int,
        within: PassageFilter | None = None,
    ) -> LexicalCandidates:
        found = await super().lexical_candidates(terms, tenant_id, limit, within)
        self.cells.append(found.tfs.size)
        return found


@pytest.fixture(scope="module")
def store() -> Watched:
    return Watched()


@pytest.fixture(scope="module")
def service(store: Watched) -> Iterator[LexplainService]:
    async def opened() -> Watched:
        return store

    svc = LexplainService(opened)
    svc.upload_files(DOCS, workspace=WS)
    yield svc
    svc.close()


def query_actions(service: LexplainService) -> dict[str, Callable[..., Any]]:
    return {
        "search": lambda q, k=10, limit=1000: service.search(q, k, limit, workspace=WS),
        "truncation": lambda q, k=10, limit=1000: service.truncation(q, k, limit, workspace=WS),
        "why_not": lambda q, k=10, limit=1000: service.why_not(q, "d1.txt", k, limit, workspace=WS),
        "compare": lambda q, k=10, limit=1000: service.compare(q, A, B, k, limit, workspace=WS),
    }


ACTIONS = ["search", "truncation", "why_not", "compare"]


@pytest.mark.parametrize("action", ACTIONS)
def test_a_limit_of_zero_is_refused_in_plain_words(service: LexplainService, action: str) -> None:
    with pytest.raises(
        ValueError, match="the limit must be a whole number from 1 to 2\\^62, got 0"
    ):
        query_actions(service)[action]("wing", limit=0)


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("k", [MAX_K + 1, 10**9])
def test_a_k_past_the_bound_is_refused_even_with_no_limit(
    service: LexplainService, action: str, k: int
) -> None:
    with pytest.raises(ValueError, match=f"k must be a whole number from 1 to {MAX_K:,}"):
        query_actions(service)[action]("wing", k=k, limit=UNLIMITED)


@pytest.mark.parametrize("action", ACTIONS)
def test_more_distinct_terms_than_the_bound_are_refused_and_the_bound_itself_runs(
    service: LexplainService, store: Watched, action: str
) -> None:
    words = [f"word{i}" for i in range(MAX_QUERY_TERMS + 1)]
    run = query_actions(service)[action]
    reads = len(store.cells)
    with pytest.raises(ValueError, match=f"has {MAX_QUERY_TERMS + 1:,} distinct terms; at most"):
        run(" ".join(words))
    assert len(store.cells) == reads  # refused before anything was read
    run(" ".join(words[:MAX_QUERY_TERMS]))
    run(" ".join(words[:MAX_QUERY_TERMS] * 3))  # repeats are one term each


def test_explain_refuses_too_many_terms_too(service: LexplainService) -> None:
    passage = service.search("wing", workspace=WS).passages[0].chunk.id
    many = " ".join(f"w{i}" for i in range(MAX_QUERY_TERMS + 1))
    with pytest.raises(ValueError, match="distinct terms"):
        service.explain(many, passage, workspace=WS)


@pytest.mark.parametrize("action", ACTIONS)
def test_a_read_past_the_cell_bound_is_refused_and_none_is_ever_held(
    service: LexplainService, store: Watched, action: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounds, "MAX_CANDIDATE_CELLS", 60)
    run = query_actions(service)[action]
    store.cells.clear()
    # 2 terms in all 40 passages: 80 term counts.
    with pytest.raises(ValueError, match="would hold 80 term counts, more than the 60"):
        run("wing flutter", limit=UNLIMITED)
    # 30 distinct terms, but only 2 passages match: 60 counts, within the bound.
    rare = "word1 word2 " + " ".join(f"absent{i}" for i in range(28))
    run(rare, limit=UNLIMITED)
    if action in ("search", "compare"):  # the analyses read every candidate, whatever the limit
        run("wing flutter", limit=30)  # 2 terms × 30 rows: 60, within the bound
    assert store.cells and max(store.cells) <= 60


def test_evaluate_refuses_a_k_past_the_bound_and_too_many_judged_queries(
    service: LexplainService,
) -> None:
    queries = b'{"_id": "q1", "text": "wing"}\n'
    qrels = b"query-id\tcorpus-id\tscore\nq1\td1.txt\t1\n"
    with pytest.raises(ValueError, match=f"k must be a whole number from 1 to {MAX_K:,}"):
        service.evaluate(queries, qrels, 10**9, [UNLIMITED], workspace=WS)
    many = MAX_EVALUATE_QUERIES + 1
    queries = "".join(f"q{i}\twing\n" for i in range(many)).encode()
    qrels = "".join(f"q{i}\td1.txt\t1\n" for i in range(many)).encode()
    with pytest.raises(ValueError, match=f"more than {MAX_EVALUATE_QUERIES:,} judged queries"):
        service.evaluate(queries, qrels, 10, [1000], workspace=WS)


def test_evaluate_refuses_too_many_judged_queries_at_the_line_past_the_bound_not_after_reading_all(
    service: LexplainService,
) -> None:
    """The qrels file is read only as far as the judged query past the bound: a line after it
    that is not a judgment is never reached (the 1M-query probe held every judgment first)."""
    many = MAX_EVALUATE_QUERIES + 1
    queries = "".join(f"q{i}\twing\n" for i in range(many)).encode()
    qrels = "".join(f"q{i}\td1.txt\t1\n" for i in range(many)).encode() + b"not a judgment\n"
    with pytest.raises(ValueError, match=f"\\(line {many:,} of the qrels file\\); one Evaluate"):
        service.evaluate(queries, qrels, 10, [1000], workspace=WS)


def test_evaluate_refuses_a_query_past_the_term_bound_naming_it_before_running(
    service: LexplainService, store: Watched
) -> None:
    long = " ".join(f"w{i}" for i in range(MAX_QUERY_TERMS + 1))
    queries = f"q1\twing\nq2\t{long}\n".encode()
    qrels = b"q1\td1.txt\t1\nq2\td2.txt\t1\n"
    reads = len(store.cells)
    with pytest.raises(ValueError, match="query q2 has 1,025 distinct terms"):
        service.evaluate(queries, qrels, 10, [1000], workspace=WS)
    assert len(store.cells) == reads


@pytest.fixture(scope="module", params=["memory", "postgres"])
def each_store(request: pytest.FixtureRequest) -> Iterator[LexplainService]:
    """The same documents in each store, through the service."""
    svc = LexplainService.from_settings(settings_for(request))
    svc.create_workspace(WS)
    svc.upload_files(DOCS, workspace=WS)
    yield svc
    svc.close()


def test_every_store_refuses_past_the_cell_bound_from_its_match_count(
    each_store: LexplainService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounds, "MAX_CANDIDATE_CELLS", 60)
    with pytest.raises(ValueError, match="would hold 80 term counts"):
        each_store.truncation("wing flutter", 10, 1000, workspace=WS)
    rare = "word1 word2 " + " ".join(f"absent{i}" for i in range(28))
    view = each_store.truncation(rare, 10, 1000, workspace=WS)
    assert view.report.matching == 2
    with pytest.raises(ValueError, match="the limit must be a whole number from 1 to"):
        each_store.search("wing", 10, 0, workspace=WS)
