"""lexplain: the Streamlit entry point. Navigation, sidebar, nothing else.

``st.navigation`` over one file per screen in ``pages/`` (the modern API: explicit
page list, titles and default page; the legacy auto-discovery of ``pages/`` cannot
hide helper modules or choose a default, and ``pages.common.screen`` turns it off
when Streamlit still runs a screen without this file). The sidebar holds what every page shares:
the workspace (also in the URL, so a link reproduces it) and the active store.

With sign-in configured (``[auth]`` in ``.streamlit/secrets.toml``, OpenID Connect through
``st.login``) nothing runs until the person signs in, and from then on the sidebar, the
link and every screen use the service as they may (``current_service``): their workspaces
only, members managed by owners. The decisions are core's (``core.service.access``); this
file only shows them. Without sign-in it is the single-user local tool and says so.
"""

from __future__ import annotations

import warnings

# pandas is imported whole before any screen runs: plotly and st.dataframe import it on first
# use, and two script threads of one server (a rerun starting while the run it replaces still
# draws) importing it at once got the half-initialised module ("partially initialized module
# 'pandas' has no attribute 'Series'", seen drawing the diagnosis chart in Chromium).
import pandas  # type: ignore[import-untyped]  # noqa: F401
import streamlit as st
from authlib.deprecate import AuthlibDeprecationWarning  # type: ignore[import-untyped]

from core.analysis.presentation import PROFILE_DESCRIPTIONS
from core.analysis.sentences import count, escape_text
from core.service import (
    DEFAULT_PROFILE,
    DEFAULT_WORKSPACE,
    NOT_FOUND_OR_NO_ACCESS,
    NoAccess,
    NotOwner,
    Profile,
    StoreUnreachable,
    local_mode,
)
from pages.common import (
    WORKSPACE_KEY,
    WORKSPACE_PARAM,
    current_service,
    framed,
    screen_page,
    sign_in_configured,
    signed_in_email,
    workspace,
)

#: Non-widget copy of the workspace: survives page switches that drop widget state.
SHADOW_KEY = "_workspace"
#: A workspace a link named that does not exist (offered for creation, never made silently).
UNKNOWN_KEY = "_unknown_workspace"
#: A one-time message about the workspace (created, deleted, refused), shown once.
NOTICE_KEY = "_workspace_notice"
#: Session keys of the sidebar's "New workspace" and "Delete workspace" popovers: tracked, so
#: a closed one builds nothing inside (their five controls, two of them value widgets that each
#: copy the whole session state, were ~2 ms of every rerun of every screen; bench_rerun).
NEW_OPEN, DELETE_OPEN = "new_workspace_open", "delete_workspace_open"

# Authlib (behind st.login) warns on the console about its own modules that Streamlit uses
# (authlib.jose, its httpx client): nothing whoever runs lexplain can act on. Importing
# authlib.deprecate installs its "always" filter; this one, added after, goes before it.
warnings.filterwarnings("ignore", category=AuthlibDeprecationWarning)

st.set_page_config(page_title="lexplain", page_icon="🔎", layout="wide")

# Grouped by task, in Streamlit's own sidebar sections: nine flat entries gave a newcomer no
# order to read them in, and two that both evaluate. Each page keeps its URL path (its file's
# stem), which tests and shared links use. Made once per process, copied per run (screen_page).
pages = {
    "Explore": [
        screen_page("pages/search.py", "Search", ":material/search:", default=True),
        screen_page("pages/truncation.py", "Truncation", ":material/content_cut:"),
        screen_page("pages/compare.py", "Compare rankings", ":material/compare_arrows:"),
        screen_page("pages/entities.py", "Entities", ":material/sell:"),
    ],
    "Data": [
        screen_page("pages/upload.py", "Upload", ":material/upload:"),
        screen_page("pages/corpus.py", "Corpus", ":material/bar_chart:"),
    ],
    "Judge and measure": [
        screen_page("pages/judge.py", "Judge", ":material/grading:"),
        screen_page("pages/runs.py", "Runs", ":material/leaderboard:"),
        screen_page("pages/evaluate.py", "Evaluate", ":material/fact_check:"),
    ],
}

SIGN_IN = sign_in_configured()
SIGNING_IN = SIGN_IN and not st.user.is_logged_in
# Navigation before anything slow (opening the store may start the embedded server, seconds):
# until st.navigation runs, Streamlit draws its legacy menu of every file in pages/. Hidden
# while signing in, not absent, for the same reason.
page = st.navigation(pages, position="hidden" if SIGNING_IN else "sidebar")
if SIGNING_IN:  # every page: nothing is read before sign-in
    st.title("lexplain")
    st.markdown("Explainable BM25 passage search. Sign in to see your workspaces.")
    st.button("Sign in", key="sign_in", type="primary", on_click=st.login)
    st.stop()
if SIGN_IN and signed_in_email() is None:
    st.error(
        "Your sign-in worked, but the identity provider sent no verified e-mail address, and "
        "workspaces are shared by e-mail. Ask for the `email` scope and a verified address."
    )
    st.button("Sign out", key="sign_out", on_click=st.logout)
    st.stop()

try:
    service = current_service(SIGN_IN)
except StoreUnreachable as exc:  # plain words, and nothing else can work without a store
    st.error(f"lexplain cannot open its store. {exc}", icon=":material/database:")
    st.stop()


def create_workspace() -> None:
    """Button callback: runs before the script, so it may still select the new workspace."""
    name = str(st.session_state.get("new_workspace_name", ""))
    try:
        profile = str(st.session_state.get("new_workspace_profile", DEFAULT_PROFILE))
        existed = service.workspace_name(name) in service.list_workspaces()
        st.session_state[WORKSPACE_KEY] = chosen = service.create_workspace(name, profile)
    except ValueError as exc:
        st.session_state[NOTICE_KEY] = f"No workspace created: {exc}."
    else:
        st.session_state["new_workspace_name"] = ""
        if existed:  # switching silently let the analyst believe a new, empty one was made
            st.session_state[NOTICE_KEY] = (
                f"The workspace “{chosen}” already exists: nothing was created, it is now "
                "selected (with its own passages and tokenizer profile)."
            )


def create_linked_workspace(name: str) -> None:
    """Button callback: the user chose to create the workspace a link named."""
    try:
        st.session_state[WORKSPACE_KEY] = service.create_workspace(name)
    except ValueError as exc:  # taken meanwhile, or by a look-alike the person cannot see
        st.session_state[NOTICE_KEY] = f"No workspace created: {exc}."
    st.session_state.pop(UNKNOWN_KEY, None)


def delete_workspace(name: str) -> None:
    """Button callback: delete the workspace and its passages, then show the default one."""
    try:
        deleted = service.delete_workspace(name)
    except (NoAccess, NotOwner) as exc:
        st.session_state[NOTICE_KEY] = f"Nothing deleted: {exc}."
        return
    st.session_state.pop(WORKSPACE_KEY, None)
    st.session_state[NOTICE_KEY] = (
        f"Deleted the workspace “{name}” and its {count(deleted, 'passage')}."
    )


def add_member(name: str) -> None:
    """Button callback: the owner lets someone open the workspace."""
    try:
        added = service.add_member(name, str(st.session_state.get("new_member_email", "")))
    except (ValueError, NoAccess, NotOwner) as exc:
        st.session_state[NOTICE_KEY] = f"No member added: {exc}."
    else:
        st.session_state["new_member_email"] = ""
        st.session_state[NOTICE_KEY] = f"{added} can now open “{name}”."


def remove_member(name: str, email: str) -> None:
    """Button callback: the owner takes someone off the workspace."""
    try:
        service.remove_member(name, email)
    except (ValueError, NoAccess, NotOwner) as exc:
        st.session_state[NOTICE_KEY] = f"No member removed: {exc}."
    else:
        st.session_state[NOTICE_KEY] = f"{email} can no longer open “{name}”."


# The workspace: a link's ``ws`` wins when it names a known workspace that differs from the
# current one. An unknown name is never created silently (any link could add workspaces):
# the page says so and offers to create it. Otherwise the selector's value, restored from a
# shadow key when a page switch dropped the widget's state.
current = st.session_state.get(SHADOW_KEY)
# One call for what the frame reads of the store (the workspaces, and who may open and
# whether anything is in the one this session last showed): three calls were three hops to
# the store's loop on every rerun of every screen (bench/bench_rerun.py). The answers about
# that workspace are used only if it is still the one shown below.
selected = st.session_state.get(WORKSPACE_KEY, current)
frame = service.frame(selected if isinstance(selected, str) and selected else DEFAULT_WORKSPACE)
names = frame.names
linked = st.query_params.get(WORKSPACE_PARAM)
if linked is not None and linked != current:
    try:
        target = service.linked_workspace(linked)
    except ValueError as exc:
        st.session_state[NOTICE_KEY] = f"The link's workspace cannot be opened: {exc}."
    else:
        if target.outcome == "open" and target.name in names:
            st.session_state[WORKSPACE_KEY] = target.name
            st.session_state.pop(UNKNOWN_KEY, None)
        elif target.outcome == "create":
            st.session_state[UNKNOWN_KEY] = target.name
        else:  # never says whether it exists
            st.session_state[NOTICE_KEY] = (
                f"The link's workspace “{target.name}”: {NOT_FOUND_OR_NO_ACCESS}."
            )
    if WORKSPACE_KEY not in st.session_state and current in names:
        st.session_state[WORKSPACE_KEY] = current
elif WORKSPACE_KEY not in st.session_state and current in names:
    st.session_state[WORKSPACE_KEY] = current
if not names and service.user is None:
    names = [service.create_workspace(DEFAULT_WORKSPACE)]
if names and st.session_state.get(WORKSPACE_KEY) not in names:
    st.session_state[WORKSPACE_KEY] = DEFAULT_WORKSPACE if DEFAULT_WORKSPACE in names else names[0]
# Written back explicitly: a run that ended before the selector rendered (a screen Streamlit
# ran without this file, see pages.common.screen) would otherwise reset it to its first option.
if names:
    st.session_state[WORKSPACE_KEY] = st.session_state[WORKSPACE_KEY]

with st.sidebar:
    st.markdown("### lexplain")
    if service.user is not None:
        st.caption(f"Signed in as **{escape_text(service.user)}**")
        st.button("Sign out", key="sign_out", icon=":material/logout:", on_click=st.logout)
    if names:
        st.selectbox(
            "Workspace",
            names,
            key=WORKSPACE_KEY,
            help="A separate set of passages.",
            on_change=lambda: st.session_state.pop(UNKNOWN_KEY, None),  # answers the offer
        )
    new = st.popover("New workspace", icon=":material/add:", key=NEW_OPEN, on_change="rerun")
    if new.open:
        with new:
            st.text_input("Name", key="new_workspace_name")
            st.radio(
                "Tokenizer profile",
                [p.value for p in Profile],
                index=list(Profile).index(DEFAULT_PROFILE),
                key="new_workspace_profile",
                horizontal=True,
                help="  \n".join(f"{p.value}: {PROFILE_DESCRIPTIONS[p]}." for p in Profile)
                + "  \nEvery write and query of the workspace uses it.",
            )
            st.button("Create", key="create_workspace", on_click=create_workspace)
    chosen = workspace()
    if not names:
        access = None
    elif frame.asked == chosen and frame.access is not None:
        access = frame.access
    else:
        access = service.workspace_access(chosen)
    if access is not None and service.user is not None:
        with st.popover("Members", icon=":material/group:"):
            st.markdown(f"**Owner:** {escape_text(access.owner or 'nobody')}")
            if not access.members:
                st.caption("No members yet: only the owner can open this workspace.")
            for member in access.members:
                left, right = st.columns([3, 1], vertical_alignment="center")
                left.markdown(escape_text(member))
                if access.you_own:
                    right.button(
                        "Remove",
                        key=f"remove_member_{member}",
                        on_click=remove_member,
                        args=(chosen, member),
                    )
            if access.you_own:
                st.text_input("E-mail of a new member", key="new_member_email")
                st.button("Add member", key="add_member", on_click=add_member, args=(chosen,))
            else:
                st.caption("Only the owner adds and removes members.")
    if access is not None and (service.user is None or access.you_own):
        doomed = st.popover(
            "Delete workspace", icon=":material/delete:", key=DELETE_OPEN, on_change="rerun"
        )
        if doomed.open:
            with doomed:
                st.markdown(
                    f"Deletes the workspace **{escape_text(chosen)}** with all its passages and "
                    "entities. This cannot be undone."
                    + (
                        " The default workspace is emptied and kept."
                        if chosen == DEFAULT_WORKSPACE and service.user is None
                        else ""
                    )
                )
                sure = st.checkbox(f"Yes, delete “{chosen}”", key="confirm_delete_workspace")
                st.button(
                    "Delete",
                    key="delete_workspace",
                    type="primary",
                    disabled=not sure,
                    on_click=delete_workspace,
                    args=(chosen,),
                )
    st.caption(f"Store: {service.store_label}")
    if not SIGN_IN:
        mode = local_mode(st.get_option("server.address"))
        st.caption(
            mode.message if mode.loopback_only else f":red[:material/warning: {mode.message}]"
        )

notice = st.session_state.pop(NOTICE_KEY, None)
if notice:
    st.info(escape_text(notice))
unknown = st.session_state.get(UNKNOWN_KEY)
if unknown:
    st.warning(
        f"The link names a workspace that does not exist here: “{escape_text(unknown)}”. "
        f"Showing “{escape_text(workspace())}” instead."
    )
    st.button(
        f"Create the workspace “{unknown}”",
        key="create_linked_workspace",
        on_click=create_linked_workspace,
        args=(unknown,),
    )

if not names:  # signed in, and no workspace of theirs yet: nothing to show a screen on
    st.title("lexplain")
    st.info(
        "You have no workspace yet. Create one in the sidebar (New workspace), or ask a "
        "workspace's owner to add you as a member; they add you by your address, "
        f"{escape_text(service.user or '')}."
    )
    if unowned := service.unowned_workspaces():
        st.warning(
            f"This server has {count(unowned, 'workspace')} with passages and no owner (made "
            "before sign-in was configured, or by `load`): nobody can open such a workspace "
            "until whoever runs the server gives it an owner with "
            "`python -m core owner NAME EMAIL`."
        )
    st.stop()

st.session_state[SHADOW_KEY] = workspace()
# Written only when it differs: each write sends the browser the whole query string, a message
# on every rerun of every screen that changed nothing (bench/bench_rerun.py).
if st.query_params.get(WORKSPACE_PARAM) != workspace():
    st.query_params[WORKSPACE_PARAM] = workspace()

# The screen checks this (pages.common.screen): a screen Streamlit ran without app.py reruns;
# it also takes this run's service from here rather than asking again.
framed(
    service,
    (frame.asked, frame.empty) if frame.asked == workspace() and frame.empty is not None else None,
)
page.run()
