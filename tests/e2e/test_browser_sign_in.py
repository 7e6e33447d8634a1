"""Sign-in end to end: a real OpenID Connect provider, `streamlit run`, headless Chromium.

The provider is oidc-provider-mock (PyPI), started by the test on loopback in a thread of
this process, with two predefined people; the app reads its ``[auth]`` section from a
secrets file written for the test (``--secrets.files``), so the repository's own
``.streamlit`` holds none. Each person signs in in their own browser context (own cookies),
through the provider's real authorisation page and Streamlit's real ``/oauth2callback``.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from oidc_provider_mock import User, run_server_in_thread
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.e2e.test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, ROOT, free_port

pytestmark = pytest.mark.e2e
expect.set_options(timeout=30_000)

ADA, BOB = "ada@example.org", "bob@example.org"
WORKSPACE = "ada-private"


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    """The OpenID Connect provider's issuer URL (loopback, a free port)."""
    people = [User(sub="ada", claims={"email": ADA}), User(sub="bob", claims={"email": BOB})]
    with run_server_in_thread(port=0, user_claims=people) as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture(scope="module")
def server(provider: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    url = f"http://localhost:{port}"
    folder = tmp_path_factory.mktemp("auth")
    secrets_file = folder / "secrets.toml"
    secrets_file.write_text(
        "[auth]\n"
        f'redirect_uri = "{url}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_hex(32)}"\n'
        'client_id = "lexplain-e2e"\n'
        'client_secret = "lexplain-e2e-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n',
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != "LEXPLAIN_DATABASE_URL"}
    env["LEXPLAIN_STORE"] = "memory"
    ARTIFACTS.mkdir(exist_ok=True)
    log = (ARTIFACTS / "streamlit-sign-in.log").open("w")
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
            "--secrets.files",
            str(secrets_file),
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
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
                pytest.fail(f"streamlit did not start; see {ARTIFACTS / 'streamlit-sign-in.log'}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (never `playwright install`)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def settled(page: Page) -> None:
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0)


def sign_in(browser: Browser, url: str, who: str) -> Page:
    """A new browser (own cookies) signed in as ``who`` through the provider's page."""
    page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
    page.set_default_timeout(30_000)
    page.goto(url)
    expect(page.get_by_text("Sign in to see your workspaces.")).to_be_visible()
    expect(page.get_by_test_id("stSidebar")).to_have_count(0)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Authorize Client")).to_be_visible()
    page.get_by_role("button", name=who, exact=True).first.click()
    expect(page.get_by_test_id("stSidebar").get_by_text("Signed in as")).to_be_visible()
    settled(page)
    return page


def test_two_people_see_only_their_own_workspace_until_the_owner_adds_the_other(
    server: str, browser: Browser
) -> None:
    ada = sign_in(browser, server, "ada")
    expect(ada.get_by_text("You have no workspace yet")).to_be_visible()
    sidebar = ada.get_by_test_id("stSidebar")
    sidebar.get_by_role("button", name="New workspace").click()
    name_box = ada.get_by_label("Name")
    name_box.fill(WORKSPACE)
    name_box.press("Enter")
    ada.get_by_role("button", name="Create").click()
    expect(sidebar.get_by_role("combobox")).to_have_value(WORKSPACE)
    expect(ada.get_by_role("heading", name="Search")).to_be_visible()
    settled(ada)

    bob = sign_in(browser, server, "bob")
    expect(bob.get_by_text(BOB)).to_have_count(2)  # signed in as …, and the no-workspace note
    expect(bob.get_by_text("You have no workspace yet")).to_be_visible()
    bob.goto(f"{server}/?ws={WORKSPACE}")
    expect(
        bob.get_by_text(f"The link's workspace “{WORKSPACE}”: not found or no access.")
    ).to_be_visible()
    expect(bob.get_by_role("heading", name="Search")).to_have_count(0)
    bob.goto(f"{server}/?ws=never-made")
    expect(
        bob.get_by_text("The link's workspace “never-made”: not found or no access.")
    ).to_be_visible()
    settled(bob)

    ada.get_by_test_id("stSidebar").get_by_role("button", name="Members").click()
    member_box = ada.get_by_label("E-mail of a new member")
    member_box.fill(BOB)
    member_box.press("Enter")
    ada.get_by_role("button", name="Add member").click()
    expect(ada.get_by_text(f"{BOB} can now open “{WORKSPACE}”.")).to_be_visible()
    settled(ada)

    bob.goto(f"{server}/?ws={WORKSPACE}")
    expect(bob.get_by_test_id("stSidebar").get_by_role("combobox")).to_have_value(WORKSPACE)
    expect(bob.get_by_role("heading", name="Search")).to_be_visible()
    settled(bob)
    expect(bob.get_by_role("button", name="Delete workspace")).to_have_count(0)
    bob.screenshot(path=str(ARTIFACTS / "sign-in-member.png"))


def listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp* show them) of the sockets listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if fields[3] == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def test_scripts_run_without_sign_in_listens_on_loopback_only_and_says_so() -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "LEXPLAIN_DATABASE_URL"}
    env.update(LEXPLAIN_STORE="memory", HOME=str(ARTIFACTS))  # no ~/.streamlit/secrets.toml
    env.pop("STREAMLIT_SERVER_ADDRESS", None)
    proc = subprocess.Popen(
        ["bash", "scripts/run", "--server.port", str(port), "--server.headless", "true"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not listening_addresses(port):
            assert proc.poll() is None and time.monotonic() < deadline, "scripts/run did not start"
            time.sleep(0.2)
        assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1, nothing else
    finally:
        proc.terminate()
        output, _ = proc.communicate(timeout=10)
    assert "No sign-in configured: listening on 127.0.0.1 only" in output
