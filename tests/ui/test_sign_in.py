"""Sign-in through the app (AppTest): what each person sees, and what a link opens.

AppTest seeds ``st.user`` (``at.user``); a dict carrying ``is_logged_in`` is how Streamlit
reports a sign-in state, which the app takes as sign-in being on (``sign_in_configured``).
The real OpenID Connect round trip is in tests/e2e/test_browser_sign_in.py.
"""

from __future__ import annotations

import html
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit import config
from streamlit.testing.v1 import AppTest

from pages.common import get_service

pytestmark = pytest.mark.usefixtures("in_memory_store")

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def person() -> str:
    return f"p{uuid.uuid4().hex[:8]}@example.org"


def as_user(email: str | None, *, ws: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.user = (
        {"is_logged_in": False}
        if email is None
        else {"is_logged_in": True, "email": email, "email_verified": True}
    )
    if ws is not None:
        at.query_params["ws"] = ws
    return at.run()


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def texts(at: AppTest) -> list[str]:
    return [e.value for kind in ("info", "warning", "markdown", "caption") for e in at.get(kind)]


def create(at: AppTest, name: str) -> None:
    at.session_state["new_workspace_open"] = True  # the person opens "New workspace"
    at.run()
    at.text_input(key="new_workspace_name").input(name).run()
    at.button(key="create_workspace").click().run()
    no_exception(at)


def test_signed_out_every_page_shows_only_the_sign_in_button() -> None:
    for page in ("pages/search.py", "pages/upload.py", "pages/corpus.py"):
        at = as_user(None)
        at.switch_page(page).run()
        no_exception(at)
        assert [b.label for b in at.button] == ["Sign in"]
        assert len(at.selectbox) == 0 and len(at.dataframe) == 0
        assert not any("Store:" in t for t in texts(at))


def test_a_new_person_has_no_workspace_and_the_one_they_create_is_theirs() -> None:
    ada = person()
    at = as_user(ada)
    no_exception(at)
    assert any("You have no workspace yet" in t for t in texts(at))
    assert len(at.selectbox) == 0
    name = f"ada-{uuid.uuid4().hex[:6]}"
    create(at, name)
    assert at.session_state["workspace"] == name
    assert at.selectbox(key="workspace").options == [name]
    assert get_service().for_user(ada).workspace_access(name).you_own
    assert any(f"Signed in as **{ada}**" in t for t in texts(at))


def test_a_person_without_a_workspace_learns_whose_address_it_is_and_of_ownerless_ones() -> None:
    ada = person()
    orphan = f"made-before-sign-in-{uuid.uuid4().hex[:6]}"
    get_service().create_workspace(orphan)  # no sign-in: no owner
    get_service().upload_files([("o.txt", b"passages nobody can open")], workspace=orphan)
    at = as_user(ada)
    no_exception(at)
    (note,) = [i.value for i in at.info if "You have no workspace yet" in i.value]
    assert f"by your address, {ada}" in note  # the address is theirs, not an owner's
    (warning,) = [w.value for w in at.warning]
    assert "no owner" in warning and "`python -m core owner NAME EMAIL`" in warning
    assert orphan not in warning  # a count, never a name


def test_a_link_to_someone_elses_workspace_says_not_found_or_no_access_like_a_missing_one() -> None:
    ada, bob = person(), person()
    name = f"ada-{uuid.uuid4().hex[:6]}"
    get_service().for_user(ada).create_workspace(name)
    get_service().for_user(bob).create_workspace(f"bob-{uuid.uuid4().hex[:6]}")
    shown = []
    for target in (name, f"missing-{uuid.uuid4().hex[:6]}"):
        at = as_user(bob, ws=target)
        no_exception(at)
        assert name not in at.selectbox(key="workspace").options
        assert at.session_state["workspace"] != target
        (notice,) = [i.value for i in at.info if i.value.startswith("The link")]
        shown.append(html.unescape(notice).replace(target, "NAME"))
        assert not [b for b in at.button if b.key == "create_linked_workspace"]
    assert shown[0] == shown[1] == "The link's workspace “NAME”: not found or no access."


def test_an_owner_adds_a_member_in_the_sidebar_who_then_opens_it_by_link_but_cannot_delete() -> (
    None
):
    ada, bob = person(), person()
    name = f"shared-{uuid.uuid4().hex[:6]}"
    get_service().for_user(ada).create_workspace(name)
    get_service().for_user(bob).create_workspace(f"bob-{uuid.uuid4().hex[:6]}")
    owner = as_user(ada, ws=name)
    assert owner.session_state["workspace"] == name
    owner.text_input(key="new_member_email").input(bob.upper()).run()
    owner.button(key="add_member").click().run()
    no_exception(owner)
    assert any(f"{bob} can now open “{name}”." in i.value for i in owner.info)
    member = as_user(bob, ws=name)
    no_exception(member)
    assert member.session_state["workspace"] == name
    assert name in member.selectbox(key="workspace").options
    keys = {b.key for b in member.button}
    assert "delete_workspace" not in keys and "add_member" not in keys
    assert not [t for t in member.text_input if t.key == "new_member_email"]
    owner.button(key=f"remove_member_{bob}").click().run()
    no_exception(owner)
    again = as_user(bob, ws=name)
    assert name not in again.selectbox(key="workspace").options


@pytest.fixture
def address() -> Iterator[None]:
    before = config.get_option("server.address")
    yield
    config.set_option("server.address", before)


@pytest.mark.usefixtures("address")
def test_without_sign_in_the_sidebar_says_who_can_reach_the_app() -> None:
    config.set_option("server.address", "127.0.0.1")
    at = AppTest.from_file(APP, default_timeout=60).run()
    no_exception(at)
    assert any("Single-user local mode" in t and "127.0.0.1 only" in t for t in texts(at))
    config.set_option("server.address", "0.0.0.0")
    at.run()
    assert any("anyone who can reach it" in t and "0.0.0.0" in t for t in texts(at))


def test_an_address_the_provider_has_not_verified_opens_nothing() -> None:
    ada = person()
    get_service().for_user(ada).create_workspace(f"ada-{uuid.uuid4().hex[:6]}")
    at = AppTest.from_file(APP, default_timeout=60)
    at.user = {"is_logged_in": True, "email": ada, "email_verified": False}
    at.run()
    no_exception(at)
    assert any("no verified e-mail address" in e.value for e in at.error)
    assert len(at.selectbox) == 0 and [b.label for b in at.button] == ["Sign out"]


def test_no_screen_reaches_the_store_around_the_signed_in_view() -> None:
    """Screens get the service from ``screen()`` (the person's guarded view); the process-wide
    ``get_service()`` would see every workspace."""
    pages = Path(APP).parent / "pages"
    for path in sorted(pages.glob("*.py")):
        if path.name not in {"common.py", "__init__.py"}:
            assert "get_service" not in path.read_text(encoding="utf-8"), path.name
    assert "get_service" not in Path(APP).read_text(encoding="utf-8")
