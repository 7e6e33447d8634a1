"""The analyses on top of a store's read are the same on every store: diagnosis and tuning grid.

Mixed into each adapter's compliance class, so the causes of loss and the k1 x b grid computed
from memory, PostgreSQL 15, embedded 18 and Citus reads are compared, field for field, with
the same computed from a fresh in-memory store holding the same passages (the reference).
"""

from __future__ import annotations

import uuid

from core.analysis.diagnosis import RunDiagnosis, diagnose_query, summarise
from core.analysis.expansion import Expansion, ExpansionSpec, rm3
from core.analysis.rankers import Ranker, RankerKind
from core.analysis.tuning import GridSpec, TuningGrid, TuningQuery, tuning_steps
from core.checkpoint import stepped
from core.domain.chunks import StoredChunk
from core.domain.ranking import RankedChunk, rank_chunks
from core.domain.tokenize import Profile
from core.stores.memory import InMemoryChunkStore
from core.stores.port import ChunkStore
from tests.stores.compliance import make_chunk

TERMS = ["flutter", "wing"]
#: Every passage a read can hand over, whatever the store.
ALL = 10_000


def _corpus(tenant: uuid.UUID) -> list[StoredChunk]:
    both = [make_chunk(tenant, f"doc{i % 4}", f"wing flutter test{i}", i) for i in range(12)]
    return [
        *both,
        make_chunk(tenant, "docx", "sensor calibration drift in the tunnel", 20),
        make_chunk(tenant, "docy", "flutter alone here", 21),
        make_chunk(tenant, "docz", "wing flutter " + "padding " * 60, 22),
        make_chunk(tenant, "docz", "wing wing flutter flutter flutter", 23),
    ]


async def _analyses(
    store: ChunkStore, tenant: uuid.UUID, chunks: list[StoredChunk]
) -> tuple[RunDiagnosis, TuningGrid, TuningGrid]:
    full = await store.lexical_candidates(TERMS, tenant, ALL)
    grades = {c.id: 1 + i % 3 for i, c in enumerate(chunks) if i % 3 != 1}
    by_source = {"doc1": 2, "docx": 1, "docz": 3}
    ranker = Ranker.of(RankerKind.WORKSPACE)
    diagnosis = summarise(
        3, 8, [diagnose_query("q", "wing flutter", TERMS, full, grades, 3, 8, ranker)]
    )
    spec = GridSpec(k1s=(0.0, 1.2, 2.5), bs=(0.0, 0.75, 1.0))
    grids = []
    for level, judged in ((False, grades), (True, by_source)):
        handed = await store.lexical_candidates(TERMS, tenant, 8)
        queries = [TuningQuery(query_id="q", terms=TERMS, candidates=handed, grades=judged)]
        grids.append(await stepped(tuning_steps(queries, spec, 3, 8, level)))
    return diagnosis, grids[0], grids[1]


async def _expanded(store: ChunkStore, tenant: uuid.UUID) -> tuple[Expansion, list[RankedChunk]]:
    """An RM3 search as the service makes one: feedback from the typed ranking at the limit,
    the expanded terms read again and ranked with the weights."""
    typed = ["wing", "tunnel"]
    handed = await store.lexical_candidates(typed, tenant, 8)
    feedback = rank_chunks(typed, handed, 4)
    expansion = rm3(typed, feedback, Profile.PLAIN, ExpansionSpec(fb_docs=4, fb_terms=5))
    expanded = sorted(expansion.weights)
    again = await store.lexical_candidates(expanded, tenant, 8)
    return expansion, rank_chunks(expanded, again, 5, expansion.weights)


class AnalysisCompliance:
    """Cases every adapter must pass: the analyses read the same from it as from memory."""

    async def test_the_diagnosis_and_the_grid_are_the_references_on_this_store(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = _corpus(tenant)
        await store.upsert_many(chunks)
        reference = InMemoryChunkStore()
        await reference.upsert_many(chunks)
        mine = await _analyses(store, tenant, chunks)
        theirs = await _analyses(reference, tenant, chunks)
        diagnosis, passages, documents = mine
        assert len(diagnosis.by_cause) == 3 and diagnosis.lost >= 3
        assert diagnosis == theirs[0]
        assert passages == theirs[1] and documents == theirs[2]
        assert passages.means != documents.means

    async def test_an_rm3_expansion_and_its_ranking_are_the_references_on_this_store(
        self, store: ChunkStore
    ) -> None:
        tenant = uuid.uuid4()
        chunks = _corpus(tenant)
        await store.upsert_many(chunks)
        reference = InMemoryChunkStore()
        await reference.upsert_many(chunks)
        expansion, ranked = await _expanded(store, tenant)
        want_expansion, want_ranked = await _expanded(reference, tenant)
        assert expansion.added, "the case expands nothing"
        assert expansion == want_expansion
        assert [(r.chunk.id, r.score.hex()) for r in ranked] == [
            (r.chunk.id, r.score.hex()) for r in want_ranked
        ]
        assert [r.explanation for r in ranked] == [r.explanation for r in want_ranked]
