"""Why each relevant passage was lost: hand-worked cases of each cause, on a real store's read.

The corpus is built so each cause has one passage: one with no query term, one matching a single
term behind twelve that match both (cut at limit 12), and a long one matching both that scores
below the k-th. Expected values come from the truncation rule and ``core.domain.bm25``, worked
out here, never from the diagnosis itself.
"""

from __future__ import annotations

import math
import uuid

import numpy as np
import pytest

from core.analysis.diagnosis import (
    LostCause,
    diagnose_documents,
    diagnose_query,
    own_terms,
    passage_rows,
    summarise,
)
from core.analysis.rankers import Ranker, RankerKind, score_all
from core.domain.bm25 import CorpusStats, inverse_document_frequency
from core.domain.chunks import StoredChunk
from core.domain.ranking import LexicalCandidates
from core.stores.memory import InMemoryChunkStore
from tests.stores.compliance import make_chunk

TERMS = ["flutter", "wing"]
K, LIMIT = 3, 12
WORKSPACE = Ranker.of(RankerKind.WORKSPACE)


def _corpus(tenant: uuid.UUID) -> dict[str, StoredChunk]:
    both = {f"both{i}": make_chunk(tenant, "s", f"wing flutter test{i}", i) for i in range(12)}
    return {
        **both,
        "none": make_chunk(tenant, "s", "sensor calibration drift in the tunnel", 20),
        "one": make_chunk(tenant, "s", "flutter alone here", 21),
        "long": make_chunk(tenant, "s", "wing flutter " + "padding " * 60, 22),
    }


async def _read(chunks: dict[str, StoredChunk]) -> LexicalCandidates:
    store = InMemoryChunkStore()
    await store.upsert_many(list(chunks.values()))
    tenant = next(iter(chunks.values())).tenant_id
    return await store.lexical_candidates(TERMS, tenant, 10_000)


@pytest.fixture
async def case() -> tuple[dict[str, StoredChunk], LexicalCandidates]:
    chunks = _corpus(uuid.uuid4())
    return chunks, await _read(chunks)


def _grades(chunks: dict[str, StoredChunk], **named: int) -> dict[str, int]:
    return {chunks[name].id: grade for name, grade in named.items()}


async def test_a_relevant_passage_with_no_query_term_is_a_vocabulary_mismatch(
    case: tuple[dict[str, StoredChunk], LexicalCandidates],
) -> None:
    chunks, full = case
    found = diagnose_query(
        "q", "wing flutter", TERMS, full, _grades(chunks, none=2), K, LIMIT, WORKSPACE
    )
    (lost,) = found.lost
    assert lost.cause is LostCause.VOCABULARY
    assert lost.missing_terms == ["flutter", "wing"]
    assert lost.position is None and lost.rank is None


async def test_a_match_behind_the_limit_is_cut_with_the_smallest_limit_that_keeps_it(
    case: tuple[dict[str, StoredChunk], LexicalCandidates],
) -> None:
    chunks, full = case
    # Order: the 13 passages matching both terms (ids ascending), then "one" (a single term).
    both = sorted(c.id for n, c in chunks.items() if n.startswith("both") or n == "long")
    found = diagnose_query(
        "q", "wing flutter", TERMS, full, _grades(chunks, one=1), K, LIMIT, WORKSPACE
    )
    (lost,) = found.lost
    assert lost.cause is LostCause.LIMIT
    assert lost.matched_terms == 1 and lost.matched_at_cut == 2
    assert lost.position == len(both) + 1 == 14
    assert lost.smallest_limit == 14
    assert lost.missing_terms == ["wing"]
    kept = diagnose_query(
        "q", "wing flutter", TERMS, full, _grades(chunks, one=1), K, 14, WORKSPACE
    )
    assert all(p.cause is not LostCause.LIMIT for p in kept.lost)


async def test_a_scored_passage_below_the_kth_is_outranked_by_the_term_that_decided_it(
    case: tuple[dict[str, StoredChunk], LexicalCandidates],
) -> None:
    chunks, full = case
    long_id = chunks["long"].id
    found = diagnose_query(
        "q", "wing flutter", TERMS, full, _grades(chunks, long=3), K, 100, WORKSPACE
    )
    (lost,) = found.lost
    assert lost.cause is LostCause.OUTRANKED
    order, scores = score_all(WORKSPACE, TERMS, full)
    ids = [str(i) for i in full.ids[order]]
    assert lost.rank == ids.index(long_id) + 1 > K
    assert lost.score == scores[full.row_of(long_id)]
    assert lost.kth_chunk_id == ids[K - 1] and lost.kth_score == scores[order[K - 1]]
    # Both contain both terms once: the longer one loses on each, most on the rarer term.
    deciding = lost.deciding_term
    assert deciding is not None
    rarer = min(TERMS, key=lambda t: full.stats.doc_frequencies[t])
    assert deciding.term == rarer
    assert deciding.idf == inverse_document_frequency(rarer, full.stats)
    assert deciding.lost_tf == deciding.kth_tf == 1
    assert deciding.kth_tf_part > deciding.lost_tf_part
    assert [d.gap for d in lost.differences] == sorted(
        (d.gap for d in lost.differences), reverse=True
    )
    assert math.isclose(sum(d.gap for d in lost.differences), lost.kth_score - lost.score)


async def test_the_unjudged_top_k_is_listed_apart_from_the_lost(
    case: tuple[dict[str, StoredChunk], LexicalCandidates],
) -> None:
    chunks, full = case
    order, _ = score_all(WORKSPACE, TERMS, full.head(LIMIT))
    top = [str(i) for i in full.ids[order[:K]]]
    grades = {top[0]: 2, chunks["none"].id: 1}
    found = diagnose_query("q", "wing flutter", TERMS, full, grades, K, LIMIT, WORKSPACE)
    assert found.unjudged == top[1:]
    assert [p.chunk_id for p in found.lost] == [chunks["none"].id]
    assert 0 < found.ndcg < 1 and found.ndcg_lost == 1 - found.ndcg


async def test_a_run_summary_counts_each_cause_and_orders_queries_by_ndcg_lost(
    case: tuple[dict[str, StoredChunk], LexicalCandidates],
) -> None:
    chunks, full = case
    every = diagnose_query(
        "a",
        "wing flutter",
        TERMS,
        full,
        _grades(chunks, none=1, one=1, long=1),
        K,
        LIMIT,
        WORKSPACE,
    )
    order, _ = score_all(WORKSPACE, TERMS, full.head(LIMIT))
    best = diagnose_query(
        "b", "wing flutter", TERMS, full, {str(full.ids[order[0]]): 1}, K, LIMIT, WORKSPACE
    )
    run = summarise(K, LIMIT, [best, every])
    assert [q.query_id for q in run.queries] == ["a", "b"]
    assert run.lost == 3 and run.relevant == 4
    assert run.by_cause == {
        LostCause.VOCABULARY: 1,
        LostCause.LIMIT: 1,
        LostCause.OUTRANKED: 1,
    }
    assert run.share(LostCause.VOCABULARY) == pytest.approx(1 / 3)
    assert "33% of the lost relevant passages contain no query term" in run.ceiling_note


def test_a_passages_own_terms_come_by_tf_times_idf() -> None:
    stats = CorpusStats(n_docs=100, avg_doc_length=10.0, doc_frequencies={"a": 50, "b": 2, "c": 2})
    found = own_terms({"a": 3, "b": 1, "c": 2}, stats, most=2)
    assert [o.term for o in found] == ["c", "b"]
    assert found[0].weight == 2 * inverse_document_frequency("c", stats)


async def test_by_document_a_lost_document_is_diagnosed_at_the_passage_that_came_nearest() -> None:
    from core.analysis.diagnosis import diagnose_documents

    tenant = uuid.uuid4()
    chunks = [make_chunk(tenant, f"b{i}", f"wing flutter test{i}", 0) for i in range(11)]
    chunks += [
        make_chunk(tenant, "D", "sensor drift only", 0),
        make_chunk(tenant, "D", "flutter alone here", 1),
        make_chunk(tenant, "D", "flutter again there", 2),
        make_chunk(tenant, "E", "calibration notes", 0),
        make_chunk(tenant, "E", "wing flutter " + "padding " * 60, 1),
        make_chunk(tenant, "E", "wing flutter " + "padding " * 90, 2),
        make_chunk(tenant, "F", "nothing to see", 0),
    ]
    limit = 13  # the 13 passages holding both terms; D's hold one and are cut
    store = InMemoryChunkStore()
    await store.upsert_many(chunks)
    full = await store.lexical_candidates(TERMS, tenant, 10_000)
    head = list(range(min(limit, len(full))))
    sources = full.sources_at(head)
    assert sources.tolist() == [c.source_id for c in full.chunks(head)]
    ids = [str(i) for i in full.ids]
    rows = {d: [ids.index(c.id) for c in chunks if c.source_id == d and c.id in ids] for d in "DEF"}
    grades = {"D": 2, "E": 3, "F": 1, "b0": 1}
    found = diagnose_documents(
        "q", "wing flutter", TERMS, full, grades, K, limit, WORKSPACE, full.sources_at, rows
    )
    causes = {p.chunk_id: p for p in found.lost}
    assert causes["F"].cause is LostCause.VOCABULARY
    d_row = min(ids.index(c.id) for c in chunks if c.text.startswith("flutter a"))
    assert causes["D"].cause is LostCause.LIMIT and causes["D"].smallest_limit == d_row + 1
    e = causes["E"]
    assert e.cause is LostCause.OUTRANKED and e.rank is not None and e.rank > K
    assert e.matched_terms == 2
    order, scores = score_all(WORKSPACE, TERMS, full.head(limit))
    ranked_documents = list(dict.fromkeys(sources[r] for r in order))
    assert e.score == max(scores[r] for r in rows["E"])  # its best passage
    assert e.rank == ranked_documents.index("E") + 1
    assert found.unjudged == [d for d in ranked_documents[:K] if d not in grades]


async def test_by_document_a_lost_document_is_ranked_among_documents_against_the_kth_best() -> None:
    # Five documents of three passages each, every passage longer than the one before: the
    # ranking is d0's three, then d1's, ... so a document's rank is not its passage's.
    tenant = uuid.uuid4()
    chunks = {
        f"d{d}-{i}": make_chunk(tenant, f"d{d}", "wing flutter" + " padding" * (3 * d + i), i)
        for d in range(5)
        for i in range(3)
    }
    full = await _read(chunks)
    sources = full.sources_at(np.arange(len(full)))
    grades = {"d3": 2}
    rows = {"d3": sorted(full.row_of(chunks[f"d3-{i}"].id) for i in range(3))}
    found = diagnose_documents(
        "q", "wing flutter", TERMS, full, grades, 2, 100, WORKSPACE, full.sources_at, rows
    )
    order, scores = score_all(WORKSPACE, TERMS, full)
    assert [sources[r] for r in order[::3]] == ["d0", "d1", "d2", "d3", "d4"]
    (lost,) = found.lost
    assert lost.cause is LostCause.OUTRANKED and lost.chunk_id == "d3"
    assert lost.rank == 4 and lost.position == full.row_of(chunks["d3-0"].id) + 1
    assert lost.score == scores[full.row_of(chunks["d3-0"].id)]
    assert lost.kth_chunk_id == chunks["d1-0"].id
    assert lost.kth_score == scores[full.row_of(chunks["d1-0"].id)]
    assert found.unjudged == ["d0", "d1"]


async def test_a_passages_row_past_the_limit_is_found_in_its_level_as_a_scan_finds_it() -> None:
    # Rows in three levels (three, two, one of the terms), each in chunk-id order; every
    # passage's row past each start found by the level searches (one id at a time: right,
    # wrong and no hint) and by the id comparison (all at once) alike, equal to a scan of the
    # id column; absent ids left out.
    terms = ["flutter", "vortex", "wing"]
    tenant = uuid.uuid4()
    texts = ["wing flutter vortex", "wing flutter", "wing", "flutter", "sensor drift"]
    chunks = [make_chunk(tenant, f"s{i // 3}", f"{texts[i % 5]} w{i}", i % 3) for i in range(2_000)]
    store = InMemoryChunkStore()
    await store.upsert_many(chunks)
    full = await store.lexical_candidates(terms, tenant, 10_000)
    ids = [str(i) for i in full.ids]
    holds = {c.id: sum(t in c.text.split() for t in terms) for c in chunks}
    sample = [c.id for c in chunks[::37]]
    for start in (0, 1, 390, 1_201, len(full) - 1, len(full)):
        scanned = {c: ids.index(c) for c in ids[start:]}
        for hint in (holds.get, lambda c: None, lambda c: 3 - (holds[c] % 3)):
            assert passage_rows(full, {c: hint(c) for c in holds}, start) == scanned
            for c in sample:
                assert passage_rows(full, {c: hint(c)}, start) == (
                    {c: scanned[c]} if c in scanned else {}
                )
    assert passage_rows(full, {"not-a-passage": 2, "other": None}, 0) == {}


def test_a_lost_passage_built_unvalidated_is_as_validated_and_shares_no_field_default() -> None:
    # Its empty default lists are shared by the lost passages a diagnosis builds (13k
    # survivors fewer for the collector), never with the model's own field defaults.
    from core.analysis.diagnosis import LostPassage, _lost

    said = {"chunk_id": "c1", "grade": 2, "cause": LostCause.LIMIT, "missing_terms": ["wing"]}
    said |= {"matched_terms": 1, "position": 1_200, "matched_at_cut": 2, "smallest_limit": 1_200}
    one = _lost(**said)
    assert one == LostPassage(**said)
    assert one.model_dump_json() == LostPassage(**said).model_dump_json()
    fields = LostPassage.model_fields
    assert one.own_terms is not fields["own_terms"].default
    assert one.differences is not fields["differences"].default
    assert one.model_fields_set == set(fields)


async def test_by_document_a_ranking_of_another_run_is_refused() -> None:
    from core.analysis.rankers import rank_documents

    tenant = uuid.uuid4()
    chunks = {f"d{d}": make_chunk(tenant, f"d{d}", "wing flutter" + " x" * d, 0) for d in range(4)}
    full = await _read(chunks)
    rows = {"d3": [full.row_of(chunks["d3"].id)]}
    grades = {"d3": 2}
    args = ("q", "wing flutter", TERMS, full, grades)
    for k, limit in ((2, 100), (1, 3)):
        other = rank_documents(TERMS, full, k, limit, WORKSPACE, full.sources_at)
        with pytest.raises(ValueError, match="another read, k or limit"):
            diagnose_documents(*args, 1, 100, WORKSPACE, full.sources_at, rows, ranking=other)
    own = rank_documents(TERMS, full, 1, 100, WORKSPACE, full.sources_at)
    assert diagnose_documents(
        *args, 1, 100, WORKSPACE, full.sources_at, rows, ranking=own
    ) == diagnose_documents(*args, 1, 100, WORKSPACE, full.sources_at, rows)
