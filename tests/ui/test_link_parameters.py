"""Every URL parameter a screen reads is used as given or replaced with a sentence (issue 48).

A link's ``k=0`` used to become 1, ``k=abc`` 10 and ``?src=nonexistent-source`` to show every
match unfiltered, all without a word. The sentences are core's (``link_int``, ``link_float``,
``unknown_filter_line``); these tests check the screens say them and use what they say.
"""

from __future__ import annotations

import uuid

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.sentences import link_int
from core.service import DEFAULT_K, DEFAULT_LIMIT, K_MAX, SAMPLE_CORPUS
from pages.common import get_service

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")
QUERY = "aeroelastic models of heated aircraft"

pytestmark = pytest.mark.usefixtures("in_memory_store")


def opened(workspace: str, page: str, **params: str) -> AppTest:
    """``page`` opened from a link carrying ``params`` (set after the first run, on Search:
    the link is the other page's, not one Search already rewrote)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    if page != "pages/search.py":
        at.run()
    for key, value in params.items():
        at.query_params[key] = value
    if page != "pages/search.py":
        at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.warning]


@pytest.mark.parametrize(
    ("asked", "used", "why"),
    [
        ("0", 1, "k is at least 1"),
        ("-5", 1, "k is at least 1"),
        ("abc", DEFAULT_K, "which is not a whole number"),
        ("999999", K_MAX, f"k is at most {K_MAX}"),
    ],
)
@pytest.mark.parametrize("page", ["pages/search.py", "pages/truncation.py", "pages/compare.py"])
def test_a_links_unusable_k_is_replaced_with_a_sentence_naming_both_values(
    cranfield: str, page: str, asked: str, used: int, why: str
) -> None:
    at = opened(cranfield, page, q=QUERY, k=asked)
    key = {"pages/search.py": "k", "pages/truncation.py": "t_k", "pages/compare.py": "c_k"}[page]
    assert at.number_input(key=key).value == used
    (note,) = [w for w in warnings(at) if w.startswith("The link asked for")]
    assert note == link_int("k", asked, DEFAULT_K, 1, K_MAX).note
    assert f"k='{asked}'" in note and why in note and f"k={used}" in note


def test_a_links_k_and_limit_in_range_are_used_as_given_without_a_word(cranfield: str) -> None:
    at = opened(cranfield, "pages/search.py", q=QUERY, k="3", limit="5")
    assert (at.number_input(key="k").value, at.number_input(key="limit").value) == (3, 5)
    assert not [w for w in warnings(at) if w.startswith("The link")]


def test_a_limit_that_is_not_a_number_says_the_default_is_used(cranfield: str) -> None:
    at = opened(cranfield, "pages/search.py", q=QUERY, limit="lots")
    assert at.number_input(key="limit").value == DEFAULT_LIMIT
    assert (
        f"The link asked for limit='lots', which is not a whole number: the default "
        f"limit={DEFAULT_LIMIT:,} is used." in warnings(at)
    )


def test_the_sentence_goes_once_the_analyst_sets_the_value_themselves(cranfield: str) -> None:
    at = opened(cranfield, "pages/search.py", q=QUERY, k="0")
    assert any(w.startswith("The link asked for k='0'") for w in warnings(at))
    at.number_input(key="k").set_value(4).run()
    assert not [w for w in warnings(at) if w.startswith("The link")]


def test_an_unknown_source_in_a_link_is_named_and_the_results_say_they_are_not_narrowed(
    cranfield: str,
) -> None:
    at = opened(cranfield, "pages/search.py", q=QUERY, src="nonexistent-source")
    assert (
        "The link narrows to 1 source this workspace does not have: “nonexistent-source”. Left "
        "out of the filter, so the results are not narrowed by source." in warnings(at)
    )


@pytest.mark.parametrize("entity", ["not-a-uuid", str(uuid.uuid4())])
@pytest.mark.parametrize("page", ["pages/search.py", "pages/truncation.py"])
def test_an_entity_id_the_workspace_does_not_have_is_named_on_screen(
    cranfield: str, page: str, entity: str
) -> None:
    at = opened(cranfield, page, q=QUERY, ent=entity)
    (line,) = [w for w in warnings(at) if w.startswith("The link narrows")]
    assert f"1 entity this workspace does not have: “{entity}”" in line


def test_truncations_limit_does_not_follow_the_analyst_to_search(cranfield: str) -> None:
    at = opened(cranfield, "pages/truncation.py", q=QUERY, limit="5")
    assert at.number_input(key="t_limit_box").value == 5
    at.query_params.clear()  # a browser's page switch drops the URL's parameters
    at.query_params["ws"] = cranfield
    at.switch_page("pages/search.py").run()
    assert at.text_input(key="q").value == QUERY  # the query is shared, on purpose
    assert at.number_input(key="limit").value == DEFAULT_LIMIT


def test_a_compare_link_with_an_unknown_ranker_or_k1_says_what_is_used(cranfield: str) -> None:
    at = opened(cranfield, "pages/compare.py", q=QUERY, ra="bm99", rb="custom", kb="abc")
    said = warnings(at)
    assert any(w.startswith("The link asked for ra='bm99', which is not a ranker") for w in said)
    assert any(w.startswith("The link asked for kb='abc', which is not a number") for w in said)


def test_creating_a_workspace_that_exists_says_it_exists(cranfield: str) -> None:
    at = opened(cranfield, "pages/search.py")
    other = f"exists-{uuid.uuid4().hex[:6]}"
    get_service().create_workspace(other)
    at.session_state["new_workspace_open"] = True  # the analyst opens "New workspace"
    at.run()
    at.sidebar.text_input(key="new_workspace_name").set_value(other)
    at.sidebar.button(key="create_workspace").click().run()
    assert at.session_state["workspace"] == other
    assert any(f"The workspace “{other}” already exists" in i.value for i in at.info)
