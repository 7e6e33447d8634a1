"""Upload: files to passages and entities, with a report per file. Rendering only."""

from __future__ import annotations

import streamlit as st

from pages.common import get_service, workspace

service = get_service()
st.title("Upload")
st.write(workspace())
