"""Every probe of issue 13 ends in a stored document or a plain-words refusal (item 3).

The same generated files go through the app's upload path (the service, as the Upload page
calls it) and through ``load`` (a folder on disk, names that are not UTF-8 included); one bad
file never stops the others. The PostgreSQL side is tests/stores/test_hostile_probes_pg.py.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import NamedTuple

import pytest

from core.domain.chunks import ChunkingOptions, workspace_tenant_id
from core.ingest.indexing import IndexReport
from core.ingest.names import printable_name
from core.service.facade import LexplainService
from core.settings import Settings
from core.stores.memory import InMemoryChunkStore
from core.terminal import main
from core.terminal.load import load_into
from tests.fixtures.probes import (
    STORED_SOURCES,
    Probe,
    check_outcomes,
    outcomes_by_file,
    probes,
    write_probes,
)


class Uploaded(NamedTuple):
    #: Printable file name -> (error or None, every message about the file).
    outcomes: dict[str, tuple[str | None, str]]
    sources: set[str]


@pytest.fixture(scope="module")
def uploaded() -> Uploaded:
    """Every probe through the app's upload path (the service, as the Upload page calls it):
    what one test checks and another compares with ``load``, uploaded once (the probes' parse
    workers, seconds each time)."""
    service = LexplainService.from_settings(Settings(store="memory"))
    try:
        reports = service.upload_files([(p.name, p.data) for p in probes()], workspace="probes")
        sources = {s.source_id for s in service.list_sources(workspace="probes")}
    finally:
        service.close()
    outcomes = {r.file_name: (r.error, f"{r.error or ''} {' '.join(r.notes)}") for r in reports}
    return Uploaded(outcomes, sources)


def test_every_probe_uploaded_in_the_app_ends_stored_or_refused_in_plain_words(
    uploaded: Uploaded,
) -> None:
    check_outcomes(uploaded.outcomes, probes())
    assert uploaded.sources >= STORED_SOURCES


class Loaded(NamedTuple):
    tried: list[Probe]
    report: IndexReport
    sources: set[str]


async def _load(folder: Path) -> tuple[IndexReport, set[str]]:
    store = InMemoryChunkStore()
    report = await load_into(store, [folder], "probes", chunking=ChunkingOptions(), extractor=None)
    listed = await store.list_sources(workspace_tenant_id("probes"))
    return report, {s.source_id for s in listed}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    """The probes' folder given to ``load`` into memory: what one test checks and another
    compares the Upload path with, read once (the probes' parse workers, seconds each time)."""
    folder = tmp_path_factory.mktemp("loaded") / "probes"
    tried = write_probes(folder)
    return Loaded(tried, *asyncio.run(_load(folder)))


def test_every_probe_in_a_folder_given_to_load_ends_stored_or_refused(loaded: Loaded) -> None:
    check_outcomes(outcomes_by_file(loaded.report), loaded.tried)
    assert loaded.sources >= STORED_SOURCES


def test_load_prints_names_that_are_not_utf8_and_exits_saying_what_it_refused(
    tmp_path: Path,
) -> None:
    write_probes(tmp_path / "probes")
    out = io.StringIO()
    status = main(["load", str(tmp_path / "probes"), "--workspace", "p", "--dry-run"], stdout=out)
    assert status == 1
    assert (
        "bad\ufffdname.txt: the file name 'bad\ufffdname.txt' is not valid UTF-8" in out.getvalue()
    )


def test_every_probe_uploaded_ends_in_the_words_load_gives_it(
    loaded: Loaded, uploaded: Uploaded
) -> None:
    """The Upload path and ``load`` read the same way (a file, or a JSONL part, at a time), so
    each probe's refusal is the same words in both (PostgreSQL: test_hostile_probes_pg.py)."""
    by_load = {name: error for name, (error, _) in outcomes_by_file(loaded.report).items()}
    on_disk = {printable_name(p.name) for p in loaded.tried}
    by_upload = {name: error for name, (error, _) in uploaded.outcomes.items() if name in on_disk}
    assert by_upload == by_load
