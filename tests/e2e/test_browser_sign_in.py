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
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from oidc_provider_mock import User, run_server_in_thread
from playwright.sync_api import Browser, Page, expect

# The app launcher of the main browser test (the Chromium is tests/e2e/conftest.py's).
from tests.e2e.test_browser import ARTIFACTS, ROOT, free_port, streamlit_app

pytestmark = pytest.mark.e2e
expect.set_options(timeout=30_000)

ADA, BOB = "ada@example.org", "bob@example.org"
WORKSPACE = "ada-private"


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    """The OpenID Connect provider's issuer URL (loopback, a free port)."""
    people = [
        User(sub=name, claims={"email": email, "email_verified": True})
        for name, email in (("ada", ADA), ("bob", BOB))
    ]
    with run_server_in_thread(port=0, user_claims=people) as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture(scope="module")
def server(provider: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app with an ``[auth]`` section naming the provider (a secrets file of the test's)."""
    port = free_port()
    secrets_file = tmp_path_factory.mktemp("auth") / "secrets.toml"
    secrets_file.write_text(
        "[auth]\n"
        f'redirect_uri = "http://localhost:{port}/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_hex(32)}"\n'
        'client_id = "lexplain-e2e"\n'
        'client_secret = "lexplain-e2e-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n',
        encoding="utf-8",
    )
    with streamlit_app(
        "--secrets.files",
        str(secrets_file),
        log_name="streamlit-sign-in.log",
        host="localhost",
        port=port,
    ) as url:
        yield url


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
    bob.get_by_test_id("stSidebar").get_by_role("button", name="Sign out").click()
    # Streamlit forgets the sign-in and sends the browser to the provider's end of session.
    expect(bob.get_by_role("heading", name="End Session")).to_be_visible()
    bob.goto(f"{server}/?ws={WORKSPACE}")
    expect(bob.get_by_role("button", name="Sign in")).to_be_visible()
    expect(bob.get_by_role("heading", name="Search")).to_have_count(0)


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


def test_the_console_shows_no_authlib_deprecation_warnings(server: str, browser: Browser) -> None:
    """Authlib (behind st.login) warned about its own modules on every start of a sign-in:
    nothing whoever runs lexplain can act on (app.py filters them)."""
    sign_in(browser, server, "ada").close()
    log = (ARTIFACTS / "streamlit-sign-in.log").read_text(encoding="utf-8")
    assert "AuthlibDeprecationWarning" not in log


def test_scripts_run_with_sign_in_says_it_listens_on_every_interface(tmp_path: Path) -> None:
    """With sign-in and no address Streamlit binds every interface: scripts/run says so."""
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text(
        '[auth]\nredirect_uri = "http://localhost:1/oauth2callback"\n'
        f'cookie_secret = "{secrets.token_hex(16)}"\nclient_id = "x"\nclient_secret = "y"\n'
        'server_metadata_url = "http://localhost:1/.well-known/openid-configuration"\n',
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != "LEXPLAIN_DATABASE_URL"}
    env.update(LEXPLAIN_STORE="memory", HOME=str(tmp_path))
    env.pop("STREAMLIT_SERVER_ADDRESS", None)
    port = free_port()
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
        assert listening_addresses(port) - {"0100007F", "00000000000000000000000001000000"}
    finally:
        proc.terminate()
        output, _ = proc.communicate(timeout=10)
    assert "Sign-in configured: listening on every interface" in output, output
    assert "No sign-in configured" not in output
