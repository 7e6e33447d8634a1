"""A grade given on a Search result, counted on Evaluate, in a real headless Chromium.

The app runs in its own process with its own in-memory store, so the Evaluate screen's
Judged@k is the witness: three passages match, one is graded, so Judged@10 is 1/3.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_browser import (
    ARTIFACTS,
    open_workspace,
    page,
    server,
    settle,
    shot,
)

pytestmark = pytest.mark.e2e

__all__ = ["page", "server"]  # fixtures of the main browser module, reused

WORKSPACE = "e2e-grades"
#: Three small documents, each matching the query once or more.
DOCUMENTS = {
    "turbine.txt": "The turbine engine runs hot. Engine blades are cooled by air.",
    "piston.txt": "A piston engine turns a crank.",
    "rocket.txt": "The rocket engine burns hydrogen and oxygen.",
}


def test_a_grade_on_a_search_result_is_counted_on_evaluate_with_judged_at_k(
    server: str, page: Page
) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    files = []
    for name, text in DOCUMENTS.items():
        path = ARTIFACTS / name
        path.write_text(text, encoding="utf-8")
        files.append(str(path))
    open_workspace(page, f"{server}/upload?ws={WORKSPACE}", WORKSPACE)
    expect(page.get_by_role("heading", name="Upload")).to_be_visible()
    page.locator("input[type=file]").set_input_files(files)
    page.get_by_role("button", name="Index the files").click()
    settle(page)
    expect(page.get_by_text("Stored 3 of 3 files")).to_be_visible(timeout=60_000)

    page.goto(f"{server}/?{urlencode({'ws': WORKSPACE, 'q': 'engine'})}")
    settle(page)
    expect(page.locator(".lx-passage")).to_have_count(3)
    page.get_by_text("Grade these results").click()
    settle(page)
    expect(page.get_by_text("· unjudged")).to_have_count(3)
    page.get_by_text("2 relevant").first.click()
    settle(page)
    expect(page.get_by_text("your grade: 2 relevant")).to_be_visible()
    expect(page.get_by_text("· unjudged")).to_have_count(2)
    shot(page, "search-grade")

    page.goto(f"{server}/evaluate?ws={WORKSPACE}")
    expect(page.get_by_role("heading", name="Evaluate")).to_be_visible()
    settle(page)
    page.get_by_test_id("stRadioGroup").get_by_text("this workspace's grades", exact=True).click()
    expect(page.get_by_text("Query set", exact=True)).to_be_visible()
    settle(page)
    page.get_by_text("compare with limit B").last.click()
    settle(page)
    page.get_by_role("button", name="Run the evaluation").click()
    settle(page)
    # Core's Judged@10 (one of three results graded), as the metric and in the warning.
    expect(page.get_by_text("Judged@10 of A")).to_contain_text("is 33%")
    # The metrics' row is drawn after the rest of the run's elements on a loaded machine.
    expect(page.get_by_text("0.3333", exact=True)).to_be_visible(timeout=90_000)
    lists = page.get_by_role("listitem").filter(has_text="passage 1")
    expect(lists.filter(has_text="grade 2")).to_have_count(1)
    expect(lists.filter(has_text="unjudged")).to_have_count(2)
