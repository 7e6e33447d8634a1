"""The read of one query: counters, blocks (and df from them) and the tenant's ordinal image in
one snapshot.

Blocks hold ordinals; ranking needs chunk ids, lengths and the id order. The image maps
every ordinal to them and is cached per tenant until the tenant's generation moves, so a
query reads only its terms' few block rows plus the likely shown passages' text. The
rejected alternative, fetching the ids of the matching passages per query, costs a row per
candidate (hundreds of thousands for an unlimited read).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final
from uuid import UUID

import asyncpg
import numpy as np
import numpy.typing as npt

from core.checkpoint import checkpoint, stepped
from core.domain.bm25 import CorpusStats
from core.domain.filters import PassageFilter
from core.domain.postings import postings_candidate_steps
from core.domain.ranking import LexicalCandidates, candidate_score_steps, top_rows
from core.domain.steps import Steps, finish
from core.settings import DEFAULT_IMAGE_CACHE_PASSAGES
from core.stores.port import StoreInconsistent
from core.stores.postgres.blocks import live_posting_steps
from core.stores.postgres.frequencies import block_df
from core.stores.postgres.kept_postings import KeptPostings
from core.stores.postgres.lookups import SideReader, Texts

#: The read of one query: its terms' posting blocks, a few rows per term (one per segment).
_BLOCKS: Final = """
SELECT term, ordinals, tfs FROM postings
WHERE tenant_id = $1 AND term = ANY($2::text[]) ORDER BY term, segment
"""
#: The tenant's live passages in chunk-id order (the key's order: no sort).
_IMAGE: Final = """
SELECT ordinal, id, doc_length, source_id FROM passages WHERE tenant_id = $1 ORDER BY id
"""
#: The image's sort of the tenant's ids stays in memory (set inside the read's transaction).
_READ_WORK_MEM: Final = "SET LOCAL work_mem = '256MB'"


#: Rows of an image read whole per fetch (and per checkpoint): ~2-3 ms of decoding and arrays.
LOAD_ROWS: Final = 4_096
#: Old-order entries (and their new neighbours) merged per step of ``Image.changed_steps``; ids
#: copied per step when an image grows: ~1-2 ms of numpy each on the shared machine.
CHANGE_STEP: Final = 1 << 16
#: New ids placed (binary search over the id order) per step of ``Image.changed_steps``.
PLACE_STEP: Final = 1 << 9
#: Slots an image's id and length arrays grow by past what they need, as a share (1/4): a
#: write appends ordinals, so the next writes fill them without copying the arrays again.
_GROWTH: Final = 4
#: Passages a workspace's pending changes may add before its cached image is dropped instead
#: (read again whole): at least this many, else as many as the image holds.
PENDING_FLOOR: Final = 50_000


@dataclass(frozen=True)
class Image:
    """A tenant's live passages as of one generation, indexed by ordinal.

    Blocks hold ordinals (assigned at insert, never reused), but the truncation order and
    the score tie-break are by chunk id; this image gives each ordinal its rank in chunk-id
    order (-1 for an ordinal whose passage is gone: the tombstone), its id and its length.
    It is read in the query's own snapshot when no cached image can be brought to the
    query's generation (``ImageCache.current``), and kept per store, like the in-memory
    store's columnar image: one read of (ordinal, id, length) per passage, in key order;
    none per query. The rejected alternative, fetching the ids of the matching passages per
    query, costs a row per candidate again (hundreds of thousands for an unlimited read).

    A write's changes are applied in linear steps (``changed_steps``): ``order`` keeps the
    live ordinals in id order, so no sort; an ordinal's id and length never change (a
    re-index reads the image again), so images of successive generations share the id and
    length slots (``_id_slots``: new ordinals are written past the older images' ends, which
    those never read) and a dead ordinal's slots keep their stale values (``id_rank`` says
    who is alive). The rejected alternative, fresh arrays, an argsort of the ranks and a
    search in a gathered copy of the ids per write, held the loop in one piece: 257 ms at
    100k passages, 2.8 s at 1M.
    """

    generation: int
    #: Rank in chunk-id order per ordinal; -1 where no live passage has it.
    id_rank: npt.NDArray[np.int64]
    #: Chunk id per ordinal (None or stale where ``id_rank`` is -1).
    ids: npt.NDArray[np.object_]
    #: doc_length per ordinal (0 or stale where ``id_rank`` is -1).
    lengths: npt.NDArray[np.int64]
    #: The live ordinals in chunk-id order (computed from ``id_rank`` when not given).
    order: npt.NDArray[np.int64] | None = None
    #: The arrays ``ids`` and ``lengths`` are the first slots of (themselves when not given).
    _id_slots: npt.NDArray[np.object_] | None = field(default=None, repr=False, compare=False)
    _length_slots: npt.NDArray[np.int64] | None = field(default=None, repr=False, compare=False)
    #: Source id per ordinal (None or stale where ``id_rank`` is -1; all None when not
    #: given): the candidates' source column, so a diagnosis by document reads each
    #: candidate's source with no round trip (sending 1,000 ids a query to look them up was
    #: ~0.9 of a 3.4 s profile, issue 50). Its slots are shared as ``ids``'s are.
    sources: npt.NDArray[np.object_] | None = None
    _source_slots: npt.NDArray[np.object_] | None = field(default=None, repr=False, compare=False)
    #: Common terms' live postings read at this generation (``kept_postings``).
    kept: KeptPostings = field(default_factory=KeptPostings, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.order is None:
            live = np.flatnonzero(self.id_rank >= 0)
            object.__setattr__(self, "order", live[np.argsort(self.id_rank[live])])
        if self._id_slots is None:
            object.__setattr__(self, "_id_slots", self.ids)
        if self._length_slots is None:
            object.__setattr__(self, "_length_slots", self.lengths)
        if self.sources is None:
            object.__setattr__(self, "sources", np.empty(len(self.ids), dtype=object))
        if self._source_slots is None:
            object.__setattr__(self, "_source_slots", self.sources)

    @property
    def live(self) -> npt.NDArray[np.int64]:
        """The live ordinals in chunk-id order."""
        assert self.order is not None  # set in __post_init__
        return self.order

    @classmethod
    async def load(cls, conn: asyncpg.Connection, tenant_id: UUID, totals: asyncpg.Record) -> Image:
        """Read whole in ``conn``'s transaction, ``LOAD_ROWS`` rows per fetch and a checkpoint
        after each: the Python half of 1M rows in one piece (arrays from records) held the
        loop ~0.3-0.5 s on the first read after another process wrote."""
        # Sorting a million ids by key spills past the default work_mem (4 MB) to disk.
        await conn.execute(_READ_WORK_MEM)
        size = int(totals["next_ordinal"])
        id_rank = np.full(size, -1, dtype=np.int64)
        ids = np.empty(size, dtype=object)
        lengths = np.zeros(size, dtype=np.int64)
        sources = np.empty(size, dtype=object)
        parts: list[npt.NDArray[np.int64]] = []
        n = highest = 0
        cursor = await conn.cursor(_IMAGE, tenant_id)
        while rows := await cursor.fetch(LOAD_ROWS):
            ordinals = np.fromiter((r[0] for r in rows), np.int64, len(rows))
            highest = max(highest, int(ordinals.max()))
            if highest < size:  # else said below, once every row is counted
                id_rank[ordinals] = np.arange(n, n + len(rows), dtype=np.int64)
                ids[ordinals] = [r[1] for r in rows]
                lengths[ordinals] = np.fromiter((r[2] for r in rows), np.int64, len(rows))
                sources[ordinals] = [r[3] for r in rows]
            parts.append(ordinals)
            n += len(rows)
            await checkpoint()
        counted = int(totals["passages"])
        if n != counted or (n and highest >= size):
            # Never expected (every write keeps them in one transaction); said plainly rather
            # than an IndexError from the arrays above.
            raise StoreInconsistent(
                f"this workspace's index disagrees with its passages ({n:,} stored, "
                f"{counted:,} counted, ordinals up to {highest if n else 0:,} of "
                f"{size:,}); nothing was changed. Run `python -m core db repair` to rebuild "
                "its counters and index from the passages."
            )
        order = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return cls(int(totals["generation"]), id_rank, ids, lengths, order, sources=sources)

    def same_as(self, other: Image) -> bool:
        """Same generation, same live passages (ordinal, rank, id, length, source); dead slots
        aside."""
        live = self.live
        assert self.sources is not None and other.sources is not None  # set in __post_init__
        return (
            self.generation == other.generation
            and np.array_equal(self.id_rank, other.id_rank)
            and np.array_equal(live, other.live)
            and self.ids[live].tolist() == other.ids[live].tolist()
            and np.array_equal(self.lengths[live], other.lengths[live])
            and self.sources[live].tolist() == other.sources[live].tolist()
        )

    def changed(
        self,
        generation: int,
        size: int,
        added: Sequence[tuple[int, str, int, str]],
        removed: Sequence[int],
    ) -> Image | None:
        """``changed_steps`` in one piece."""
        return finish(self.changed_steps(generation, size, added, removed))

    def changed_steps(
        self,
        generation: int,
        size: int,
        added: Sequence[tuple[int, str, int, str]],
        removed: Sequence[int],
    ) -> Steps[Image | None]:
        """This image after one write: ``removed`` ordinals gone, ``added`` (ordinal, id,
        length, source id) in, ranks in chunk-id order kept (Python compares the ids as the "C"
        collation orders them); equal (``same_as``) to ``load`` after that write
        (tests/stores). None when the write does not fit this image (an ordinal it removed
        is not live here, or one it added is not past its end): read it again whole.

        In steps of ``PLACE_STEP`` new ids placed by a binary search over ``order`` and of
        ``CHANGE_STEP`` old entries merged with the new ones between them (and ranked), so
        a write into a million-passage workspace is a few dozen steps of ~1 ms."""
        old = len(self.id_rank)
        size = max(size, old)
        gone = _distinct(np.asarray(removed, dtype=np.int64))
        if len(gone) and (
            int(gone.min()) < 0 or int(gone.max()) >= old or bool((self.id_rank[gone] < 0).any())
        ):
            return None
        ranked = sorted(added, key=lambda passage: passage[1])
        fresh = np.fromiter((p[0] for p in ranked), np.int64, len(ranked))
        if len(fresh) and (
            int(fresh.min()) < old or int(fresh.max()) >= size or len(_distinct(fresh)) < len(fresh)
        ):
            return None
        new_ids = np.empty(len(ranked), dtype=object)
        new_ids[:] = [p[1] for p in ranked]
        ids, lengths, sources = yield from self._slots(size)
        ids[fresh] = new_ids
        lengths[fresh] = np.fromiter((p[2] for p in ranked), np.int64, len(ranked))
        new_sources = np.empty(len(ranked), dtype=object)
        new_sources[:] = [p[3] for p in ranked]
        sources[fresh] = new_sources
        # Where each new id goes in the old order (its position among the old live ids).
        places = [np.zeros(0, dtype=np.int64)]
        for start in range(0, len(new_ids), PLACE_STEP):
            places.append(_placed(ids, self.live, new_ids[start : start + PLACE_STEP]))
            yield
        at = np.concatenate(places)
        dead = np.zeros(size, dtype=bool)
        dead[gone] = True
        order = np.empty(len(self.live) - len(gone) + len(fresh), dtype=np.int64)
        id_rank = np.full(size, -1, dtype=np.int64)
        yield
        filled = first = 0
        for start in range(0, max(len(self.live), 1), CHANGE_STEP):
            end = min(start + CHANGE_STEP, len(self.live))
            last = len(fresh) if end == len(self.live) else int(np.searchsorted(at, end))
            piece = np.insert(self.live[start:end], at[first:last] - start, fresh[first:last])
            piece = piece[~dead[piece]]
            order[filled : filled + len(piece)] = piece
            id_rank[piece] = np.arange(filled, filled + len(piece), dtype=np.int64)
            filled, first = filled + len(piece), last
            yield
        assert filled == len(order)  # every removed ordinal was live, every added one new
        return Image(
            generation, id_rank, ids[:size], lengths[:size], order, ids, lengths,
            sources=sources[:size], _source_slots=sources,
        )  # fmt: skip

    def _slots(
        self, size: int
    ) -> Steps[tuple[npt.NDArray[np.object_], npt.NDArray[np.int64], npt.NDArray[np.object_]]]:
        """Id, length and source slots for ``size`` ordinals: this image's own, or grown
        (copied ``CHANGE_STEP`` at a time) with room for the next writes."""
        ids, lengths, sources = self._id_slots, self._length_slots, self._source_slots
        assert ids is not None and lengths is not None and sources is not None  # __post_init__
        if size <= len(ids) and size <= len(sources):
            return ids, lengths, sources
        room = size + size // _GROWTH
        grown_ids = np.empty(room, dtype=object)
        grown_lengths = np.zeros(room, dtype=np.int64)
        grown_sources = np.empty(room, dtype=object)
        yield
        held = len(self.id_rank)
        for start in range(0, held, CHANGE_STEP):
            end = min(start + CHANGE_STEP, held)
            grown_ids[start:end] = ids[start:end]
            grown_lengths[start:end] = lengths[start:end]
            grown_sources[start:end] = sources[start:end]
            yield
        return grown_ids, grown_lengths, grown_sources


def _distinct(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``values`` sorted, each once (``np.unique``'s first call imports numpy.ma: ~170 ms)."""
    ordered = np.sort(values)
    return (
        ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered
    )


def _placed(
    ids: npt.NDArray[np.object_], order: npt.NDArray[np.int64], new: npt.NDArray[np.object_]
) -> npt.NDArray[np.int64]:
    """Each of ``new`` ids' place among the ids of ``order`` (ordinals in id order): the
    count of them that sort before it. One binary search for all at once, ~log2(len(order))
    rounds of a gather and an element-wise compare; gathering the ordered ids first was a
    copy of every id per write."""
    lo = np.zeros(len(new), dtype=np.int64)
    hi = np.full(len(new), len(order), dtype=np.int64)
    if not len(order):
        return lo
    while True:
        open_ = lo < hi
        if not open_.any():
            return lo
        mid = (lo + hi) // 2
        probe = ids[order[np.minimum(mid, len(order) - 1)]]
        before = np.less(probe, new).astype(bool)
        lo = np.where(open_ & before, mid + 1, lo)
        hi = np.where(open_ & ~before, mid, hi)


@dataclass
class ImageChanges:
    """What one write transaction did to its tenants' live passages: enough to bring a cached
    image up to date (``ImageCache.current``) instead of reading it again whole after every
    write (284 ms at 100k passages, on the next search after each upload)."""

    #: tenant -> (the generation the write followed, the one it wrote, its next ordinal).
    generations: dict[UUID, tuple[int, int, int]] = field(default_factory=dict)
    #: tenant -> (ordinal, chunk id, length, source id) of each passage written.
    added: dict[UUID, list[tuple[int, str, int, str]]] = field(default_factory=dict)
    #: tenant -> ordinals of the passages deleted.
    removed: dict[UUID, list[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Change:
    """One committed write to one tenant, not yet applied to its cached image."""

    before: int
    after: int
    size: int
    added: list[tuple[int, str, int, str]]
    removed: list[int]


@dataclass
class _Entry:
    """A cached image and the writes committed since it, oldest first."""

    image: Image
    pending: list[_Change] = field(default_factory=list)


class ImageCache:
    """The tenants' images, least recently used evicted first once their ordinals pass
    ``capacity`` in all (the one just stored is kept, however large: a read needs it).

    A write only notes what it changed (``update``); the next read of that tenant applies
    it in steps (``current``). Rejected: the writer applying it at commit — one piece on the
    loop (257 ms at 100k passages, 2.8 s at 1M), or, in steps, a window in which a read sees
    the old generation and reads the image again whole; and a load of many batches into a
    searched workspace would pay a pass over the image per batch instead of one."""

    def __init__(self, capacity: int = DEFAULT_IMAGE_CACHE_PASSAGES) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        self.capacity = capacity
        self._entries: OrderedDict[UUID, _Entry] = OrderedDict()
        self._held = 0

    @property
    def held(self) -> int:
        """Ordinals the cached images hold in all."""
        return self._held

    def get(self, tenant_id: UUID) -> Image | None:
        """The cached image as it stands (writes since it not applied)."""
        entry = self._entries.get(tenant_id)
        if entry is None:
            return None
        self._entries.move_to_end(tenant_id)
        return entry.image

    def __setitem__(self, tenant_id: UUID, image: Image) -> None:
        self._drop(tenant_id)
        self._store(tenant_id, _Entry(image))

    def _store(self, tenant_id: UUID, entry: _Entry) -> None:
        self._entries[tenant_id] = entry
        self._held += len(entry.image.ids)
        while self._held > self.capacity and len(self._entries) > 1:
            _, evicted = self._entries.popitem(last=False)
            self._held -= len(evicted.image.ids)

    def _drop(self, tenant_id: UUID) -> None:
        old = self._entries.pop(tenant_id, None)
        if old is not None:
            self._held -= len(old.image.ids)

    def __contains__(self, tenant_id: object) -> bool:
        return tenant_id in self._entries

    def update(self, changes: ImageChanges) -> None:
        """Note a committed write for each cached image it touched (applied by the next
        ``current``); an image whose writes would not follow on (another process wrote
        between, or a workspace emptied and begun again at 0), or whose pending writes add
        more passages than it holds (reading it again costs less), is dropped instead, to be
        read again whole by the next query."""
        for tenant_id, (before, after, size) in changes.generations.items():
            entry = self._entries.get(tenant_id)
            if entry is None:
                continue
            latest = entry.pending[-1].after if entry.pending else entry.image.generation
            change = _Change(
                before,
                after,
                size,
                changes.added.get(tenant_id, []),
                changes.removed.get(tenant_id, []),
            )
            adding = sum(len(c.added) for c in (*entry.pending, change))
            if latest != before or not before or adding > max(PENDING_FLOOR, len(entry.image.live)):
                self._drop(tenant_id)
                continue
            entry.pending.append(change)

    def current(self, tenant_id: UUID, generation: int) -> Steps[Image | None]:
        """The tenant's cached image brought to ``generation`` by the writes noted since it,
        applied in steps (``Image.changed_steps``) and kept; None when no cached image leads
        there (the caller reads it whole and stores it)."""
        entry = self._entries.get(tenant_id)
        if entry is None:
            return None
        self._entries.move_to_end(tenant_id)
        base = image = entry.image
        applied = 0
        for change in list(entry.pending):
            if image.generation == generation:
                break
            changed = yield from image.changed_steps(
                change.after, change.size, change.added, change.removed
            )
            if changed is None:
                if self._entries.get(tenant_id) is entry:
                    self._drop(tenant_id)
                return None
            image, applied = changed, applied + 1
        if image.generation != generation:
            return None
        if applied and self._entries.get(tenant_id) is entry and entry.image is base:
            self._held += len(image.ids) - len(base.ids)
            entry.image = image
            del entry.pending[:applied]
            self._entries.move_to_end(tenant_id)
            while self._held > self.capacity and len(self._entries) > 1:
                _, evicted = self._entries.popitem(last=False)
                self._held -= len(evicted.image.ids)
        return image


#: Candidates whose text the read fetches in its own snapshot: all of them up to this many,
#: else the best this many by the workspace's BM25 (what a search or a top-k list shows).
PREFETCH_ROWS: Final = 100


async def _likely_shown(terms: Sequence[str], columns: LexicalCandidates) -> npt.NDArray[np.int64]:
    """Rows whose passages a caller will most likely look up (scored in steps: every
    candidate of a 1,000-term query is a million cells)."""
    if len(columns) <= PREFETCH_ROWS:
        return np.arange(len(columns), dtype=np.int64)
    scores = await stepped(candidate_score_steps(terms, columns))
    return top_rows(scores, columns.id_order, PREFETCH_ROWS)


async def read_candidates(
    conn: asyncpg.Connection,
    images: ImageCache,
    side: SideReader,
    tenant_id: UUID,
    terms: Sequence[str],
    wanted: list[str],
    askable: list[str],
    limit: int,
    within: PassageFilter | None = None,
) -> LexicalCandidates:
    """The candidate columns of ``wanted`` (``askable`` are those a store can hold), read in
    one REPEATABLE READ snapshot; ``images`` is the store's cache, refreshed when stale.
    ``within``: only the ordinals its statement selects (``admitted_ordinals``, same snapshot)
    may be candidates."""
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        totals = await conn.fetchrow(
            "SELECT passages, tokens, next_ordinal, generation FROM tenant_counters "
            "WHERE tenant_id = $1",
            tenant_id,
        )
        image = None
        if totals is not None:
            image = await stepped(images.current(tenant_id, int(totals["generation"])))
        # The common terms this generation's image kept are not read again (kept_postings).
        kept = {} if image is None else image.kept.known(askable)
        ask = [term for term in askable if term not in kept]
        held = await conn.fetch(_BLOCKS, tenant_id, ask) if ask else []
        df = {term: found for term, (_, found) in kept.items()}
        df.update(await block_df(conn, tenant_id, held))
        await checkpoint()  # counting, then ordering 1,000 terms' blocks: ~2 ms each
        present = list(df)
        blocks = [block for block in held if block["term"] in df]
        if totals is None or not present:
            image = None
        elif image is None:
            image = await Image.load(conn, tenant_id, totals)
            images[tenant_id] = image
        n_docs = 0 if totals is None else int(totals["passages"])
        tokens = 0 if totals is None else int(totals["tokens"])
        frequencies = dict.fromkeys(wanted, 0)
        frequencies.update(df)
        stats = CorpusStats(
            n_docs=n_docs,
            avg_doc_length=tokens / n_docs if n_docs else 0.0,
            doc_frequencies=frequencies,
        )
        if image is None:
            return LexicalCandidates(stats=stats, terms=tuple(wanted))
        admitted = None
        if within is not None:
            admitted = await admitted_ordinals(conn, tenant_id, within, len(image.lengths))
        texts = Texts(side, tenant_id)
        await checkpoint()
        postings = await stepped(live_posting_steps(wanted, blocks, image.id_rank))
        postings = image.kept.merged(wanted, postings, df, len(image.live))
        columns = await stepped(
            postings_candidate_steps(
                stats,
                wanted,
                postings,
                image.lengths,
                image.ids,
                limit,
                texts.rows(image.ids),
                image.id_rank,
                admitted=admitted,
                sources=image.sources,
                id_rows=image.live,
            )
        )
        shown = await _likely_shown(terms, columns)
        if len(shown):
            await texts.prefetch(conn, [str(i) for i in columns.ids_at(shown)])
        if len(shown) < len(columns) and limit >= n_docs:
            # An unlimited read (an analysis's) looks rows up past the prefetch after it
            # returned: keep its snapshot for them. A search ranks from the prefetch, and
            # holding cost it ~1 ms of CPU (~10%) per read on Cranfield.
            texts.held = await side.snapshots.hold(conn)
            columns = columns.model_copy(update={"ahead": texts.ahead(columns)})
        return columns


def filter_sql(within: PassageFilter, first: int) -> tuple[str, list[object]]:
    """The WHERE conditions of ``within`` over ``passages`` (parameters numbered from
    ``first``) and their arguments: the rule of ``PassageFilter.admits`` in SQL (an integer
    as JSON writes it: digits only, so a float's text never matches, as in Python)."""
    conditions: list[str] = []
    arguments: list[object] = []

    def argument(value: object) -> str:
        arguments.append(value)
        return f"${first + len(arguments) - 1}"

    if within.sources:
        conditions.append(f"source_id = ANY({argument(list(within.sources))}::text[])")
    if within.entities:
        conditions.append(f"entity_ids && {argument(list(within.entities))}::uuid[]")
    for match in within.metadata:
        field, values = argument(match.field), argument(list(match.values))
        conditions.append(
            f"(CASE jsonb_typeof(metadata -> {field}::text) "  # noqa: S608 (numbered parameters)
            f"WHEN 'array' THEN EXISTS (SELECT 1 FROM jsonb_array_elements(metadata -> "
            f"{field}::text) e WHERE {_SCALAR_TEXT.format(v='e')} = ANY({values}::text[])) "
            f"ELSE {_SCALAR_TEXT.format(v=f'(metadata -> {field}::text)')} = ANY({values}::text[]) "
            "END)"
        )
    return " AND ".join(conditions) or "true", arguments


#: A jsonb scalar's text as a filter compares it (``filters.metadata_text``); NULL otherwise.
_SCALAR_TEXT = (
    "(CASE WHEN jsonb_typeof({v}) IN ('string', 'boolean') THEN {v} #>> '{{}}' "
    "WHEN jsonb_typeof({v}) = 'number' AND ({v} #>> '{{}}') ~ '^-?[0-9]+$' THEN {v} #>> '{{}}' "
    "END)"
)


async def admitted_ordinals(
    conn: asyncpg.Connection, tenant_id: UUID, within: PassageFilter, size: int
) -> npt.NDArray[np.int64]:
    """The ordinals (ascending, each < ``size``: the image's) of the passages ``within``
    admits, in ``conn``'s snapshot: one statement, by the entity index when entities are
    named, else by the tenant's rows."""
    where, arguments = filter_sql(within, 2)
    rows = await conn.fetch(
        f"SELECT ordinal FROM passages WHERE tenant_id = $1 AND {where} ORDER BY ordinal",  # noqa: S608
        tenant_id,
        *arguments,
    )
    ordinals = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return ordinals[ordinals < size]
