"""The highlighter's word finding (``str.find`` per marked form, forms kept across calls) marks
exactly what walking every word with the tokenizer's pattern marked, on every profile."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.analysis import marking
from core.analysis.marking import Span, term_spans
from core.domain.tokenize import (
    MAX_TERM_CHARS,
    STOPWORDS,
    TERM_PATTERN,
    Profile,
    index_terms,
    raw_terms,
    tokenize,
)

CRANFIELD = Path(__file__).resolve().parents[3] / "data" / "cranfield" / "corpus.jsonl"


def walked(text: str, terms: list[str], profile: Profile) -> list[Span]:
    """The highlighter before issue 50: every word of the normalised text walked in order."""
    wanted, spans, last_end = set(terms), [], 0
    mapped = marking._normalised_with_offsets(text)
    if not wanted or mapped is None:
        return term_spans(text, terms, profile)  # that path is unchanged
    normalised, starts, ends = mapped

    def indexed(surface: str) -> str | None:
        return None if surface in STOPWORDS else index_terms([surface], profile)[0]

    for match in TERM_PATTERN.finditer(normalised):
        term = indexed(match.group())
        if term is None or term not in wanted:
            continue
        start, end = starts[match.start()], ends[match.end() - 1]
        if start < last_end:
            continue
        spans.append(Span(start=start, end=end, label=term))
        last_end = end
    return spans


def test_the_words_pattern_is_isalnum_on_every_code_point() -> None:
    chars = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    assert "".join(re.findall(r"[^\W_]", chars)) == "".join(filter(str.isalnum, chars))


@pytest.mark.parametrize("profile", list(Profile))
def test_every_cranfield_passage_is_marked_as_walking_its_words_marked_it(
    profile: Profile,
) -> None:
    lines = CRANFIELD.read_text().splitlines()[:400]
    for line in lines:
        text = json.loads(line)["text"]
        terms = sorted(set(tokenize(text, profile)))[::3]
        assert term_spans(text, terms, profile) == walked(text, terms, profile)
        assert term_spans(text, terms, profile) == walked(text, terms, profile)  # kept forms


SAMPLES = [
    "Aeroelastic models; aeroelastic MODELS of the heated aircraft.",
    "The ﬁne Straße in KÖLN, köln and Köln (decomposed ö).",
    "snake_case_words and CamelCase, 3d-models, x2 and 10,000 items",
    "Ｆｕｌｌｗｉｄｔｈ letters and ① circled digits ½ ¼",
    "model" * 60 + " models model " + "a" * 255 + " " + "b" * 254 + "model",
    "modelmodel model xmodel modelx model_ model",
    # A run past MAX_TERM_CHARS: the pattern splits it, and its last piece is a word ("model").
    "x" * 255 + "model and model" + " y" + "9" * 300 + "z",
]


@pytest.mark.parametrize("text", SAMPLES)
@pytest.mark.parametrize("profile", list(Profile))
def test_awkward_texts_are_marked_as_walking_their_words_marked_them(
    text: str, profile: Profile
) -> None:
    terms = sorted(set(tokenize(text, profile)))
    assert term_spans(text, terms, profile) == walked(text, terms, profile)
    assert MAX_TERM_CHARS == 255


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"ab Aé\u0301ßﬁ½_-.", "model", "models", "the", "x" * 130]),
        max_size=40,
    ).map("".join),
    st.sampled_from(list(Profile)),
)
def test_any_text_is_marked_as_walking_its_words_marked_it(text: str, profile: Profile) -> None:
    terms = sorted({t for t in raw_terms(text)} | set(tokenize(text, profile)))
    assert term_spans(text, terms, profile) == walked(text, terms, profile)


@pytest.mark.parametrize("profile", list(Profile))
def test_a_text_marked_as_the_kept_forms_are_emptied_keeps_every_mark(
    profile: Profile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forms are emptied when they outgrow their bound: a text holding forms kept before
    and forms new then is still marked whole (it raised KeyError on the kept ones)."""
    monkeypatch.setattr(marking, "_INDEXED_KEPT", 4)
    monkeypatch.setattr(marking, "_indexed_forms", {})
    monkeypatch.setattr(marking, "_forms_of", {})
    first = "heated flow over wings"
    assert term_spans(first, tokenize(first, profile), profile) == walked(
        first, tokenize(first, profile), profile
    )
    second = "heated drag lift body nose tail flow"
    terms = sorted(set(tokenize(second, profile)))
    assert term_spans(second, terms, profile) == walked(second, terms, profile)
    assert len(term_spans(second, terms, profile)) == len(terms)


@pytest.mark.parametrize("profile", [p for p in Profile if p is not Profile.PLAIN])
def test_each_kept_indexed_term_knows_exactly_the_kept_forms_of_it(profile: Profile) -> None:
    """The two ways round of the kept forms agree: a form marks the term it is indexed as.
    (The plain profile keeps no forms: a word is its own indexed term, looked for as it is.)"""
    text = json.loads(CRANFIELD.read_text().splitlines()[7])["text"]
    term_spans(text, tokenize(text, profile), profile)
    kept, forms = marking._indexed_forms[profile], marking._forms_of[profile]
    assert {(s, t) for t, group in forms.items() for s in group} == {
        (s, t) for s, t in kept.items() if t is not None
    }


@pytest.mark.parametrize("profile", list(Profile))
def test_a_stopword_or_a_non_word_asked_for_is_never_marked(profile: Profile) -> None:
    """The plain profile looks for the wanted terms themselves: a stopword or a term no word
    can be (punctuation, "_") is not looked for, as walking the words never marked one."""
    text = "The model of the models, a-b and x_y."
    terms = ["the", "of", "a-b", "x_y", "model", "and"]
    assert term_spans(text, terms, profile) == walked(text, terms, profile)
    assert {span.label for span in term_spans(text, terms, profile)} == {"model"}
