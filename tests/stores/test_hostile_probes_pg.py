"""The probes of issue 13 loaded into PostgreSQL end as they do in memory (item 3, both stores).

The same folder as tests/unit/test_hostile_inputs.py, given to ``load_into`` with a real
PostgreSQL store: every file is stored or refused in plain words, the good ones are stored,
and the refusals are the in-memory store's, word for word.
"""

from __future__ import annotations

from pathlib import Path

from core.cli import load_into
from core.domain.chunks import ChunkingOptions, workspace_tenant_id
from core.stores.memory import InMemoryChunkStore
from core.stores.postgres import PostgresChunkStore
from tests.fixtures.probes import STORED_SOURCES, check_outcomes, outcomes_by_file, write_probes


async def test_every_probe_loaded_into_postgresql_ends_as_it_does_in_memory(
    pg_store: PostgresChunkStore, tmp_path: Path
) -> None:
    tried = write_probes(tmp_path / "probes")
    loaded = await load_into(
        pg_store, [tmp_path / "probes"], "probes", chunking=ChunkingOptions(), extractor=None
    )
    in_memory = await load_into(
        InMemoryChunkStore(),
        [tmp_path / "probes"],
        "probes",
        chunking=ChunkingOptions(),
        extractor=None,
    )
    check_outcomes(outcomes_by_file(loaded), tried)
    assert outcomes_by_file(loaded) == outcomes_by_file(in_memory)
    sources = {s.source_id for s in await pg_store.list_sources(workspace_tenant_id("probes"))}
    assert sources >= STORED_SOURCES
