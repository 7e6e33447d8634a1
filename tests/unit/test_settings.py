"""Which store the environment selects, and the label that says so (never a password)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from core.settings import PROJECT_DIR, Settings, describe_store


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LEXPLAIN_DATABASE_URL", "LEXPLAIN_STORE", "LEXPLAIN_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)


def test_with_nothing_set_the_store_is_the_embedded_postgresql_in_the_project_folder() -> None:
    settings = Settings()
    assert settings.store_kind == "embedded"
    assert settings.data_dir == PROJECT_DIR / ".lexplain"
    assert describe_store(settings) == "PostgreSQL (embedded, .lexplain/pgdata)"


def test_the_project_data_folder_is_ignored_by_git() -> None:
    ignored = (PROJECT_DIR / ".gitignore").read_text().splitlines()
    assert ".lexplain/" in ignored


def test_a_data_folder_outside_the_project_is_shown_as_an_absolute_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LEXPLAIN_DATA_DIR", str(tmp_path / "kept"))
    assert describe_store(Settings()) == f"PostgreSQL (embedded, {tmp_path / 'kept' / 'pgdata'})"


def test_a_url_selects_that_server_and_its_label_never_shows_the_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LEXPLAIN_DATABASE_URL", "postgresql://lex:s3cret@db.example:5433/lexplain")
    settings = Settings()
    assert settings.store_kind == "postgres"
    label = describe_store(settings)
    assert label == "PostgreSQL lexplain@db.example:5433"
    assert "s3cret" not in label and "lex:" not in label
    assert "s3cret" not in repr(settings)


def test_lexplain_store_memory_selects_the_in_memory_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LEXPLAIN_STORE", "memory")
    settings = Settings()
    assert settings.store_kind == "memory"
    assert describe_store(settings) == "in-memory (lost on restart)"


@pytest.mark.parametrize("store", ["memory", "embedded"])
def test_a_url_together_with_another_store_is_refused_naming_both_settings(
    monkeypatch: pytest.MonkeyPatch, store: str
) -> None:
    monkeypatch.setenv("LEXPLAIN_DATABASE_URL", "postgresql://db.example/lexplain")
    monkeypatch.setenv("LEXPLAIN_STORE", store)
    with pytest.raises(ValidationError, match=r"LEXPLAIN_STORE.*LEXPLAIN_DATABASE_URL"):
        Settings()


def test_lexplain_store_postgres_without_a_url_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEXPLAIN_STORE", "postgres")
    with pytest.raises(ValidationError, match="needs LEXPLAIN_DATABASE_URL"):
        Settings()


def test_an_unknown_store_name_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEXPLAIN_STORE", "sqlite")
    with pytest.raises(ValidationError, match="store"):
        Settings()
