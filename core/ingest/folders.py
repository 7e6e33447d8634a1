"""Paths given to ``load`` -> files read one at a time, and why each other entry is not read.

No entry given to the loader is passed over in silence: a folder is read either as a BEIR
collection (its corpus.jsonl) or file by file, and whatever that leaves out is named with its
reason. The loader stays inside what it was given: a link under a folder that points out of
it is refused (``passwd.txt -> /etc/passwd`` was stored), a link to a folder is not followed
(no loops), and named pipes, sockets and devices are listed and never opened (opening a FIFO
for reading blocks until someone writes to it). Rejected: ``Path.rglob`` with ``is_file()``,
which follows links wherever they point and silently drops everything that is not a file.

Files are opened without following a last link (``O_NOFOLLOW``; a link inside the folder is
opened at its resolved target) and without blocking (``O_NONBLOCK``), then checked again with
``fstat`` (a regular file, its size within the limit) before a byte is read, so a file swapped
for a pipe or a 3 GB file between listing and reading is refused, not read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from core.ingest.indexing import UploadResult, upload_parts
from core.ingest.limits import DEFAULT_MAX_BYTES
from core.ingest.names import printable_name, sanitise_source_id
from core.ingest.readers import SUPPORTED_EXTENSIONS, file_kind

#: What a BEIR folder holds besides its corpus, and why it is not a document.
BEIR_COMPANIONS: dict[str, str] = {
    "queries.jsonl": "BEIR queries, not documents: use them on the Evaluate screen",
    "qrels.tsv": "BEIR judgments, not documents: use them on the Evaluate screen",
}
#: Why an entry that is neither a file nor a folder is not read, by its file-type bits.
_SPECIAL: tuple[tuple[int, str], ...] = (
    (stat.S_IFIFO, "a named pipe (FIFO), not a file: never opened"),
    (stat.S_IFSOCK, "a socket, not a file: never opened"),
    (stat.S_IFCHR, "a character device, not a file: never opened"),
    (stat.S_IFBLK, "a block device, not a file: never opened"),
)


def is_beir_folder(folder: Path) -> bool:
    """A folder holding a BEIR ``corpus.jsonl`` (a regular file, not a link)."""
    try:
        return stat.S_ISREG(os.lstat(folder / "corpus.jsonl").st_mode)
    except OSError:
        return False


def special_reason(mode: int) -> str | None:
    """Why an entry with ``st_mode`` ``mode`` is not a readable file, or None for a file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    kind = stat.S_IFMT(mode)
    return next((why for bits, why in _SPECIAL if bits == kind), "not a regular file")


def _entries(folder: Path) -> Iterator[Path]:
    """Every entry under ``folder`` but folders, sorted, links included (never followed)."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        here = Path(root)
        linked = [d for d in dirs if (here / d).is_symlink()]
        dirs[:] = sorted(d for d in dirs if d not in linked)
        for name in sorted([*files, *linked]):
            yield here / name


def entry_reason(path: Path, folder: Path, *, beir: bool) -> str | None:
    """Why an entry under ``folder`` is not read as documents, or None when it is."""
    relative = path.relative_to(folder)
    if any(part.startswith(".") for part in relative.parts):
        return "hidden file or folder (its name starts with a dot)"
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            target = path.resolve()
            if not target.is_relative_to(folder.resolve()):
                shown = printable_name(str(target))
                return f"refused: a link to {shown}, outside the folder given — not followed"
            mode = os.stat(path).st_mode
            if stat.S_ISDIR(mode):
                return "a link to a folder: not followed"
    except (OSError, RuntimeError) as exc:  # a dangling link, a loop of links
        return f"cannot be opened: {getattr(exc, 'strerror', None) or exc}"
    special = special_reason(mode)
    if special is not None:
        return special
    if beir:
        if relative.as_posix() == "corpus.jsonl":
            return None
        if relative.as_posix() in BEIR_COMPANIONS or relative.parts[0] == "qrels":
            return BEIR_COMPANIONS.get(relative.as_posix(), BEIR_COMPANIONS["qrels.tsv"])
        return (
            "not read: in a BEIR folder only corpus.jsonl holds the documents;"
            " name this file on the command line to load it too"
        )
    if file_kind(path.name) is None:
        supported = ", ".join(sorted({ext.lstrip(".") for ext in SUPPORTED_EXTENSIONS}))
        return f"not read: unsupported file type (supported: {supported})"
    return None


def iter_supported_files(folder: Path) -> Iterator[Path]:
    """Files under ``folder`` (recursively, sorted) that loading it reads."""
    beir = is_beir_folder(folder)
    for path in _entries(folder):
        if entry_reason(path, folder, beir=beir) is None:
            yield path


def skipped_files(folder: Path) -> list[tuple[Path, str]]:
    """Every entry under ``folder`` that loading it does not read, each with the reason."""
    beir = is_beir_folder(folder)
    found = ((path, entry_reason(path, folder, beir=beir)) for path in _entries(folder))
    return [(path, reason) for path, reason in found if reason is not None]


def read_paths(
    paths: Sequence[Path], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[UploadResult]:
    """Every path read lazily, a file (or a JSONL part) at a time: a file, a folder
    (recursively, by extension, source id = the path relative to it) or a BEIR folder."""
    for path in paths:
        shown = printable_name(str(path))
        try:
            mode = os.stat(path).st_mode
        except OSError:
            yield UploadResult(file_name=shown, error="no such file or folder")
            continue
        if not stat.S_ISDIR(mode):
            yield from read_path(path, None, max_bytes=max_bytes)
            continue
        files = iter_supported_files(path)
        first = next(files, None)
        if first is None:
            yield UploadResult(file_name=shown, error="no readable files in this folder")
            continue
        for file in _chain(first, files):
            relative = file.relative_to(path).as_posix()
            yield from read_path(
                file, sanitise_source_id(relative, keep_directories=True), max_bytes=max_bytes
            )


def _chain(first: Path, rest: Iterator[Path]) -> Iterator[Path]:
    yield first
    yield from rest


def read_path(
    path: Path, source_id: str | None, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Iterator[UploadResult]:
    """One file on disk, opened safely, its size taken before reading (``read_parts`` refuses a
    file too large from it; a JSONL corpus is bounded per record instead, as it is read a line
    at a time); shown by its path, with bytes of the name that are not UTF-8 as U+FFFD (a name
    the readers then refuse in plain words)."""
    shown = printable_name(str(path))
    target = path.resolve() if path.is_symlink() else path
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        yield UploadResult(file_name=shown, error=f"cannot be opened: {exc.strerror}")
        return
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(fd)
        special = special_reason(info.st_mode)
        if special is not None:
            yield UploadResult(file_name=shown, error=f"not read: {special}")
            return
        yield from upload_parts(
            path.name, stream, info.st_size, shown=shown, source_id=source_id,
            max_bytes=max_bytes, per_record=True,
        )  # fmt: skip
