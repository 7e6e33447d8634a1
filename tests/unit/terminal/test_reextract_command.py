"""``python -m core reextract``: the facade's re-extraction from a terminal, on PostgreSQL.

The counts printed are compared with the facade's ``entity_overview`` on the same store after
the command, never recomputed here.
"""

from __future__ import annotations

import asyncio
import io
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from core.domain.entities import ENTITY_KINDS
from core.service import LexplainService
from core.settings import Settings
from core.terminal import main

#: Two documents whose entities the tests count.
DOCS = {
    "a.txt": b"Andy Warhol painted soup in Paris for NASA.",
    "b.txt": b"The Louvre in Paris hosted Andy Warhol and Marcel Duchamp.",
}
WORKSPACE = "names"

pytestmark = pytest.mark.postgres


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(list(argv), stdout=out)
    return status, out.getvalue()


def rows(out: str) -> dict[str, tuple[int, int]]:
    """kind -> (before, after), from the printed table's body rows."""
    found: dict[str, tuple[int, int]] = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 3 and cells[0] in ENTITY_KINDS:
            found[cells[0]] = (int(cells[1].replace(",", "")), int(cells[2].replace(",", "")))
    return found


@pytest.fixture
def service(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[LexplainService]:
    """A schema of its own holding ``DOCS`` in ``WORKSPACE``, named by the environment as the
    command line's store is."""
    schema = f"t_{uuid.uuid4().hex}"
    monkeypatch.delenv("LEXPLAIN_STORE", raising=False)
    monkeypatch.setenv("LEXPLAIN_DATABASE_URL", database_url)
    monkeypatch.setenv("LEXPLAIN_DATABASE_SCHEMA", schema)
    facade = LexplainService.from_settings(
        Settings(database_url=database_url, database_schema=schema)
    )
    facade.create_workspace(WORKSPACE)
    facade.upload_files(list(DOCS.items()), workspace=WORKSPACE)
    yield facade
    facade.close()

    async def drop() -> None:
        conn = await asyncpg.connect(database_url)
        try:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await conn.close()

    asyncio.run(drop())


def test_reextract_prints_the_counts_by_kind_before_and_after(
    service: LexplainService, tmp_path: Path
) -> None:
    before = service.entity_overview(workspace=WORKSPACE).by_kind
    listed = tmp_path / "list.csv"
    listed.write_text("name,kind,aliases\nLouvre,place,\n", encoding="utf-8")
    status, out = run("reextract", "--workspace", WORKSPACE, "--entities", str(listed))
    assert status == 0, out
    after = service.entity_overview(workspace=WORKSPACE).by_kind
    assert rows(out) == {kind: (before[kind], after[kind]) for kind in ENTITY_KINDS}
    assert after["place"] == before["place"] + 1 and after["other"] == before["other"] - 1
    assert "2 passages of 2 sources read; the entities of 1 changed." in out
    status, out = run("reextract", "--workspace", WORKSPACE)
    assert status == 0, out
    assert rows(out) == {kind: (after[kind], before[kind]) for kind in ENTITY_KINDS}


def test_an_unknown_workspace_or_a_bad_list_changes_nothing_and_exits_two(
    service: LexplainService, tmp_path: Path
) -> None:
    before = service.entity_overview(workspace=WORKSPACE)
    status, out = run("reextract", "--workspace", "nobody")
    assert status == 2 and "there is no workspace 'nobody'" in out
    bad = tmp_path / "bad.csv"
    bad.write_text("Louvre,castle\n", encoding="utf-8")
    status, out = run("reextract", "--workspace", WORKSPACE, "--entities", str(bad))
    assert status == 2 and "nothing changed" in out and "line 1" in out
    status, out = run("reextract", "--workspace", WORKSPACE, "--entities", str(tmp_path / "no"))
    assert status == 2 and "nothing changed" in out
    assert service.entity_overview(workspace=WORKSPACE) == before
