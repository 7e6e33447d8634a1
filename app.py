"""lexplain: the Streamlit entry point. Navigation, sidebar, nothing else.

``st.navigation`` over one file per screen in ``pages/`` (the modern API: explicit
page list, titles and default page; the legacy auto-discovery of ``pages/`` cannot
hide helper modules or choose a default, and ``pages.common.screen`` turns it off
when Streamlit still runs a screen without this file). The sidebar holds what every page shares:
the workspace (also in the URL, so a link reproduces it) and the active store.
"""

from __future__ import annotations

import streamlit as st

from core.presentation import count, escape_text
from core.service import DEFAULT_WORKSPACE, StoreUnavailable
from pages.common import FRAMED_KEY, WORKSPACE_KEY, WORKSPACE_PARAM, get_service, workspace

#: Non-widget copy of the workspace: survives page switches that drop widget state.
SHADOW_KEY = "_workspace"
#: A workspace a link named that does not exist (offered for creation, never made silently).
UNKNOWN_KEY = "_unknown_workspace"
#: A one-time message about the workspace (created, deleted, refused), shown once.
NOTICE_KEY = "_workspace_notice"

st.set_page_config(page_title="lexplain", page_icon="🔎", layout="wide")

try:
    service = get_service()
except StoreUnavailable as exc:  # plain words, and nothing else can work without a store
    st.error(f"lexplain cannot open its store. {exc}", icon=":material/database:")
    st.stop()


def create_workspace() -> None:
    """Button callback: runs before the script, so it may still select the new workspace."""
    name = str(st.session_state.get("new_workspace_name", ""))
    try:
        profile = str(st.session_state.get("new_workspace_profile", "plain"))
        st.session_state[WORKSPACE_KEY] = service.create_workspace(name, profile)
    except ValueError as exc:
        st.session_state[NOTICE_KEY] = f"No workspace created: {exc}."
    else:
        st.session_state["new_workspace_name"] = ""


def create_linked_workspace(name: str) -> None:
    """Button callback: the user chose to create the workspace a link named."""
    st.session_state[WORKSPACE_KEY] = service.create_workspace(name)
    st.session_state.pop(UNKNOWN_KEY, None)


def delete_workspace(name: str) -> None:
    """Button callback: delete the workspace and its passages, then show the default one."""
    deleted = service.delete_workspace(name)
    st.session_state[WORKSPACE_KEY] = DEFAULT_WORKSPACE
    st.session_state[NOTICE_KEY] = (
        f"Deleted the workspace “{name}” and its {count(deleted, 'passage')}."
    )


# The workspace: a link's ``ws`` wins when it names a known workspace that differs from the
# current one. An unknown name is never created silently (any link could add workspaces):
# the page says so and offers to create it. Otherwise the selector's value, restored from a
# shadow key when a page switch dropped the widget's state.
names = service.list_workspaces()
current = st.session_state.get(SHADOW_KEY)
linked = st.query_params.get(WORKSPACE_PARAM)
if linked is not None and linked != current:
    try:
        wanted = service.workspace_name(linked)
    except ValueError as exc:
        st.session_state[NOTICE_KEY] = f"The link's workspace cannot be opened: {exc}."
    else:
        if wanted in names:
            st.session_state[WORKSPACE_KEY] = wanted
            st.session_state.pop(UNKNOWN_KEY, None)
        else:
            st.session_state[UNKNOWN_KEY] = wanted
    if WORKSPACE_KEY not in st.session_state and current in names:
        st.session_state[WORKSPACE_KEY] = current
elif WORKSPACE_KEY not in st.session_state and current in names:
    st.session_state[WORKSPACE_KEY] = current
if not names:
    names = [service.create_workspace(DEFAULT_WORKSPACE)]
if st.session_state.get(WORKSPACE_KEY) not in names:
    st.session_state[WORKSPACE_KEY] = DEFAULT_WORKSPACE if DEFAULT_WORKSPACE in names else names[0]
# Written back explicitly: a run that ended before the selector rendered (a screen Streamlit
# ran without this file, see pages.common.screen) would otherwise reset it to its first option.
st.session_state[WORKSPACE_KEY] = st.session_state[WORKSPACE_KEY]

with st.sidebar:
    st.markdown("### lexplain")
    st.selectbox(
        "Workspace",
        names,
        key=WORKSPACE_KEY,
        help="A separate set of passages.",
        on_change=lambda: st.session_state.pop(UNKNOWN_KEY, None),  # a choice answers the offer
    )
    with st.popover("New workspace", icon=":material/add:"):
        st.text_input("Name", key="new_workspace_name")
        st.radio(
            "Tokenizer profile",
            ["plain", "english"],
            key="new_workspace_profile",
            horizontal=True,
            help="plain: words as typed. english: the same, then Snowball English stemming "
            "(models → model). Every write and query of the workspace uses it.",
        )
        st.button("Create", key="create_workspace", on_click=create_workspace)
    chosen = workspace()
    with st.popover("Delete workspace", icon=":material/delete:"):
        st.markdown(
            f"Deletes the workspace **{escape_text(chosen)}** with all its passages and "
            "entities. This cannot be undone."
            + (" The default workspace is emptied and kept." if chosen == DEFAULT_WORKSPACE else "")
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

st.session_state[SHADOW_KEY] = workspace()
st.query_params[WORKSPACE_PARAM] = workspace()

pages = [
    st.Page("pages/search.py", title="Search", icon=":material/search:", default=True),
    st.Page("pages/truncation.py", title="Truncation", icon=":material/content_cut:"),
    st.Page("pages/compare.py", title="Compare rankings", icon=":material/compare_arrows:"),
    st.Page("pages/upload.py", title="Upload", icon=":material/upload:"),
    st.Page("pages/entities.py", title="Entities", icon=":material/sell:"),
    st.Page("pages/corpus.py", title="Corpus", icon=":material/bar_chart:"),
    st.Page("pages/evaluate.py", title="Evaluate", icon=":material/fact_check:"),
]
page = st.navigation(pages)
# The screen checks this (pages.common.screen): a screen Streamlit ran without app.py reruns.
st.session_state[FRAMED_KEY] = True
page.run()
