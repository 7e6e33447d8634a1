"""What a term is: normalisation, separators, stopwords, order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.domain.tokenize import (
    MAX_TERM_CHARS,
    STOPWORDS,
    Profile,
    raw_terms,
    tokenize,
    tokenize_many,
)


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


#: Texts that stress what ``tokenize_many`` must not change: empty texts, stopword-only texts,
#: compatibility forms, casefolding, a 600-letter run, scripts without case, stemming pairs.
TRICKY = [
    "",
    "the of a",
    "ﬁre Ｗing １２ STRASSE Straße",
    "snake_case wing-body x1.5",
    "Models modelled modelling the MODEL",
    "a" * 600 + " b",
    "超音速 σ-model Überschall",
    "   \n\t ",
    "wing wing wing flow",
]


def _each(texts: list[str], profile: Profile) -> list[list[str]]:
    batch = tokenize_many(texts, profile)
    found: list[list[str]] = [[] for _ in texts]
    for term, text in zip(batch.term_ids.tolist(), batch.text_ids.tolist(), strict=True):
        found[text].append(batch.terms[term])
    assert batch.lengths().tolist() == [len(tokens) for tokens in found]
    assert batch.terms == sorted(set(batch.terms))
    return found


def test_tokenising_a_batch_at_once_gives_each_text_the_terms_tokenize_gives_it() -> None:
    for profile in Profile:
        assert _each(TRICKY, profile) == [tokenize(text, profile) for text in TRICKY]


def test_a_batch_with_a_nul_in_a_text_is_still_tokenised_text_by_text() -> None:
    texts = ["wing\x00flow", "lift"]
    assert _each(texts, Profile.PLAIN) == [["wing", "flow"], ["lift"]]
    assert _each([], Profile.PLAIN) == []


@given(st.lists(st.text(), max_size=8), st.sampled_from(list(Profile)))
def test_any_batch_tokenised_at_once_equals_tokenising_each_text(
    texts: list[str], profile: Profile
) -> None:
    assert _each(texts, profile) == [tokenize(text, profile) for text in texts]


#: ASCII texts for the batch path that codes short words as integers: words of 1-9 letters
#: around its 8-byte width, digits, stopwords, repeats, separators only, an empty text, and a
#: 255-letter word (the longest term, still on that path).
ASCII_TRICKY = [
    "",
    "a ab abc abcd abcde abcdef abcdefg abcdefgh abcdefghi abcdefghij",
    "The wing's LIFT, the wing's drag; 12 1234567890 x1.5 snake_case",
    "abcdefgh abcdefgh abcdefghi abcdefghi abcdefgh",
    " .,;-- ",
    "and the of",
    "z" * 255 + " models modelling MODEL",
    "q",
]


def test_an_ascii_batch_is_coded_as_integers_and_gives_each_text_what_tokenize_gives() -> None:
    from core.domain import tokenize as module

    data = module._JOIN_SPACED.join(module._normalise(t) for t in ASCII_TRICKY).encode("ascii")
    for profile in Profile:
        assert module._ascii_coded(data.translate(module._ASCII_SEPARATORS), 8, profile)
        assert _each(ASCII_TRICKY, profile) == [tokenize(t, profile) for t in ASCII_TRICKY]


@given(
    st.lists(st.text(alphabet="abcdefghij0123456789 .-_ANDTHE\n", max_size=80), max_size=8),
    st.sampled_from(list(Profile)),
)
def test_any_ascii_batch_tokenised_at_once_equals_tokenising_each_text(
    texts: list[str], profile: Profile
) -> None:
    assert _each(texts, profile) == [tokenize(text, profile) for text in texts]


def _by_the_pattern(text: str) -> list[str]:
    from core.domain import tokenize as module

    return module.TERM_PATTERN.findall(module._normalise(text))


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_an_ascii_text_split_without_the_pattern_has_the_pattern_s_terms(text: str) -> None:
    assert raw_terms(text) == _by_the_pattern(text)


@given(st.text(alphabet="aZ9_-. \x00\t\n", max_size=600))
def test_an_ascii_text_with_long_runs_has_the_pattern_s_terms(text: str) -> None:
    assert raw_terms(text) == _by_the_pattern(text)


def test_an_ascii_run_longer_than_a_term_is_still_split_as_the_pattern_splits_it() -> None:
    for text in ["Q" * 255, "q" * 256 + " Wing_Body", "x1" * 300, "A_b-C.d\x00E\x1fF"]:
        assert raw_terms(text) == _by_the_pattern(text)
    assert raw_terms("A_b-C.d\x00E\x1fF") == ["a", "b", "c", "d", "e", "f"]
