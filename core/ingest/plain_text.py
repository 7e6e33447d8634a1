"""Bytes of a text file -> str: byte-order marks, UTF-8, legacy code pages, binary refused.

Recoveries that are safe and reported rather than refused (each adds a note): NUL characters
are removed and lone surrogates become U+FFFD (neither can be stored, see
``core.domain.chunks.storable_text_problem``, and neither carries meaning in text); a few
invalid bytes in otherwise UTF-8 text become U+FFFD; text that is not UTF-8 at all is decoded
with the encoding charset-normalizer detects (Latin-1, cp1252, UTF-16 ...). Rejected: refusing
any file that is not clean UTF-8, which turned away most files saved by older Windows tools.
"""

from __future__ import annotations

import re
from typing import Any

from core.ingest.names import SURROGATES
from core.ingest.results import ReadError

#: Share of control characters above which decoded "text" is taken for binary data.
BINARY_CONTROL_SHARE = 0.02
#: Share of NUL characters above which decoded "text" is taken for binary data.
BINARY_NUL_SHARE = 0.05
#: Characters sampled from each of the start, middle and end of a long text for the binary test.
_SAMPLE_CHARS = 65536
#: Control characters that do not occur in text (NUL counted separately), and U+FFFD.
_CONTROLS = re.compile(r"[\x01-\x08\x0e-\x1f\x7f-\x9f\ufffd]")
#: Text made only of ASCII, Latin-1 letters and punctuation, and Windows-1252 typography.
_WESTERN_TEXT = re.compile(r"[\x00-\x7f\u00a0-\u00ff‘’“”–—…€•]*")
#: Encodings preferred when charset-normalizer finds them as plausible as its first choice.
_WESTERN = ("cp1252", "latin_1", "iso8859_15")
#: Share of invalid UTF-8 sequences (per character) below which text holding well-formed
#: multi-byte UTF-8 is read as UTF-8 with U+FFFD, not re-read in a legacy code page.
MOSTLY_UTF8_BAD_SHARE = 0.01
#: One invalid UTF-8 byte sequence after lenient decoding (the decoder may emit several U+FFFD).
_REPLACEMENT_RUNS = re.compile("\ufffd+")
#: Any non-ASCII character (to count well-formed multi-byte UTF-8 sequences).
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
#: Byte-order marks and the codec each announces (longest first: UTF-32 LE starts like UTF-16).
BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


def clean_text(text: str) -> tuple[str, list[str]]:
    """``text`` without NUL characters and with lone surrogates replaced, plus notes saying so."""
    notes: list[str] = []
    nuls = text.count("\x00")
    if nuls:
        text = text.replace("\x00", "")
        notes.append(f"removed {nuls} NUL character{'s' if nuls != 1 else ''}")
    if text.isascii():  # no surrogate to look for (a flag of the string: O(1))
        return text, notes
    text, surrogates = SURROGATES.subn("\ufffd", text)
    if surrogates:
        notes.append("replaced unpaired UTF-16 surrogates with U+FFFD")
    return text, notes


def _looks_binary(text: str) -> bool:
    """Too many control characters (sampled: the start, middle and end of long texts)."""
    if len(text) > 3 * _SAMPLE_CHARS:
        middle = len(text) // 2
        text = text[:_SAMPLE_CHARS] + text[middle : middle + _SAMPLE_CHARS] + text[-_SAMPLE_CHARS:]
    if not text:
        return False
    nuls = text.count("\x00")
    others = len(_CONTROLS.findall(text))
    # A handful of stray control bytes is damage, not binary data (NULs are removed later).
    too_many_controls = others > 2 and others / len(text) > BINARY_CONTROL_SHARE
    return too_many_controls or (nuls > 2 and nuls / len(text) > BINARY_NUL_SHARE)


def decode_text(data: bytes) -> tuple[str, list[str]]:
    """Bytes of a text file -> str, with notes on how it was decoded. Raises ReadError."""
    for bom, codec in BOMS:
        if data.startswith(bom):
            text = data[len(bom) :].decode(codec, errors="replace")
            notes = [f"decoded as {codec.upper()} (byte-order mark)"] if codec != "utf-8" else []
            return checked_text(text, notes)
    try:
        text = data.decode("utf-8")
        if not _looks_binary(text):
            return text, []
    except UnicodeDecodeError:
        lenient = data.decode("utf-8", errors="replace")
        bad = len(_REPLACEMENT_RUNS.findall(lenient))
        good_multibyte = len(_NON_ASCII.findall(lenient)) - lenient.count("\ufffd")
        if good_multibyte > 0 and (
            bad <= good_multibyte or bad <= len(lenient) * MOSTLY_UTF8_BAD_SHARE
        ):
            note = (
                f"replaced {bad} invalid UTF-8 byte sequence{'s' if bad != 1 else ''} with U+FFFD"
            )
            return checked_text(lenient, [note])
    western = _as_western(data)
    if western is not None:
        return checked_text(western, ["decoded as Windows-1252 (not UTF-8)"])
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    best = matches.best()
    if best is None or best.encoding is None:
        raise ReadError("not text: the bytes match no text encoding (a binary file?)")
    # Short Western European text fits several 8-bit code pages equally well; among the
    # equally plausible ones prefer Windows-1252 (a superset of printable Latin-1).
    for match in matches:
        if match.encoding in _WESTERN and match.chaos <= best.chaos:
            best = match
            break
    return checked_text(str(best), [f"decoded as {best.encoding} (detected; not UTF-8)"])


def _as_western(data: bytes) -> str | None:
    """``data`` as Windows-1252 when every non-ASCII character is Western European, else None.

    Detection on a short legacy text is a coin toss between 8-bit code pages (charset-normalizer
    read "naïve" in Latin-1 as Baltic "naļve"); Western European text is the common case, so
    it is tried first. The cost: a Central European file that happens to decode cleanly as
    Windows-1252 is misread (ř shows as ø); UTF-8 files never are.
    """
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        return None
    return text if _WESTERN_TEXT.fullmatch(text) else None


def checked_text(text: str, notes: list[str]) -> tuple[str, list[str]]:
    if _looks_binary(text):
        raise ReadError("not text: the file is mostly control bytes (a binary file?)")
    return text, notes


def read_plain(data: bytes) -> tuple[str, str, dict[str, Any], list[str]]:
    text, notes = decode_text(data)
    return text, "", {}, notes
