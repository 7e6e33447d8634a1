"""Candidates to ranked passages: pure, deterministic, store-agnostic.

Every candidate is scored with the one BM25 implementation; zero scores (no
query term present) are dropped; order is score descending then chunk id
ascending, a total order, so two stores handing over the same candidates in any
order produce the identical list. Explanations are built only for the k that are
returned: building them for every candidate would cost a model per candidate
for rows nobody sees.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.bm25 import CorpusStats, QueryScorer, ScoreExplanation
from core.chunks import StoredChunk


class LexicalCandidate(BaseModel):
    """A passage a store proposes for scoring, with what BM25 needs to know of it."""

    chunk: StoredChunk
    #: Token count of the passage, repeats and all (stopwords excluded).
    doc_length: int = Field(ge=0)
    #: tf of each requested term the passage contains.
    term_frequencies: dict[str, int] = Field(default_factory=dict)


class LexicalCandidates(BaseModel):
    """Whole-corpus statistics plus the (possibly truncated) candidate passages."""

    stats: CorpusStats
    candidates: list[LexicalCandidate] = Field(default_factory=list)
    #: Passages containing at least one requested term, before the limit cut (same snapshot);
    #: never fewer than the candidates handed over.
    matching: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _matching_covers_the_candidates(self) -> LexicalCandidates:
        if self.matching < len(self.candidates):
            object.__setattr__(self, "matching", len(self.candidates))
        return self

    @property
    def cut_by_limit(self) -> int:
        """Matching passages the limit kept from being scored."""
        return self.matching - len(self.candidates)


class RankedChunk(BaseModel):
    """One result: the passage, its score, and the arithmetic behind the score."""

    model_config = ConfigDict(frozen=True)

    chunk: StoredChunk
    score: float
    explanation: ScoreExplanation


def rank_chunks(terms: Sequence[str], candidates: LexicalCandidates, k: int) -> list[RankedChunk]:
    """The top ``k`` candidates by BM25, ties broken by chunk id ascending."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if k == 0 or not terms:
        return []
    scorer = QueryScorer(terms, candidates.stats)
    scored: list[tuple[float, str, LexicalCandidate]] = []
    for candidate in candidates.candidates:
        score = scorer.score(candidate.term_frequencies, candidate.doc_length)
        if score > 0.0:
            scored.append((score, candidate.chunk.id, candidate))
    scored.sort(key=lambda item: (-item[0], item[1]))
    ranked: list[RankedChunk] = []
    for score, _, candidate in scored[:k]:
        explanation = scorer.explain(candidate.term_frequencies, candidate.doc_length)
        ranked.append(RankedChunk(chunk=candidate.chunk, score=score, explanation=explanation))
    return ranked


__all__ = ["CorpusStats", "LexicalCandidate", "LexicalCandidates", "RankedChunk", "rank_chunks"]
