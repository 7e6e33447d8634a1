"""The embedded PostgreSQL's lifecycle, on real servers from the wheel, in temporary folders.

Every failure case checks two things: the message says what is wrong in plain words, and what
was already in the data directory is byte-for-byte still there.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from core.stores.postgres import embedded
from core.stores.postgres.embedded import EmbeddedServerError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def data_dir(embedded_data_dir: Path) -> Path:
    """A data folder whose server, if a test leaves one running, is stopped afterwards."""
    return embedded_data_dir


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


async def query(url: str, sql: str) -> object:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval(sql)
    finally:
        await conn.close()


def test_a_new_data_folder_gets_a_postgresql_18_that_stops_with_its_last_user(
    data_dir: Path,
) -> None:
    server = embedded.acquire(data_dir, durable=False)
    version = asyncio.run(query(server.url, "SHOW server_version_num"))
    assert int(str(version)) // 10000 == embedded.PG_MAJOR == 18
    assert (data_dir / "pgdata" / "PG_VERSION").read_text().strip() == "18"
    assert embedded.users(data_dir) == [os.getpid()]
    assert embedded.release(data_dir) is True
    assert embedded.running(data_dir) is None
    assert embedded.users(data_dir) == []


def test_one_process_acquiring_twice_keeps_the_server_until_its_last_release(
    data_dir: Path,
) -> None:
    first = embedded.acquire(data_dir, durable=False)
    second = embedded.acquire(data_dir, durable=False)
    assert first == second
    assert embedded.release(data_dir) is False
    assert embedded.running(data_dir) is not None
    assert embedded.release(data_dir) is True


HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from core.stores.postgres import embedded
    server = embedded.acquire(Path(sys.argv[1]), durable=False)
    print(server.pid, flush=True)
    sys.stdin.read()  # hold the server until the test closes our stdin
    """
)


def holder(data_dir: Path) -> tuple[subprocess.Popen[str], int]:
    """Another process using the server on ``data_dir``; returns it and the postmaster's pid."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data_dir)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip().isdigit(), f"holder failed: {line!r}"
    return proc, int(line)


def test_two_processes_share_one_server_and_the_last_to_leave_stops_it(data_dir: Path) -> None:
    other, other_pid = holder(data_dir)
    mine = embedded.acquire(data_dir, durable=False)
    assert mine.pid == other_pid
    assert sorted(embedded.users(data_dir)) == sorted([os.getpid(), other.pid])
    assert embedded.release(data_dir) is False, "stopped while another process used it"
    assert embedded.running(data_dir) is not None
    assert other.stdin is not None
    other.stdin.close()
    assert other.wait(30) == 0
    assert embedded.running(data_dir) is None, "the last user's exit did not stop the server"


def test_a_user_killed_without_cleaning_up_does_not_keep_the_server_forever(
    data_dir: Path,
) -> None:
    other, _ = holder(data_dir)
    other.kill()
    other.wait(10)
    embedded.acquire(data_dir, durable=False)
    assert embedded.users(data_dir) == [os.getpid()]
    assert embedded.release(data_dir) is True


def test_a_crashed_server_is_recovered_with_its_data_not_wiped(data_dir: Path) -> None:
    server = embedded.acquire(data_dir)

    async def write() -> None:
        conn = await asyncpg.connect(server.url)
        try:
            await conn.execute("CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)")
        finally:
            await conn.close()

    asyncio.run(write())
    os.kill(server.pid, signal.SIGKILL)  # a power cut, as the server sees it
    deadline = time.monotonic() + 10
    while embedded.running(data_dir) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    embedded.release(data_dir)
    again = embedded.acquire(data_dir)
    assert again.pid != server.pid
    assert asyncio.run(query(again.url, "SELECT x FROM kept")) == 42
    embedded.release(data_dir)


@pytest.mark.parametrize(("major", "words"), [(19, "newer than"), (16, "Dump it")])
def test_a_data_folder_of_another_major_version_is_refused_and_left_untouched(
    data_dir: Path, major: int, words: str
) -> None:
    pgdata = data_dir / "pgdata"
    pgdata.mkdir(parents=True)
    (pgdata / "PG_VERSION").write_text(f"{major}\n")
    (pgdata / "base").mkdir()
    (pgdata / "base" / "16384").write_bytes(b"someone's table")
    before = snapshot(pgdata)
    with pytest.raises(EmbeddedServerError) as caught:
        embedded.acquire(data_dir, durable=False)
    message = str(caught.value)
    assert f"PostgreSQL {major}" in message and words in message
    assert "Nothing was changed" in message
    assert snapshot(pgdata) == before
    assert embedded.users(data_dir) == []


def test_a_folder_with_foreign_files_is_neither_initialised_nor_deleted(data_dir: Path) -> None:
    pgdata = data_dir / "pgdata"
    pgdata.mkdir(parents=True)
    (pgdata / "notes.txt").write_text("mine")
    with pytest.raises(EmbeddedServerError, match=r"no PostgreSQL data .*will not delete"):
        embedded.acquire(data_dir, durable=False)
    assert snapshot(pgdata) == {"notes.txt": b"mine"}


def test_a_data_folder_that_cannot_be_written_is_refused_in_plain_words(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(
        EmbeddedServerError, match=r"Cannot write to the data folder .*LEXPLAIN_DATA"
    ):
        embedded.acquire(blocker / "data", durable=False)
    assert blocker.read_text() == "not a folder"


def test_too_little_free_disk_is_refused_before_anything_is_written(data_dir: Path) -> None:
    with pytest.raises(EmbeddedServerError, match=r"MB free.*Free some space"):
        embedded.acquire(data_dir, durable=False, min_free_bytes=2**62)
    assert not (data_dir / "pgdata").exists()


def test_a_socket_held_by_another_server_is_reported_and_the_data_survives(
    data_dir: Path,
) -> None:
    server = embedded.acquire(data_dir, durable=False)
    asyncio.run(query(server.url, "CREATE TABLE kept AS SELECT 7 AS x"))
    assert embedded.release(data_dir) is True
    # A socket lock file naming a live process of the server's user is what another server
    # using this socket leaves (a process of another user is taken as a stale lock).
    user = embedded._server_user()
    as_server: dict[str, Any] = {"user": user, "group": user, "extra_groups": []} if user else {}
    other = subprocess.Popen(["sleep", "60"], **as_server)
    lock = server.socket_dir / f"{embedded.SOCKET_FILE}.lock"
    lock.write_text(f"{other.pid}\n{data_dir / 'elsewhere'}\n")
    try:
        with pytest.raises(EmbeddedServerError, match=r"socket.*nothing stored was changed"):
            embedded.acquire(data_dir, durable=False)
    finally:
        other.kill()
        other.wait()
    lock.unlink()
    again = embedded.acquire(data_dir, durable=False)
    assert asyncio.run(query(again.url, "SELECT x FROM kept")) == 7
    embedded.release(data_dir)


def test_the_wheel_still_ships_its_binaries_where_this_module_looks() -> None:
    version = subprocess.run(
        [str(embedded.bin_dir() / "postgres"), "--version"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"PostgreSQL) {embedded.PG_MAJOR}." in version


def test_libpq_variables_in_the_environment_do_not_move_the_server(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGPORT", "51999")  # scripts/test exports these for the CI server
    monkeypatch.setenv("PGHOST", "127.0.0.1")
    server = embedded.acquire(data_dir, durable=False)
    assert (server.socket_dir / embedded.SOCKET_FILE).exists()
    assert embedded.running(data_dir) == server
    assert asyncio.run(query(server.url, "SELECT 1")) == 1
    assert embedded.release(data_dir) is True


def test_a_full_disk_reported_by_postgresql_becomes_plain_words(tmp_path: Path) -> None:
    # A full disk cannot be provoked here without mounting a filesystem; this holds the
    # translation of PostgreSQL's own message (the free-space check above runs for real).
    output = (
        '2026-12-01 01:00:00 UTC [42] PANIC:  could not write to file "pg_wal/xlogtemp.42": '
        "No space left on device\n"
    )
    error = embedded._explain_failure("start", output, tmp_path, tmp_path / "none.log")
    assert str(error).startswith(
        f"The embedded PostgreSQL could not start: the disk holding {tmp_path} is full."
    )
    assert "Free some space" in str(error) and "nothing stored was changed" in str(error)


def test_a_data_folder_too_deep_for_a_socket_path_gets_its_socket_in_the_temp_folder(
    embedded_data_dir: Path,
) -> None:
    data_dir = embedded_data_dir / ("deep-" * 20)
    assert len(str(data_dir / "pgdata" / embedded.SOCKET_FILE)) > embedded.MAX_SOCKET_PATH
    server = embedded.acquire(data_dir, durable=False)
    try:
        assert server.socket_dir != data_dir / "pgdata"
        assert len(str(server.socket_dir / embedded.SOCKET_FILE)) <= embedded.MAX_SOCKET_PATH
        assert asyncio.run(query(server.url, "SELECT 1")) == 1
    finally:
        assert embedded.release(data_dir) is True


def test_the_server_settings_follow_the_machines_memory_within_their_bounds() -> None:
    small = embedded.machine_settings(2 * 2**30)
    assert small["shared_buffers"] == "256MB" and small["work_mem"] == "8MB"
    large = embedded.machine_settings(256 * 2**30)
    assert large["shared_buffers"] == "2048MB" and large["work_mem"] == "64MB"
    assert embedded.machine_settings(512 * 2**20)["shared_buffers"] == "128MB"


def test_a_started_server_runs_with_the_settings_sized_for_this_machine(data_dir: Path) -> None:
    server = embedded.acquire(data_dir, durable=False, settings={"work_mem": "5MB"})
    try:
        wanted = embedded.machine_settings()
        shared = asyncio.run(
            query(
                server.url,
                "SELECT setting::bigint * 8 / 1024 || 'MB' "
                "FROM pg_settings WHERE name = 'shared_buffers'",
            )
        )
        assert shared == wanted["shared_buffers"]
        assert asyncio.run(query(server.url, "SHOW work_mem")) == "5MB"  # the caller's wins
    finally:
        embedded.release(data_dir)


def test_a_prepared_folder_holds_a_cluster_and_no_server_and_the_next_acquire_only_starts_it(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert embedded.prepare(data_dir) is True
    assert (data_dir / "pgdata" / "PG_VERSION").read_text().strip() == "18"
    assert embedded.running(data_dir) is None
    assert embedded.prepare(data_dir) is False  # made once

    def no_second_initdb(*args: Any) -> None:
        raise AssertionError("initdb ran again on a prepared folder")

    monkeypatch.setattr(embedded, "_initdb", no_second_initdb)
    server = embedded.acquire(data_dir, durable=False)
    assert asyncio.run(query(server.url, "SELECT 1")) == 1
    assert embedded.release(data_dir) is True


def test_preparing_a_folder_whose_server_runs_changes_nothing(data_dir: Path) -> None:
    embedded.acquire(data_dir, durable=False)
    try:
        before = (data_dir / "pgdata" / "PG_VERSION").stat().st_mtime_ns
        assert embedded.prepare(data_dir) is False
        assert (data_dir / "pgdata" / "PG_VERSION").stat().st_mtime_ns == before
    finally:
        embedded.release(data_dir)


def test_only_the_embedded_store_is_prepared_and_bad_settings_are_left_to_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.settings import Settings
    from core.stores.select import prepare_store

    folder = tmp_path / "data"
    assert prepare_store(Settings(store="memory", data_dir=folder)) is False
    monkeypatch.setenv("LEXPLAIN_STORE", "no-such-store")
    assert prepare_store() is False
    assert not folder.exists()


def test_the_app_starts_by_preparing_its_store_beside_streamlit() -> None:
    run = (ROOT / "scripts" / "run").read_text()
    assert run.index("-m core.stores.select") < run.index("-m streamlit run")
    assert "core.stores.select >/dev/null 2>&1 &)" in run  # in the background, detached
