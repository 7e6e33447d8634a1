"""The probes of issues 13 and 21 loaded into PostgreSQL end as they do in memory (every path).

The same folder as tests/unit/service/test_hostile_inputs.py, given to ``load_into`` with a real
PostgreSQL store: every file is stored or refused in plain words, the good ones are stored,
and the refusals are the in-memory store's, word for word.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from core.domain.chunks import ChunkingOptions, workspace_tenant_id
from core.ingest.indexing import IndexReport
from core.stores.memory import InMemoryChunkStore
from core.stores.postgres import PostgresChunkStore
from core.terminal.load import load_into
from tests.fixtures.probes import STORED_SOURCES, check_outcomes, outcomes_by_file, write_probes


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory: pytest.TempPathFactory) -> IndexReport:
    """``load`` of the probes into memory, the reference both tests compare with: read once
    (the probes' parse workers, a few seconds each time)."""
    folder = tmp_path_factory.mktemp("reference") / "probes"
    write_probes(folder)
    return asyncio.run(
        load_into(
            InMemoryChunkStore(), [folder], "probes", chunking=ChunkingOptions(), extractor=None
        )
    )


async def test_every_probe_loaded_into_postgresql_ends_as_it_does_in_memory(
    pg_store: PostgresChunkStore, tmp_path: Path, in_memory: IndexReport
) -> None:
    tried = write_probes(tmp_path / "probes")
    loaded = await load_into(
        pg_store, [tmp_path / "probes"], "probes", chunking=ChunkingOptions(), extractor=None
    )
    check_outcomes(outcomes_by_file(loaded), tried)
    assert outcomes_by_file(loaded) == outcomes_by_file(in_memory)
    sources = {s.source_id for s in await pg_store.list_sources(workspace_tenant_id("probes"))}
    assert sources >= STORED_SOURCES


def test_every_probe_uploaded_into_the_embedded_store_ends_as_load_ends_it(
    embedded_data_dir: Path, tmp_path: Path, in_memory: IndexReport
) -> None:
    """The default store through the Upload path: the same refusals, word for word, as
    ``load`` into memory, and the good sources stored."""
    from core.service import LexplainService
    from core.settings import Settings

    tried = write_probes(tmp_path / "probes")
    loaded = {name: error for name, (error, _) in outcomes_by_file(in_memory).items()}
    service = LexplainService.from_settings(Settings(data_dir=embedded_data_dir))
    try:
        reports = service.upload_files([(p.name, p.data) for p in tried], workspace="probes")
        sources = {s.source_id for s in service.list_sources(workspace="probes")}
    finally:
        service.close()
    assert {r.file_name: r.error for r in reports} == loaded
    assert sources >= STORED_SOURCES
