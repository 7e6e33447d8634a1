"""The textbook BM25 (Robertson/Sparck Jones IDF), for teaching and comparison.

Its IDF, ``ln((N - df + 0.5) / (df + 0.5))``, is zero or negative for a term in
half the documents or more: a common query term then lowers a score. That is
why the ranker uses Lucene's form (``core.domain.bm25``), and why this class exists: to
show the difference on the analyst's own corpus. It is kept separate rather than
a flag on the workspace's ranker, so the production ranking has no mode that can
be left on; its arithmetic is nevertheless ``core.domain.bm25.QueryScorer`` with the
classic IDF and these k1/b, so the Compare screen's "textbook BM25" over a
candidate read and this class over a whole corpus cannot disagree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final

from core.domain.bm25 import CorpusStats, IdfForm, QueryScorer, classic_idf

#: The textbook's term-frequency saturation (Robertson et al., TREC-3 era).
CLASSIC_K1: Final[float] = 1.5
#: The textbook's length normalisation.
CLASSIC_B: Final[float] = 0.75


class BM25:
    """Textbook BM25 over pre-tokenised documents; statistics computed once."""

    def __init__(
        self, corpus: list[list[str]], k1: float = CLASSIC_K1, b: float = CLASSIC_B
    ) -> None:
        if k1 < 0:
            raise ValueError(f"k1 must be >= 0, got {k1}")
        if not 0.0 <= b <= 1.0:
            raise ValueError(f"b must be within 0..1, got {b}")
        self.k1 = k1
        self.b = b
        self.n_docs = len(corpus)
        self.doc_lengths = [len(doc) for doc in corpus]
        self.avg_doc_length = sum(self.doc_lengths) / self.n_docs if self.n_docs else 0.0
        self.term_frequencies = [Counter(doc) for doc in corpus]
        self.doc_frequencies: Counter[str] = Counter()
        for counts in self.term_frequencies:
            self.doc_frequencies.update(counts.keys())
        self._stats = CorpusStats(
            n_docs=self.n_docs,
            avg_doc_length=self.avg_doc_length,
            doc_frequencies=dict(self.doc_frequencies),
        )

    def idf(self, term: str) -> float:
        return classic_idf(self.doc_frequencies.get(term, 0), self.n_docs)

    def _scorer(self, query: Sequence[str]) -> QueryScorer:
        return QueryScorer(query, self._stats, k1=self.k1, b=self.b, idf_form=IdfForm.CLASSIC)

    def score(self, query: Sequence[str], doc_idx: int) -> float:
        """Sum over the distinct query terms, in sorted order, of idf * saturated tf."""
        return self._scorer(query).score(self.term_frequencies[doc_idx], self.doc_lengths[doc_idx])

    def rank(self, query: Sequence[str]) -> list[int]:
        """Every document index, by score descending, ties to the lower index."""
        scorer = self._scorer(query)
        scores = [
            scorer.score(self.term_frequencies[idx], self.doc_lengths[idx])
            for idx in range(self.n_docs)
        ]
        return sorted(range(self.n_docs), key=lambda idx: (-scores[idx], idx))
