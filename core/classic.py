"""The textbook BM25 (Robertson/Sparck Jones IDF), for teaching and comparison.

Its IDF, ``ln((N - df + 0.5) / (df + 0.5))``, is zero or negative for a term in
half the documents or more: a common query term then lowers a score. That is
why the ranker uses Lucene's form (``core.bm25``), and why this class exists: to
show the difference on the analyst's own corpus. It is kept separate rather than
a flag on the ranker, so the production formula has no mode that can be left on.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence


class BM25:
    """Textbook BM25 over pre-tokenised documents; statistics computed once."""

    def __init__(self, corpus: list[list[str]], k1: float = 1.5, b: float = 0.75) -> None:
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

    def idf(self, term: str) -> float:
        df = self.doc_frequencies.get(term, 0)
        return math.log((self.n_docs - df + 0.5) / (df + 0.5))

    def score(self, query: Sequence[str], doc_idx: int) -> float:
        """Sum over the distinct query terms, in sorted order, of idf * saturated tf."""
        counts = self.term_frequencies[doc_idx]
        ratio = self.doc_lengths[doc_idx] / self.avg_doc_length if self.avg_doc_length else 0.0
        norm = self.k1 * (1.0 - self.b + self.b * ratio)
        total = 0.0
        for term in sorted(set(query)):
            tf = counts.get(term, 0)
            if tf == 0:
                continue
            total += self.idf(term) * tf * (self.k1 + 1.0) / (tf + norm)
        return total

    def rank(self, query: Sequence[str]) -> list[int]:
        """Every document index, by score descending, ties to the lower index."""
        scores = [self.score(query, idx) for idx in range(self.n_docs)]
        return sorted(range(self.n_docs), key=lambda idx: (-scores[idx], idx))
