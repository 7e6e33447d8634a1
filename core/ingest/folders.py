"""Which files under a folder given to ``load`` are read, and why each other one is not.

No file given to the loader is passed over in silence: a folder is read either as a BEIR
collection (its corpus.jsonl) or file by file, and whatever that leaves out is named with its
reason rather than ignored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from core.ingest.limits import DEFAULT_MAX_BYTES
from core.ingest.readers import SUPPORTED_EXTENSIONS, file_kind, read_file
from core.ingest.results import ReadResult


def read_beir_folder(folder: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> ReadResult:
    """The ``corpus.jsonl`` of a BEIR folder; source ids are the records' ``_id``."""
    corpus = folder / "corpus.jsonl"
    return read_file(str(corpus), corpus.read_bytes(), max_bytes=max_bytes)


def is_beir_folder(folder: Path) -> bool:
    """A folder holding a BEIR ``corpus.jsonl``."""
    return (folder / "corpus.jsonl").is_file()


def iter_supported_files(folder: Path) -> Iterator[Path]:
    """Files under ``folder`` (recursively, sorted) whose extension a reader handles."""
    for path in sorted(folder.rglob("*")):
        if path.is_file() and _skip_reason(path, folder, beir=False) is None:
            yield path


#: What a BEIR folder holds besides its corpus, and why it is not a document.
BEIR_COMPANIONS: dict[str, str] = {
    "queries.jsonl": "BEIR queries, not documents: use them on the Evaluate screen",
    "qrels.tsv": "BEIR judgments, not documents: use them on the Evaluate screen",
}


def _skip_reason(path: Path, folder: Path, *, beir: bool) -> str | None:
    """Why a file under ``folder`` is not read as documents, or None when it is."""
    relative = path.relative_to(folder)
    if any(part.startswith(".") for part in relative.parts):
        return "hidden file or folder (its name starts with a dot)"
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


def skipped_files(folder: Path) -> list[tuple[Path, str]]:
    """Every file under ``folder`` that loading it does not read, each with the reason.

    No file given to the loader is passed over in silence: a folder is read either as a
    BEIR collection (its corpus.jsonl) or file by file, and whatever that leaves out is
    named here rather than ignored.
    """
    beir = is_beir_folder(folder)
    skipped = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            reason = _skip_reason(path, folder, beir=beir)
            if reason is not None:
                skipped.append((path, reason))
    return skipped
