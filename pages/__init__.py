"""The screens, one file each (registered in app.py), plus their shared helpers.

The folder is called ``pages/`` as the design names it. Streamlit's legacy
multipage mode also looks for that name and may run a screen without app.py;
``pages.common.screen`` (called first by every screen) detects that and reruns
inside app.py's frame. tests/ui/test_frame.py checks every screen for the sidebar.

Modules:

- ``compare``: Compare rankings: one query, two BM25 rankers side by side
- ``corpus``: Corpus: what the statistics behind every score are
- ``entities``: Entities: who and what the passages mention, and where
- ``evaluate``: Evaluate: judged metrics of the ranking at one or two candidate limits
- ``judge``: Judge: walk a query set and grade its pooled passages 0-3 from the keyboard
- ``losses``: How a run's lost relevant passages are shown (Runs and Evaluate): rendering only
- ``narrowing``: The "narrow to" controls a query screen shares: sources, entities, metadata …
- ``runs``: Runs: evaluate from the workspace's own grades, save runs, compare saved runs
- ``search``: Search: ranked passages with the arithmetic behind every score
- ``search_cards``: Search's result cards as text, written once per result list and kept for …
- ``truncation``: Truncation: what the candidate limit costs one query
- ``upload``: Upload: files to passages and entities, with a report per file
"""
