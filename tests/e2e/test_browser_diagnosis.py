"""Issue 36's loop in Chromium: on the sample, grade, diagnose the losses, tune k1 and b, save.

A newcomer loads the sample, grades one passage on Search, makes Cranfield's own judgments the
sample set's grades on Runs, sees the share of lost relevant passages no lexical setting could
find, tunes k1 and b on a heatmap with the significance test in words, and saves the best point
as a run that Compare then offers.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_browser import open_workspace, page, server, settle, shot

pytestmark = pytest.mark.e2e

__all__ = ["page", "server"]  # fixtures, used by name


def test_a_newcomer_grades_diagnoses_tunes_and_saves_the_better_run_on_the_sample(
    server: str, page: Page
) -> None:
    open_workspace(page, f"{server}/?ws=diagnosed", "diagnosed")
    page.get_by_role("button", name="Load the sample collection").click()
    expect(page.get_by_text("Loaded 1,398 passages")).to_be_visible(timeout=60_000)
    settle(page)

    box = page.get_by_role("textbox", name="Query")
    box.fill("flutter of swept wings")
    box.press("Enter")
    settle(page)
    page.get_by_text("Grade these results").click()
    settle(page)
    page.get_by_text("3 perfect").first.click()
    settle(page)

    page.goto(f"{server}/runs?ws=diagnosed")
    expect(page.get_by_role("heading", name="Runs", exact=True)).to_be_visible()
    settle(page)
    page.get_by_role("button", name="Use Cranfield's own judgments as grades").click()
    expect(page.get_by_text("grades from Cranfield's judgments")).to_be_visible()
    settle(page)

    page.get_by_role("button", name="Diagnose").click()
    settle(page)
    expect(page.get_by_text("of the lost relevant passages contain no query term")).to_be_visible()
    expect(page.get_by_text("no lexical setting (no k1, b or limit) can retrieve")).to_be_visible()
    expect(page.locator(".js-plotly-plot")).to_have_count(1)

    page.get_by_role("button", name="Tune").click()
    settle(page)
    expect(page.get_by_text("Best: k1", exact=False)).to_be_visible(timeout=60_000)
    expect(page.locator(".js-plotly-plot")).to_have_count(2)
    shot(page, "runs-diagnosis-tuning")
    save = page.get_by_role("button", name="as runs, to compare below")
    save.click()
    settle(page)
    expect(page.get_by_text("both are picked under Compare", exact=False)).to_be_visible()
    # Picked for the analyst: Compare's table is there without a hunt through the list.
    expect(page.get_by_text("(tuned)", exact=False).first).to_be_visible()
    expect(page.get_by_text("every run measured", exact=False)).to_be_visible()
