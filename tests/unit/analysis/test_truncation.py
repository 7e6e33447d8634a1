"""What the limit costs: cut passages, safe limits, the sweep, and "why not?"."""

from __future__ import annotations

from collections import Counter
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.analysis import truncation
from core.analysis.evaluation import documents_in_rank_order
from core.analysis.truncation import CandidateRow, analyse_truncation, top_documents, why_not
from core.domain.bm25 import corpus_stats
from core.domain.chunks import StoredChunk
from core.domain.ranking import LexicalCandidate, LexicalCandidates, rank_chunks

TENANT = UUID("00000000-0000-0000-0000-0000000000f1")


def full_candidates(docs: list[list[str]], terms: list[str]) -> LexicalCandidates:
    """Every matching passage in the store contract's order: matched terms desc, id asc."""
    wanted = set(terms)
    rows = []
    for i, tokens in enumerate(docs):
        tfs = {t: n for t, n in Counter(tokens).items() if t in wanted}
        if tfs:
            text = " ".join(tokens) or "empty"
            chunk = StoredChunk(
                tenant_id=TENANT, source_id=f"d{i}", text=text, chunk_index=0, start_char=0,
                end_char=len(text),
            )  # fmt: skip
            rows.append(LexicalCandidate(chunk=chunk, doc_length=len(tokens), term_frequencies=tfs))
    rows.sort(key=lambda c: (-len(c.term_frequencies), c.chunk.id))
    return LexicalCandidates(stats=corpus_stats(docs, terms), candidates=rows)


RARE = ["hypersonic"] * 3
COMMON = [["wing", "body", "flow", f"filler{i}"] for i in range(8)]
QUERY = ["wing", "body", "flow", "hypersonic"]


def test_a_passage_with_one_rare_term_can_rank_first_and_still_be_cut() -> None:
    full = full_candidates([*COMMON, RARE], QUERY)
    report = analyse_truncation(QUERY, full, k=3, limit=8)
    assert report.unlimited[0].chunk.source_id == "d8"
    assert "d8" not in [r.chunk.source_id for r in report.limited]
    [cut] = [c for c in report.cut if c.ranked.chunk.source_id == "d8"]
    assert (cut.unlimited_rank, cut.position, cut.matched_terms) == (1, 9, 1)
    assert report.overlap == 2 / 3
    assert report.smallest_safe_limit == 9
    assert report.matching == 9


def test_why_not_names_the_terms_the_position_and_the_limit_that_keeps_it() -> None:
    full = full_candidates([*COMMON, RARE], QUERY)
    answer = why_not(QUERY, full, full.candidates[8].chunk.id, k=3, limit=8)
    assert answer.contained_terms == ["hypersonic"]
    assert answer.missing_terms == ["body", "flow", "wing"]
    assert (answer.position, answer.cut_by_limit, answer.unlimited_rank) == (9, True, 1)
    assert answer.limited_rank is None
    assert answer.smallest_limit == 9


def test_why_not_for_a_passage_without_any_query_term() -> None:
    full = full_candidates([*COMMON, RARE], QUERY)
    answer = why_not(QUERY, full, "no-such-passage", k=3, limit=8)
    assert answer.position is None
    assert answer.smallest_limit is None
    assert answer.missing_terms == sorted(QUERY)


def test_negative_k_or_limit_is_refused() -> None:
    full = full_candidates(COMMON, QUERY)
    with pytest.raises(ValueError, match="limit"):
        analyse_truncation(QUERY, full, k=3, limit=-1)
    with pytest.raises(ValueError, match="k must"):
        why_not(QUERY, full, "x", k=-1, limit=3)


CORPORA = st.lists(
    st.lists(st.sampled_from(["a", "b", "c", "d", "e", "x", "y"]), min_size=0, max_size=12),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(CORPORA, st.integers(0, 30), st.integers(1, 5))
def test_the_limited_ranking_is_rank_chunks_over_the_first_limit_candidates(
    docs: list[list[str]], limit: int, k: int
) -> None:
    terms = ["a", "b", "c", "x"]
    full = full_candidates(docs, terms)
    report = analyse_truncation(terms, full, k=k, limit=limit)
    truncated = full.head(limit)
    assert [r.chunk.id for r in report.limited] == [
        r.chunk.id for r in rank_chunks(terms, truncated, k)
    ]
    unlimited_ids = {r.chunk.id for r in report.unlimited}
    at_safe = rank_chunks(
        terms,
        full.head(report.smallest_safe_limit),
        k,
    )
    assert {r.chunk.id for r in at_safe} == unlimited_ids
    if report.smallest_safe_limit > 0:
        below = rank_chunks(
            terms,
            full.head(report.smallest_safe_limit - 1),
            k,
        )
        assert {r.chunk.id for r in below} != unlimited_ids
    for point in report.sweep:
        kept = rank_chunks(terms, full.head(point.limit), k)
        expected = (
            len(unlimited_ids & {r.chunk.id for r in kept}) / len(unlimited_ids)
            if unlimited_ids
            else 1.0
        )
        assert point.overlap == expected


@settings(max_examples=60, deadline=None)
@given(CORPORA, st.integers(1, 4), st.data())
def test_the_smallest_limit_that_keeps_a_passage_is_found_by_brute_force_too(
    docs: list[list[str]], k: int, data: st.DataObject
) -> None:
    terms = ["a", "b", "x"]
    full = full_candidates(docs, terms)
    if not full.candidates:
        return
    target = data.draw(st.sampled_from([c.chunk.id for c in full.candidates]))
    answer = why_not(terms, full, target, k=k, limit=0)
    brute = next(
        (
            limit
            for limit in range(len(full.candidates) + 1)
            if target in {r.chunk.id for r in rank_chunks(terms, full.head(limit), k)}
        ),
        None,
    )
    assert answer.smallest_limit == brute


def test_a_large_candidate_list_is_sampled_for_the_scatter_and_keeps_every_row_the_screens_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(truncation, "SCATTER_ROWS", 4)
    full = full_candidates([*COMMON, RARE], QUERY)
    report = analyse_truncation(QUERY, full, k=3, limit=5)
    assert report.candidates_sampled
    positions = {row.position for row in report.candidates}
    assert {5, 6} <= positions  # the last kept and the first cut
    shown = {row.chunk_id for row in report.candidates}
    assert {r.chunk.id for r in [*report.unlimited, *report.limited]} <= shown
    assert len(report.candidates) < len(full)


def test_evaluate_in_bulk_finds_at_each_limit_the_documents_ranking_that_limit_finds() -> None:
    full = full_candidates([*COMMON, RARE], QUERY)
    limits = [0, 1, 5, 8, 9, 100]
    bulk = top_documents(QUERY, full, 3, limits)
    for limit, documents in zip(limits, bulk, strict=True):
        ranked = rank_chunks(QUERY, full.head(limit), len(full))
        assert documents == documents_in_rank_order(r.chunk.source_id for r in ranked)[:3]


@settings(max_examples=60, deadline=None)
@given(CORPORA, st.integers(0, 30), st.integers(1, 5))
def test_every_drawn_row_and_every_why_not_carries_its_rank_in_the_full_ranking(
    docs: list[list[str]], limit: int, k: int
) -> None:
    terms = ["a", "b", "c", "x"]
    full = full_candidates(docs, terms)
    everything = rank_chunks(terms, full, len(full))
    rank = {r.chunk.id: i for i, r in enumerate(everything, 1)}
    report = analyse_truncation(terms, full, k=k, limit=limit)
    # Rows built without validation are the rows validation would build.
    assert [row.model_dump() for row in report.candidates] == [
        CandidateRow.model_validate(row.model_dump(), strict=True).model_dump()
        for row in report.candidates
    ]
    assert [r.chunk.id for r in report.unlimited] == [r.chunk.id for r in everything[:k]]
    assert {row.chunk_id: row.unlimited_rank for row in report.candidates} == {
        chunk_id: rank.get(chunk_id) for chunk_id in full.ids
    }
    limited = [r.chunk.id for r in rank_chunks(terms, full.head(limit), k)]
    for chunk_id in full.ids:
        answer = why_not(terms, full, chunk_id, k=k, limit=limit)
        assert answer.unlimited_rank == rank.get(chunk_id)
        assert answer.limited_rank == (limited.index(chunk_id) + 1 if chunk_id in limited else None)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["a", "b", "c", "x", "y"]), min_size=0, max_size=5),
        min_size=80,
        max_size=160,
    ),
    st.integers(0, 160),
    st.integers(1, 3),
)
def test_limits_whose_top_k_lies_beyond_the_head_of_the_ranking_rank_as_rank_chunks_does(
    docs: list[list[str]], limit: int, k: int
) -> None:
    # More scoring rows than the head the analysis sorts first (4k + 64), so small limits
    # need the ranking of the rows before the limit, not a filter of the head.
    terms = ["a", "b", "c", "x"]
    full = full_candidates(docs, terms)
    report = analyse_truncation(terms, full, k=k, limit=limit)
    assert [r.chunk.id for r in report.limited] == [
        r.chunk.id for r in rank_chunks(terms, full.head(limit), k)
    ]
    for point in report.sweep:
        top = {r.chunk.id for r in report.unlimited}
        kept = {r.chunk.id for r in rank_chunks(terms, full.head(point.limit), k)}
        assert point.overlap == (len(top & kept) / len(top) if top else 1.0)
    everything = rank_chunks(terms, full, len(full))
    rank = {r.chunk.id: i for i, r in enumerate(everything, 1)}
    assert all(row.unlimited_rank == rank.get(row.chunk_id) for row in report.candidates)
    assert top_documents(terms, full, 1, [limit]) == [
        [r.chunk.source_id for r in rank_chunks(terms, full.head(limit), 1)]
    ]


def test_a_small_limit_whose_passages_all_rank_below_the_head_still_gets_its_top_k() -> None:
    # 900 passages match both common terms (first in the candidate order, lowest scores),
    # 100 match only the rarer one and outrank them all: the limited top-k at limit 5 lies
    # far below the head of the unlimited ranking.
    docs = [["a", "b", f"f{i}"] for i in range(900)] + [["r"] for _ in range(100)]
    terms = ["a", "b", "r"]
    full = full_candidates(docs, terms)
    report = analyse_truncation(terms, full, k=3, limit=5)
    expected = [r.chunk.id for r in rank_chunks(terms, full.head(5), 3)]
    assert [r.chunk.id for r in report.limited] == expected
    assert why_not(terms, full, expected[0], k=3, limit=5).limited_rank == 1
    assert top_documents(terms, full, 3, [5]) == [
        [r.chunk.source_id for r in rank_chunks(terms, full.head(5), 3)]
    ]


def test_evaluate_in_bulk_reads_each_source_off_the_read_and_copies_no_passage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Copying ~56 passages a query only to read their source was ~1/8 of an Evaluate in
    # memory and a read of their text on PostgreSQL; a read with a source column needs none.
    from core.domain.ranking import LexicalCandidates

    full = full_candidates([*COMMON, RARE], QUERY)
    assert len(full.source_pool)
    expected = top_documents(QUERY, full, 3, [1, 5, 100])

    def copied(self: LexicalCandidates, rows: object) -> list[object]:
        raise AssertionError("a passage was copied to read its source")

    monkeypatch.setattr(LexicalCandidates, "chunks", copied)
    monkeypatch.setattr(LexicalCandidates, "chunks_ahead", copied)
    assert top_documents(QUERY, full, 3, [1, 5, 100]) == expected
