"""Workspace names are one name when a person sees one name (``core.domain.names``).

Every variant issue 21 names: case, a Cyrillic look-alike, a trailing zero-width space, a
decomposed accent. The confusables data is the package's own file: nothing is downloaded.
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.domain.names import format_problem, name_key

SECRET = "Secret"


@pytest.mark.parametrize(
    "look_alike",
    [
        "secret",
        "SECRET",
        "sEcReT",
        "\u0405ecret",  # CYRILLIC CAPITAL LETTER DZE for the S
        "S\u0435cr\u0435t",  # CYRILLIC SMALL LETTER IE for both e
        "Secret\u200b",  # trailing ZERO WIDTH SPACE
        "Se\u200dcret",  # ZERO WIDTH JOINER inside
        "\u202eSecret",  # RIGHT-TO-LEFT OVERRIDE
        "\uff33ecret",  # FULLWIDTH LATIN CAPITAL LETTER S
        "  Secret ",
    ],
)
def test_names_that_look_like_secret_share_its_key(look_alike: str) -> None:
    assert name_key(look_alike) == name_key(SECRET)


def test_a_decomposed_accent_is_the_composed_one() -> None:
    composed, decomposed = "Caf\u00e9", "Cafe\u0301"
    assert composed != decomposed
    assert name_key(composed) == name_key(decomposed)


def test_a_compatibility_form_is_its_plain_letters() -> None:
    assert name_key("\ufb01les") == name_key("files")  # LATIN SMALL LIGATURE FI


@pytest.mark.parametrize(
    ("one", "other"),
    [("Secret", "Secrets"), ("Café", "Cafe"), ("research", "search"), ("notes-1", "notes-2")],
)
def test_names_a_person_tells_apart_keep_different_keys(one: str, other: str) -> None:
    assert name_key(one) != name_key(other)


@given(st.text(max_size=12))
def test_the_key_of_a_key_is_itself(name: str) -> None:
    key = name_key(name)
    assert name_key(key) == key


def test_a_format_character_is_named_with_its_code_point_and_offset() -> None:
    problem = format_problem("Secret\u200b")
    assert problem is not None
    assert "U+200B" in problem and "ZERO WIDTH SPACE" in problem and "offset 6" in problem
    assert format_problem("\u2066x") is not None  # LEFT-TO-RIGHT ISOLATE
    assert format_problem("Secret") is None


def test_every_format_character_is_refused_and_no_visible_one_is() -> None:
    for code in range(0x3000):
        char = chr(code)
        if 0xD800 <= code < 0xE000:
            continue
        is_format = unicodedata.category(char) == "Cf"
        assert (format_problem(f"a{char}b") is not None) == is_format, hex(code)
