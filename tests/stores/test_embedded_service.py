"""The app's service on the default store, the embedded PostgreSQL: what it stores survives.

"Restart" here is what a user does: close the app (the service closes its store, which
releases the server, and the last user's release stops it), start it again on the same
data folder (a new server process, the same files), and look.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.service import LexplainService, StoreUnreachable
from core.settings import Settings
from core.stores.postgres import embedded

ROOT = Path(__file__).resolve().parents[2]
#: The first Cranfield records: a real corpus, small enough to load twice per run.
SAMPLE_LINES = 150
QUERIES = ("aeroelastic models of heated high speed aircraft", "boundary layer transition")


@pytest.fixture
def settings(embedded_data_dir: Path) -> Settings:
    return Settings(data_dir=embedded_data_dir)


def cranfield_part() -> bytes:
    lines = (ROOT / "data" / "cranfield" / "corpus.jsonl").read_bytes().splitlines()
    return b"\n".join(lines[:SAMPLE_LINES]) + b"\n"


def what_a_user_sees(service: LexplainService) -> tuple[object, ...]:
    """Workspaces, the sources and corpus figures of one, and full search results."""
    return (
        service.list_workspaces(),
        service.list_sources(workspace="kept"),
        service.corpus(workspace="kept"),
        [service.search(q, workspace="kept").model_dump_json() for q in QUERIES],
    )


def test_a_restarted_service_finds_the_same_workspaces_passages_and_results(
    settings: Settings,
) -> None:
    assert settings.store_kind == "embedded"
    first = LexplainService.from_settings(settings)
    try:
        assert first.store_label.startswith("PostgreSQL (embedded, ")
        (report,) = first.upload_files(
            [("cranfield-part.jsonl", cranfield_part())], workspace="kept"
        )
        assert report.error is None and report.passages_written > 100
        first.create_workspace("empty one")
        pid = embedded.running(settings.data_dir)
        assert pid is not None
        before = what_a_user_sees(first)
    finally:
        first.close()
    assert embedded.running(settings.data_dir) is None, "closing the app left the server up"

    second = LexplainService.from_settings(settings)
    try:
        running = embedded.running(settings.data_dir)
        assert running is not None and running.pid != pid.pid
        after = what_a_user_sees(second)
    finally:
        second.close()
    assert "kept" in before[0] and "empty one" in before[0]
    assert after == before


def test_a_data_folder_the_embedded_server_cannot_use_stops_the_service_in_plain_words(
    settings: Settings,
) -> None:
    pgdata = settings.data_dir / "pgdata"
    pgdata.mkdir(parents=True)
    (pgdata / "PG_VERSION").write_text("21\n")
    with pytest.raises(StoreUnreachable, match="PostgreSQL 21, newer than"):
        LexplainService.from_settings(settings)
    assert sorted(p.name for p in pgdata.iterdir()) == ["PG_VERSION"]


def test_wrong_store_settings_stop_the_service_naming_the_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LEXPLAIN_STORE", "postgres")
    monkeypatch.delenv("LEXPLAIN_DATABASE_URL", raising=False)
    with pytest.raises(StoreUnreachable, match="LEXPLAIN_STORE=postgres needs"):
        LexplainService.from_settings()
