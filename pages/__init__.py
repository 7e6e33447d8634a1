"""The screens, one file each (registered in app.py), plus their shared helpers."""
