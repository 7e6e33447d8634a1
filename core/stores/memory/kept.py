"""A passage as the in-memory store keeps it: a plain tuple the cyclic collector lets go of.

A ``Kept`` is an exact ``tuple`` of the ``StoredChunk``'s fields but the tenant id (the store
knows it): strings, ints, no entity ids as the shared empty tuple, the metadata pickled (no
metadata as None), so nothing kept is mutable or shared with a caller, and a ``StoredChunk``
is built only on the way out (``passage_copy``). The collector untracks an exact tuple none of
whose items is a container it may track, at the first collection the tuple survives, so a
passage naming no entity costs a full collection nothing: while the store kept a
``NamedTuple`` holding the tenant's ``UUID`` and the metadata dict (all tracked or trackable;
the collector untracks exact tuples only), every passage written since the service started was
walked by every full collection — 25-105 ms on the loop during an upload into a workspace of
12,600 passages (bench_stall ``upload-more``), landing in whatever step ran. The metadata's
pickle is also its copy both ways (~1 us each, where a deep copy was ~4.5 us); it is the
store's own bytes, never read from outside. Fields are read by position (``TEXT``, ``ID``...).
Rejected: the pydantic model itself (~1 KB a passage, 1 GB of a million tiny passages before
any index), and columns per field in the image (no object per passage at all, but every
write, merge and read of a row rewritten for what the untracked tuple already gives).
"""

from __future__ import annotations

import pickle
from typing import Any, Final, cast
from uuid import UUID

from core.domain.chunks import StoredChunk
from core.domain.models import builder

#: (source_id, text, chunk_index, start_char, end_char, entity_ids, metadata pickled, id).
Kept = tuple[str, str, int, int, int, tuple[UUID, ...], bytes | None, str]
#: Positions of a ``Kept``'s fields.
SOURCE_ID: Final = 0
TEXT: Final = 1
CHUNK_INDEX: Final = 2
ENTITY_IDS: Final = 5
METADATA: Final = 6
ID: Final = 7
#: Builds a passage copy with the fields set every copy shares (``builder``: the model is
#: frozen), where a set per copy was ~0.3 of its ~1.5 us (ten a search).
_COPY: Final = builder(StoredChunk, set(StoredChunk.model_fields))


def kept_passage(chunk: StoredChunk) -> Kept:
    """What the store keeps of ``chunk``: nothing shared with the caller."""
    return (
        chunk.source_id,
        chunk.text,
        chunk.chunk_index,
        chunk.start_char,
        chunk.end_char,
        tuple(chunk.entity_ids) if chunk.entity_ids else (),
        pickle.dumps(chunk.metadata, pickle.HIGHEST_PROTOCOL) if chunk.metadata else None,
        chunk.id,
    )


def kept_metadata(kept: Kept) -> dict[str, Any]:
    """The passage's metadata (a copy: unpickled)."""
    metadata = kept[METADATA]
    return {} if metadata is None else cast(dict[str, Any], pickle.loads(metadata))


def passage_copy(kept: Kept, tenant_id: UUID) -> StoredChunk:
    """A ``StoredChunk`` of ``kept`` (tenant ``tenant_id``'s) for a caller to own: nothing
    mutable shared with the store. Not validated again: it was checked on the way in
    (``checks.checked_for_write``)."""
    source_id, text, chunk_index, start_char, end_char, entity_ids, metadata, chunk_id = kept
    return _COPY(
        {
            "tenant_id": tenant_id,
            "source_id": source_id,
            "text": text,
            "chunk_index": chunk_index,
            "start_char": start_char,
            "end_char": end_char,
            "entity_ids": list(entity_ids),
            "metadata": pickle.loads(metadata) if metadata is not None else {},
            "id": chunk_id,
        },
        None,
    )


__all__ = ["ENTITY_IDS", "ID", "SOURCE_ID", "TEXT", "Kept", "kept_passage", "passage_copy"]
