"""Shared fixtures: the PostgreSQL servers the store tests run against; hypothesis settings.

The server is never optional: a missing DATABASE_URL fails the Postgres tests with
instructions instead of skipping them, because a skipped store suite in CI is a
suite that silently stopped guarding anything.

Two servers: the Debian PostgreSQL 15 that scripts/test starts (``DATABASE_URL``), and the
embedded PostgreSQL 18 from the wheel that ``scripts/run`` uses by default, started once per
session in a temporary folder. Only the store compliance suite and the parity tests run on
both (a module opts in by overriding ``database_url`` with ``both_database_urls``): they are
what holds both major versions identical to the in-memory reference; everything else runs once,
on the CI server, to keep the suite's time in check.

A third server, a Citus cluster (a coordinator and two workers from scripts/citus.sh), is
``citus_database_url``. Outside CI it is skipped when not started, since it needs a Citus
build; in CI (``CI`` set) a missing cluster fails, for the same reason as above.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import shutil
import tempfile
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, settings

from core.service.runner import StoreRunner
from core.stores.postgres import PostgresChunkStore, embedded

# Properties are checked for what they assert, not how fast one example runs: a per-example
# deadline on a shared 2-core CI machine fails correct code at random.
settings.register_profile(
    "lexplain", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("lexplain")

#: Every table the PostgreSQL store creates, emptied between tests of one module; those that
#: reference ``workspaces`` come before it, so deleting in this order needs no cascade.
STORE_TABLES = (
    "postings, segments, passages, term_dead, tenant_counters, entities, workspace_members, "
    "query_sets, judgments, saved_runs, workspaces, workspace_names"
)
#: The statements that empty them, in one round trip (see ``pg_store`` for why not TRUNCATE).
EMPTY_STORE_TABLES = "; ".join(f"DELETE FROM {t}" for t in STORE_TABLES.split(", "))  # noqa: S608


@contextlib.contextmanager
def server_data_dir() -> Iterator[Path]:
    """A data folder for an embedded server, stopped and removed afterwards.

    Outside pytest's ``tmp_path`` on purpose: pytest makes ``/tmp/pytest-of-<user>`` 0700 again
    at every session start, so on a machine where others run pytest too, a server running as
    ``lexplain-pg`` (as root) loses its way into its own data folder in the middle of a test.
    """
    folder = Path(tempfile.mkdtemp(prefix="lexplain-test-"))
    data_dir = folder / "data"
    try:
        yield data_dir
    finally:
        embedded.stop(data_dir)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def embedded_data_dir() -> Iterator[Path]:
    """A fresh data folder for the embedded server (see ``server_data_dir``)."""
    with server_data_dir() as data_dir:
        yield data_dir


@pytest.fixture(scope="session", autouse=True)
def private_data_dir() -> Iterator[Path]:
    """No test (nor a server it starts) ever touches the project's own ``.lexplain``."""
    with server_data_dir() as data_dir:
        patch = pytest.MonkeyPatch()
        patch.setenv("LEXPLAIN_DATA_DIR", str(data_dir))
        yield data_dir
        patch.undo()


@pytest.fixture(scope="session", autouse=True)
def services_close_before_their_servers(private_data_dir: Path) -> Iterator[None]:
    """Every service a test left open is closed at the end of the session, before the
    embedded servers stop (this fixture's teardown runs before ``private_data_dir``'s).

    A service closes itself at interpreter exit (``StoreRunner`` registers ``close`` with
    atexit), but the session's servers stop earlier, in fixture teardown: a service still open
    then (one Streamlit's ``get_service`` cache or a CLI call kept) holds a pool whose server
    is gone, and asyncpg printed "Failed to restore the pool connection floor" tracebacks after
    the summary. Rejected: closing in each test that opens one (a new test forgets it again).
    """
    opened: weakref.WeakSet[StoreRunner] = weakref.WeakSet()
    original = StoreRunner.__init__

    def tracked(self: StoreRunner, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        opened.add(self)

    patch = pytest.MonkeyPatch()
    patch.setattr(StoreRunner, "__init__", tracked)
    yield
    patch.undo()
    for runner in list(opened):
        runner.close()  # idempotent: a closed one returns at once


@pytest.fixture(scope="session")
def ci_database_url() -> str:
    """The Debian PostgreSQL that scripts/test starts (DATABASE_URL)."""
    url = os.environ.get("DATABASE_URL", "")
    if not url:
        pytest.fail(
            "DATABASE_URL is not set, so the PostgreSQL tests cannot run. Use scripts/test "
            "(it starts a throwaway PostgreSQL itself), or start one in your shell with "
            "`source .ci/pg.sh && pg_start` (which exports DATABASE_URL) and rerun pytest.",
            pytrace=False,
        )
    return url


@pytest.fixture(scope="session")
def stock_database_url() -> tuple[str, Path]:
    """The stock-settings PostgreSQL scripts/test starts beside the CI one (max_connections 20,
    initdb's settings otherwise) and its log: ``LEXPLAIN_TEST_STOCK_URL``/``_LOG``."""
    url = os.environ.get("LEXPLAIN_TEST_STOCK_URL", "")
    log = os.environ.get("LEXPLAIN_TEST_STOCK_LOG", "")
    if not url or not log:
        pytest.fail(
            "LEXPLAIN_TEST_STOCK_URL is not set, so the stock-server tests cannot run. Use "
            "scripts/test (it starts one beside the CI server), or in your shell "
            "`source .ci/pg.sh && pg_start_stock` and rerun pytest.",
            pytrace=False,
        )
    return url, Path(log)


@pytest.fixture(scope="session")
def citus_database_url() -> str:
    """The coordinator of the Citus cluster scripts/test starts (LEXPLAIN_TEST_CITUS_URL)."""
    url = os.environ.get("LEXPLAIN_TEST_CITUS_URL", "")
    if url:
        return url
    how = (
        "LEXPLAIN_TEST_CITUS_URL is not set, so the Citus tests cannot run. Use scripts/test "
        "(it builds Citus once per machine and starts a cluster), or start one in your shell "
        "with `source scripts/citus.sh && citus_start` and rerun pytest."
    )
    if os.environ.get("CI"):
        pytest.fail(how, pytrace=False)
    pytest.skip(how)


@pytest.fixture(scope="session")
def database_url(ci_database_url: str) -> str:
    """The server a PostgreSQL test runs on; the store suites override it to run on both."""
    return ci_database_url


@pytest.fixture(scope="session")
def embedded_database_url() -> Iterator[str]:
    """The embedded PostgreSQL 18, in a temporary folder, tuned like the CI server (no fsync,
    no full-page writes: nothing here must survive a crash; with them the Cranfield parity
    test took about twice as long as on the CI server)."""
    with server_data_dir() as data_dir:
        server = embedded.acquire(
            data_dir, durable=False, settings={"max_connections": "200", "full_page_writes": "off"}
        )
        yield server.url
        embedded.release(data_dir)


@pytest.fixture(
    scope="session", params=["postgresql-15-ci", "embedded-postgresql-18", "citus-13-cluster"]
)
def both_database_urls(request: pytest.FixtureRequest) -> str:
    """Each server in turn: the CI's Debian PostgreSQL, the embedded one, the Citus cluster."""
    if request.param == "embedded-postgresql-18":
        return str(request.getfixturevalue("embedded_database_url"))
    if request.param == "citus-13-cluster":
        return str(request.getfixturevalue("citus_database_url"))
    return str(request.getfixturevalue("ci_database_url"))


async def _drop_schema(url: str, schema: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def pg_schema(database_url: str) -> Iterator[str]:
    """A fresh schema per test module (created by the store), dropped at the end."""
    schema = f"t_{uuid.uuid4().hex}"
    yield schema
    asyncio.run(_drop_schema(database_url, schema))


@pytest.fixture
async def pg_store(database_url: str, pg_schema: str) -> AsyncIterator[PostgresChunkStore]:
    """A store on the module's schema, with every table empty.

    Emptied by DELETE, not TRUNCATE: on the Citus cluster a TRUNCATE of the twelve distributed
    tables took 0.55 s per test (most of each compliance test's setup, ~50 s a run), a DELETE
    of the few rows a test leaves 0.12 s; on PostgreSQL 15, 0.08 s against 0.004 s.
    """
    store = await PostgresChunkStore.connect(database_url, schema=pg_schema)
    conn = await asyncpg.connect(database_url, server_settings={"search_path": pg_schema})
    try:
        await conn.execute(EMPTY_STORE_TABLES)
    finally:
        await conn.close()
    yield store
    await store.close()


#: A file to append each test's CPU seconds to (set it to rank the suite's cost by CPU, not by
#: the wall time ``--durations`` gives, which on a shared 2-core machine is mostly waiting).
CPU_REPORT = os.environ.get("LEXPLAIN_TEST_CPU_REPORT", "")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[object]:
    """With ``LEXPLAIN_TEST_CPU_REPORT`` set: a line per test, "seconds nodeid", its setup, call
    and teardown's CPU in this process plus the child processes it waited for (a server a test
    leaves running, like the embedded one, is not counted)."""
    if not CPU_REPORT:
        return (yield)
    before = _cpu_seconds()
    try:
        return (yield)
    finally:
        with open(CPU_REPORT, "a", encoding="utf-8") as report:
            report.write(f"{_cpu_seconds() - before:.2f} {item.nodeid}\n")


def _cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime
