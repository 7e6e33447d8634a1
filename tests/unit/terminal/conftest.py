"""The terminal tests' fixtures: no default database, and the sample in a schema of its own
with the command line's store pointed at it (``facade``)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from core.service import LexplainService
from core.settings import Settings
from tests.unit.terminal.sample import SAMPLE


@pytest.fixture(autouse=True)
def no_default_database(monkeypatch: pytest.MonkeyPatch, embedded_data_dir: Path) -> Path:
    """No URL, no store override, and a private embedded data folder (stopped afterwards)."""
    monkeypatch.delenv("LEXPLAIN_DATABASE_URL", raising=False)
    monkeypatch.delenv("LEXPLAIN_STORE", raising=False)
    monkeypatch.setenv("LEXPLAIN_DATA_DIR", str(embedded_data_dir))
    return embedded_data_dir


@pytest.fixture(scope="module")
def sample_schema(database_url: str) -> Iterator[str]:
    """A schema of its own (``pg_store`` empties its module's) holding the sample in ``SAMPLE``."""
    schema = f"t_{uuid.uuid4().hex}"
    service = LexplainService.from_settings(
        Settings(database_url=database_url, database_schema=schema)
    )
    try:
        service.load_sample(workspace=SAMPLE)
    finally:
        service.close()
    yield schema

    async def drop() -> None:
        conn = await asyncpg.connect(database_url)
        try:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await conn.close()

    asyncio.run(drop())


@pytest.fixture
def facade(
    no_default_database: Path,
    database_url: str,
    sample_schema: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[LexplainService]:
    """The command line's store named by the environment, as the app's is, and the facade on it."""
    monkeypatch.setenv("LEXPLAIN_DATABASE_URL", database_url)
    monkeypatch.setenv("LEXPLAIN_DATABASE_SCHEMA", sample_schema)
    service = LexplainService.from_settings()
    yield service
    service.close()
