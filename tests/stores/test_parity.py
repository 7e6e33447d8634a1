"""The property the store design exists for: both adapters rank identically.

Equality, not approximation: both hand ``rank_chunks`` the same integers (tf, df,
N, doc lengths, total tokens), and avgdl is computed the same way from them, so
every float is produced by the same operations in the same order. Corpora come
from hypothesis (built through upserts, replacements and deletions, so the write
paths are covered too) and from Cranfield (1,398 real abstracts, 225 queries).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.domain.chunks import StoredChunk
from core.domain.ranking import rank_chunks
from core.domain.tokenize import Profile, tokenize
from core.stores.memory import InMemoryChunkStore
from core.stores.port import ChunkStore, CorpusSummary, Workspace
from core.stores.postgres import PostgresChunkStore
from tests.stores.compliance import make_chunk

#: The Cranfield collection in BEIR layout, shipped with the repository.
CRANFIELD = Path(__file__).resolve().parents[2] / "data" / "cranfield"
#: Words the generated passages are made of: repeats, a stopword, case and accents.
WORDS = ("wing", "Wing", "flow", "shock", "mach", "the", "über", "drag", "lift", "x1")
#: Query terms: every term the words tokenise to, plus one no passage can contain.
TERMS = (*sorted({t for w in WORDS for t in tokenize(w)}), "absent")

Ranking = list[tuple[str, float]]


@pytest.fixture(scope="module")
def database_url(both_database_urls: str) -> str:
    """This module runs on the CI's PostgreSQL 15 and on the embedded PostgreSQL 18."""
    return both_database_urls


async def ranking(
    store: ChunkStore, terms: Sequence[str], tenant: UUID, limit: int, k: int
) -> Ranking:
    ranked = rank_chunks(terms, await store.lexical_candidates(terms, tenant, limit), k)
    return [(r.chunk.id, r.score) for r in ranked]


passage_words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=25)
corpora = st.lists(
    st.tuples(st.sampled_from(["s0", "s1", "s2"]), passage_words), min_size=1, max_size=25
)
queries = st.lists(
    st.tuples(
        st.lists(st.sampled_from(TERMS), min_size=1, max_size=5),
        st.sampled_from([0, 1, 2, 3, 5, 1000]),
    ),
    min_size=1,
    max_size=8,
)


def build(tenant: UUID, corpus: list[tuple[str, list[str]]]) -> list[StoredChunk]:
    return [
        make_chunk(tenant, source, " ".join(words), i) for i, (source, words) in enumerate(corpus)
    ]


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    corpus=corpora,
    replacement=corpora,
    deleted=st.sampled_from(["s0", "s1", "s2", "none"]),
    asked=queries,
)
async def test_both_adapters_rank_every_generated_corpus_identically(
    pg_store: PostgresChunkStore,
    corpus: list[tuple[str, list[str]]],
    replacement: list[tuple[str, list[str]]],
    deleted: str,
    asked: list[tuple[list[str], int]],
) -> None:
    memory = InMemoryChunkStore()
    tenant = uuid.uuid4()
    chunks = build(tenant, corpus)
    replaced = [c for c in build(tenant, replacement) if c.source_id == "s0"]
    for store in (memory, pg_store):
        await store.upsert_many(chunks)
        await store.replace_source("s0", tenant, replaced)
        await store.delete_by_source(deleted, tenant)
    for terms, limit in asked:
        found = await memory.lexical_candidates(terms, tenant, limit)
        assert await pg_store.lexical_candidates(terms, tenant, limit) == found
        for k in (3, 10):
            assert await ranking(pg_store, terms, tenant, limit, k) == await ranking(
                memory, terms, tenant, limit, k
            )
    assert await pg_store.corpus_summary(tenant) == await memory.corpus_summary(tenant)


def cranfield_chunks(tenant: UUID) -> list[StoredChunk]:
    """One passage per non-empty document: title, newline, text; source_id is the doc id."""
    chunks = []
    with (CRANFIELD / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            text = f"{doc['title']}\n{doc['text']}"
            if text.strip():
                chunks.append(
                    StoredChunk(
                        tenant_id=tenant,
                        source_id=doc["_id"],
                        text=text,
                        chunk_index=0,
                        start_char=0,
                        end_char=len(text),
                    )
                )
    return chunks


def cranfield_queries(profile: Profile = Profile.PLAIN) -> list[list[str]]:
    with (CRANFIELD / "queries.jsonl").open(encoding="utf-8") as lines:
        return [tokenize(json.loads(line)["text"], profile) for line in lines]


class Reference(NamedTuple):
    """The in-memory store's answers on Cranfield under one profile: what every server's
    rankings are compared with."""

    #: (limit, query number) -> the top 10.
    rankings: dict[tuple[int, int], Ranking]
    summary: CorpusSummary


#: The references computed so far in this test process, by profile: the in-memory store is
#: the same on every server, so it ranks Cranfield once per profile, not once per server
#: (450 rankings, ~1.2 s of CPU each time).
_REFERENCES: dict[Profile, Reference] = {}


async def cranfield_reference(profile: Profile) -> Reference:
    """The in-memory rankings of Cranfield's queries at limits 1000 and 100 (chunk ids come
    from source and text, not the tenant, so they hold for any tenant's copy)."""
    if profile not in _REFERENCES:
        tenant = uuid.uuid4()
        memory = InMemoryChunkStore()
        await memory.upsert_workspace(
            Workspace(tenant_id=tenant, name=f"cranfield-{profile.value}", profile=profile)
        )
        await memory.upsert_many(cranfield_chunks(tenant))
        rankings = {
            (limit, number): await ranking(memory, terms, tenant, limit, 10)
            for limit in (1000, 100)
            for number, terms in enumerate(cranfield_queries(profile), start=1)
        }
        _REFERENCES[profile] = Reference(rankings, await memory.corpus_summary(tenant))
        await memory.close()
    return _REFERENCES[profile]


async def rankings_differing_from_memory(
    store: ChunkStore, tenant: UUID, profile: Profile
) -> list[tuple[int, int]]:
    """(limit, query number) of every Cranfield query ``store`` ranks otherwise than memory."""
    reference = await cranfield_reference(profile)
    queries = cranfield_queries(profile)
    assert len(queries) == 225
    differing = []
    for (limit, number), expected in reference.rankings.items():
        assert len(expected) == 10
        if await ranking(store, queries[number - 1], tenant, limit, 10) != expected:
            differing.append((limit, number))
    return differing


async def test_both_adapters_rank_cranfield_identically(pg_store: PostgresChunkStore) -> None:
    tenant = uuid.uuid4()
    chunks = cranfield_chunks(tenant)
    assert len(chunks) == 1398
    await pg_store.upsert_many(chunks)
    assert await rankings_differing_from_memory(pg_store, tenant, Profile.PLAIN) == []


async def test_both_adapters_rank_cranfield_identically_under_the_english_profile(
    pg_store: PostgresChunkStore,
) -> None:
    tenant = uuid.uuid4()
    workspace = Workspace(tenant_id=tenant, name="cranfield-en", profile=Profile.ENGLISH)
    await pg_store.upsert_workspace(workspace)
    await pg_store.upsert_many(cranfield_chunks(tenant))
    queries = cranfield_queries(Profile.ENGLISH)
    assert queries[0][:4] == ["what", "similar", "law", "must"]  # "similarity laws" stemmed
    assert await rankings_differing_from_memory(pg_store, tenant, Profile.ENGLISH) == []
    reference = await cranfield_reference(Profile.ENGLISH)
    assert await pg_store.corpus_summary(tenant) == reference.summary
