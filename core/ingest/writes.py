"""A group of prepared documents written to a store, and the outcomes counted in input order.

Apart from ``core.ingest.indexing`` (which reads and cuts) because writing is its own job with
its own failure rules, and the indexer was at 600 lines. The rules: a group is one
``replace_sources``; when it fails on its data, each document is written on its own so the bad
one is named and the others are stored; when the store is unavailable (``StoreUnavailable``),
no document is to blame and the rest are counted as not written. Outcomes are plain tuples, and
a report row (a pydantic model) is made only for a row the report keeps: a model per document
was more than a tiny document's write.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from typing import NamedTuple
from uuid import UUID

from core.checkpoint import checkpoint
from core.domain.chunks import StoredChunk
from core.domain.entities import Entity
from core.ingest.report import NOT_WRITTEN, DocumentRow, Tally
from core.stores.port import ChunkStore, StoreUnavailable

#: Outcomes counted into the report between two checkpoints (Cranfield's 1,398 held the loop 11 ms).
COUNT_STEP = 64
#: Documents a group's write goes through between two checkpoints before and after the store's
#: write (a 20,000-document group's lists in one step were ~5-10 ms of the loop, more with the
#: young collections they set off: bench_stall upload-big).
WRITE_STEP = 1024

#: A NamedTuple made from its fields whole (its generated ``__new__`` is a Python frame: ~1.2
#: against ~0.4 us, paid per tiny document).
_new = tuple.__new__

#: Called after each group of documents is counted: (documents done, documents in total, the
#: group's last row).
ProgressCallback = Callable[[int, int, DocumentRow], None]


class Prepared(NamedTuple):
    """A document cut and its entities found, ready to write; ``notes`` go in its row."""

    file: str
    source_id: str
    notes: list[str]
    chunks: list[StoredChunk]
    entities: list[Entity]
    duplicates: int


class Stored(NamedTuple):
    """A document written, with the passages of its earlier version it removed."""

    prepared: Prepared
    orphans: int


class Unwritten(NamedTuple):
    """A document a stopped load did not write."""

    file: str
    source_id: str
    notes: list[str]


#: What became of one document: stored, not written, or a row saying why not.
Outcome = Stored | Unwritten | DocumentRow


def row_of(outcome: Outcome) -> DocumentRow:
    """The report row of ``outcome`` (made only when shown or kept: one is a model)."""
    if isinstance(outcome, DocumentRow):
        return outcome
    if isinstance(outcome, Unwritten):
        file, source_id, notes = outcome
        return DocumentRow(
            file=file, source_id=source_id, status="rejected", reason=NOT_WRITTEN,
            notes=notes,
        )  # fmt: skip
    prepared, orphans = outcome
    return DocumentRow(
        file=prepared.file, source_id=prepared.source_id, status="indexed",
        passages_written=len(prepared.chunks), duplicate_passages=prepared.duplicates,
        entities_found=len(prepared.entities), orphans_removed=orphans, notes=prepared.notes,
    )  # fmt: skip


def unwritten(member: Prepared | DocumentRow) -> Outcome:
    """A member of a group an unavailable store did not write (a rejection row stays as it is)."""
    if isinstance(member, DocumentRow):
        return member
    return Unwritten(member.file, member.source_id, member.notes)


class Slot:
    """A group's place in input order; ``outcomes`` is set when its write ends."""

    __slots__ = ("outcomes",)

    def __init__(self, outcomes: list[Outcome] | None) -> None:
        self.outcomes = outcomes


class Counted:
    """Outcomes counted into the report in input order, as the groups before them end, with
    progress once per group (a call per document cost more than a tiny document's write)."""

    def __init__(
        self, tally: Tally, early: list[DocumentRow], on_progress: ProgressCallback | None
    ) -> None:
        self.tally = tally
        self.early = early
        self.on_progress = on_progress
        self.queue: deque[Slot] = deque()
        self.entity_ids: set[UUID] = set()
        self.done = 0
        #: One drain at a time: a second waits while one gives way, so the order is kept.
        self.lock = asyncio.Lock()

    async def drain(self, total: int) -> None:
        async with self.lock:
            # Rows of files refused while reading come first (read before anything was written).
            for row in self.early:
                self.tally.add(row)
            self.early.clear()
            stored = self.tally.stored
            while self.queue and self.queue[0].outcomes is not None:
                outcomes = self.queue.popleft().outcomes or []
                # Popped from the end, each outcome is the last reference to its document's
                # models, freed when the next is taken: freed at once, a group of 20,000 tiny
                # documents was 7-26 ms in one step of the loop (bench_stall upload-big).
                outcomes.reverse()
                count, last = len(outcomes), outcomes[0] if outcomes else None
                for done in range(1, count + 1):
                    outcome = outcomes.pop()
                    if type(outcome) is Stored:
                        (file, source_id, notes, chunks, entities, duplicates), orphans = outcome
                        stored(
                            file, source_id, len(chunks), duplicates, len(entities),
                            orphans, notes,
                        )  # fmt: skip
                        if entities:
                            self.entity_ids.update(entity.entity_id for entity in entities)
                    else:
                        self.tally.add(row_of(outcome))
                    if done % COUNT_STEP == 0:
                        await checkpoint()
                self.done += count
                if last is not None and self.on_progress is not None:
                    self.on_progress(self.done, max(total, self.done), row_of(last))


class InFlight:
    """Groups being written: at most ``groups`` at once, holding at most ``passages`` passages
    together; a group over ``passages`` is admitted only when nothing else is in flight."""

    def __init__(self, groups: int, passages: int) -> None:
        self._limits = (groups, passages)
        self._groups = 0
        self._passages = 0
        self._changed = asyncio.Event()

    def _fits(self, weight: int) -> bool:
        groups, passages = self._limits
        if not self._groups:
            return True
        return self._groups < groups and self._passages + weight <= passages

    @property
    def full(self) -> bool:
        """The groups in flight hold more than the passage bound (nothing more is read)."""
        return bool(self._groups) and self._passages > self._limits[1]

    async def room(self) -> None:
        """Wait until the groups in flight hold no more than the passage bound."""
        while self.full:
            self._changed.clear()
            await self._changed.wait()

    async def acquire(self, weight: int) -> None:
        """Wait until a group of ``weight`` passages may be written, and count it in."""
        while not self._fits(weight):
            self._changed.clear()
            await self._changed.wait()
        self._groups += 1
        self._passages += weight

    def release(self, weight: int) -> None:
        self._groups -= 1
        self._passages -= weight
        self._changed.set()


async def write_group(
    group: Sequence[Prepared | DocumentRow], store: ChunkStore, tenant_id: UUID
) -> tuple[list[Outcome], StoreUnavailable | None]:
    """The group's documents in one ``replace_sources``; if that fails on its data, each on its
    own, so the one bad document is named and the others are stored. An unavailable store
    ends the group there: its unwritten documents are ``Unwritten``, and the failure is
    returned for the report."""
    prepared: list[Prepared] = []
    sources: list[tuple[str, Sequence[StoredChunk]]] = []
    entities: dict[UUID, Entity] = {}
    for at, member in enumerate(group, start=1):
        if type(member) is Prepared:
            prepared.append(member)
            sources.append((member.source_id, member.chunks))
            if member.entities:
                entities.update((e.entity_id, e) for e in member.entities)
        if not at % WRITE_STEP:
            await checkpoint()
    written: dict[int, Outcome] = {}
    if len(prepared) > 1:
        try:
            removed = await store.replace_sources(tenant_id, sources, list(entities.values()))
        except StoreUnavailable as exc:  # no document is to blame: do not split the group
            return [unwritten(member) for member in group], exc
        except Exception:  # the per-document writes below name the bad document and why
            written = {}
        else:
            del sources
            if len(prepared) == len(group):  # every member written: no row to keep in place
                stored: list[Outcome] = []
                for at in range(0, len(prepared), WRITE_STEP):
                    end = at + WRITE_STEP
                    piece = zip(prepared[at:end], removed[at:end], strict=True)
                    stored += [_new(Stored, pair) for pair in piece]
                    await checkpoint()
                return stored, None
            for p, orphans in zip(prepared, removed, strict=True):
                written[id(p)] = Stored(p, orphans)
    outcomes: list[Outcome] = []
    failure: StoreUnavailable | None = None
    for member in group:
        if isinstance(member, DocumentRow):
            outcomes.append(member)
        elif id(member) in written:
            outcomes.append(written[id(member)])
        elif failure is not None:
            outcomes.append(unwritten(member))
        else:
            try:
                outcomes.append(await _write(member, store, tenant_id))
            except StoreUnavailable as exc:
                failure = exc
                outcomes.append(unwritten(member))
    return outcomes, failure


async def _write(prepared: Prepared, store: ChunkStore, tenant_id: UUID) -> Outcome:
    """One document's entities, then its passages in one ``replace_source``."""
    file, source_id, doc_notes, chunks, entities, _ = prepared
    try:
        if entities:
            await store.upsert_entities(entities, tenant_id)
        orphans = await store.replace_source(source_id, tenant_id, chunks)
    except StoreUnavailable:
        raise  # not this document's fault: the caller stops
    except Exception as exc:  # the document's own data: it alone is rejected
        reason = f"not stored ({type(exc).__name__}: {exc}); earlier passages kept"
        return DocumentRow(
            file=file, source_id=source_id, status="rejected", reason=reason,
            notes=doc_notes,
        )  # fmt: skip
    return Stored(prepared, orphans)
