"""The ceiling of a limit: the best nDCG@k the kept candidates allow, beside BM25's nDCG@k.

A hand-worked case: three candidates in the store's order A (three query terms), B (two),
C (one, rare), BM25 ranking them A, C, B; graded C = 3, B = 1, A unjudged; k = 2. The ideal
DCG@2 is 3/log2(2) + 1/log2(3) = 3.63093 whatever the limit.

- limit 1 keeps A: nothing relevant kept, both 0.
- limit 2 keeps A, B: the best order puts B first, 1/3.63093 = 0.27541; BM25 ranks A, B:
  (1/log2(3))/3.63093 = 0.17377.
- limit 3 keeps all: the best order C, B is the ideal, 1.0; BM25's top 2 is A, C:
  (3/log2(3))/3.63093 = 0.52130. At this limit the ranking, not the limit, costs the most.
"""

from __future__ import annotations

import math
from collections import Counter
from uuid import UUID

import pytest

from core.analysis.truncation import analyse_truncation, limit_ceiling
from core.domain.bm25 import corpus_stats
from core.domain.chunks import StoredChunk
from core.domain.ranking import LexicalCandidate, LexicalCandidates

TENANT = UUID("00000000-0000-0000-0000-0000000000c1")
QUERY = ["wing", "body", "flow", "hypersonic"]
A = ["wing", "body", "flow"]
B = ["wing", "body", *(f"filler{i}" for i in range(12))]
C = ["hypersonic"] * 3
#: Passages matching no query term: they make the rare terms rare.
OTHERS = [[f"other{i}"] for i in range(10)]
IDEAL = 3 / math.log2(2) + 1 / math.log2(3)


def candidates(passages: list[tuple[str, list[str]]]) -> LexicalCandidates:
    """(source id, tokens) per passage, a source's passages numbered in order; store order."""
    wanted, rows, numbers = set(QUERY), [], Counter[str]()
    for source, tokens in passages:
        text = " ".join(tokens)
        chunk = StoredChunk(
            tenant_id=TENANT, source_id=source, text=text, chunk_index=numbers[source],
            start_char=0, end_char=len(text),
        )  # fmt: skip
        numbers[source] += 1
        tfs = {t: n for t, n in Counter(tokens).items() if t in wanted}
        if tfs:
            rows.append(LexicalCandidate(chunk=chunk, doc_length=len(tokens), term_frequencies=tfs))
    rows.sort(key=lambda c: (-len(c.term_frequencies), c.chunk.id))
    docs = [tokens for _, tokens in passages]
    return LexicalCandidates(stats=corpus_stats(docs, QUERY), candidates=rows)


def test_the_ceiling_of_each_limit_is_the_kept_relevant_passages_in_grade_order() -> None:
    full = candidates([("a", A), ("b", B), ("c", C), *(("o", o) for o in OTHERS)])
    _, b, c = (full.chunks([row])[0].id for row in range(3))
    assert [full.chunks([r])[0].source_id for r in range(3)] == ["a", "b", "c"]
    unlimited = analyse_truncation(QUERY, full, k=3, limit=3).unlimited
    assert [r.chunk.source_id for r in unlimited] == ["a", "c", "b"]  # the case's premise

    points = limit_ceiling(QUERY, full, 2, [1, 2, 3], {c: 3, b: 1})
    assert [p.limit for p in points] == [1, 2, 3]
    assert [p.ceiling for p in points] == pytest.approx([0.0, 1 / IDEAL, 1.0], abs=1e-12)
    assert [p.ndcg for p in points] == pytest.approx(
        [0.0, (1 / math.log2(3)) / IDEAL, (3 / math.log2(3)) / IDEAL], abs=1e-12
    )


def test_by_document_a_document_is_kept_when_any_of_its_passages_is() -> None:
    # Document "x" is B's passage and C's: limit 2 keeps it through B, at its grade.
    full = candidates([("a", A), ("x", B), ("x", C), *(("o", o) for o in OTHERS)])
    members = {"x": [full.chunks([1])[0].id, full.chunks([2])[0].id], "a": []}
    points = limit_ceiling(QUERY, full, 2, [1, 2, 3], {"x": 2, "a": 0}, members)
    assert [p.ceiling for p in points] == [0.0, 1.0, 1.0]
    # BM25 ranks a, then x (at its best passage C): x at rank 2 from limit 2 on.
    assert [p.ndcg for p in points] == pytest.approx(
        [0.0, (2 / math.log2(3)) / 2, (2 / math.log2(3)) / 2], abs=1e-12
    )


def test_a_relevant_passage_that_is_no_candidate_lowers_every_ceiling() -> None:
    full = candidates([("a", A), ("b", B), ("c", C), *(("o", o) for o in OTHERS)])
    c = full.chunks([2])[0].id
    points = limit_ceiling(QUERY, full, 2, [3], {c: 3, "not-matching": 3})
    ideal = 3 + 3 / math.log2(3)
    assert points[0].ceiling == pytest.approx(3 / ideal, abs=1e-12)
