"""Debian's Chromium and the arguments every browser run of the project launches it with.

One definition for the browser tests (tests/e2e), the README's picture (scripts/screenshot.py)
and the fresh-clone bench (bench_first_result): three copies of the list had begun to drift
apart in their comments. Playwright's own browser download is never used (``playwright install``
needs a host this machine cannot reach).
"""

from __future__ import annotations

from typing import Final

#: Debian's Chromium (apt-get install chromium).
CHROMIUM: Final = "/usr/bin/chromium"
#: Headless, no sandbox (root in CI), nothing that reaches the network on its own.
CHROMIUM_ARGS: Final = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
