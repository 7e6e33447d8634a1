"""Tokenizer profiles: ``plain`` is today's tokenizer, ``english`` is it plus Snowball stemming."""

from __future__ import annotations

import Stemmer
from hypothesis import given
from hypothesis import strategies as st

from core.domain.tokenize import (
    DEFAULT_PROFILE,
    Profile,
    index_terms,
    raw_terms,
    surface_terms,
    tokenize,
)


def test_the_default_profile_is_plain_and_is_the_tokenizer_without_a_profile() -> None:
    text = "Models of the heated aeroelastic MODELLING wings"
    assert DEFAULT_PROFILE is Profile.PLAIN
    assert tokenize(text) == tokenize(text, Profile.PLAIN)
    assert tokenize(text) == ["models", "heated", "aeroelastic", "modelling", "wings"]


def test_english_stems_each_plain_term_and_merges_inflected_forms() -> None:
    assert tokenize("Models of the heated MODELLING wings", Profile.ENGLISH) == [
        "model",
        "heat",
        "model",
        "wing",
    ]


def test_english_drops_stopwords_before_stemming() -> None:
    # "being" stems to the stopword "be" and "wills" to "will": dropped only if stemmed first.
    # "its" is a stopword whose stem "it" is one too: gone either way.
    assert tokenize("the flows being its wills", Profile.ENGLISH) == ["flow", "be", "will"]


def test_profiles_are_stored_and_read_by_their_names() -> None:
    assert [p.value for p in Profile] == ["plain", "english"]
    assert Profile("english") is Profile.ENGLISH


def test_surface_terms_pair_what_was_typed_with_what_is_indexed() -> None:
    assert surface_terms("Models and modelling of heated models", Profile.ENGLISH) == [
        ("models", "model"),
        ("modelling", "model"),
        ("heated", "heat"),
    ]
    assert surface_terms("Models of models", Profile.PLAIN) == [("models", "models")]


@given(st.text())
def test_english_is_exactly_plain_then_the_snowball_stemmer(text: str) -> None:
    stemmer = Stemmer.Stemmer("english")
    assert tokenize(text, Profile.ENGLISH) == [stemmer.stemWord(t) for t in tokenize(text)]


@given(st.text())
def test_every_surface_form_maps_to_a_term_of_the_same_text(text: str) -> None:
    for profile in Profile:
        terms = set(tokenize(text, profile))
        pairs = surface_terms(text, profile)
        assert {indexed for _, indexed in pairs} == terms
        assert all(surface in raw_terms(text) for surface, _ in pairs)


def test_index_terms_keeps_order_and_repeats() -> None:
    assert index_terms(["wings", "flows", "wings"], Profile.ENGLISH) == ["wing", "flow", "wing"]
    assert index_terms(["wings"], Profile.PLAIN) == ["wings"]
