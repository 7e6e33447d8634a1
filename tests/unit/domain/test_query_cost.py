"""What one query may cost: distinct terms after the profile, words, and a far-off raw size."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.domain.query_cost import (
    MAX_QUERY_CHARS,
    MAX_QUERY_TERMS,
    MAX_QUERY_WORDS,
    checked_terms,
    query_refusal,
)
from core.domain.tokenize import Profile, tokenize
from tests.fixtures.queries import CISI_LONGEST, long_question, too_many_terms


def test_a_question_longer_than_cisis_longest_costs_what_a_query_may() -> None:
    question = long_question()
    assert len(question) > CISI_LONGEST > 1_000
    assert query_refusal(question) == ""
    assert checked_terms(question, Profile.ENGLISH) == tokenize(question, Profile.ENGLISH)


def test_one_term_past_the_distinct_term_bound_is_refused_in_one_sentence() -> None:
    assert query_refusal(too_many_terms(MAX_QUERY_TERMS)) == ""
    assert query_refusal(too_many_terms(MAX_QUERY_TERMS + 1), what="query 56") == (
        f"query 56 has {MAX_QUERY_TERMS + 1:,} distinct terms; at most {MAX_QUERY_TERMS:,} are "
        "searched: shorten it"
    )


def test_distinct_terms_are_counted_after_the_workspaces_profile() -> None:
    # 1,025 plain terms, but "wings" stems to "wing" under english: 1,024 terms there.
    words = too_many_terms(MAX_QUERY_TERMS - 1) + " wing wings"
    assert "1,025 distinct terms" in query_refusal(words, Profile.PLAIN)
    assert query_refusal(words, Profile.ENGLISH) == ""


def test_repeats_cost_words_not_terms_and_words_past_their_bound_are_refused() -> None:
    assert query_refusal("wing " * MAX_QUERY_WORDS) == ""
    assert query_refusal("wing " * (MAX_QUERY_WORDS + 1)) == (
        f"the query has {MAX_QUERY_WORDS + 1:,} words; at most {MAX_QUERY_WORDS:,} are searched: "
        "shorten it"
    )


def test_stopwords_count_as_words_since_reading_them_is_the_cost() -> None:
    assert "words" in query_refusal("the " * (MAX_QUERY_WORDS + 1))


def test_the_raw_size_is_a_safety_net_checked_before_any_word_is_read() -> None:
    huge = "x" * (MAX_QUERY_CHARS + 1)  # one 100,001-letter run: 393 terms, far below the rest
    assert query_refusal(huge) == (
        f"the query has {MAX_QUERY_CHARS + 1:,} characters; at most {MAX_QUERY_CHARS:,} are "
        "read: shorten it"
    )
    assert query_refusal("x" * MAX_QUERY_CHARS) == ""


def test_checked_terms_raises_the_refusal_as_a_value_error() -> None:
    with pytest.raises(ValueError, match="has 1,025 distinct terms"):
        checked_terms(too_many_terms(MAX_QUERY_TERMS + 1))


def test_docs_bounds_states_the_rule_with_the_numbers_core_uses() -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "bounds.md").read_text(encoding="utf-8")
    for stated in (
        f"**{MAX_QUERY_TERMS:,} distinct terms**",
        f"**{MAX_QUERY_WORDS:,} words**",
        f"**{MAX_QUERY_CHARS:,} characters**",
        f"{CISI_LONGEST:,}",
        "core/domain/query_cost.py",
    ):
        assert stated in text, stated


def test_docs_bounds_states_the_graded_query_bound_core_uses() -> None:
    from core.domain.judging import MAX_GRADED_QUERY_BYTES

    text = (Path(__file__).resolve().parents[3] / "docs" / "bounds.md").read_text(encoding="utf-8")
    assert f"**{MAX_GRADED_QUERY_BYTES:,} bytes**" in text
