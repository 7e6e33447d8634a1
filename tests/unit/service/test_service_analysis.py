"""The facade's truncation, why-not and evaluation against core, on the in-memory store.

Expected values come from core called directly on candidates read from a separate
in-memory store loaded with the same files (``analyse_truncation``, ``why_not``,
``rank_chunks``, ``evaluate_run``), never from the service under test and never
hard-coded: a service that sliced, ranked or paired differently would differ.
The sample is loaded once per module.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from core.analysis.evaluation import (
    EvaluationRun,
    JudgmentError,
    documents_in_rank_order,
    evaluate_run,
    parse_qrels,
    parse_queries,
)
from core.analysis.truncation import analyse_truncation, why_not
from core.domain.chunks import ChunkingOptions, workspace_tenant_id
from core.domain.ranking import LexicalCandidates, rank_chunks
from core.domain.tokenize import tokenize
from core.ingest.indexing import UploadResult, index_uploads, read_upload
from core.service import SAMPLE_CORPUS, LexplainService, compare_runs
from core.settings import Settings
from core.stores.memory import InMemoryChunkStore

#: Cranfield query 1: its unlimited top-10 reaches candidate #182, so small limits cut.
QUERY = (
    "what similarity laws must be obeyed when constructing aeroelastic models of heated "
    "high speed aircraft ."
)
SAMPLE, SMALL = "sample", "small"
#: A document cut into many passages (every one matching), and two short ones.
LONG_TEXT = " ".join(f"Zeppelin flight number {i} over the sea." for i in range(40))
SMALL_DOCS = {
    "long.txt": LONG_TEXT,
    "b.txt": "A zeppelin and a balloon.",
    "c.txt": "Balloon flight notes.",
}
SMALL_CHUNKING = ChunkingOptions(size=120, overlap=0)
HUGE = 2**62


class Direct:
    """The same files in a separate store: candidates in the store's order, read directly."""

    def __init__(self) -> None:
        self.store = InMemoryChunkStore()
        # One loop, debug off: asyncio.run per read costs a loop each, and debug mode (if the
        # environment turns it on) reprs every slow task, the whole candidate list included.
        self.loop = asyncio.new_event_loop()
        self.loop.set_debug(False)
        sample = read_upload(SAMPLE_CORPUS.name, SAMPLE_CORPUS.read_bytes())
        small = [read_upload(n, t.encode()) for n, t in SMALL_DOCS.items()]
        self.loop.run_until_complete(self._load(sample, small))

    async def _load(self, sample: UploadResult, small: list[UploadResult]) -> None:
        tenant = workspace_tenant_id(SAMPLE)
        whole = ChunkingOptions(whole_documents=True)
        await index_uploads([sample], self.store, tenant, chunking=whole)
        await index_uploads(small, self.store, workspace_tenant_id(SMALL), chunking=SMALL_CHUNKING)

    def candidates(self, query: str, workspace: str = SAMPLE) -> LexicalCandidates:
        return self.loop.run_until_complete(
            self.store.lexical_candidates(tokenize(query), workspace_tenant_id(workspace), HUGE)
        )

    def first_passage(self, source_id: str, workspace: str) -> str:
        tenant = workspace_tenant_id(workspace)
        chunks = self.loop.run_until_complete(self.store.get_by_source(source_id, tenant))
        return min(chunks, key=lambda c: c.chunk_index).id


@pytest.fixture(scope="module")
def direct() -> Iterator[Direct]:
    found = Direct()
    yield found
    found.loop.close()


@pytest.fixture(scope="module")
def service() -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(Settings(store="memory"))
    svc.load_sample(workspace=SAMPLE)
    reports = svc.upload_files(
        [(n, t.encode()) for n, t in SMALL_DOCS.items()], workspace=SMALL, chunking=SMALL_CHUNKING
    )
    assert all(r.error is None for r in reports)
    yield svc
    svc.close()


def expected_runs(
    direct: Direct,
    queries_data: bytes,
    qrels_data: bytes,
    k: int,
    limits: list[int],
    workspace: str,
    *,
    whole_documents: bool,
) -> list[EvaluationRun]:
    """Core alone: rank the candidates under each limit, documents at their best passage.

    With whole-document passages the top-k passages are the top-k documents; otherwise
    every candidate is ranked (slow, so only on the small corpus).
    """
    queries, qrels = parse_queries(queries_data), parse_qrels(qrels_data)
    ranked: list[dict[str, list[str]]] = [{} for _ in limits]
    for query_id, text in queries.items():
        if query_id not in qrels:
            continue
        full = direct.candidates(text, workspace)
        for documents, limit in zip(ranked, limits, strict=True):
            handed = full.head(limit)
            depth = k if whole_documents else len(handed.candidates)
            passages = rank_chunks(tokenize(text), handed, depth)
            documents[query_id] = documents_in_rank_order(r.chunk.source_id for r in passages)[:k]
    return [
        evaluate_run(queries, qrels, documents, k, limit, workspace=workspace)
        for documents, limit in zip(ranked, limits, strict=True)
    ]


def test_the_truncation_view_carries_cores_report_for_the_same_candidates(
    service: LexplainService, direct: Direct
) -> None:
    view = service.truncation(QUERY, k=10, limit=20, workspace=SAMPLE)
    want = analyse_truncation(tokenize(QUERY), direct.candidates(QUERY), 10, 20)
    assert view.report == want
    assert want.cut, "the query must lose something at limit 20 for this test to mean anything"
    assert view.terms == tokenize(QUERY) and view.stopwords_dropped == ["be", "of"]
    assert view.empty_reason is None
    assert view.limit_max == want.matching
    rows = {row.chunk_id: row for row in want.candidates}
    cut_ids = {c.ranked.chunk.id for c in want.cut}
    assert [e.chunk.id for e in view.unlimited] == [r.chunk.id for r in want.unlimited]
    for entry in view.unlimited:
        row = rows[entry.chunk.id]
        assert (entry.candidate_position, entry.matched_terms) == (
            row.position,
            row.matched_terms,
        )
        assert entry.cut is (entry.chunk.id in cut_ids)
    assert [e.chunk.id for e in view.limited] == [r.chunk.id for r in want.limited]
    for rank, entry in enumerate(view.limited, start=1):
        assert entry.rank == rank and entry.score == want.limited[rank - 1].score
        assert entry.unlimited_rank == rows[entry.chunk.id].unlimited_rank
        assert entry.movement == entry.unlimited_rank - rank >= 0


@pytest.mark.parametrize(
    ("query", "limit", "reason"),
    [
        ("the of and", 1000, "no terms left after stopwords"),
        ("qqqzzz", 1000, "no passage contains any term"),
    ],
)
def test_an_empty_truncation_view_says_why(
    service: LexplainService, query: str, limit: int, reason: str
) -> None:
    view = service.truncation(query, k=10, limit=limit, workspace=SAMPLE)
    assert view.empty_reason == reason
    assert view.limited == []


def test_why_not_takes_a_passage_id_or_a_source_id_and_equals_core(
    service: LexplainService, direct: Direct
) -> None:
    full = direct.candidates(QUERY)
    cut = analyse_truncation(tokenize(QUERY), full, 10, 20).cut[0].ranked.chunk
    want = why_not(tokenize(QUERY), full, cut.id, 10, 20)
    assert want.cut_by_limit and want.unlimited_rank is not None
    assert service.why_not(QUERY, cut.id, 10, 20, workspace=SAMPLE) == want
    assert service.why_not(QUERY, f" {cut.source_id} ", 10, 20, workspace=SAMPLE) == want


def test_why_not_by_source_id_uses_the_sources_first_passage(
    service: LexplainService, direct: Direct
) -> None:
    first = direct.first_passage("long.txt", SMALL)
    got = service.why_not("zeppelin flight", "long.txt", 3, 1, workspace=SMALL)
    assert got == why_not(
        tokenize("zeppelin flight"), direct.candidates("zeppelin flight", SMALL), first, 3, 1
    )


def test_why_not_by_source_and_number_uses_that_passage(service: LexplainService) -> None:
    passages = service.list_sources(workspace=SMALL)
    long = next(s for s in passages if s.source_id == "long.txt")
    assert long.passages >= 2
    second = service.why_not("zeppelin flight", "long.txt#2", 3, 1, workspace=SMALL)
    first = service.why_not("zeppelin flight", "long.txt#1", 3, 1, workspace=SMALL)
    assert second.chunk_id != first.chunk_id
    assert first == service.why_not("zeppelin flight", "long.txt", 3, 1, workspace=SMALL)
    with pytest.raises(KeyError):
        service.why_not("zeppelin flight", f"long.txt#{long.passages + 1}", 3, 1, workspace=SMALL)


def test_why_not_for_an_unknown_id_raises_key_error(service: LexplainService) -> None:
    with pytest.raises(KeyError, match="no passage or source 'nope'"):
        service.why_not(QUERY, "nope", 10, 20, workspace=SAMPLE)


def test_evaluate_on_cranfield_equals_core_at_limits_1000_and_100(
    service: LexplainService, direct: Direct
) -> None:
    queries, qrels = service.sample_judgments()
    events: list[tuple[int, int, str]] = []
    runs = service.evaluate(
        queries,
        qrels,
        10,
        [1000, 100],
        workspace=SAMPLE,
        on_progress=lambda *event: events.append(event),
    )
    want = expected_runs(direct, queries, qrels, 10, [1000, 100], SAMPLE, whole_documents=True)
    assert runs == want
    assert runs[0].mean_ndcg != runs[1].mean_ndcg, "limit 100 must cost Cranfield something"
    judged = len(want[0].rows)
    assert [e[:2] for e in events] == [(i, judged) for i in range(1, judged + 1)]

    comparison = compare_runs(*runs)
    assert comparison.ndcg_delta == want[1].mean_ndcg - want[0].mean_ndcg
    for row, a, b in zip(comparison.rows, want[0].rows, want[1].rows, strict=True):
        assert (row.a, row.b) == (a, b)
        assert row.ndcg_difference == b.ndcg - a.ndcg
    lines = comparison.to_csv().splitlines()
    assert len(lines) == judged + 1 and lines[0].startswith("query_id,query,judged,ndcg@10")


def test_evaluate_hands_each_limit_exactly_its_first_candidates(
    service: LexplainService, direct: Direct
) -> None:
    """Small limits, where one candidate more or less changes the top-k of most queries."""
    queries_all, qrels = service.sample_judgments()
    queries = b"\n".join(queries_all.splitlines()[:15])
    limits = [1, 2, 20, 182]
    runs = [  # an Evaluate takes two limits at most (MAX_EVALUATE_RUNS)
        run
        for pair in (limits[:2], limits[2:])
        for run in service.evaluate(queries, qrels, 10, pair, workspace=SAMPLE)
    ]
    assert runs == expected_runs(direct, queries, qrels, 10, limits, SAMPLE, whole_documents=True)
    assert 0.0 < runs[0].mean_recall < runs[-1].mean_recall
    # A limit of 0 hands BM25 nothing: refused, as Search and Diagnose refuse it (issue 49).
    with pytest.raises(ValueError, match="the limit must be a whole number from 1 to"):
        service.evaluate(queries, qrels, 10, [0, 20], workspace=SAMPLE)


def test_evaluation_judges_documents_filling_k_past_repeated_passages(
    service: LexplainService, direct: Direct
) -> None:
    queries = b'{"_id": "q1", "text": "zeppelin flight balloon"}\n'
    qrels = b"q1\tc.txt\t1\nq1\tb.txt\t2\n"
    (run,) = service.evaluate(queries, qrels, 2, [HUGE], workspace=SMALL)
    assert [run] == expected_runs(direct, queries, qrels, 2, [HUGE], SMALL, whole_documents=False)
    assert run.rows[0].recall > 0.0


def test_the_sample_judgments_are_the_shipped_files(service: LexplainService) -> None:
    queries, qrels = service.sample_judgments()
    assert queries == SAMPLE_CORPUS.with_name("queries.jsonl").read_bytes()
    assert qrels == SAMPLE_CORPUS.with_name("qrels.tsv").read_bytes()


@pytest.mark.parametrize(
    ("queries", "qrels", "prefix", "bad_file"),
    [
        (b'{"_id": "1", "text": "wing"}\n', b"query-id\tcorpus-id\tscore\n1\t184\n", "qrels", 1),
        (b"1 wing\n", b"1\t184\t1\n", "queries", 0),
    ],
)
def test_bad_judgments_raise_the_parsers_message_naming_the_file(
    service: LexplainService, queries: bytes, qrels: bytes, prefix: str, bad_file: int
) -> None:
    with pytest.raises(JudgmentError) as core_error:
        (parse_queries, parse_qrels)[bad_file]((queries, qrels)[bad_file])
    with pytest.raises(JudgmentError) as error:
        service.evaluate(queries, qrels, 10, [1000], workspace=SAMPLE)
    assert str(error.value) == f"{prefix} file: {core_error.value}"


def test_judgments_that_share_no_query_or_are_not_text_are_refused(
    service: LexplainService,
) -> None:
    with pytest.raises(JudgmentError, match="no query of the queries file has a judgment"):
        service.evaluate(b"9\twing\n", b"1\t184\t1\n", 10, [1000], workspace=SAMPLE)
    with pytest.raises(JudgmentError, match="qrels file is not UTF-8"):
        service.evaluate(b"1\twing\n", b"\xff\xfe1\t184\t1\n\x80", 10, [1000], workspace=SAMPLE)


@pytest.mark.parametrize(
    ("queries", "qrels", "sentence"),
    [
        (b'{"_id": "1", "text": "aero\\u0000"}\n', b"1\t184\t1\n", "queries file: line 1: a query"),
        (b'{"_id": "1", "text": "aero\\ud800"}\n', b"1\t184\t1\n", "queries file: line 1: a query"),
        (b"1\twing\n", b"1\t18\x004\t1\n", "qrels file: line 1: the document id contains a NUL"),
    ],
)
def test_evaluate_and_diagnose_files_refuse_what_no_store_holds_before_any_search(
    service: LexplainService, queries: bytes, qrels: bytes, sentence: str
) -> None:
    with pytest.raises(JudgmentError, match=sentence):
        service.evaluate(queries, qrels, 10, [1000], workspace=SAMPLE)
    with pytest.raises(JudgmentError, match=sentence):
        service.diagnose_files(queries, qrels, 10, 1000, workspace=SAMPLE)
