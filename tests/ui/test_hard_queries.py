"""Hard queries on screen: Search's one plain line, and Judge walking a set hardest first.

The queries and the expected words come from the service (``search(...).difficulty``,
``queries_hardest_first``) on the sample, never hard-coded: the pages only show core's line.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.sentences import escape_text
from core.service import SAMPLE_CORPUS, SAMPLE_QUERY_SET

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")

pytestmark = pytest.mark.usefixtures("in_memory_store")


def opened(workspace: str, page: str, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ws"] = workspace
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def hard_lines(at: AppTest) -> list[str]:
    return [c.value for c in at.caption if "Likely hard" in c.value]


def test_search_says_in_one_line_when_a_query_is_likely_hard(cranfield: str) -> None:
    from pages.common import get_service

    service = get_service()
    texts = [q.text for q in service.query_set(SAMPLE_QUERY_SET, workspace=cranfield).queries]
    results = [service.search(t, 10, 1000, workspace=cranfield) for t in texts[:40]]
    hard = next(r for r in results if r.difficulty and r.difficulty.likely_hard)
    easy = next(r for r in results if r.difficulty and not r.difficulty.likely_hard)
    assert hard.difficulty is not None and hard.difficulty.line is not None
    at = opened(cranfield, "pages/search.py", q=hard.query, k="10", limit="1000")
    assert hard_lines(at) == [escape_text(hard.difficulty.line)]
    # Right under the ledger: the element after the corpus line.
    values = [e.value for e in at.main if hasattr(e, "value") and isinstance(e.value, str)]
    ledger = next(i for i, v in enumerate(values) if v.startswith("**Corpus:**"))
    assert values[ledger + 1] == escape_text(hard.difficulty.line)
    calm = opened(cranfield, "pages/search.py", q=easy.query, k="10", limit="1000")
    assert hard_lines(calm) == []


def test_judge_walks_the_set_hardest_first_and_back_as_saved(cranfield: str) -> None:
    from pages.common import get_service

    ordered = get_service().queries_hardest_first(SAMPLE_QUERY_SET, workspace=cranfield)
    at = opened(cranfield, "pages/judge.py")
    first = "\n".join(m.value for m in at.markdown)
    assert "Query **1 of 225**" in first
    at.selectbox(key="judge_order").select("hardest first").run()
    assert not at.exception, [e.value for e in at.exception]
    for i in range(3):
        shown = "\n".join(m.value for m in at.markdown)
        assert f"Query **{ordered[i].position + 1} of 225**" in shown, i
        assert escape_text(ordered[i].text) in shown
        assert any(c.value.startswith(f"{i + 1} of 225, hardest first") for c in at.caption)
        at.button(key="judge_next_query").click().run()
    at.button(key="judge_prev_query").click().run()
    assert f"Query **{ordered[2].position + 1} of 225**" in "\n".join(m.value for m in at.markdown)
    difficulty = ordered[0].difficulty
    assert difficulty is not None and difficulty.likely_hard  # the sample has flagged queries
    # Back to the saved order: it goes on from the query shown, and down is the next saved one.
    at.selectbox(key="judge_order").select("as saved").run()
    here = ordered[2].position
    assert f"Query **{here + 1} of 225**" in "\n".join(m.value for m in at.markdown)
    at.button(key="judge_next_query").click().run()
    assert f"Query **{min(here + 1, 224) + 1} of 225**" in "\n".join(m.value for m in at.markdown)
    assert not any("hardest first" in c.value for c in at.caption)
