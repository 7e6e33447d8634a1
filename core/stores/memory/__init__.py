"""The in-memory chunk store: the reference every other adapter is held to.

A package, as ``core.stores.postgres`` is, one module per job (seven files in ``core/stores``
before, ``memory_*.py``, which a reader had to find by name):

- ``store``: ``InMemoryChunkStore``, the public face: writes built aside and swapped in under one
  lock, reads of the current image; why the store is shaped so is said there.
- ``index``: the index, immutable images of CSR segments, their merges and id lookups.
- ``writer``: passages in, one segment out (tokenising a batch of texts at once).
- ``reads``: an image's live postings as one CSR in chunk-id order, the view a search reads.
- ``kept``: a passage as the store keeps it, an untracked tuple, and its copy on the way out.
- ``workspaces``: workspace records, members and owners (a mixin of the store).
- ``judging``: query sets, judgments and saved runs (a mixin of the store).
- ``corrections``: an analyst's entity corrections per workspace (a mixin of the store).
"""

from core.stores.memory.store import InMemoryChunkStore

__all__ = ["InMemoryChunkStore"]
