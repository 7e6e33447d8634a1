"""The textbook BM25 class: its IDF, its parameters' limits, its ranking."""

from __future__ import annotations

import math

import pytest

from core.domain.bm25 import CorpusStats, inverse_document_frequency
from core.domain.classic import BM25

CORPUS = [
    ["wing", "flutter", "wing", "body"],
    ["body", "drag"],
    ["wing", "body", "nozzle", "shock", "shock", "flow"],
    ["flow", "body"],
]


def test_b_zero_makes_padding_irrelevant() -> None:
    padded = [list(doc) for doc in CORPUS]
    padded[0] += ["filler"] * 50
    plain, long = BM25(CORPUS, b=0.0), BM25(padded, b=0.0)
    assert long.score(["wing", "flutter"], 0) == plain.score(["wing", "flutter"], 0)
    assert BM25(padded).score(["flutter"], 0) < BM25(CORPUS).score(["flutter"], 0)


def test_k1_zero_makes_repeats_count_for_nothing() -> None:
    repeated = [list(doc) for doc in CORPUS]
    repeated[2] += ["shock"] * 9
    model, again = BM25(CORPUS, k1=0.0), BM25(repeated, k1=0.0)
    assert again.score(["shock"], 2) == model.score(["shock"], 2) == model.idf("shock")


def test_a_term_in_every_document_has_nonpositive_classic_idf_but_positive_lucene_idf() -> None:
    corpus = [[*doc, "everywhere"] for doc in CORPUS]
    assert BM25(corpus).idf("everywhere") <= 0.0
    assert BM25(CORPUS).idf("body") <= 0.0  # in all 4 documents
    assert BM25(CORPUS).idf("wing") == math.log((4 - 2 + 0.5) / (2 + 0.5))  # half: exactly 0
    stats = CorpusStats(n_docs=4, avg_doc_length=3.5, doc_frequencies={"everywhere": 4})
    assert inverse_document_frequency("everywhere", stats) > 0.0


def test_rank_lists_every_document_by_score_with_ties_to_the_lower_index() -> None:
    model = BM25([["y"], ["x"], ["y"], ["x"], ["w", "x", "pad"], ["z"], ["v"]])
    assert model.rank(["x"]) == [1, 3, 4, 0, 2, 5, 6]
    assert model.rank(["nothing"]) == list(range(7))


def test_statistics_are_fixed_at_construction() -> None:
    corpus = [list(doc) for doc in CORPUS]
    model = BM25(corpus)
    before = model.score(["nozzle"], 2)
    corpus[2].extend(["nozzle"] * 5)
    corpus.append(["nozzle"])
    assert model.score(["nozzle"], 2) == before


def test_an_empty_corpus_ranks_nothing() -> None:
    assert BM25([]).rank(["wing"]) == []


def test_impossible_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="k1"):
        BM25(CORPUS, k1=-0.1)
    with pytest.raises(ValueError, match="b must"):
        BM25(CORPUS, b=1.5)
