"""What one query may cost: one rule for every path a query takes, so no path refuses another's.

The search box, a link's query, the terminal, a query-set file and Evaluate's judgment files
all apply ``query_refusal`` here.

A query is bounded by what it costs, not by its length in characters. Ranking and explaining
cost one posting read, one column and one explanation per DISTINCT term after the workspace's
profile (``MAX_QUERY_TERMS``, Lucene's ``maxClauseCount``); reading the query costs one step per
word (``MAX_QUERY_WORDS``). A character bound (1,000, as query sets had) was rejected: it refused
CISI's long questions (8 of its 76, up to 1,462 characters), which cost a fraction of what a
1,024-term query costs, while the search box took them: Cranfield's longest questions asked
as one, 1,509 characters, are 228 words and 127 terms. A raw size
(``MAX_QUERY_CHARS``, 100,000 characters) stays only as a far-off safety net, checked before
anything is tokenised, so a pasted book is refused without being read word by word and no
store keeps a query of megabytes.

The checks run cheapest first (characters, words, distinct terms) and each refusal is one
sentence naming the count and the bound, with ``what`` naming the query ("query 56",
"the expanded query"); a query-set file puts "line N: " before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from core.domain.tokenize import DEFAULT_PROFILE, Profile, raw_terms, tokenize

#: Most distinct terms a query keeps after the workspace's profile: Lucene's maxClauseCount.
#: Each costs a posting read, a tf column and an explanation per result (a 1,000-term Search
#: took 0.9 s on Cranfield); a 1,509-character question has 127.
MAX_QUERY_TERMS: Final = 1_024
#: Most words (runs of letters and digits, stopwords and repeats counted) a query may have:
#: four times the distinct-term bound, so every allowed term may be said four times. Words cost
#: only tokenising (4,096 words read and stemmed in 1.9 ms, load 2.6) and a query-term
#: frequency; a 1,509-character question has 228.
MAX_QUERY_WORDS: Final = 4 * MAX_QUERY_TERMS
#: The safety net: most characters of a query as given, checked before it is
#: tokenised and the most any store keeps. Far above any query the word bound lets through in
#: ordinary words (4,096 words of English are about 25,000 characters), far below what would
#: weigh on memory (a query is held a few times per request).
MAX_QUERY_CHARS: Final = 100_000


def query_refusal(text: str, profile: Profile = DEFAULT_PROFILE, what: str = "the query") -> str:
    """The sentence refusing ``text`` under the workspace's ``profile``, or "" when it may be
    searched: the one rule every path applies (``checked_terms`` raises it)."""
    return _measured(text, profile, what)[1]


def _measured(text: str, profile: Profile, what: str) -> tuple[list[str], str]:
    """(the terms, "") of a query that may be searched, or ([], the sentence refusing it)."""
    if len(text) > MAX_QUERY_CHARS:
        return [], (
            f"{what} has {len(text):,} characters; at most {MAX_QUERY_CHARS:,} are read: shorten it"
        )
    words = len(raw_terms(text))
    if words > MAX_QUERY_WORDS:
        return (
            [],
            f"{what} has {words:,} words; at most {MAX_QUERY_WORDS:,} are searched: shorten it",
        )
    terms = tokenize(text, profile)
    refusal = terms_refusal(terms, what)
    return ([] if refusal else terms), refusal


def terms_refusal(terms: Sequence[str], what: str = "the query") -> str:
    """The sentence refusing a query of ``terms`` (an expanded query has no text), or ""."""
    distinct = len(set(terms))
    if distinct > MAX_QUERY_TERMS:
        return (
            f"{what} has {distinct:,} distinct terms; at most {MAX_QUERY_TERMS:,} are searched: "
            "shorten it"
        )
    return ""


def checked_terms(
    text: str, profile: Profile = DEFAULT_PROFILE, what: str = "the query"
) -> list[str]:
    """``tokenize(text, profile)`` once ``text`` passes ``query_refusal``; ``ValueError`` in its
    sentence otherwise."""
    terms, refusal = _measured(text, profile, what)
    if refusal:
        raise ValueError(refusal)
    return terms


def check_query_terms(terms: Sequence[str], what: str = "the query") -> None:
    """At most ``MAX_QUERY_TERMS`` distinct terms (``terms_refusal`` raised as ``ValueError``)."""
    refusal = terms_refusal(terms, what)
    if refusal:
        raise ValueError(refusal)
