"""File names -> source ids and printable names.

Source ids: an uploaded file's id is its base name (browsers send only that; a directory part
in a name is either an old browser's full path or an attack, and not what the user calls the
file), with control and format characters (zero-width, bidi) removed and any separator
replaced; the command line passes the path relative to the folder it was given
(``reports/q1.txt``: what the user knows the file by; joining with "__", as before, turned
``sub/b.md`` into ``sub__b.md``). A BEIR/JSONL corpus gives each record its ``_id`` unchanged
(only control characters removed; a "/" stays, as in DBpedia ids), so relevance judgments
(qrels ``corpus-id``) match source ids; two corpora with overlapping ids belong in two
workspaces. An ``_id`` with a format character is refused with its line (two such ids print
alike and differ).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from pathlib import Path

from core.domain.chunks import MAX_SOURCE_ID_CHARS
from core.domain.names import FORMAT_CATEGORY

#: Unpaired UTF-16 surrogates (a str can hold them; UTF-8 and PostgreSQL cannot).
SURROGATES = re.compile(r"[\ud800-\udfff]")
#: Characters stripped from source ids: C0/C1 controls, bidi overrides and isolates.
ID_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def sanitise_source_id(name: str, *, keep_directories: bool = False) -> str:
    """A readable source id from a file name: no control or format characters, no separators.

    ``keep_directories`` keeps the directory parts, joined with "/", instead of dropping them
    (for folder loads, where two files may share a base name).
    """
    visible = "".join(c for c in name if unicodedata.category(c) != FORMAT_CATEGORY)
    cleaned = ID_UNSAFE.sub("", unicodedata.normalize("NFC", visible)).replace("\\", "/")
    parts = [part.strip() for part in cleaned.split("/")]
    parts = [part for part in parts if part and part not in (".", "..")]
    if not keep_directories:
        parts = parts[-1:]
    result = "/".join(parts).strip()
    if len(result) > MAX_SOURCE_ID_CHARS:
        suffix = Path(result).suffix[:16]
        result = result[: MAX_SOURCE_ID_CHARS - len(suffix) - 1] + "…" + suffix
    return result or "unnamed"


def printable_name(name: str) -> str:
    """``name`` as it can be shown and stored: lone surrogates become U+FFFD.

    A file name on disk that is not UTF-8 reaches Python with each bad byte as a lone
    surrogate (``os.fsdecode``), and a browser may send one; neither can be printed, sent to
    the page or stored, so messages and reports show the name with U+FFFD instead.
    """
    return SURROGATES.sub("\ufffd", name)


def name_problem(name: str) -> str | None:
    """Why a file name (or the path a source id is made from) cannot name a source, or None."""
    if SURROGATES.search(name):
        return (
            f"the file name {printable_name(name)!r} is not valid UTF-8 (the bad bytes are shown"
            " as \ufffd): rename the file — nothing stored"
        )
    return None


#: Unicode categories escaped when a name is printed to a terminal: controls (ESC starts a
#: terminal command), format characters (bidi overrides reorder what follows, zero-width ones
#: hide), separators other than space, surrogates and unassigned code points.
_UNPRINTABLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


@lru_cache(maxsize=4096)
def _escaped(char: str) -> str:
    if unicodedata.category(char) not in _UNPRINTABLE_CATEGORIES:
        return char
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def terminal_safe(text: str) -> str:
    """``text`` safe to print to a terminal or a log: every control, format (bidi, zero-width)
    and other invisible character shown as ``\\u…``, so a file name such as
    ``$'\\e]0;pwned\\a'`` or one holding U+202E cannot rewrite the operator's screen."""
    if text.isprintable():
        return text
    return "".join(_escaped(char) for char in text)
