"""An analyst's walk through the screens other than Search, with the inputs real people give.

Each test is one thing such a walk found: a traceback or pydantic's dump where a sentence
belonged, a raw value where the screens' words belonged, a result shown beside inputs it was not
computed from. The sentences are core's; these tests check the screens say them.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.sentences import escape_text
from core.service import SAMPLE_CORPUS
from core.service.bounds import check_limit

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")

pytestmark = pytest.mark.usefixtures("in_memory_store")


def opened(workspace: str, page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def graded(workspace: str) -> AppTest:
    """Runs, on a workspace holding the sample's grades."""
    from pages.common import get_service

    get_service().import_sample_grades(workspace=workspace)
    return opened(workspace, "pages/runs.py")


def test_evaluating_runs_at_a_limit_of_0_says_why_instead_of_a_traceback(cranfield: str) -> None:
    at = graded(cranfield)
    at.number_input(key="runs_limit").set_value(0)
    at.button(key="runs_evaluate").click().run()
    assert not at.exception, [e.value for e in at.exception]
    with pytest.raises(ValueError) as refusal:  # core's sentence for it
        check_limit(0)
    assert [e.value for e in at.error] == [escape_text(str(refusal.value))]
