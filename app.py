"""lexplain: the Streamlit entry point. Navigation, sidebar, nothing else.

``st.navigation`` over one file per screen (the modern API: explicit page list,
titles and default page; the ``pages/`` auto-discovery it replaces cannot hide
helper modules or choose a default). The sidebar holds what every page shares:
the workspace (also in the URL, so a link reproduces it) and the active store.
"""

from __future__ import annotations

import streamlit as st

from pages.common import WORKSPACE_KEY, WORKSPACE_PARAM, get_service, workspace

st.set_page_config(page_title="lexplain", page_icon="🔎", layout="wide")

service = get_service()

if "_pending_workspace" in st.session_state:
    # A workspace just created: selected before the selector exists (its key is then locked).
    st.session_state[WORKSPACE_KEY] = st.session_state.pop("_pending_workspace")

# The workspace: from the URL on first load (or when a link changes it), then the selector.
names = service.list_workspaces()
wanted = st.query_params.get(WORKSPACE_PARAM)
if wanted and wanted != st.session_state.get("_ws_from_url"):
    st.session_state["_ws_from_url"] = wanted
    if wanted not in names:
        wanted = service.create_workspace(wanted)
        names = service.list_workspaces()
    st.session_state[WORKSPACE_KEY] = wanted
if st.session_state.get(WORKSPACE_KEY) not in names:
    st.session_state[WORKSPACE_KEY] = workspace() if workspace() in names else names[0]

with st.sidebar:
    st.markdown("### 🔎 lexplain")
    st.selectbox("Workspace", names, key=WORKSPACE_KEY, help="A separate set of passages.")
    with st.popover("＋ New workspace"):
        new_name = st.text_input("Name", key="new_workspace_name")
        if st.button("Create", key="create_workspace") and new_name.strip():
            created = service.create_workspace(new_name)
            st.session_state["_pending_workspace"] = created
            st.rerun()
    st.caption(f"Store: {service.store_label}")

st.query_params[WORKSPACE_PARAM] = workspace()

pages = [
    st.Page("pages/search.py", title="Search", icon="🔍", default=True),
    st.Page("pages/upload.py", title="Upload", icon="📤"),
    st.Page("pages/entities.py", title="Entities", icon="🏷️"),
    st.Page("pages/corpus.py", title="Corpus", icon="📊"),
]
current = st.navigation(pages)

current.run()
