"""What a term is: the one tokenizer every store and every screen shares, per profile.

NFKC, casefold, runs of Unicode letters and digits, a small stopword set: that is
the ``plain`` profile, the default. The ``english`` profile is the same, then
Snowball English stemming (PyStemmer, the Snowball project's own C code) on each
term left after the stopwords are dropped, so "models" and "model" are one term.
On Cranfield it raises nDCG@10 from 0.4098 to 0.4311; its cost is that an
explanation must show what the analyst typed next to what was indexed
("models → model"), which ``surface_terms`` gives.

A profile belongs to a workspace, chosen when it is created, and every write and
every query of that workspace go through ``tokenize(text, profile)`` here. The
alternative, letting each store stem (PostgreSQL's ``to_tsvector('english')``,
a Python stemmer in the in-memory store), is how two stores come to disagree
about what a term is; one function in the domain makes that impossible.

The longest term is ``MAX_TERM_CHARS`` (255) characters, as in Lucene's standard tokenizer; a
longer run of letters and digits is SPLIT into pieces of at most 255 characters, again as
Lucene (and Elasticsearch's ``max_token_length``) does. Splitting rather than dropping keeps
the text findable: the same over-long word in a query splits into the same pieces and still
matches, while a dropped token would vanish from every passage and every query without a word.
The cap is here, in what a term is, so every store indexes exactly the same terms: PostgreSQL's
btree cannot index a term of more than about 2,700 bytes, and the in-memory store must not
accept what PostgreSQL refuses (stemming only shortens a term). The cost: a 300-letter "word"
counts as two terms.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from enum import StrEnum
from typing import Final

import Stemmer

#: Casefolded English function words dropped from documents and queries alike.
STOPWORDS: frozenset[str] = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from",
        "has", "have", "he", "in", "is", "it", "its", "of", "on", "or", "she",
        "that", "the", "they", "this", "to", "was", "were", "will", "with",
    }
)  # fmt: skip

#: Longest term in characters (after normalisation); longer runs are split (Lucene's limit).
MAX_TERM_CHARS = 255
#: A term: a maximal run of Unicode letters and digits ("_" separates like punctuation), or one
#: 255-character slice of a longer run.
TERM_PATTERN = re.compile(rf"[^\W_]{{1,{MAX_TERM_CHARS}}}")


class Profile(StrEnum):
    """How a workspace turns text into terms; stored with the workspace."""

    #: Normalise, casefold, split, drop stopwords. Terms are what the analyst typed.
    PLAIN = "plain"
    #: ``plain``, then Snowball English stemming of each remaining term.
    ENGLISH = "english"


#: The profile of a workspace nobody chose one for (and of every workspace made before profiles).
DEFAULT_PROFILE: Final = Profile.PLAIN

#: One stemmer per thread: a PyStemmer object keeps a cache and is not safe to share.
_STEMMERS = threading.local()


def _english() -> Stemmer.Stemmer:
    stemmer: Stemmer.Stemmer | None = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        stemmer = _STEMMERS.english = Stemmer.Stemmer("english")
    return stemmer


def _normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def raw_terms(text: str) -> list[str]:
    """All terms of ``text`` in order, stopwords kept, unstemmed (to show what was dropped)."""
    return TERM_PATTERN.findall(_normalise(text))


def index_terms(terms: list[str], profile: Profile = DEFAULT_PROFILE) -> list[str]:
    """The indexed form of already-split, non-stopword terms under ``profile``, in order."""
    if profile is Profile.ENGLISH:
        stemmed: list[str] = _english().stemWords(terms)
        return stemmed
    return list(terms)


def tokenize(text: str, profile: Profile = DEFAULT_PROFILE) -> list[str]:
    """The terms of ``text`` in order, repeats kept, stopwords dropped, then the profile applied."""
    return index_terms([term for term in raw_terms(text) if term not in STOPWORDS], profile)


def surface_terms(text: str, profile: Profile = DEFAULT_PROFILE) -> list[tuple[str, str]]:
    """Each distinct non-stopword surface form of ``text`` and the term it is indexed as.

    In first-seen order: ``[("models", "model"), ("heated", "heat")]`` under ``english``;
    under ``plain`` every pair is a term and itself.
    """
    surfaces = list(dict.fromkeys(t for t in raw_terms(text) if t not in STOPWORDS))
    return list(zip(surfaces, index_terms(surfaces, profile), strict=True))
