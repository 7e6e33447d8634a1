"""Remake the README's picture, docs/screenshot.png, from the app as it is today.

The script starts ``streamlit run app.py`` headless on a free loopback port, using the default
store (the embedded PostgreSQL) in a temporary LEXPLAIN_DATA_DIR, so the picture's sidebar
shows the store a newcomer gets. Debian's Chromium, driven by Playwright, then does what
the README's tour does: load the sample, search Cranfield query 1, open the top result's
"why this score". It saves a 1280 px wide picture and deletes the data. The browser tests
used to write the picture on request (LEXPLAIN_UPDATE_SCREENSHOT). That was rejected: it
ran on the in-memory store, so the picture said "lost on restart", and a test run is no
place to rewrite a committed file.

    .venv/bin/python scripts/screenshot.py            # writes docs/screenshot.png
    .venv/bin/python scripts/screenshot.py --out x.png

It needs the dev set (Playwright, which `scripts/test` installs) and /usr/bin/chromium. It
never runs `playwright install`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from playwright.sync_api import Page, ViewportSize, expect, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a file: the repository's own modules importable
from tools.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402 (after the path it needs)

#: Cranfield query 1, as the README's tour searches it.
QUERY = (
    "what similarity laws must be obeyed when constructing aeroelastic models of heated "
    "high speed aircraft"
)
#: The picture's size: as wide as the README's readers' screens, tall enough for the
#: explanation's table (Streamlit scrolls inside its own container, so a full-page
#: capture would not show more).
VIEWPORT: ViewportSize = {"width": 1280, "height": 1600}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def app(data_dir: Path, log: Path) -> Iterator[str]:
    """``streamlit run app.py`` on the embedded store in ``data_dir``; yields its URL."""
    port = free_port()
    env = {
        k: v for k, v in os.environ.items() if k not in {"LEXPLAIN_DATABASE_URL", "LEXPLAIN_STORE"}
    }
    env["LEXPLAIN_DATA_DIR"] = str(data_dir)
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true"]
    command += ["--server.port", str(port), "--server.address", "127.0.0.1"]
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
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
                    raise SystemExit(f"streamlit did not start; see {log}")
                time.sleep(0.2)
            yield url
        finally:
            proc.terminate()
            proc.wait(30)
            # The app stops the server as it exits; this makes sure, before the data goes.
            subprocess.run(
                [sys.executable, "-m", "core", "db", "stop"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                check=False,
            )


def settle(page: Page) -> None:
    """Wait until Streamlit finished its runs (stale elements linger during one, and one run
    can follow another): no "Running..." in two looks a second apart."""
    for _ in range(2):
        page.wait_for_timeout(1000)
        expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)


def take(url: str, out: Path) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        page = browser.new_page(viewport=VIEWPORT)
        # Generous: the first request starts the embedded server, and the machine may be busy.
        page.set_default_timeout(120_000)
        expect.set_options(timeout=120_000)
        page.goto(url)
        page.get_by_role("button", name="Load the sample collection").click()
        expect(page.get_by_text("Loaded 1,398 passages")).to_be_visible()
        settle(page)
        box = page.get_by_role("textbox", name="Query")
        box.fill(QUERY)
        box.press("Enter")
        settle(page)
        expect(page.locator(".lx-bar")).to_have_count(10)
        why = page.locator("details.lx-why").first  # opened by the browser: no rerun
        why.locator("summary").click()
        expect(why.get_by_text("= the score above")).to_be_visible()
        expect(why.locator("table")).to_be_visible()  # the term table
        page.screenshot(path=str(out))
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshot.png")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")
    data_dir = Path(tempfile.mkdtemp(prefix="lexplain-screenshot-"))
    log = Path(tempfile.gettempdir()) / "lexplain-screenshot.log"  # kept: the data is not
    try:
        with app(data_dir, log) as url:
            take(url, args.out.resolve())
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
