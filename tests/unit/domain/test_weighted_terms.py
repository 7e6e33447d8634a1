"""Weighted query terms (issue 47 item 1): the score is the sum over the distinct query terms,
in sorted order, of ``(weight * idf) * tf_part``; every weight 1 is today's score, bit for bit.

On Cranfield (the sample), each query is ranked once as typed and once with every weight 1
given explicitly; then with one term's weight changed, where each explanation row must be its
weight times its idf times its TF part, exactly, and the rows must add up to the score.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from uuid import UUID

import pytest

from core.domain.bm25 import MAX_TERM_WEIGHT, QueryScorer, ScoreExplanation, corpus_stats
from core.domain.chunks import StoredChunk
from core.domain.ranking import LexicalCandidate, LexicalCandidates, candidate_scores, rank_chunks
from core.domain.tokenize import tokenize

DATA = Path(__file__).resolve().parents[3] / "data" / "cranfield"
TENANT = UUID("00000000-0000-0000-0000-0000000000c2")
#: Queries of the sample checked (the first ones; each is ranked three times).
QUERIES = 40


def bits(explanation: ScoreExplanation) -> list[object]:
    """Every number of an explanation as exact bits, term by term."""
    return [explanation.score.hex()] + [
        (t.term, t.tf, t.df, t.idf.hex(), t.tf_part.hex(), t.contribution.hex(), t.weight.hex())
        for t in explanation.terms
    ]


@pytest.fixture(scope="module")
def cranfield() -> tuple[list[list[str]], list[LexicalCandidates]]:
    docs = [json.loads(line) for line in (DATA / "corpus.jsonl").open(encoding="utf-8")]
    texts = [f"{d['title']}\n{d['text']}" for d in docs]
    tokens = [tokenize(text) for text in texts]
    counts = [Counter(t) for t in tokens]
    chunks = [
        StoredChunk(
            tenant_id=TENANT,
            source_id=d["_id"],
            text=text,
            chunk_index=0,
            start_char=0,
            end_char=len(text),
        )
        for d, text in zip(docs, texts, strict=True)
    ]
    stats = corpus_stats(tokens)
    queries = [
        tokenize(json.loads(line)["text"])
        for line in (DATA / "queries.jsonl").open(encoding="utf-8")
    ][:QUERIES]
    read = []
    for terms in queries:
        wanted = set(terms)
        candidates = [
            LexicalCandidate.model_construct(
                chunk=chunk, doc_length=len(toks), term_frequencies={t: c[t] for t in found}
            )
            for chunk, toks, c in zip(chunks, tokens, counts, strict=True)
            if (found := wanted & c.keys())
        ]
        kept = stats.model_copy(update={"doc_frequencies": {t: stats.df(t) for t in wanted}})
        read.append(LexicalCandidates(stats=kept, candidates=candidates))
    return queries, read


def test_every_weight_one_ranks_and_explains_to_the_bits_of_the_typed_query(
    cranfield: tuple[list[list[str]], list[LexicalCandidates]],
) -> None:
    for terms, candidates in zip(*cranfield, strict=True):
        typed = rank_chunks(terms, candidates, 10)
        ones = rank_chunks(terms, candidates, 10, weights=dict.fromkeys(terms, 1.0))
        assert [r.chunk.id for r in typed] == [r.chunk.id for r in ones]
        assert [r.score.hex() for r in typed] == [r.score.hex() for r in ones]
        assert [bits(r.explanation) for r in typed] == [bits(r.explanation) for r in ones]
        assert all(r.explanation.weights == {} for r in ones)


def test_a_weighted_term_contributes_its_weight_times_its_idf_times_its_tf_part(
    cranfield: tuple[list[list[str]], list[LexicalCandidates]],
) -> None:
    for terms, candidates in zip(*cranfield, strict=True):
        heavy = sorted(set(terms))[0]
        weights = {heavy: 2.5, sorted(set(terms))[-1]: 0.3}
        ranked = rank_chunks(terms, candidates, 10, weights=weights)
        scores = candidate_scores(terms, candidates, weights)
        for result in ranked:
            total = 0.0
            for part in result.explanation.terms:
                weight = weights.get(part.term, 1.0)
                assert part.weight == weight
                assert part.contribution == (weight * part.idf) * part.tf_part
                total += part.contribution
            assert total == result.score == result.explanation.score
            assert result.explanation.weights == dict(sorted(weights.items()))
        assert sorted(scores.tolist(), reverse=True)[: len(ranked)] == [r.score for r in ranked]


def test_raising_a_terms_weight_never_lowers_a_passage_that_holds_it(
    cranfield: tuple[list[list[str]], list[LexicalCandidates]],
) -> None:
    terms, candidates = cranfield[0][0], cranfield[1][0]
    term = sorted(set(terms))[0]
    plain = candidate_scores(terms, candidates)
    raised = candidate_scores(terms, candidates, {term: 3.0})
    column = candidates.terms.index(term)
    holds = candidates.tfs[:, column] > 0
    assert (raised[holds] > plain[holds]).all() and (raised[~holds] == plain[~holds]).all()


@pytest.mark.parametrize(
    ("weights", "words"),
    [
        ({"wing": float("nan")}, "above 0"),
        ({"wing": float("inf")}, "above 0"),
        ({"wing": 0.0}, "above 0"),
        ({"wing": -1.0}, "above 0"),
        ({"wing": MAX_TERM_WEIGHT * 2}, "at most"),
        ({"flutter": 2.0}, "not a query term"),
    ],
)
def test_a_weight_that_is_not_a_positive_number_or_names_no_query_term_is_refused(
    weights: dict[str, float], words: str
) -> None:
    stats = corpus_stats([["wing", "drag"]])
    with pytest.raises(ValueError, match=words):
        QueryScorer(["wing", "drag"], stats, weights=weights)
