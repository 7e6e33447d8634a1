"""One headless Chromium for every browser module, closed when the last of them ends.

Each module launched its own (six launches, ~1.5 s of CPU each on the 2-core CI machine:
Chromium's processes start, and Playwright's driver with them). A session-scoped fixture
alone cannot hold it: a sync Playwright keeps an asyncio loop running in the main thread until
it stops, and a test after tests/e2e in the same pytest (tests/probes, in scripts/test's lane)
that calls ``asyncio.run`` fails ("cannot be called from a running event loop"). So the
Chromium is closed as soon as the next test is outside this folder (or none is left). Every
test still opens pages of its own (a context each: own cookies), as before. Rejected: an
``__init__.py`` for a package-scoped fixture: the modules import each other as ``tests.e2e.*``
and pytest would import them a second time under another name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from tools.chromium import CHROMIUM, CHROMIUM_ARGS

#: This folder: a test outside it may use asyncio, so Playwright stops before it.
HERE = Path(__file__).resolve().parent
#: The running Playwright and its Chromium, closed once (by the hook below or at the end).
_RUNNING = contextlib.ExitStack()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (never `playwright install`)")
    playwright = _RUNNING.enter_context(sync_playwright())
    chromium = playwright.chromium
    launched = chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    _RUNNING.callback(launched.close)
    yield launched
    _RUNNING.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    yield
    if nextitem is None or HERE not in Path(nextitem.path).resolve().parents:
        _RUNNING.close()  # idempotent: the fixture's own teardown then closes nothing
