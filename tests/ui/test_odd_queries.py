"""Odd queries get the right sentence (issue 48 item 3), on Search and Truncation.

An emoji-only query said "no terms left after stopwords" under "dropped as stopwords: none";
the characters the tokenizer drops were dropped without a word; a pasted page showed a chip per
word; Enter on an empty box showed nothing. The expected words are core's
(``core.analysis.presentation``), the dropped characters the tokenizer's own.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.sentences import EMPTY_QUERY_NOTE, EMPTY_REASON_SENTENCES
from core.domain.tokenize import dropped_characters
from core.service import SAMPLE_CORPUS

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")

pytestmark = pytest.mark.usefixtures("in_memory_store")


def searched(workspace: str, query: str, page: str = "pages/search.py") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    at.run()
    if page != "pages/search.py":
        at.switch_page(page).run()
    at.text_input(key="q" if page == "pages/search.py" else "t_q").set_value(query).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def terms_line(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Terms:**"))


@pytest.mark.parametrize(
    ("page", "lead"),
    [("pages/search.py", "No results"), ("pages/truncation.py", "Nothing to compare")],
)
def test_an_emoji_only_query_says_there_are_no_letters_or_digits_and_names_what_was_dropped(
    cranfield: str, page: str, lead: str
) -> None:
    at = searched(cranfield, "🙂🚀 ?!", page)
    said = [w.value for w in at.warning]
    assert said == [f"{lead}: {EMPTY_REASON_SENTENCES['no letters or digits to search for']}."]
    assert not any("stopwords" in w for w in said)
    assert terms_line(at).endswith("dropped as neither letters nor digits: “🙂” “🚀” “?” “!”")


def test_punctuation_in_a_real_query_is_listed_as_dropped(cranfield: str) -> None:
    query = "flutter? (heated) wings!"
    at = searched(cranfield, query)
    listed = " ".join(f"“{c}”" for c in dropped_characters(query))
    assert listed == "“?” “(” “)” “!”"
    assert terms_line(at) == (
        "**Terms:** `flutter`, `heated`, `wings`  \ndropped as stopwords: none  \n"
        f"dropped as neither letters nor digits: {listed}"
    )


def test_a_pasted_500_word_query_shows_each_distinct_term_once_with_its_count(
    cranfield: str,
) -> None:
    query = " ".join(["the wing flutter of heated panels"] * 100)  # 600 words, 4 distinct terms
    at = searched(cranfield, query)
    assert terms_line(at) == (
        "**Terms:** `wing` ×100, `flutter` ×100, `heated` ×100, `panels` ×100  \n"
        "dropped as stopwords: the ×100, of ×100"
    )


@pytest.mark.parametrize("page", ["pages/search.py", "pages/truncation.py"])
def test_enter_on_an_empty_query_says_what_to_type(cranfield: str, page: str) -> None:
    at = searched(cranfield, "wing", page)
    at.text_input(key="q" if page == "pages/search.py" else "t_q").set_value("").run()
    assert EMPTY_QUERY_NOTE in [i.value for i in at.info]
    assert not at.warning and not at.error
