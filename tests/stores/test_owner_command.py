"""``python -m core owner NAME EMAIL`` against a real PostgreSQL: ownerless workspaces get one."""

from __future__ import annotations

import asyncio
import io

import pytest

from core.domain.chunks import workspace_tenant_id
from core.stores.port import Workspace
from core.stores.postgres import PostgresChunkStore
from core.terminal import main
from core.terminal.common import EXIT_UNUSABLE


async def run(*argv: str) -> tuple[int, str]:
    """The command as a terminal runs it (its own event loop, so in a thread of its own)."""
    out = io.StringIO()
    status = await asyncio.to_thread(main, list(argv), stdout=out)
    return status, out.getvalue()


@pytest.fixture
def url(database_url: str, pg_schema: str) -> str:
    return f"{database_url}{'&' if '?' in database_url else '?'}search_path={pg_schema}"


async def test_a_workspace_made_without_sign_in_is_given_an_owner_from_the_command_line(
    pg_store: PostgresChunkStore, url: str
) -> None:
    tenant = workspace_tenant_id("legacy")
    await pg_store.upsert_workspace(Workspace(tenant_id=tenant, name="legacy"))
    status, out = await run("owner", "legacy", "Ada@Example.org", "--database-url", url)
    assert status == 0, out
    assert "'legacy' is owned by ada@example.org" in out
    found = await pg_store.get_workspace(tenant)
    assert found is not None and found.owner == "ada@example.org"


@pytest.mark.parametrize(
    ("name", "email", "problem"),
    [("never-made", "ada@example.org", "there is no workspace"), ("x", "ada", "not an e-mail")],
)
async def test_an_unknown_workspace_or_a_bad_address_is_refused_in_plain_words(
    pg_store: PostgresChunkStore, url: str, name: str, email: str, problem: str
) -> None:
    await pg_store.upsert_workspace(Workspace(tenant_id=workspace_tenant_id("x"), name="x"))
    status, out = await run("owner", name, email, "--database-url", url)
    assert status == EXIT_UNUSABLE and problem in out
    found = await pg_store.get_workspace(workspace_tenant_id("x"))
    assert found is not None and found.owner is None
