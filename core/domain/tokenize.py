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
from bisect import bisect_left
from collections.abc import Sequence
from enum import StrEnum
from itertools import compress
from typing import AnyStr, Final, NamedTuple

import numpy as np
import numpy.typing as npt
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
#: What ``tokenize_many`` joins texts with: no stored text holds NUL (core.domain.chunks) and
#: no term does, so a NUL found among the terms is where one text ends.
_JOIN: Final = "\x00"
#: The join with a space each side, so it is a word of its own once split.
_JOIN_SPACED: Final = f" {_JOIN} "
#: A term, or the join between two texts.
_TERM_OR_JOIN: Final = re.compile(rf"{TERM_PATTERN.pattern}|{_JOIN}")
#: ASCII letters, digits and the join kept, every other byte a space (``bytes.translate``).
_ASCII_SEPARATORS: Final = bytes(
    byte if chr(byte).isascii() and (chr(byte).isalnum() or chr(byte) == _JOIN) else 32
    for byte in range(256)
)
#: ASCII letters and digits kept, every other byte a space (``raw_terms`` of an ASCII text).
_ASCII_WORDS: Final = bytes(
    byte if chr(byte).isascii() and chr(byte).isalnum() else 32 for byte in range(256)
)

#: Bytes of a word ``tokenize_many`` codes as one integer (longer words go through a dict).
_WORD_BYTES: Final = 8
#: The byte every separator becomes in an ASCII batch.
_SPACE: Final = 32
#: For a word of n bytes (n = 0..8), the mask keeping the low n bytes of its 8-byte window.
_LOW_BYTES: Final = np.array([(1 << 8 * n) - 1 for n in range(_WORD_BYTES + 1)], dtype=np.uint64)


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
    """All terms of ``text`` in order, stopwords kept, unstemmed (to show what was dropped).

    An ASCII text (NFKC leaves it as it is, and casefolding is lowering there) is split with
    ``bytes.translate`` and ``split``, as ``tokenize_many`` splits an ASCII batch: ~5 against
    ~29 us a 540-character passage for ``TERM_PATTERN``, which was most of what RM3 spent
    tokenising its ten feedback passages per query. A word longer than ``MAX_TERM_CHARS`` is
    left to the pattern, which splits it.
    """
    if text.isascii():
        words = text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").lower().split()
        if not words or max(map(len, words)) <= MAX_TERM_CHARS:
            return words
    return TERM_PATTERN.findall(_normalise(text))


def dropped_characters(text: str) -> list[str]:
    """The characters of ``text`` no term holds (punctuation, symbols, emoji, "_"), spaces
    aside, distinct, in first-seen order and normalised as the terms are: what a query loses
    besides its stopwords, so a screen can name it instead of losing it without a word."""
    between = TERM_PATTERN.sub(" ", _normalise(text))
    return list(dict.fromkeys(c for c in between if not c.isspace()))


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


class TokenizedTexts(NamedTuple):
    """Many texts' terms, as ``tokenize`` gives them, in arrays: each token kept (stopwords
    dropped, in text order) as its term's index in ``terms`` and its text's index."""

    #: Every term of the texts, distinct, in code point order.
    terms: list[str]
    term_ids: npt.NDArray[np.int64]
    text_ids: npt.NDArray[np.int64]
    #: How many texts (a text without terms has no token).
    size: int

    def lengths(self) -> npt.NDArray[np.int64]:
        """Tokens per text: ``len(tokenize(text))``."""
        return np.bincount(self.text_ids, minlength=self.size).astype(np.int64)


def tokenize_many(texts: Sequence[str], profile: Profile = DEFAULT_PROFILE) -> TokenizedTexts:
    """``tokenize`` of each text, for a batch of thousands (a load's), in a few C calls.

    The texts are normalised one by one (as ``tokenize`` does), joined with NUL and split at
    once; each distinct word is then looked up, stemmed and ranked once, not each token. An
    ASCII batch (the usual corpus) is split with ``bytes.translate`` and ``split`` (a term is
    then a run of ASCII letters and digits: what ``TERM_PATTERN`` matches there), 4x faster
    than the pattern, which splits any other batch. The same terms as ``tokenize``, token for
    token (tests/unit/domain/test_tokenize.py); a text holding NUL cannot be joined, so such a batch
    is tokenised text by text. Rejected: a Python call per token (``tokenize`` per passage
    and a counter each: ~15 s of a 100k-passage load's worker time).
    """
    joined = _JOIN_SPACED.join(_normalise(text) for text in texts)
    if not texts or joined.count(_JOIN) != len(texts) - 1:
        return _tokenized_one_by_one(texts, profile)
    if joined.isascii():
        coded = _ascii_coded(
            joined.encode("ascii").translate(_ASCII_SEPARATORS), len(texts), profile
        )
        if coded is not None:  # else a run is longer than a term: split below
            return coded
    return _coded(_TERM_OR_JOIN.findall(joined), _JOIN, len(texts), profile)


def _ascii_coded(data: bytes, count: int, profile: Profile) -> TokenizedTexts | None:
    """The words of ``data`` (ASCII, every separator a space) coded without a Python object per
    token, or None when a word is longer than ``MAX_TERM_CHARS``.

    A word of at most 8 bytes (most of them) is its own 8 bytes read as one integer (the join,
    a lone NUL, reads as 0; no other word does), so one ``np.unique`` gives every distinct short
    word and each token's index; only longer words become bytes objects and meet a dict. On a
    20,000-passage batch of the bench corpus (2.4 M tokens) the set and the dict lookup per
    token this replaces were ~1.2 s of ~2.1 s (``_coded``, which still codes any other batch).
    Rejected: hashing every word in numpy (collisions to resolve) and ``np.unique`` over
    fixed-width strings (sorts bytes, and pads every word to the longest).
    """
    size = len(data)
    padded = np.frombuffer(data + bytes(_WORD_BYTES), np.uint8)
    in_word = (padded[:size] != _SPACE).view(np.int8)
    edges = np.flatnonzero(np.diff(in_word, prepend=np.int8(0), append=np.int8(0)))
    starts, ends = edges[0::2], edges[1::2]
    lengths = ends - starts
    if lengths.size and int(lengths.max()) > MAX_TERM_CHARS:
        return None
    # Every position's next 8 bytes as one little-endian integer (an unaligned strided view).
    windows = np.ndarray((size + 1,), dtype="<u8", buffer=padded, strides=(1,))
    short = lengths <= _WORD_BYTES
    keys = windows[starts[short]] & _LOW_BYTES[lengths[short]]
    unique_keys, token_keys = np.unique(keys, return_inverse=True)
    short_words: list[bytes] = unique_keys.view("S8").tolist()  # trailing NULs dropped
    joins = int(unique_keys.size > 0 and unique_keys[0] == 0)  # the join's key sorts first
    long_at = zip(starts[~short].tolist(), ends[~short].tolist(), strict=True)
    long_tokens = [data[start:end] for start, end in long_at]
    long_words = list(set(long_tokens))
    shorts = len(short_words) - joins
    if profile is Profile.PLAIN:  # a word is its term: the short ones ordered as numbers
        # Byte-swapped, a key's first byte is its highest: the numbers sort as the words do.
        # (Big-endian keys throughout sorted 2.4 M tokens ~2x slower in ``np.unique``.)
        order = np.argsort(unique_keys[joins:].byteswap())
        words = _texts(short_words[joins:])
        ordered: list[str] = np.asarray(words, dtype=object)[order].tolist()
        terms, codes = _plain_terms(ordered, _texts(long_words))
        surface_codes = np.empty_like(codes)
        surface_codes[order] = codes[:shorts]
        surface_codes[shorts:] = codes[shorts:]
    else:
        terms, surface_codes = _terms_of(_texts(short_words[joins:] + long_words), profile)
    ids = np.empty(lengths.size, np.int64)
    ids[short] = np.concatenate((np.full(joins, -2, np.int64), surface_codes[:shorts]))[token_keys]
    long_code = dict(zip(long_words, surface_codes[shorts:].tolist(), strict=True))
    ids[~short] = np.fromiter(map(long_code.__getitem__, long_tokens), np.int64, len(long_tokens))
    return _numbered(ids, terms, count)


def _coded(tokens: list[AnyStr], join: AnyStr, count: int, profile: Profile) -> TokenizedTexts:
    """The split tokens (terms and joins, as str or ASCII bytes) as term and text indexes."""
    surfaces = list(set(tokens) - {join})
    terms, surface_codes = _terms_of(_texts(surfaces), profile)
    code: dict[AnyStr, int] = dict(zip(surfaces, surface_codes.tolist(), strict=True))
    code[join] = -2
    return _numbered(
        np.fromiter(map(code.__getitem__, tokens), np.int64, len(tokens)), terms, count
    )


def _terms_of(words: list[str], profile: Profile) -> tuple[list[str], npt.NDArray[np.int64]]:
    """The distinct indexed terms of ``words`` in code point order, and each word's rank among
    them (-1 for a stopword)."""
    kept = [word for word in words if word not in STOPWORDS]
    indexed = index_terms(kept, profile)
    terms = sorted(set(indexed))
    ranks = np.fromiter(
        map({term: i for i, term in enumerate(terms)}.__getitem__, indexed), np.int64, len(indexed)
    )
    if len(kept) == len(words):
        return terms, ranks
    codes = np.full(len(words), -1, np.int64)
    codes[[i for i, word in enumerate(words) if word not in STOPWORDS]] = ranks
    return terms, codes


def _plain_terms(shorts: list[str], longs: list[str]) -> tuple[list[str], npt.NDArray[np.int64]]:
    """``_terms_of(shorts + longs, Profile.PLAIN)`` for distinct words, ``shorts`` sorted: the
    long words are sorted alone and placed among the short ones by bisection, not every word
    sorted and looked up in a dict again: tokenising a 20,000-passage batch of the bench corpus
    took 0.90 s, now 0.68 (best of five, A/B in the same minutes). The short words come in
    order from their byte-swapped keys."""
    kept = [word not in STOPWORDS for word in shorts]
    short_terms = list(compress(shorts, kept))
    order = sorted(range(len(longs)), key=longs.__getitem__)
    long_terms = [longs[i] for i in order]
    # A long word goes before the short terms from its bisection point on (it is none of them).
    points = np.fromiter(
        (bisect_left(short_terms, word) for word in long_terms), np.int64, len(long_terms)
    )
    long_ranks = points + np.arange(len(long_terms), dtype=np.int64)
    short_ranks = np.arange(len(short_terms), dtype=np.int64)
    short_ranks += np.searchsorted(points, short_ranks, side="right")
    terms = np.empty(len(short_terms) + len(long_terms), dtype=object)
    terms[short_ranks] = short_terms
    terms[long_ranks] = long_terms
    codes = np.full(len(shorts) + len(longs), -1, np.int64)
    codes[: len(shorts)][np.asarray(kept, dtype=np.bool_)] = short_ranks
    codes[len(shorts) + np.asarray(order, dtype=np.int64)] = long_ranks
    return terms.tolist(), codes


def _numbered(ids: npt.NDArray[np.int64], terms: list[str], count: int) -> TokenizedTexts:
    """Tokens coded as term ranks (-1 a stopword, -2 a join) as a batch's term and text ids."""
    text_ids = np.cumsum(ids == -2)  # a token's text is the number of joins before it
    held = ids >= 0
    return TokenizedTexts(terms, ids[held], text_ids[held].astype(np.int64), count)


def _texts(surfaces: list[str] | list[bytes]) -> list[str]:
    """The surfaces as text: ASCII bytes decoded in one call (they hold no space)."""
    if surfaces and isinstance(surfaces[0], bytes):
        return b" ".join(surfaces).decode("ascii").split(" ")
    return list(surfaces)  # type: ignore[arg-type]


def _tokenized_one_by_one(texts: Sequence[str], profile: Profile) -> TokenizedTexts:
    each = [tokenize(text, profile) for text in texts]
    terms = sorted({term for tokens in each for term in tokens})
    rank = {term: i for i, term in enumerate(terms)}
    flat = [rank[term] for tokens in each for term in tokens]
    sizes = np.fromiter(map(len, each), np.int64, len(each))
    return TokenizedTexts(
        terms,
        np.asarray(flat, dtype=np.int64),
        np.repeat(np.arange(len(each), dtype=np.int64), sizes),
        len(texts),
    )
