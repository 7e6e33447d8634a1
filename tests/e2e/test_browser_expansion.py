"""Issue 47's loop in Chromium: on the sample, search Cranfield query 1 with RM3, read each
added term's weight and its contribution in the top passage's explanation, then on Runs measure
what RM3 did on the sample's own grades and save both runs for Compare."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_browser import open_workspace, page, server, settle, shot

pytestmark = pytest.mark.e2e

__all__ = ["page", "server"]  # fixtures, used by name

#: Cranfield query 1.
QUERY = (
    "what similarity laws must be obeyed when constructing aeroelastic models of heated "
    "high speed aircraft"
)


def test_a_newcomer_expands_query_1_with_rm3_and_measures_it_on_runs(
    server: str, page: Page
) -> None:
    open_workspace(page, f"{server}/?ws=expanded", "expanded")
    page.get_by_role("button", name="Load the sample collection").click()
    expect(page.get_by_text("Loaded 1,398 passages")).to_be_visible(timeout=60_000)
    settle(page)

    box = page.get_by_role("textbox", name="Query")
    box.fill(QUERY)
    box.press("Enter")
    settle(page)
    page.get_by_test_id("stSelectbox").filter(has_text="Expand").click()
    page.get_by_role("option", name="RM3", exact=False).click()
    settle(page)
    expect(page.get_by_text("Expanded query", exact=False).first).to_be_visible()
    expect(page.get_by_text("flutter", exact=False).first).to_be_visible()
    expect(page.get_by_text("entered the top 10 by", exact=False).first).to_be_visible()
    why = page.locator("details.lx-why").first  # opened in the browser: no rerun to settle
    why.locator("summary").click()
    expect(why.get_by_text("each contribution is weight × idf × TF part")).to_be_visible()
    expect(why.locator("th", has_text="weight")).to_be_visible()
    shot(page, "search-rm3")

    page.goto(f"{server}/runs?ws=expanded")
    expect(page.get_by_role("heading", name="Runs", exact=True)).to_be_visible()
    settle(page)
    page.get_by_role("button", name="Use Cranfield's own judgments as grades").click()
    expect(page.get_by_text("grades from Cranfield's judgments")).to_be_visible()
    settle(page)
    page.get_by_role("button", name="Measure RM3").click()
    settle(page)
    expect(page.get_by_text("as typed", exact=False).first).to_be_visible(timeout=60_000)
    expect(page.get_by_text("paired randomisation test", exact=False)).to_be_visible()
    expect(page.get_by_text("could never find (no query term)", exact=False)).to_be_visible()
    page.get_by_role("button", name="Save both as runs").click()
    settle(page)
    expect(page.get_by_text("Saved both", exact=False)).to_be_visible()
    shot(page, "runs-rm3-ledger")
    # Both are picked under Compare for the analyst: the comparison is on screen, no hunt.
    picker = page.get_by_test_id("stMultiSelect").last
    picker.scroll_into_view_if_needed()
    expect(picker.get_by_text("· RM3", exact=False)).to_be_visible()
    expect(page.get_by_text("every run measured", exact=False)).to_be_visible()
