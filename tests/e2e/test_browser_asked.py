"""Issue 48 in Chromium: the app never quietly changes what was asked.

A newcomer follows links with odd parameters, types odd queries and walks the README's Runs
tour; each time the stated sentence is on screen (the sentences are core's, imported here, so
a reworded sentence changes both). The AppTests (tests/ui/test_link_parameters.py,
test_odd_queries.py, test_runs_out_of_date.py) hold each rule; this holds that a person sees it.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from core.analysis.sentences import EMPTY_QUERY_NOTE, EMPTY_REASON_SENTENCES, link_int
from core.service import DEFAULT_K, K_MAX
from tests.e2e.test_browser import open_workspace, page, server, settle, shot

pytestmark = pytest.mark.e2e

__all__ = ["page", "server"]  # fixtures, used by name

WS = "asked"


def test_links_odd_queries_and_the_runs_tour_each_say_what_happened(
    server: str, page: Page
) -> None:
    open_workspace(page, f"{server}/?ws={WS}", WS)
    page.get_by_role("button", name="Load the sample collection").click()
    expect(page.get_by_text("Loaded 1,398 passages")).to_be_visible(timeout=60_000)

    # A link's k=0 is replaced, with the sentence saying what was asked and what is used.
    page.goto(f"{server}/?ws={WS}&q=heated+wings&k=0")
    settle(page)
    note = link_int("k", "0", DEFAULT_K, 1, K_MAX).note
    assert note is not None
    expect(page.get_by_text(note)).to_be_visible()
    # An unknown source is named, never dropped.
    page.goto(f"{server}/?ws={WS}&q=heated+wings&src=nonexistent-source")
    settle(page)
    expect(
        page.get_by_text("1 source this workspace does not have: “nonexistent-source”", exact=False)
    ).to_be_visible()
    shot(page, "asked-links")

    # Odd queries: emoji only, then Enter on an empty box.
    box = page.get_by_role("textbox", name="Query")
    box.fill("🙂🚀")
    box.press("Enter")
    settle(page)
    reason = EMPTY_REASON_SENTENCES["no letters or digits to search for"]
    expect(page.get_by_text(reason, exact=False)).to_be_visible()
    expect(page.get_by_text("dropped as neither letters nor digits", exact=False)).to_be_visible()
    box.fill("")
    box.press("Enter")
    settle(page)
    expect(page.get_by_text(EMPTY_QUERY_NOTE)).to_be_visible()

    # The README's Runs tour: the sample's grades, Evaluate, Diagnose; then a setting moves and
    # both results say they are out of date instead of standing as if current.
    page.goto(f"{server}/runs?ws={WS}")
    expect(page.get_by_role("heading", name="Runs", exact=True)).to_be_visible()
    settle(page)
    page.get_by_role("button", name="Use Cranfield's own judgments as grades").click()
    settle(page)
    expect(page.get_by_text("this workspace does not hold (995)", exact=False)).to_be_visible()
    page.get_by_role("button", name="Evaluate", exact=True).click()
    settle(page)
    expect(page.get_by_test_id("stMetric").first).to_be_visible(timeout=60_000)
    page.get_by_role("button", name="Diagnose", exact=True).click()
    settle(page)
    expect(page.get_by_text("of the lost relevant passages contain no query term")).to_be_visible()
    expect(page.get_by_text("Out of date", exact=False)).to_have_count(0)
    k_box = page.get_by_role("spinbutton", name="k", exact=True)
    k_box.fill("5")
    k_box.press("Enter")
    settle(page)
    stale = page.get_by_text(
        "Out of date: the settings above changed since this was computed.", exact=False
    )
    shot(page, "asked-runs")
    expect(stale).to_have_count(2)
