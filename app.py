"""lexplain: the Streamlit entry point. Navigation, sidebar, nothing else.

``st.navigation`` over one file per screen in ``pages/`` (the modern API: explicit
page list, titles and default page; the legacy auto-discovery of ``pages/`` cannot
hide helper modules or choose a default, and ``pages.common.screen`` turns it off
when Streamlit still runs a screen without this file). The sidebar holds what every page shares:
the workspace (also in the URL, so a link reproduces it) and the active store.
"""

from __future__ import annotations

import streamlit as st

from core.service import DEFAULT_WORKSPACE, StoreUnavailable
from pages.common import FRAMED_KEY, WORKSPACE_KEY, WORKSPACE_PARAM, get_service, workspace

#: Non-widget copy of the workspace: survives page switches that drop widget state.
SHADOW_KEY = "_workspace"

st.set_page_config(page_title="lexplain", page_icon="🔎", layout="wide")

try:
    service = get_service()
except StoreUnavailable as exc:  # plain words, and nothing else can work without a store
    st.error(f"lexplain cannot open its store. {exc}", icon=":material/database:")
    st.stop()


def create_workspace() -> None:
    """Button callback: runs before the script, so it may still select the new workspace."""
    name = str(st.session_state.get("new_workspace_name", "")).strip()
    if name:
        st.session_state[WORKSPACE_KEY] = service.create_workspace(name)
        st.session_state["new_workspace_name"] = ""


# The workspace: a link's ``ws`` wins when it differs from the current one; otherwise the
# selector's value, restored from a shadow key when a page switch dropped the widget's state.
names = service.list_workspaces()
current = st.session_state.get(SHADOW_KEY)
wanted = st.query_params.get(WORKSPACE_PARAM)
if wanted and wanted != current:
    if wanted not in names:
        wanted = service.create_workspace(wanted)
        names = service.list_workspaces()
    st.session_state[WORKSPACE_KEY] = wanted
elif WORKSPACE_KEY not in st.session_state and current in names:
    st.session_state[WORKSPACE_KEY] = current
if st.session_state.get(WORKSPACE_KEY) not in names:
    st.session_state[WORKSPACE_KEY] = DEFAULT_WORKSPACE if DEFAULT_WORKSPACE in names else names[0]
# Written back explicitly: a run that ended before the selector rendered (a screen Streamlit
# ran without this file, see pages.common.screen) would otherwise reset it to its first option.
st.session_state[WORKSPACE_KEY] = st.session_state[WORKSPACE_KEY]

with st.sidebar:
    st.markdown("### lexplain")
    st.selectbox("Workspace", names, key=WORKSPACE_KEY, help="A separate set of passages.")
    with st.popover("New workspace", icon=":material/add:"):
        st.text_input("Name", key="new_workspace_name")
        st.button("Create", key="create_workspace", on_click=create_workspace)
    st.caption(f"Store: {service.store_label}")

st.session_state[SHADOW_KEY] = workspace()
st.query_params[WORKSPACE_PARAM] = workspace()

pages = [
    st.Page("pages/search.py", title="Search", icon=":material/search:", default=True),
    st.Page("pages/truncation.py", title="Truncation", icon=":material/content_cut:"),
    st.Page("pages/upload.py", title="Upload", icon=":material/upload:"),
    st.Page("pages/entities.py", title="Entities", icon=":material/sell:"),
    st.Page("pages/corpus.py", title="Corpus", icon=":material/bar_chart:"),
    st.Page("pages/evaluate.py", title="Evaluate", icon=":material/fact_check:"),
]
page = st.navigation(pages)
# The screen checks this (pages.common.screen): a screen Streamlit ran without app.py reruns.
st.session_state[FRAMED_KEY] = True
page.run()
