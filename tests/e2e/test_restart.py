"""What a user uploads is still there after `streamlit run` restarts: the embedded PostgreSQL.

A real browser uploads a file into the app running on the default store (the embedded
server, here in a temporary data folder), the app process is stopped, which stops the server
with it, a new `streamlit run` starts the server again on the same folder, and a search finds
the passage.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page, expect

from core.stores.postgres import embedded

# Helpers of the main browser test (the Chromium is tests/e2e/conftest.py's).
from tests.e2e.test_browser import free_port, open_workspace, settle

pytestmark = pytest.mark.e2e
expect.set_options(timeout=30_000)

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
#: A passage no sample collection holds, with a word to search for.
TEXT = "Quasiperiodic flutter of the Zanzibar wing panel was measured twice.\n"


@contextlib.contextmanager
def streamlit(data_dir: Path, log_name: str) -> Iterator[str]:
    """`streamlit run app.py` on the default store with ``data_dir``; stopped on exit."""
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LEXPLAIN_DATABASE_URL", "LEXPLAIN_STORE", "LEXPLAIN_DATA_DIR")
    }
    env["LEXPLAIN_DATA_DIR"] = str(data_dir)
    ARTIFACTS.mkdir(exist_ok=True)
    with (ARTIFACTS / log_name).open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                health = f"{url}/_stcore/health"
                with contextlib.suppress(OSError), urllib.request.urlopen(health, timeout=2) as r:
                    if r.read() == b"ok":
                        break
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"streamlit did not start; see {ARTIFACTS / log_name}")
                time.sleep(0.2)
            yield url
        finally:
            proc.terminate()  # what Ctrl-C in scripts/run amounts to
            proc.wait(30)


def new_page(browser: Browser) -> Page:
    page = browser.new_page(viewport={"width": 1280, "height": 1400})
    page.set_default_timeout(60_000)
    return page


def test_an_uploaded_file_is_found_by_search_after_the_app_restarts(
    browser: Browser, tmp_path: Path, embedded_data_dir: Path
) -> None:
    data_dir = embedded_data_dir
    document = tmp_path / "restart-notes.txt"
    document.write_text(TEXT, encoding="utf-8")
    label = f"Store: PostgreSQL (embedded, {data_dir / 'pgdata'})"
    try:
        with streamlit(data_dir, "streamlit-restart-1.log") as url:
            page = new_page(browser)
            open_workspace(page, f"{url}/upload?ws=kept", "kept")
            # One heading, waited for: a rerun's stale copy of the page lingered beside the new
            # one under load (strict mode saw two "Upload" headings, CI at load ~10).
            expect(page.get_by_role("heading", name="Upload")).to_have_count(1)
            expect(page.get_by_role("heading", name="Upload")).to_be_visible()
            expect(page.get_by_text(label)).to_be_visible()
            page.locator("input[type=file]").set_input_files(str(document))
            page.get_by_role("button", name="Index the files").click()
            settle(page)
            expect(page.get_by_text("Stored 1 of 1 file: 1 passage,")).to_be_visible()
            page.close()
        assert embedded.running(data_dir) is None, "the server outlived the app that used it"
        shutdown = (ARTIFACTS / "streamlit-restart-1.log").read_text()
        assert "Traceback" not in shutdown, "the app's exit was not clean (store vs server)"

        with streamlit(data_dir, "streamlit-restart-2.log") as url:
            page = new_page(browser)
            page.goto(f"{url}/?{urlencode({'ws': 'kept', 'q': 'zanzibar'})}")
            expect(page.get_by_text(label)).to_be_visible()
            settle(page)
            passage = page.locator(".lx-passage").first
            expect(passage).to_contain_text("Zanzibar wing panel")
            expect(passage.locator('mark[data-term="zanzibar"]')).to_have_count(1)
            # The sample's write tokenises in the store's worker process: a multiprocessing
            # spawn child imported the page script as its main and ran it outside Streamlit
            # (77 warning lines in the terminal on a fresh scripts/run; core.processes).
            open_workspace(page, f"{url}/?ws=sampled", "sampled")
            page.get_by_role("button", name="Load the sample collection").click()
            expect(page.get_by_text("Loaded 1,398 passages")).to_be_visible(timeout=120_000)
            page.close()
        terminal = (ARTIFACTS / "streamlit-restart-2.log").read_text()
        for said in ("ScriptRunContext", "streamlit run", "Traceback"):
            assert said not in terminal, f"{said!r} in the app's terminal:\n{terminal[-2000:]}"
    finally:
        embedded.stop(data_dir)
