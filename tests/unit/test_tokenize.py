"""What a term is: normalisation, separators, stopwords, order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.domain.tokenize import MAX_TERM_CHARS, STOPWORDS, raw_terms, tokenize


def test_stopwords_are_exactly_the_design_set() -> None:
    expected = set(
        "a an and are as at be but by for from has have he in is it its of on or she "
        "that the they this to was were will with".split()
    )
    assert expected == STOPWORDS
    assert isinstance(STOPWORDS, frozenset)


def test_compatibility_forms_are_normalised_before_casefolding() -> None:
    assert tokenize("ﬁre Ｗing １２") == ["fire", "wing", "12"]


def test_casefolding_is_full_not_just_lowercasing() -> None:
    assert tokenize("STRASSE Straße") == ["strasse", "strasse"]


def test_the_underscore_separates_like_punctuation() -> None:
    assert tokenize("snake_case wing-body x1.5") == ["snake", "case", "wing", "body", "x1", "5"]


def test_stopwords_are_dropped_but_order_and_repeats_are_kept() -> None:
    assert tokenize("The wing and THE wing of a body") == ["wing", "wing", "body"]


def test_raw_terms_keep_the_stopwords_so_a_screen_can_show_what_was_dropped() -> None:
    assert raw_terms("The wing of a body") == ["the", "wing", "of", "a", "body"]


def test_letters_of_other_scripts_are_terms() -> None:
    assert tokenize("Überschall-Strömung 超音速 σ-model") == [
        "überschall",
        "strömung",
        "超音速",
        "σ",
        "model",
    ]


def test_text_without_letters_or_digits_has_no_terms() -> None:
    assert tokenize(" ... --- !!! \n\t") == []


@given(st.text())
def test_every_term_is_a_casefolded_alphanumeric_non_stopword(text: str) -> None:
    for term in tokenize(text):
        assert term
        assert term not in STOPWORDS
        assert "_" not in term
        assert all(char.isalnum() for char in term)


@given(st.text())
def test_tokenizing_the_joined_terms_gives_the_same_terms(text: str) -> None:
    terms = tokenize(text)
    assert tokenize(" ".join(terms)) == terms


def test_a_run_longer_than_255_characters_is_split_into_255_character_terms_like_lucene() -> None:
    assert [len(term) for term in tokenize("x" * 600 + " wing")] == [255, 255, 90, 4]
    assert tokenize("é" * 256) == ["é" * 255, "é"]
    assert max(len(term) for term in tokenize("字" * 1000)) == MAX_TERM_CHARS == 255
