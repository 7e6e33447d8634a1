"""When the embedded PostgreSQL cannot start, the app says why in plain words and stops there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture
def newer_data_dir(embedded_data_dir: Path) -> Iterator[Path]:
    """The default store, on a data folder PostgreSQL 19 wrote; the service cache emptied."""
    pgdata = embedded_data_dir / "pgdata"
    pgdata.mkdir(parents=True)
    (pgdata / "PG_VERSION").write_text("19\n")
    patch = pytest.MonkeyPatch()
    for name in ("LEXPLAIN_DATABASE_URL", "LEXPLAIN_STORE"):
        patch.delenv(name, raising=False)
    patch.setenv("LEXPLAIN_DATA_DIR", str(embedded_data_dir))
    from pages.common import get_service

    get_service.clear()  # type: ignore[attr-defined]
    yield pgdata
    get_service.clear()  # type: ignore[attr-defined]
    patch.undo()


def test_a_data_folder_from_a_newer_postgresql_is_explained_on_screen_and_left_alone(
    newer_data_dir: Path,
) -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    (error,) = at.error
    assert "cannot open its store" in error.value
    assert "PostgreSQL 19, newer than the embedded PostgreSQL 18" in error.value
    assert "LEXPLAIN_DATABASE_URL" in error.value  # what to do
    assert [p.name for p in newer_data_dir.iterdir()] == ["PG_VERSION"]
