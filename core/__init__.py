"""lexplain core: everything that is not a screen.

The domain (tokenize, bm25, ranking, rankers, chunks, metrics, classic) imports no store
and no UI; stores sit behind ``core.stores.port``; screens call ``core.service``.
"""
