"""Every screen speaks an analyst's words: no snake_case identifier, no raw 64-hex passage id.

Issue 48 found ``lost_tf`` and ``kth_contribution`` as Diagnose's column headers and lost
passages named "passage 00267461c288…"; a new column or sentence can bring them back on any
screen, so this walks each screen's rendered text (after loading the sample, a query on the
query screens, a diagnosis and a tuning on Runs) rather than testing the two places fixed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from core.service import SAMPLE_CORPUS, SAMPLE_QUERY

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")
#: A developer's identifier: lower-case words joined by "_" (``lost_tf_part``).
SNAKE = re.compile(r"(?<![\w&#/.-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/.-])")
#: A passage id as the store keeps it: 64 hexadecimal digits.
HEX_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
#: Element kinds whose ``value`` is text the analyst reads.
TEXT_KINDS = ("markdown", "caption", "info", "warning", "error", "success", "title", "header",
              "subheader", "text", "code")  # fmt: skip
#: Widget kinds whose ``label`` the analyst reads.
LABELLED_KINDS = ("button", "text_input", "number_input", "selectbox", "multiselect",
                  "slider", "radio", "checkbox", "toggle", "text_area", "expander", "tab",
                  "metric")  # fmt: skip

pytestmark = pytest.mark.usefixtures("in_memory_store")


def texts(at: AppTest) -> Iterator[str]:
    """Everything the screen shows in words: text elements, widget labels and options, metric
    values, table headers (passage HTML's class and data attributes are markup, not words)."""
    for kind in TEXT_KINDS:
        for element in at.get(kind):
            yield re.sub(r"<[^>]*>", " ", str(element.value))
    for kind in LABELLED_KINDS:
        for element in at.get(kind):
            yield str(getattr(element, "label", ""))
            for option in getattr(element, "options", []) or []:
                yield str(option)
            if kind == "metric":
                yield str(element.value)
    for table in at.dataframe:
        yield from (str(c) for c in table.value.columns)


def offenders(at: AppTest) -> list[str]:
    found = []
    for text in texts(at):
        found += [f"{m.group()!r} in {text[:80]!r}" for m in SNAKE.finditer(text)]
        found += [f"hex id in {text[:80]!r}" for m in HEX_ID.finditer(text)]
    return found


def opened(workspace: str, page: str, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["ws"] = workspace
    at.run()
    for key, value in params.items():
        at.query_params[key] = value
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize(
    ("page", "params"),
    [
        ("pages/search.py", {"q": SAMPLE_QUERY}),
        ("pages/truncation.py", {"q": SAMPLE_QUERY, "limit": "20"}),
        ("pages/compare.py", {"q": SAMPLE_QUERY, "ra": "workspace", "rb": "classic"}),
        ("pages/corpus.py", {}),
        ("pages/entities.py", {}),
        ("pages/upload.py", {}),
        ("pages/judge.py", {}),
        ("pages/evaluate.py", {}),
        ("pages/runs.py", {}),
    ],
)
def test_no_screen_shows_a_snake_case_identifier_or_a_raw_passage_id(
    cranfield: str, page: str, params: dict[str, str]
) -> None:
    at = opened(cranfield, page, **params)
    assert offenders(at) == []


def test_a_diagnosis_and_a_tuning_on_runs_speak_an_analysts_words(cranfield: str) -> None:
    at = opened(cranfield, "pages/runs.py")
    at.button(key="runs_sample_grades").click().run()
    at.number_input(key="runs_limit").set_value(100)
    at.button(key="runs_diagnose").click().run()
    at.slider(key="tune_k1").set_value((0.5, 1.0))
    at.number_input(key="tune_k1_step").set_value(0.5)
    at.slider(key="tune_b").set_value((0.5, 1.0))
    at.number_input(key="tune_b_step").set_value(0.5)
    at.button(key="runs_tune").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert offenders(at) == []
    shown = "\n".join(texts(at))
    assert "source " in shown and " · passage " in shown  # the lost passages, named as Search does
