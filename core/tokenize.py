"""What a term is: the one tokenizer every store and every screen shares.

NFKC, casefold, runs of Unicode letters and digits, a small stopword set. No
stemming: a stemmer would merge terms the analyst typed apart ("model" and
"modelling") and make explanations harder to read; the cost is lower recall on
inflected forms, which the analyst can see and fix by adding the other form.
"""

from __future__ import annotations

import re
import unicodedata

#: Casefolded English function words dropped from documents and queries alike.
STOPWORDS: frozenset[str] = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from",
        "has", "have", "he", "in", "is", "it", "its", "of", "on", "or", "she",
        "that", "the", "they", "this", "to", "was", "were", "will", "with",
    }
)  # fmt: skip

#: A term is a maximal run of Unicode letters and digits; "_" separates like punctuation.
_TERM = re.compile(r"[^\W_]+")


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def raw_terms(text: str) -> list[str]:
    """All terms of ``text`` in order, stopwords included (to show what was dropped)."""
    return _TERM.findall(_normalise(text))


def tokenize(text: str) -> list[str]:
    """The terms of ``text`` in order, repeats kept, stopwords dropped."""
    return [term for term in raw_terms(text) if term not in STOPWORDS]
