"""What every store checks in a batch before it writes any of it, apart from the port.

A batch is checked whole before a store touches anything, so a bad passage or judgment fails
the write and loses nothing already stored; each store calls these (the models' own checks are
bypassed by ``model_construct``). Apart from the port's ``text`` (what a store accepts at all):
these check a batch as a whole. Rejected: a check per store, which would let them drift apart.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from uuid import UUID

from core.domain.chunks import StoredChunk, chunk_id, source_id_problem, was_cut
from core.domain.judging import Judgment
from core.stores.port import MAX_POSITION, is_storable


def checked_judgments(tenant_id: UUID, judgments: Sequence[Judgment]) -> list[Judgment]:
    """A judgments batch checked before any store writes it; a key named twice keeps the last."""
    latest: dict[tuple[str, str, str], Judgment] = {}
    for position, judgment in enumerate(judgments):
        if not isinstance(judgment, Judgment):
            raise TypeError(f"judgment {position} is a {type(judgment).__name__}, not a Judgment")
        if judgment.tenant_id != tenant_id:
            raise ValueError(f"judgment {position} belongs to another workspace")
        latest[(judgment.query, judgment.chunk_id, judgment.rater)] = judgment
    return list(latest.values())


def checked_sources(
    tenant_id: UUID, sources: Sequence[tuple[str, Sequence[StoredChunk]]]
) -> list[tuple[str, list[StoredChunk]]]:
    """``checked_for_write`` per source of a batch; a source named twice is rejected."""
    return list(each_checked_source(tenant_id, sources))


def each_checked_source(
    tenant_id: UUID, sources: Sequence[tuple[str, Sequence[StoredChunk]]]
) -> Iterator[tuple[str, list[StoredChunk]]]:
    """``checked_sources`` a source at a time, so a caller can give way between them; a
    caller must write nothing before the last one is checked."""
    seen: set[str] = set()
    for source_id, chunks in sources:
        if source_id in seen:
            raise ValueError(f"source {source_id!r} appears twice in one batch")
        seen.add(source_id)
        yield source_id, checked_for_write(chunks, tenant_id=tenant_id, source_id=source_id)


def checked_for_write(
    chunks: Sequence[StoredChunk],
    *,
    tenant_id: UUID | None = None,
    source_id: str | None = None,
) -> list[StoredChunk]:
    """Validate a batch before any store writes it; duplicates by key keep the last version.

    The model already rejects bad text, but ``model_construct`` bypasses it, so every
    store re-checks here and fails the whole batch before touching anything.
    """
    if source_id is not None:
        problem = source_id_problem(source_id)
        if problem is not None:
            raise ValueError(problem)
    # Keyed by (tenant, id), or by id alone when every chunk is checked to be ``tenant_id``'s
    # (the same keys then; a UUID hashes in Python, ~0.3 us a passage).
    latest: dict[object, StoredChunk] = {}
    single = len(chunks) == 1  # a tiny document's one passage: nothing to keep the last of
    for position, chunk in enumerate(chunks):
        cut = type(chunk) is StoredChunk and was_cut(chunk)  # its id derived by the chunker
        if not (cut or isinstance(chunk, StoredChunk)):
            raise TypeError(f"chunk {position} is a {type(chunk).__name__}, not a StoredChunk")
        tenant = chunk.tenant_id
        if tenant_id is not None and tenant is not tenant_id and tenant != tenant_id:
            raise ValueError(
                f"chunk {position} belongs to tenant {chunk.tenant_id}, not {tenant_id}"
            )
        source, text = chunk.source_id, chunk.text
        if source_id is not None and source != source_id:
            raise ValueError(f"chunk {position} belongs to source {source!r}, not {source_id!r}")
        if not (isinstance(text, str) and text and is_storable(text)):
            raise ValueError(f"chunk {position} has an unstorable text")
        if not (
            isinstance(source, str) and source and (source == source_id or is_storable(source))
        ):
            raise ValueError(f"chunk {position} has an unstorable source_id")
        # The batch's own source id was checked above (once, not once per passage).
        problem = None if source == source_id else source_id_problem(source)
        if problem is not None:
            raise ValueError(f"chunk {position}: {problem}")
        index, start, end = chunk.chunk_index, chunk.start_char, chunk.end_char
        if not (0 <= index <= MAX_POSITION and 0 <= start <= end <= MAX_POSITION):
            for name, number in (("chunk_index", index), ("start_char", start), ("end_char", end)):
                if not 0 <= number <= MAX_POSITION:
                    raise ValueError(
                        f"chunk {position} has {name} {number} outside 0..{MAX_POSITION}"
                    )
            raise ValueError(f"chunk {position} ends before it starts")
        if not cut and chunk.id != chunk_id(source, text):
            raise ValueError(f"chunk {position} has an id not derived from its source and text")
        if not single:
            latest[chunk.id if tenant_id is not None else (tenant, chunk.id)] = chunk
    return [chunks[0]] if single else list(latest.values())


__all__ = ["checked_for_write", "checked_judgments", "checked_sources", "each_checked_source"]
