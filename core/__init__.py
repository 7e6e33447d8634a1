"""lexplain core: everything that is not a screen.

The domain (tokenize, bm25, ranking, rankers, chunks, metrics, classic) imports no store
and no UI; stores sit behind ``core.stores.port``; screens call ``core.service``.

Modules:

- ``__main__``: ``python -m core load PATH... --workspace NAME``: see ``core.terminal``
- ``checkpoint``: Long work gives way to interactive calls at checkpoints: no session's search …
- ``processes``: Worker processes that never run the caller's script again: ``python -m …
- ``settings``: Configuration from the environment (``LEXPLAIN_*``), read once by the app
- ``analysis/``: The analyses on top of ranking: what-if rankers, truncation, evaluation, …
- ``ingest/``: Ingest: files in, passages and entities out, into any store through the port
- ``terminal/``: The terminal: ``python -m core load|db|owner|search|evaluate|diagnose ...``, one …
"""
