"""The app in a real headless Chromium (Debian's, driven by Playwright) against `streamlit run`.

What AppTest cannot see: the HTML the browser builds from our markdown (marks,
escaped passages), the navigation menu, deep links and the file input. Expected
numbers come from the domain (reader, tokenizer, BM25), not from the app.
The browser (Chromium) is tests/e2e/conftest.py's, one for every module of this folder.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page, expect

from core.domain.bm25 import corpus_stats, explain_score
from core.domain.tokenize import tokenize
from core.ingest.readers import read_file
from tests.fixtures.files import docx_bytes, pdf_bytes

pytestmark = pytest.mark.e2e
# Ten plotly charts on a busy 2-core machine can take longer than Playwright's 5 s default.
expect.set_options(timeout=30_000)

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
QUERY = (
    "what similarity laws must be obeyed when constructing aeroelastic models of heated "
    "high speed aircraft ."
)
#: The sidebar's sections in order: each entry's visible name and its URL path (app.py).
NAVIGATION = {
    "Explore": [
        ("Search", ""),
        ("Truncation", "truncation"),
        ("Compare rankings", "compare"),
        ("Entities", "entities"),
    ],
    "Data": [("Upload", "upload"), ("Corpus", "corpus")],
    "Judge and measure": [("Judge", "judge"), ("Runs", "runs"), ("Evaluate", "evaluate")],
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def streamlit_app(
    *extra: str, log_name: str = "streamlit.log", host: str = "127.0.0.1", port: int | None = None
) -> Iterator[str]:
    """``streamlit run app.py`` on the in-memory store and a free loopback port; yields its URL.

    ``extra`` are more ``streamlit run`` options; ``host`` is the name the URL uses (the
    sign-in test needs ``localhost`` for its redirect and cookies; the server listens on
    127.0.0.1 either way); ``port`` when the caller needs it before the start.
    """
    port = port or free_port()
    env = {k: v for k, v in os.environ.items() if k != "LEXPLAIN_DATABASE_URL"}
    env["LEXPLAIN_STORE"] = "memory"  # explicit: the default is the embedded server
    ARTIFACTS.mkdir(exist_ok=True)
    log = (ARTIFACTS / log_name).open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
            *extra,
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://{host}:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.read() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not start; see {ARTIFACTS / log_name}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with streamlit_app() as url:
        yield url


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    page = browser.new_page(viewport={"width": 1280, "height": 1600})
    page.set_default_timeout(30_000)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    yield page
    page.close()
    assert dialogs == [], f"a script in user data ran: {dialogs}"


def settle(page: Page) -> None:
    """Wait until Streamlit finished the current run (stale elements linger during one)."""
    page.wait_for_timeout(300)
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=60_000)


def open_workspace(page: Page, url: str, name: str) -> None:
    """Go to ``url`` (a link naming workspace ``name``), creating it if the app offers to."""
    page.goto(url)
    create = page.get_by_role("button", name=f"Create the workspace “{name}”")
    chosen = page.get_by_test_id("stSidebar").locator(f'input[role="combobox"][value="{name}"]')
    expect(create.or_(chosen).first).to_be_visible()
    settle(page)
    if create.count():
        create.click()
        settle(page)
    expect(page.get_by_test_id("stSidebar").get_by_role("combobox")).to_have_value(name)


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.wait_for_timeout(700)  # canvas tables and plotly draw after the run ends
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


@pytest.fixture(scope="module")
def cranfield_184() -> tuple[dict[str, int], float]:
    """tf per query term in doc 184, and its score, from the domain alone."""
    corpus = ROOT / "data" / "cranfield" / "corpus.jsonl"
    documents = read_file(corpus.name, corpus.read_bytes()).documents
    tokens = {d.source_id: tokenize(d.text) for d in documents}
    terms = tokenize(QUERY)
    stats = corpus_stats(tokens.values(), terms)
    doc = tokens["184"]
    explanation = explain_score(terms, Counter(doc), len(doc), stats)
    return {p.term: p.tf for p in explanation.terms if p.tf}, explanation.score


def test_a_deep_link_as_the_servers_first_request_has_the_sidebar(server: str, page: Page) -> None:
    """First in this module: Streamlit runs a ``pages/`` file bare until navigation ran once."""
    page.goto(f"{server}/corpus?ws=e2e-first")
    expect(page.get_by_role("heading", name="Corpus")).to_be_visible()
    settle(page)
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_text("Store: in-memory (lost on restart)")).to_be_visible()
    # A link never creates a workspace: the page says so and offers it.
    expect(page.get_by_text("does not exist here: “e2e-first”")).to_be_visible()
    page.get_by_role("button", name="Create the workspace “e2e-first”").click()
    settle(page)
    # Streamlit may show the old run's heading beside the new one for a moment after the click.
    expect(page.get_by_role("heading", name="Corpus")).to_have_count(1)
    expect(page.get_by_role("heading", name="Corpus")).to_be_visible()
    expect(sidebar.get_by_role("combobox")).to_have_value("e2e-first")
    expect(page.get_by_text("Page not found")).to_have_count(0)
    expect(sidebar.get_by_role("link", name="Truncation")).to_be_visible()
    expect(sidebar.get_by_role("link", name="common")).to_have_count(0)


def test_a_newcomer_loads_the_sample_searches_and_reads_an_explanation(
    server: str, page: Page, cranfield_184: tuple[dict[str, int], float]
) -> None:
    tf, score = cranfield_184
    sent: list[object] = []  # what the page sends the server over its websocket
    page.on("websocket", lambda socket: socket.on("framesent", lambda m: sent.append(m)))
    open_workspace(page, f"{server}/?ws=e2e", "e2e")
    # One heading, waited for: the first request's run and the rerun that frames it each drew
    # one, and under load the stale copy lingered (strict mode saw two; fresh-clone CI, load 4).
    expect(page.get_by_role("heading", name="Search")).to_have_count(1)
    expect(page.get_by_role("heading", name="Search")).to_be_visible()
    expect(page.get_by_text("Store: in-memory (lost on restart)")).to_be_visible()
    page.get_by_role("button", name="Load the sample collection").click()
    expect(page.get_by_text("Loaded 1,398 passages")).to_be_visible(timeout=60_000)
    settle(page)

    box = page.get_by_role("textbox", name="Query")
    box.fill(QUERY)
    box.press("Enter")
    settle(page)
    expect(page.get_by_text("dropped as stopwords: be, of")).to_be_visible()
    expect(page.locator(".lx-bar")).to_have_count(10)
    first = page.locator(".lx-passage").first
    for term, count in tf.items():
        expect(first.locator(f'mark[data-term="{term}"]')).to_have_count(count)
    # The stylesheet reached the page (core's PASSAGE_STYLE): a mark's background is its
    # term's colour at 0x33 alpha, as its inline style said before (issue 50).
    mark = first.locator("mark").first
    found = re.search(r"--c:\s*#([0-9A-Fa-f]{6})", str(mark.get_attribute("style")))
    assert found, mark.get_attribute("style")
    colour = found.group(1)
    rgb = ", ".join(str(int(colour[i : i + 2], 16)) for i in (0, 2, 4))
    expect(mark).to_have_css("background-color", f"rgba({rgb}, 0.2)")
    expect(mark).to_have_css("border-bottom", f"2px solid rgb({rgb})")
    expect(page.locator(".lx-bar > span").first).to_have_css("color", "rgb(255, 255, 255)")
    assert page.get_by_text(f"{score:.2f}").count() >= 1
    assert "q=what+similarity" in page.url and "ws=e2e" in page.url

    # "why this score" is a <details> in the card: the browser opens it, the server hears
    # nothing (as a tracked expander, each opening was a rerun).
    why = page.locator("details.lx-why").first
    expect(why.locator("table")).not_to_be_visible()
    before = len(sent)
    assert before, "the websocket was not heard: the query typed above was a message"
    why.locator("summary").click()
    expect(why).to_have_attribute("open", "")
    expect(why.get_by_text("aeroelastic: 4.44", exact=False)).to_be_visible()
    expect(why.get_by_text("divided by 2.2", exact=False)).to_be_visible()
    expect(why.locator("tbody tr")).to_have_count(len(set(tokenize(QUERY))))
    expect(why.locator("tbody tr").first.locator("td").first).to_have_text("aeroelastic")
    page.wait_for_timeout(500)
    assert len(sent) == before, "opening an explanation sent the server a message"
    shot(page, "search")  # the README's picture is scripts/screenshot.py's, on the embedded store


def test_a_shared_link_reproduces_the_view(server: str, page: Page) -> None:
    params = urlencode({"ws": "e2e", "q": "aeroelastic flutter", "k": "3", "limit": "50"})
    page.goto(f"{server}/?{params}")
    settle(page)
    expect(page.get_by_role("textbox", name="Query")).to_have_value("aeroelastic flutter")
    expect(page.locator(".lx-bar")).to_have_count(3)
    expect(page.get_by_text("3 shown", exact=False).first).to_be_visible()


def test_a_truncation_link_shows_the_cut_and_both_charts(server: str, page: Page) -> None:
    params = urlencode({"ws": "e2e", "q": QUERY, "k": "10", "limit": "20"})
    page.goto(f"{server}/truncation?{params}")
    expect(page.get_by_role("heading", name="Truncation")).to_be_visible()
    settle(page)
    expect(page.locator(".lx-cut").first).to_contain_text("missing: candidate #")
    expect(page.locator(".js-plotly-plot")).to_have_count(2)
    assert "limit=20" in page.url
    shot(page, "truncation")


def test_a_compare_link_ranks_one_read_under_two_rankers_and_writes_changes_back(
    server: str, page: Page
) -> None:
    params = {"ws": "e2e", "q": QUERY, "k": "5", "limit": "100", "ra": "workspace"}
    params |= {"rb": "custom", "kb": "0.5", "bb": "0.3"}
    page.goto(f"{server}/compare?{urlencode(params)}")
    expect(page.get_by_role("heading", name="Compare rankings")).to_be_visible()
    settle(page)
    expect(page.get_by_text("Overlap at 5:", exact=False)).to_be_visible()
    expect(page.get_by_text("B: BM25 k1 0.5, b 0.3", exact=False).first).to_be_visible()
    expect(page.get_by_text("Rank movement")).to_be_visible()
    expect(page.get_by_text("Per-term contributions under both rankers")).to_be_visible()
    expect(page.get_by_text("aeroelastic: ", exact=False).first).to_be_visible()
    assert "p=" in page.url  # the explained passage is part of the link
    k1 = page.get_by_label("k1 (B)")
    k1.fill("0.9")
    k1.press("Enter")
    settle(page)
    expect(page.get_by_text("B: BM25 k1 0.9, b 0.3", exact=False).first).to_be_visible()
    assert "kb=0.9" in page.url and "rb=custom" in page.url
    shot(page, "compare")


def test_uploaded_script_and_img_payloads_render_as_text(server: str, page: Page) -> None:
    hostile = (
        "Engine notes by Dr Ada Lovelace.\n\n"
        "<script>alert('xss')</script> <img src=x onerror=alert('img')> engine"
    )
    payload = ARTIFACTS / "hostile.txt"
    ARTIFACTS.mkdir(exist_ok=True)
    payload.write_text(hostile, encoding="utf-8")
    open_workspace(page, f"{server}/upload?ws=e2e-xss", "e2e-xss")
    expect(page.get_by_role("heading", name="Upload")).to_be_visible()
    page.locator("input[type=file]").set_input_files(str(payload))
    page.get_by_role("button", name="Index the files").click()
    settle(page)
    expect(page.get_by_text("Stored 1 of 1 file: 1 passage,")).to_be_visible()
    shot(page, "upload")

    page.goto(f"{server}/?{urlencode({'ws': 'e2e-xss', 'q': 'engine'})}")
    settle(page)
    passage = page.locator(".lx-passage").first
    expect(passage).to_contain_text("<script>alert('xss')</script>")
    expect(passage).to_contain_text("<img src=x onerror=alert('img')>")
    assert passage.locator("script").count() == 0
    assert passage.locator("img").count() == 0
    tf = tokenize(hostile).count("engine")
    expect(passage.locator('mark[data-term="engine"]')).to_have_count(tf)


def test_screens_with_tables_are_saved_at_1280_px_for_a_look(server: str, page: Page) -> None:
    """Search results, why-this-score, compare, Upload results and Evaluate as artifacts.

    Runs after the first test loaded the sample into workspace e2e. Tables must not be cut
    off at 1280 px; the screenshots are what a reviewer looks at.
    """
    page.goto(f"{server}/?{urlencode({'ws': 'e2e', 'q': QUERY, 'k': '5'})}")
    settle(page)
    expect(page.locator(".lx-bar")).to_have_count(5)
    expect(page.get_by_role("textbox", name="Query")).to_have_value(QUERY)
    shot(page, "search-results")
    summary = page.locator("details.lx-why > summary").first
    summary.click()
    expect(page.get_by_text("= the score above").first).to_be_visible()
    summary.evaluate("e => e.scrollIntoView({block: 'start'})")
    shot(page, "why-this-score")
    summary.click()
    page.get_by_text("Compare two results").click()
    expect(page.get_by_text("#1 outscores #2").first).to_be_visible()
    page.get_by_text("Compare two results").evaluate("e => e.scrollIntoView({block: 'start'})")
    shot(page, "compare")

    files = []
    for i in range(3):
        f = ARTIFACTS / f"wing-notes-{i}.md"
        f.write_text(f"# Wing notes {i}\n\n" + "Flutter of heated wings. " * 200, encoding="utf-8")
        files.append(str(f))
    # A PDF and a DOCX are parsed in the worker process, started under the real Streamlit server.
    (ARTIFACTS / "wing-notes.pdf").write_bytes(pdf_bytes(["Flutter of heated wings."]))
    (ARTIFACTS / "wing-notes.docx").write_bytes(docx_bytes(["Flutter of heated wings."]))
    files += [str(ARTIFACTS / "wing-notes.pdf"), str(ARTIFACTS / "wing-notes.docx")]
    open_workspace(page, f"{server}/upload?ws=e2e-shots", "e2e-shots")
    for _ in range(2):  # the second time every passage is unchanged
        page.locator("input[type=file]").set_input_files(files)
        page.get_by_role("button", name="Index the files").click()
        settle(page)
    expect(page.get_by_text("Stored 5 of 5 files")).to_be_visible()
    shot(page, "upload-results")

    page.goto(f"{server}/evaluate?ws=e2e")
    expect(page.get_by_role("heading", name="Evaluate")).to_be_visible()
    page.get_by_role("button", name="Use the sample's judgments").click()
    settle(page)
    page.get_by_role("button", name="Run the evaluation").click()
    expect(page.get_by_text("Means over 225 judged queries")).to_be_visible(timeout=120_000)
    settle(page)
    page.get_by_text("Means over 225 judged queries").scroll_into_view_if_needed()
    shot(page, "evaluate")


def test_every_page_renders_and_is_saved_as_an_artifact(server: str, page: Page) -> None:
    """Each sidebar section's entries, clicked by their visible names, open their own screen
    at its own URL path (the paths links and tests use)."""
    page.goto(f"{server}/?ws=e2e")
    settle(page)
    nav = page.get_by_test_id("stSidebarNav")
    headers = nav.get_by_test_id("stNavSectionHeader")
    # An entry's text is its icon's ligature, then its name: read the name alone.
    expect(headers.get_by_test_id("stMarkdownContainer")).to_have_text(list(NAVIGATION))
    for section, entries in NAVIGATION.items():
        box = headers.filter(has=page.get_by_text(section, exact=True)).locator("xpath=..")
        links = box.get_by_test_id("stSidebarNavLink").get_by_test_id("stMarkdownContainer")
        expect(links).to_have_text([name for name, _ in entries])
        for name, path in entries:
            box.get_by_role("link", name=name, exact=True).click()
            settle(page)
            expect(page.get_by_role("heading", name=name, exact=True)).to_have_count(1)
            assert page.url.split("?")[0] == f"{server}/{path}", (name, page.url)
            assert "ws=e2e" in page.url
            if name == "Corpus":  # the length histogram
                expect(page.locator(".js-plotly-plot")).to_have_count(1)
            shot(page, path or "search-page")
    page.goto(f"{server}/entities?ws=e2e-xss")
    settle(page)
    expect(page.locator(".lx-passage mark")).to_have_text(["Ada Lovelace"])
    expect(page.locator(".lx-passage")).to_contain_text("<script>alert('xss')</script>")
    shot(page, "entities-marks")
