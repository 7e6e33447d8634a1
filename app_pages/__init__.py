"""The screens, one file each (registered in app.py), plus their shared helpers.

Not named ``pages/``: Streamlit still treats a folder of that name as the legacy
auto-discovered multipage app, and then runs a page WITHOUT app.py (no sidebar,
no workspace) on AppTest reruns and possibly on a deep link's first run.
"""
