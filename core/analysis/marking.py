"""Where a query's terms stand in a passage: spans at the original offsets, as the tokenizer
counts them.

Found with the tokenizer's own definition (NFKC, casefold, letter/digit runs) and mapped back
to offsets in the original text, so the marks of a term are exactly its tf; the alternative, a
case-insensitive regex over the raw text, disagrees with the tokenizer on ligatures, "ß",
decomposed accents and stopwords, and the count shown would no longer be the count scored.
Under a stemming profile each surface form is mapped to its indexed term with the workspace's
own tokenizer (``index_terms``), and the mark is labelled with the indexed term, so "models"
and "model" are both marks of ``model`` and the marks still equal its tf. Under the plain
profile a word is its own indexed term, so the wanted terms are looked for directly.

Apart from ``presentation`` (which draws the spans as HTML) since that module reached 600
lines; a page imports ``Span``, ``term_spans`` and ``mark_counts`` from here.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict

from core.domain.models import built
from core.domain.tokenize import (
    DEFAULT_PROFILE,
    MAX_TERM_CHARS,
    STOPWORDS,
    TERM_PATTERN,
    Profile,
    index_terms,
    raw_terms,
)

#: The tokenizer's own term pattern (so an over-long run is marked piece by piece, as indexed).
_TERM: Final = TERM_PATTERN


class Span(BaseModel):
    """A range of the original text to mark, and what it marks (a term or an entity name)."""

    model_config = ConfigDict(frozen=True)

    start: int
    end: int
    label: str


#: Every ``Span``'s fields set, shared (``built``): a Search rerun makes ~130 spans.
_SPAN_FIELDS: Final = set(Span.model_fields)


def _normalised_with_offsets(
    text: str,
) -> tuple[str, Sequence[int], Sequence[int]] | None:
    """The tokenizer's normalised text, with each normalised char's original span.

    Normalises per base character plus its combining marks. Returns None when that
    differs from normalising the whole text (rare compositions across starters). ASCII text
    maps one to one: its offsets are ranges, not lists built per passage.
    """
    if text.isascii():
        return text.lower(), range(len(text)), range(1, len(text) + 1)
    pieces: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    i = 0
    while i < len(text):
        j = i + 1
        while j < len(text) and unicodedata.combining(text[j]):
            j += 1
        piece = unicodedata.normalize("NFKC", text[i:j]).casefold()
        pieces.append(piece)
        starts.extend([i] * len(piece))
        ends.extend([j] * len(piece))
        i = j
    normalised = "".join(pieces)
    if normalised != unicodedata.normalize("NFKC", text).casefold():
        return None
    return normalised, starts, ends


class _Indexer:
    """Surface form -> indexed term under one profile, each distinct form stemmed once."""

    def __init__(self, profile: Profile) -> None:
        self._profile = profile
        self._seen: dict[str, str | None] = {}

    def __call__(self, surface: str) -> str | None:
        if surface not in self._seen:
            self._seen[surface] = (
                None if surface in STOPWORDS else index_terms([surface], self._profile)[0]
            )
        return self._seen[surface]


#: Forms ``_indexed_forms`` keeps of a profile: it is emptied when it would grow past them.
_INDEXED_KEPT: Final = 1 << 16
#: Surface forms kept with their indexed term (None: a stopword) per profile, across calls: a
#: rerun marks the same passages' words again.
_indexed_forms: dict[Profile, dict[str, str | None]] = {}
#: The same forms the other way round, per profile: indexed term -> its kept surface forms.
#: A passage's marked forms are then a set intersection per query term, not a lookup of each
#: of its ~100 distinct words in Python (``term_spans``).
_forms_of: dict[Profile, dict[str, set[str]]] = {}


def _indexed(surfaces: set[str], profile: Profile) -> dict[str, str | None]:
    """The kept forms of ``profile``, with every one of ``surfaces`` in it (stemmed in one
    batch: the stemmer is per word, so a batch gives each word what it gives it alone)."""
    kept = _indexed_forms.setdefault(profile, {})
    new = surfaces.difference(kept)  # a walk of surfaces (``- kept.keys()`` walks kept)
    if new:
        forms = _forms_of.setdefault(profile, {})
        if len(kept) + len(new) > _INDEXED_KEPT:  # emptied: every form of this call is new
            kept = _indexed_forms[profile] = {}
            forms = _forms_of[profile] = {}
            new = set(surfaces)
        words = [s for s in new if s not in STOPWORDS]
        for surface, term in zip(words, index_terms(words, profile), strict=True):
            kept[surface] = term
            forms.setdefault(term, set()).add(surface)
        kept.update((s, None) for s in new if s in STOPWORDS)
    return kept


def _marked_forms(surfaces: set[str], wanted: set[str], profile: Profile) -> dict[str, str]:
    """Each of ``surfaces`` whose indexed term under ``profile`` is one of ``wanted``, with it."""
    _indexed(surfaces, profile)
    forms = _forms_of.get(profile, {})
    return {s: term for term in wanted if term in forms for s in forms[term] & surfaces}


def _marked_words(
    normalised: str, marked: Mapping[str, str], runs_unchecked: bool = False
) -> list[tuple[int, int, str]] | None:
    """Where each of ``marked``'s surface forms stands as a whole word of ``normalised``:
    (start, end, term) in text order. Only when every word is a maximal run of letters and
    digits (none reaches ``MAX_TERM_CHARS``), as ``TERM_PATTERN`` then finds them: ``[^\\W_]``
    is ``str.isalnum`` (tests/unit/analysis/test_highlight_fast.py checks every code point).
    ``runs_unchecked``: the caller has not looked for such long runs; a form found inside one
    (the pattern splits it, and a piece may be the form) returns None instead."""
    found: list[tuple[int, int, str]] = []
    size = len(normalised)
    for surface, term in marked.items():
        width = len(surface)
        at = normalised.find(surface)
        while at >= 0:
            after = at + width
            if (at == 0 or not normalised[at - 1].isalnum()) and (
                after == size or not normalised[after].isalnum()
            ):
                found.append((at, after, term))
                at = normalised.find(surface, after)
            else:
                if runs_unchecked and _in_long_run(normalised, at, after):
                    return None
                at = normalised.find(surface, at + 1)
    found.sort()
    return found


def _in_long_run(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` (letters and digits) lies in a run of them at least
    ``MAX_TERM_CHARS`` long. The spaces around it bound the run first (two scans in C: "model"
    inside "models" is six such checks a Cranfield passage); only a run they leave room for is
    walked a character at a time."""
    space_before, space_after = text.rfind(" ", 0, start), text.find(" ", end)
    if (len(text) if space_after < 0 else space_after) - space_before - 1 < MAX_TERM_CHARS:
        return False
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    return end - start >= MAX_TERM_CHARS


def _plain_words(normalised: str, wanted: set[str]) -> list[tuple[int, int, str]] | None:
    """``_marked_words`` under the plain profile, where a word is its own indexed term: the
    marked forms are the wanted terms that can be words (letters and digits, no stopword), so
    the passage's words need not be split, gathered and looked up first (~half of marking a
    Cranfield passage, 59 -> ~30 us; bench/bench_rerun.py, issue 50). None when a wanted term
    stands inside a run of ``MAX_TERM_CHARS`` or more: such a text is walked as before."""
    marked = {t: t for t in wanted if t not in STOPWORDS and _TERM.fullmatch(t)}
    return _marked_words(normalised, marked, runs_unchecked=True)


def term_spans(text: str, terms: Iterable[str], profile: Profile = DEFAULT_PROFILE) -> list[Span]:
    """Where each of ``terms`` (indexed terms) occurs in ``text``, as original offsets.

    Every surface form whose indexed term under ``profile`` is one of ``terms`` is
    marked, labelled with that indexed term. The number of spans per term equals the
    term's tf in ``tokenize(text, profile)``, except when two terms share one original
    character (e.g. "½" is the terms "1" and "2"): a character is marked once.

    The marked words are found with ``str.find`` per marked surface form, not by walking every
    word of the text in Python, and each form's indexed term is kept across calls: ten
    Cranfield passages of a Search rerun took 1.37 ms to mark, 0.33 of it only finding the
    words with the pattern (bench/bench_rerun.py, issue 50); a passage's marked forms come from
    the kept forms of each query term (``_forms_of``), ~0.8x its time; under the plain profile
    the wanted terms themselves (``_plain_words``). A text with a word as long as
    ``MAX_TERM_CHARS`` (the pattern splits it) is walked word by word, as before.
    """
    wanted = set(terms)
    spans: list[Span] = []
    if not wanted:
        return spans
    mapped = _normalised_with_offsets(text)
    last_end = 0
    if mapped is None:
        # Fallback: tokenise each raw run on its own; exact for all but exotic compositions.
        indexed = _Indexer(profile)
        for match in _TERM.finditer(text):
            for surface in raw_terms(match.group()):
                term = indexed(surface)
                if term is not None and term in wanted and match.start() >= last_end:
                    spans.append(Span(start=match.start(), end=match.end(), label=term))
                    last_end = match.end()
        return spans
    normalised, starts, ends = mapped
    found = _plain_words(normalised, wanted) if profile is Profile.PLAIN else None
    if found is None:
        # ASCII: the tokenizer's own split (``raw_terms``, ~6x the pattern's) of the same words.
        words = raw_terms(text) if text.isascii() else _TERM.findall(normalised)
        distinct = set(words)
        marked = _marked_forms(distinct, wanted, profile)
        if not marked:
            return spans
        if max(map(len, distinct)) < MAX_TERM_CHARS:
            found = _marked_words(normalised, marked)
        else:  # a run the pattern splits: its pieces are words too, found by the pattern
            found = []
            for match in _TERM.finditer(normalised):
                if (term := marked.get(match.group())) is not None:
                    found.append((match.start(), match.end(), term))
    for at, after, term in found or ():
        start, end = starts[at], ends[after - 1]
        if start < last_end:
            continue
        spans.append(built(Span, {"start": start, "end": end, "label": term}, _SPAN_FIELDS))
        last_end = end
    return spans


def mark_counts(spans: Iterable[Span]) -> dict[str, int]:
    """How many marks each label got."""
    return dict(Counter(span.label for span in spans))
