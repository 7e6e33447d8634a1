"""Parity a user can check: a workspace's store against an in-memory copy of its passages.

The in-memory store is the reference: it re-tokenises every passage from its text under the
workspace's profile, so a stored length, posting, df or counter that drifted (a migration, a
shard move, a bug in a write path) shows up as a difference. Queries are drawn with a fixed
seed, so a rerun asks the same ones. Every candidate's score is compared bit for bit
(``float.hex``), not within a tolerance: both stores hand the ranker integers, so equal inputs
give equal bits, and a tolerance would hide a length off by one in a long passage.
Rejected: comparing the store against itself read twice (a drift stored once reads the same
twice), and comparing only the top k (a cut candidate's drift would go unseen until it rose).
"""

from __future__ import annotations

import random
from typing import Literal
from uuid import UUID

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from core.domain.bm25 import ScoreExplanation
from core.domain.chunks import StoredChunk
from core.domain.ranking import LexicalCandidates, candidate_scores, rank_chunks, ranked_rows
from core.domain.tokenize import tokenize
from core.service.common import (
    DEFAULT_K,
    DEFAULT_LIMIT,
    MAX_PARITY_QUERIES,
    UNLIMITED,
    bounded_candidates,
    check_limit,
    whole,
)
from core.service.runner import StoreRunner
from core.stores.memory import InMemoryChunkStore
from core.stores.port import ChunkStore

#: Queries a parity check asks unless told otherwise.
PARITY_QUERIES = 200
#: Seed of the query draw: the same workspace is asked the same queries every time.
PARITY_SEED = 17
#: Most of a workspace's terms (by df) a query is drawn from when it has no query set.
TERM_POOL = 5_000
#: Most terms in one query drawn from the workspace's terms.
TERMS_PER_QUERY = 3
#: Passages a parity check copies into its in-memory reference per write (whole sources).
COPY_BATCH_PASSAGES = 20_000


class ParityQuery(BaseModel):
    """One sampled query: its text and the terms it is tokenised to."""

    model_config = ConfigDict(frozen=True)

    text: str
    terms: list[str]


class ParitySide(BaseModel):
    """One store's view of the passage where the two first differ (None: it lacks it)."""

    model_config = ConfigDict(frozen=True)

    #: 1-based position in that store's candidate list.
    candidate_position: int | None = None
    score: float | None = None
    explanation: ScoreExplanation | None = None

    def words(self) -> str:
        """This side in words: its score to the last bit (``repr``: parity is bit for bit) and
        its candidate position, or that the passage is not among its candidates (the fields'
        None read "score None, candidate None" on Corpus)."""
        if self.candidate_position is None or self.score is None:
            return "not among its candidates"
        return f"score {self.score!r}, candidate #{self.candidate_position:,}"

    def rows(self) -> list[dict[str, object]]:
        """The explanation as table rows, one per query term."""
        if self.explanation is None:
            return []
        return [
            {
                "term": t.term,
                "tf": t.tf,
                "df": t.df,
                "N": t.n_docs,
                "dl": t.doc_length,
                "avgdl": t.avg_doc_length,
                "idf": t.idf,
                "contribution": t.contribution,
            }
            for t in self.explanation.every_term()
        ]


class ParityDifference(BaseModel):
    """The first difference found: which query, at which limit, in what, and both sides."""

    model_config = ConfigDict(frozen=True)

    query_number: int
    query: ParityQuery
    #: The limit it was asked at (``UNLIMITED`` for unlimited).
    limit: int
    #: What differs, in words.
    what: str
    chunk_id: str | None
    reference: ParitySide
    checked: ParitySide


class ParityReport(BaseModel):
    """How many sampled queries the store answered exactly as the in-memory copy did."""

    model_config = ConfigDict(frozen=True)

    workspace: str
    #: Where the queries came from.
    drawn_from: Literal["query sets", "terms"]
    limit: int
    queries: list[ParityQuery]
    #: Queries answered identically at the limit and unlimited (all of them, or those before
    #: the first difference).
    identical: int
    difference: ParityDifference | None = None

    def summary(self) -> str:
        """One line: "200/200 identical" or where the first difference is."""
        asked = f"{len(self.queries)} queries from the workspace's {self.drawn_from}"
        if self.difference is None:
            return (
                f"{self.identical}/{len(self.queries)} identical ({asked}, at limit "
                f"{self.limit} and unlimited)"
            )
        d = self.difference
        at = "unlimited" if d.limit == UNLIMITED else f"limit {d.limit}"
        return (
            f"differs at query {d.query_number}/{len(self.queries)} {d.query.text!r} ({at}): "
            f"{d.what}"
        )


async def copy_workspace(store: ChunkStore, tenant: UUID) -> InMemoryChunkStore:
    """The workspace's passages and entities in a new in-memory store, under its profile.

    Read and written ``COPY_BATCH_PASSAGES`` at a time (as the source list counts them), whole
    sources per read (``get_by_sources``: a read per source was a round trip each on
    PostgreSQL) and per write (``replace_sources``), not a write per source: each write builds
    a new image of the copy, so Cranfield's 1,398 sources one by one cost 1.6 s of CPU against
    0.1 s in one batch. Rejected: the whole
    workspace in one write, which holds every passage twice (the list and the copy) at once.
    """
    workspace = await store.get_workspace(tenant)
    if workspace is None:
        raise LookupError(f"no workspace with tenant id {tenant}")
    memory = InMemoryChunkStore()
    await memory.upsert_workspace(workspace)
    group: list[str] = []
    held = 0
    for source in await store.list_sources(tenant):
        group.append(source.source_id)
        held += source.passages
        if held >= COPY_BATCH_PASSAGES:
            await _copy_group(store, memory, tenant, group)
            group, held = [], 0
    if group:
        await _copy_group(store, memory, tenant, group)
    return memory


async def _copy_group(
    store: ChunkStore, memory: InMemoryChunkStore, tenant: UUID, group: list[str]
) -> None:
    """A group of whole sources read in one round trip (``get_by_sources``) and written to the
    copy in one write; a source gone since it was listed is written empty, as before."""
    found = await store.get_by_sources(group, tenant)
    await _write_copy(store, memory, tenant, [(source, found.get(source, [])) for source in group])


async def _write_copy(
    store: ChunkStore,
    memory: InMemoryChunkStore,
    tenant: UUID,
    batch: list[tuple[str, list[StoredChunk]]],
) -> None:
    """One batch of whole sources, with the entities they name, in one write to the copy."""
    wanted = sorted({e for _, chunks in batch for c in chunks for e in c.entity_ids})
    entities = await store.get_entities(wanted, tenant) if wanted else []
    await memory.replace_sources(tenant, batch, entities)


async def sample_queries(
    store: ChunkStore, tenant: UUID, count: int, seed: int = PARITY_SEED
) -> tuple[Literal["query sets", "terms"], list[ParityQuery]]:
    """Up to ``count`` queries drawn with ``seed``: from the query sets when there are any."""
    workspace = await store.get_workspace(tenant)
    if workspace is None:
        raise LookupError(f"no workspace with tenant id {tenant}")
    rng = random.Random(seed)
    texts: set[str] = set()
    for summary in await store.list_query_sets(tenant):
        found = await store.get_query_set(tenant, summary.name)
        if found is not None:
            texts.update(q.text for q in found.queries)
    asked = [ParityQuery(text=t, terms=tokenize(t, workspace.profile)) for t in sorted(texts)]
    asked = [q for q in asked if q.terms]
    if asked:
        return "query sets", rng.sample(asked, min(count, len(asked)))
    pool = sorted(t.term for t in await store.terms_with_prefix("", tenant, TERM_POOL))
    if not pool:
        return "terms", []
    drawn = []
    for _ in range(count):
        terms = rng.sample(pool, min(len(pool), rng.randint(1, TERMS_PER_QUERY)))
        drawn.append(ParityQuery(text=" ".join(terms), terms=terms))
    return "terms", drawn


def _side(terms: list[str], found: LexicalCandidates, chunk_id: str | None) -> ParitySide:
    ids = list(found.ids)
    if chunk_id is None or chunk_id not in ids:
        return ParitySide()
    row = ids.index(chunk_id)
    scores = candidate_scores(terms, found)
    (ranked,) = ranked_rows(terms, found, np.array([row], dtype=np.int64), scores)
    return ParitySide(
        candidate_position=row + 1, score=ranked.score, explanation=ranked.explanation
    )


def _rows_differing(
    reference: LexicalCandidates,
    checked: LexicalCandidates,
    ref_scores: npt.NDArray[np.float64],
    got_scores: npt.NDArray[np.float64],
) -> npt.NDArray[np.bool_]:
    """Per row both answers hold: does its id, length, term counts or score's bits differ."""
    shared = min(len(reference.doc_lengths), len(checked.doc_lengths))
    ids_off = np.asarray(reference.ids[:shared] != checked.ids[:shared], dtype=bool)
    lengths_off = reference.doc_lengths[:shared] != checked.doc_lengths[:shared]
    if reference.tfs.shape[1:] == checked.tfs.shape[1:]:
        tfs_off = (reference.tfs[:shared] != checked.tfs[:shared]).any(axis=1)
    else:  # other columns: every row's counts differ
        tfs_off = np.ones(shared, dtype=bool)
    bits_off = np.asarray(ref_scores[:shared], dtype=np.float64).view(np.int64) != np.asarray(
        got_scores[:shared], dtype=np.float64
    ).view(np.int64)
    return np.asarray(ids_off | lengths_off | tfs_off | bits_off, dtype=bool)


def first_difference(
    terms: list[str], reference: LexicalCandidates, checked: LexicalCandidates
) -> tuple[str, str | None] | None:
    """What first differs between two stores' answers to one query, and at which passage.

    The rows are compared as whole columns first (ids, lengths, term counts, the scores'
    bits), then only the first differing row is described: a loop over every row in Python
    took ~0.3 s an unlimited read of 47k candidates, so a parity of 1,000 queries ran past
    120 s (issue 49 item 1).
    """
    ref_scores = candidate_scores(terms, reference)
    got_scores = candidate_scores(terms, checked)
    rows = max(len(reference.doc_lengths), len(checked.doc_lengths))
    shared = min(len(reference.doc_lengths), len(checked.doc_lengths))
    differing = np.flatnonzero(_rows_differing(reference, checked, ref_scores, got_scores))
    row = int(differing[0]) if len(differing) else shared if shared < rows else None
    if row is not None:
        ref_ids, got_ids = reference.ids, checked.ids
        if row >= len(ref_ids) or row >= len(got_ids) or ref_ids[row] != got_ids[row]:
            ref = ref_ids[row] if row < len(ref_ids) else "nothing"
            got = got_ids[row] if row < len(got_ids) else "nothing"
            shown = ref if row < len(ref_ids) else got
            return f"candidate {row + 1} is {ref} in memory but {got} in the store", shown
        chunk_id = ref_ids[row]
        if int(reference.doc_lengths[row]) != int(checked.doc_lengths[row]):
            return (
                f"{chunk_id} has length {int(reference.doc_lengths[row])} in memory but "
                f"{int(checked.doc_lengths[row])} in the store"
            ), chunk_id
        if not np.array_equal(reference.tfs[row], checked.tfs[row]):
            return f"{chunk_id} has other term frequencies in the store", chunk_id
        return (
            f"{chunk_id} scores {float(ref_scores[row])!r} in memory but "
            f"{float(got_scores[row])!r} in the store"
        ), chunk_id
    first = str(reference.ids[0]) if len(reference.doc_lengths) else None
    if reference.stats != checked.stats:
        return "the corpus statistics (N, avgdl or a df) differ", first
    if reference.matching != checked.matching:
        return (
            f"{reference.matching} passages match in memory but {checked.matching} in the store"
        ), first
    k = DEFAULT_K
    ref_top = [(r.chunk.id, r.score.hex()) for r in rank_chunks(terms, reference, k)]
    got_top = [(r.chunk.id, r.score.hex()) for r in rank_chunks(terms, checked, k)]
    if ref_top != got_top:
        return f"the top {k} are ordered differently", first
    return None


async def check_parity(
    store: ChunkStore,
    tenant: UUID,
    *,
    queries: int = PARITY_QUERIES,
    limit: int = DEFAULT_LIMIT,
    seed: int = PARITY_SEED,
) -> ParityReport:
    """Ask ``store`` and an in-memory copy of the workspace the same sampled queries at
    ``limit`` and unlimited; stop at the first difference."""
    workspace = await store.get_workspace(tenant)
    if workspace is None:
        raise LookupError(f"no workspace with tenant id {tenant}")
    memory = await copy_workspace(store, tenant)
    drawn_from, asked = await sample_queries(store, tenant, queries, seed)
    identical = 0
    difference = None
    for number, query in enumerate(asked, start=1):
        for at in (limit, UNLIMITED):
            reference = await bounded_candidates(memory, query.terms, tenant, at)
            checked = await bounded_candidates(store, query.terms, tenant, at)
            found = first_difference(query.terms, reference, checked)
            if found is not None:
                what, chunk_id = found
                difference = ParityDifference(
                    query_number=number,
                    query=query,
                    limit=at,
                    what=what,
                    chunk_id=chunk_id,
                    reference=_side(query.terms, reference, chunk_id),
                    checked=_side(query.terms, checked, chunk_id),
                )
                break
        if difference is not None:
            break
        identical += 1
    await memory.close()
    return ParityReport(
        workspace=workspace.name,
        drawn_from=drawn_from,
        limit=limit,
        queries=asked,
        identical=identical,
        difference=difference,
    )


class ParityActions(StoreRunner):
    """The Corpus screen's parity check."""

    def parity(
        self, *, workspace: str, queries: int = PARITY_QUERIES, limit: int = DEFAULT_LIMIT
    ) -> ParityReport:
        """This workspace's store against an in-memory copy of its passages, query by query:
        "200/200 identical" or the first difference with both explanations."""
        whole(queries, "the number of queries", 1, MAX_PARITY_QUERIES)
        check_limit(limit)
        tenant = self._tenant(workspace)
        return self._call(check_parity(self._store, tenant, queries=queries, limit=limit))
