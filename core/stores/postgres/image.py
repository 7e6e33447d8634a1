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

from core.checkpoint import stepped
from core.domain.bm25 import CorpusStats
from core.domain.postings import postings_candidate_steps
from core.domain.ranking import LexicalCandidates, candidate_score_steps, top_rows
from core.settings import DEFAULT_IMAGE_CACHE_PASSAGES
from core.stores.port import StoreInconsistent
from core.stores.postgres.blocks import live_posting_steps
from core.stores.postgres.frequencies import block_df
from core.stores.postgres.lookups import SideReader, Texts

#: The read of one query: its terms' posting blocks, a few rows per term (one per segment).
_BLOCKS: Final = """
SELECT term, ordinals, tfs FROM postings
WHERE tenant_id = $1 AND term = ANY($2::text[]) ORDER BY term, segment
"""
#: The tenant's live passages in chunk-id order (the key's order: no sort).
_IMAGE: Final = """
SELECT ordinal, id, doc_length FROM passages WHERE tenant_id = $1 ORDER BY id
"""
#: The image's sort of the tenant's ids stays in memory (set inside the read's transaction).
_READ_WORK_MEM: Final = "SET LOCAL work_mem = '256MB'"


@dataclass(frozen=True)
class Image:
    """A tenant's live passages as of one generation, indexed by ordinal.

    Blocks hold ordinals (assigned at insert, never reused), but the truncation order and
    the score tie-break are by chunk id; this image gives each ordinal its rank in chunk-id
    order (-1 for an ordinal whose passage is gone: the tombstone), its id and its length.
    It is read in the query's own snapshot whenever the tenant's generation moved (any
    insert, delete or re-index) and kept per store, like the in-memory store's columnar
    image: one read of (ordinal, id, length) per passage, in key order, after a write; none
    per query. The rejected alternative, fetching the ids of the matching passages per
    query, costs a row per candidate again (hundreds of thousands for an unlimited read).
    """

    generation: int
    #: Rank in chunk-id order per ordinal; -1 where no live passage has it.
    id_rank: npt.NDArray[np.int64]
    #: Chunk id per ordinal (None where dead).
    ids: npt.NDArray[np.object_]
    #: doc_length per ordinal (0 where dead).
    lengths: npt.NDArray[np.int64]

    @classmethod
    async def load(cls, conn: asyncpg.Connection, tenant_id: UUID, totals: asyncpg.Record) -> Image:
        # Sorting a million ids by key spills past the default work_mem (4 MB) to disk.
        await conn.execute(_READ_WORK_MEM)
        records = await conn.fetch(_IMAGE, tenant_id)
        n = len(records)
        size = int(totals["next_ordinal"])
        ordinals = np.fromiter((r[0] for r in records), np.int64, n)
        counted = int(totals["passages"])
        if n != counted or (n and int(ordinals.max()) >= size):
            # Never expected (every write keeps them in one transaction); said plainly rather
            # than an IndexError from the arrays below.
            raise StoreInconsistent(
                f"this workspace's index disagrees with its passages ({n:,} stored, "
                f"{counted:,} counted, ordinals up to {int(ordinals.max()) if n else 0:,} of "
                f"{size:,}); nothing was changed. Run `python -m core db repair` to rebuild "
                "its counters and index from the passages."
            )
        id_rank = np.full(size, -1, dtype=np.int64)
        id_rank[ordinals] = np.arange(n, dtype=np.int64)
        ids = np.empty(size, dtype=object)
        ids[ordinals] = [r[1] for r in records]
        lengths = np.zeros(size, dtype=np.int64)
        lengths[ordinals] = np.fromiter((r[2] for r in records), np.int64, n)
        return cls(int(totals["generation"]), id_rank, ids, lengths)

    def changed(
        self,
        generation: int,
        size: int,
        added: Sequence[tuple[int, str, int]],
        removed: Sequence[int],
    ) -> Image:
        """This image after one write: ``removed`` ordinals gone, ``added`` (ordinal, id,
        length) in, ranks in chunk-id order kept (Python compares the hex ids as the "C"
        collation orders them); equal to ``load`` after that write (tests/stores)."""
        size = max(size, len(self.ids))
        ids = np.empty(size, dtype=object)
        ids[: len(self.ids)] = self.ids
        lengths = np.zeros(size, dtype=np.int64)
        lengths[: len(self.lengths)] = self.lengths
        live = np.flatnonzero(self.id_rank >= 0)
        order = live[np.argsort(self.id_rank[live])]  # ordinals in chunk-id order
        if removed:
            gone = np.asarray(removed, dtype=np.int64)
            order = order[~np.isin(order, gone)]
            ids[gone] = None
            lengths[gone] = 0
        if added:
            ranked = sorted(added, key=lambda passage: passage[1])
            ordinals = np.fromiter((p[0] for p in ranked), np.int64, len(ranked))
            new_ids = np.empty(len(ranked), dtype=object)
            new_ids[:] = [p[1] for p in ranked]
            at = np.searchsorted(ids[order], new_ids)
            ids[ordinals] = new_ids
            lengths[ordinals] = np.fromiter((p[2] for p in ranked), np.int64, len(ranked))
            order = np.insert(order, at, ordinals)
        id_rank = np.full(size, -1, dtype=np.int64)
        id_rank[order] = np.arange(len(order), dtype=np.int64)
        return Image(generation, id_rank, ids, lengths)


@dataclass
class ImageChanges:
    """What one write transaction did to its tenants' live passages: enough to bring a cached
    image up to date (``ImageCache.update``) instead of reading it again whole after every
    write (284 ms at 100k passages, on the next search after each upload)."""

    #: tenant -> (the generation the write followed, the one it wrote, its next ordinal).
    generations: dict[UUID, tuple[int, int, int]] = field(default_factory=dict)
    #: tenant -> (ordinal, chunk id, length) of each passage written.
    added: dict[UUID, list[tuple[int, str, int]]] = field(default_factory=dict)
    #: tenant -> ordinals of the passages deleted.
    removed: dict[UUID, list[int]] = field(default_factory=dict)


class ImageCache:
    """The tenants' images, least recently used evicted first once their ordinals pass
    ``capacity`` in all (the one just stored is kept, however large: a read needs it)."""

    def __init__(self, capacity: int = DEFAULT_IMAGE_CACHE_PASSAGES) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        self.capacity = capacity
        self._images: OrderedDict[UUID, Image] = OrderedDict()
        self._held = 0

    @property
    def held(self) -> int:
        """Ordinals the cached images hold in all."""
        return self._held

    def get(self, tenant_id: UUID) -> Image | None:
        image = self._images.get(tenant_id)
        if image is not None:
            self._images.move_to_end(tenant_id)
        return image

    def __setitem__(self, tenant_id: UUID, image: Image) -> None:
        old = self._images.pop(tenant_id, None)
        if old is not None:
            self._held -= len(old.ids)
        self._images[tenant_id] = image
        self._held += len(image.ids)
        while self._held > self.capacity and len(self._images) > 1:
            _, evicted = self._images.popitem(last=False)
            self._held -= len(evicted.ids)

    def __contains__(self, tenant_id: object) -> bool:
        return tenant_id in self._images

    def update(self, changes: ImageChanges) -> None:
        """Bring each cached image a committed write touched up to date from what it changed;
        an image of another generation than the one the write followed (another process
        wrote between, or a workspace emptied and begun again at 0) is dropped instead, to be
        read again whole by the next query."""
        for tenant_id, (before, after, size) in changes.generations.items():
            image = self._images.get(tenant_id)
            if image is None:
                continue
            if image.generation != before or not before:
                del self._images[tenant_id]
                self._held -= len(image.ids)
                continue
            self[tenant_id] = image.changed(
                after, size, changes.added.get(tenant_id, []), changes.removed.get(tenant_id, [])
            )


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
) -> LexicalCandidates:
    """The candidate columns of ``wanted`` (``askable`` are those a store can hold), read in
    one REPEATABLE READ snapshot; ``images`` is the store's cache, refreshed when stale."""
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        totals = await conn.fetchrow(
            "SELECT passages, tokens, next_ordinal, generation FROM tenant_counters "
            "WHERE tenant_id = $1",
            tenant_id,
        )
        held = await conn.fetch(_BLOCKS, tenant_id, askable) if askable else []
        df = await block_df(conn, tenant_id, held)
        present = list(df)
        blocks = [block for block in held if block["term"] in df]
        image = None
        if totals is not None and present:
            image = images.get(tenant_id)
            if image is None or image.generation != totals["generation"]:
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
        texts = Texts(side, tenant_id)
        postings = await stepped(live_posting_steps(wanted, blocks, image.id_rank))
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
            )
        )
        shown = await _likely_shown(terms, columns)
        if len(shown):
            await texts.prefetch(conn, [str(i) for i in columns.ids[shown]])
        return columns
