"""Issue 18's loop end to end in Chromium, two raters signed in through the loopback provider.

Ada makes a workspace, lets Bob in, uploads notes and a set of three queries; both grade every
pooled passage of the three queries by keyboard; the Judge screen shows their agreement; Runs
evaluates from the workspace's grades with Judged@k, saves two runs and compares them with
win/tie/loss and p-values; the grades export as TREC qrels, which, imported into a fresh
workspace holding the same files, give the same metrics. Expected numbers are the app's own
numbers read twice (the store lives in the app's process), never hard-coded.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from core.service import KIND_LABELS, RankerKind
from tests.e2e.test_browser import ARTIFACTS, settle
from tests.e2e.test_browser_judge import wake_keys
from tests.e2e.test_browser_sign_in import BOB, provider, server, sign_in

pytestmark = pytest.mark.e2e

__all__ = ["provider", "server"]  # fixtures, used by name

QUERIES = ("wing flutter", "shock waves", "boundary layer")
NOTES = {
    "flutter.txt": "Flutter of a swept wing grows with speed. Wing flutter is damped by mass.",
    "shock.txt": "Shock waves stand ahead of a blunt body. Oblique shock waves turn the flow.",
    "layer.txt": "The boundary layer thickens downstream. A turbulent boundary layer resists.",
    "mixed.txt": "A shock meets the boundary layer of a wing and the layer separates.",
    "waves.txt": "Waves on a wing surface and flutter of panels at supersonic speed.",
}
#: Grades each rater presses, in turn, for the passages of a pool.
ADA_KEYS, BOB_KEYS = "3102", "3122"


def new_workspace(page: Page, name: str) -> None:
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_role("button", name="New workspace").click()
    box = page.get_by_test_id("stPopoverBody").get_by_label("Name")
    box.fill(name)
    box.press("Enter")
    page.get_by_role("button", name="Create").click()
    expect(sidebar.get_by_role("combobox")).to_have_value(name)
    settle(page)


def upload_notes(page: Page, server: str, workspace: str) -> None:
    folder = ARTIFACTS / "judging-loop"
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
        files.append(str(folder / name))
    page.goto(f"{server}/upload?ws={workspace}")
    expect(page.get_by_role("heading", name="Upload")).to_be_visible()
    settle(page)
    page.locator("input[type=file]").set_input_files(files)
    page.get_by_role("button", name="Index the files").click()
    expect(page.get_by_text(f"Stored {len(NOTES)} of {len(NOTES)} files")).to_be_visible()


def save_set(page: Page, server: str, workspace: str) -> None:
    page.goto(f"{server}/judge?ws={workspace}")
    expect(page.get_by_role("heading", name="Judge")).to_be_visible()
    settle(page)
    page.get_by_label("Name").last.fill("three")
    page.get_by_label("Queries (one per line, or the file's text)").fill("\n".join(QUERIES))
    page.get_by_role("button", name="Save the set").click()
    expect(page.get_by_text("Saved “three”: 3 queries.")).to_be_visible()
    settle(page)


def grade_everything(page: Page, server: str, workspace: str, keys: str) -> None:
    """Grade every pooled passage of the three queries by keyboard, ``keys`` in turn."""
    page.goto(f"{server}/judge?ws={workspace}")
    expect(page.get_by_text("Query 1 of 3")).to_be_visible()
    settle(page)
    wake_keys(page)
    pressed = 0
    for number in range(1, 4):
        line = page.get_by_text(re.compile(rf"Query {number} of 3: .* · graded \d+ of"))
        expect(line).to_be_visible()
        size = int(re.search(r"of (\d+) pooled", line.inner_text()).group(1))  # type: ignore[union-attr]
        assert size >= 1
        for graded in range(1, size + 1):
            page.get_by_role("heading", name="Judge").click()
            page.keyboard.press(keys[pressed % len(keys)])
            pressed += 1
            if graded < size or number == 3:
                expect(page.get_by_text(f"graded {graded} of {size}")).to_be_visible()
    expect(page.get_by_text("This set, for you: 3 of 3 queries fully graded")).to_be_visible()


def evaluate(page: Page, ranker: RankerKind) -> dict[str, str]:
    """Evaluate the set on Runs under ``ranker``; the metrics shown, label -> value."""
    box = page.get_by_label("Ranker")
    box.click()
    page.get_by_role("option", name=KIND_LABELS[ranker], exact=True).click()
    settle(page)
    page.get_by_role("button", name="Evaluate").click()
    expect(page.get_by_test_id("stMetric").first).to_be_visible()
    settle(page)
    shown = {}
    for metric in page.get_by_test_id("stMetric").all():
        label = metric.get_by_test_id("stMetricLabel").inner_text().strip()
        shown[label] = metric.get_by_test_id("stMetricValue").inner_text().strip()
    return shown


def test_two_raters_judge_a_set_then_runs_compare_and_the_qrels_reproduce_the_metrics(
    server: str, browser: Browser
) -> None:
    ada = sign_in(browser, server, "ada")
    new_workspace(ada, "judged")
    ada.get_by_test_id("stSidebar").get_by_role("button", name="Members").click()
    member_box = ada.get_by_label("E-mail of a new member")
    member_box.fill(BOB)
    member_box.press("Enter")
    ada.get_by_role("button", name="Add member").click()
    expect(ada.get_by_text(f"{BOB} can now open “judged”.")).to_be_visible()
    upload_notes(ada, server, "judged")
    save_set(ada, server, "judged")
    grade_everything(ada, server, "judged", ADA_KEYS)

    bob = sign_in(browser, server, "bob")
    grade_everything(bob, server, "judged", BOB_KEYS)
    bob.get_by_role("button", name="Refresh agreement and exports").click()
    expect(bob.get_by_text(re.compile(r"Cohen's kappa -?\d\.\d{3} over \d+ pairs"))).to_be_visible()
    expect(bob.get_by_text("ada@example.org, bob@example.org")).to_be_visible()
    expect(bob.get_by_text("lower median", exact=False)).to_be_visible()

    ada.goto(f"{server}/runs?ws=judged")
    expect(ada.get_by_role("heading", name="Runs", exact=True)).to_be_visible()
    settle(ada)
    first = evaluate(ada, RankerKind.WORKSPACE)
    assert "Judged@10" in first and "nDCG@10" in first
    ada.get_by_label("Save as").fill("workspace bm25")
    ada.get_by_role("button", name="Save this run").click()
    expect(ada.get_by_text("Saved “workspace bm25”.")).to_be_visible()
    evaluate(ada, RankerKind.CLASSIC)
    ada.get_by_label("Save as").fill("textbook bm25")
    ada.get_by_role("button", name="Save this run").click()
    expect(ada.get_by_text("Saved “textbook bm25”.")).to_be_visible()
    settle(ada)
    picker = ada.get_by_label("Runs (the first is the baseline; 2 to 5)")
    for name in ("workspace bm25", "textbook bm25"):
        picker.click()
        picker.press_sequentially(name)
        ada.keyboard.press("Enter")
        settle(ada)
    expect(ada.get_by_text("Over 3 queries every run measured.")).to_be_visible()
    expect(ada.get_by_text("Only 3 queries", exact=False)).to_be_visible()
    versus = ada.get_by_test_id("stDataFrame").last
    expect(versus).to_be_visible()
    ada.keyboard.press("Escape")
    ada.screenshot(path=str(ARTIFACTS / "runs-compared.png"), full_page=True)

    ada.goto(f"{server}/judge?ws=judged")
    settle(ada)
    with ada.expect_download() as download:
        ada.get_by_role("button", name="TREC qrels by passage").click()
    qrels = Path(download.value.path()).read_text(encoding="utf-8")
    assert qrels.count("\n") >= 3 and qrels.split()[0] == "1"
    exported = ARTIFACTS / "judging-loop" / "three.qrels"
    exported.write_text(qrels, encoding="utf-8")

    new_workspace(ada, "judged-again")
    upload_notes(ada, server, "judged-again")
    save_set(ada, server, "judged-again")
    ada.get_by_text("Import judgments (TREC qrels").click()
    expect(ada.get_by_label("Format").last).to_have_value("trec")  # the import's, its default
    ada.locator("input[type=file]").last.set_input_files(str(exported))
    settle(ada)
    ada.get_by_role("button", name="Import into this set").click()
    expect(ada.get_by_text(re.compile(r"Imported \d+ grades"))).to_be_visible()
    expect(ada.get_by_text("ids this workspace does not hold")).to_have_count(0)
    ada.goto(f"{server}/runs?ws=judged-again")
    settle(ada)
    assert evaluate(ada, RankerKind.WORKSPACE) == first
