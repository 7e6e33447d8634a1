"""Judging from the keyboard in a real headless Chromium: digits grade, arrows move.

AppTest clicks buttons; only a browser shows that Streamlit's shortcuts reach them (no
focus in a text box, the key pressed on the page). The grades land in a store the test cannot
read (the app runs in its own process with its own in-memory store), so the page's progress
line ("graded N of M") is the witness, and the passage shown must change.

The first key pressed on a freshly loaded page is sometimes lost in headless Chromium (seen
with the old whole-page screen as with the fragment, no run reaching the server), so
``wake_keys`` moves one passage on and back, pressing again until the move shows, before
any grade is counted.
"""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_browser import open_workspace, page, server, settle, shot

pytestmark = pytest.mark.e2e

__all__ = ["page", "server"]  # fixtures of the main browser module, reused


def wake_keys(page: Page) -> None:
    """Press → until the panel moves (see the module), then ← back to the first passage."""
    for _ in range(5):
        page.get_by_role("heading", name="Judge").click()
        page.keyboard.press("ArrowRight")
        try:
            expect(page.get_by_text("Passage 2 of")).to_be_visible(timeout=3_000)
            break
        except AssertionError:
            continue
    page.keyboard.press("ArrowLeft")
    expect(page.get_by_text("Passage 1 of")).to_be_visible()
    settle(page)


def test_digits_grade_the_passage_and_move_to_the_next_one(server: str, page: Page) -> None:
    open_workspace(page, f"{server}/judge?ws=e2e-judge", "e2e-judge")
    page.get_by_role("button", name="Load the sample collection").click()
    # Leaving the page mid-load would cut it short; a shared 2-core machine takes minutes.
    expect(page.get_by_text("Loaded 1,398 passages")).to_be_visible(timeout=240_000)
    page.goto(f"{server}/judge?ws=e2e-judge")
    expect(page.get_by_role("heading", name="Judge")).to_be_visible()
    settle(page)
    expect(page.get_by_text("Query 1 of 225")).to_be_visible()
    expect(page.get_by_text("graded 0 of")).to_be_visible()
    wake_keys(page)
    passage = page.locator(".lx-passage").first
    shown = passage.inner_text()
    took = []
    for key, graded in (("2", 1), ("0", 2), ("3", 3)):
        page.get_by_role("heading", name="Judge").click()  # focus on the page, not a box
        start = time.monotonic()
        page.keyboard.press(key)
        expect(page.get_by_text(f"graded {graded} of")).to_be_visible()
        took.append(time.monotonic() - start)
        settle(page)
        assert passage.inner_text() != shown, "a grade moves on to the next passage"
        shown = passage.inner_text()
    page.keyboard.press("ArrowLeft")
    settle(page)
    expect(page.get_by_text("your grade: 3")).to_be_visible()
    expect(page.get_by_text("This set, for you: 0 of 225 queries fully graded · 1 started"))
    page.get_by_role("button", name="Refresh agreement and exports").click()
    expect(page.get_by_text("Raters: local")).to_be_visible()
    page.goto(f"{server}/judge?ws=e2e-judge")  # a new visit resumes at the first ungraded one
    expect(page.get_by_text("Passage 4 of")).to_be_visible()
    shot(page, "judge")
    print(f"grade to next passage, s (loaded machine): {[round(t, 3) for t in took]}")
