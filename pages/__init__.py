"""The screens, one file each (registered in app.py), plus their shared helpers.

The folder is called ``pages/`` as the design names it. Streamlit's legacy
multipage mode also looks for that name and may run a screen without app.py;
``pages.common.screen`` (called first by every screen) detects that and reruns
inside app.py's frame. tests/ui/test_frame.py checks every screen for the sidebar.
"""
