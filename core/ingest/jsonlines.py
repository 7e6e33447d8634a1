"""One JSON line read safely: the BEIR readers and the judgment readers share it.

A leaf module (it imports nothing of the project) so the analyses, which read judgment
files, need not import the document readers; the alternative, a copy of the depth check in
each reader, is two rules for what a readable line is.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Deepest nesting of arrays and objects accepted in one JSON line (a BEIR record needs 1).
MAX_JSON_DEPTH = 64
#: What decides JSON nesting: strings (skipped whole, brackets inside them do not count) and
#: the brackets themselves.
_JSON_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


class JsonLineError(ValueError):
    """A JSON line that cannot be read; ``str()`` says why in plain words."""


def _json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in ``text`` (brackets inside strings ignored)."""
    depth = deepest = 0
    for token in _JSON_NESTING.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif bracket in "]}":
            depth -= 1
    return deepest


def parse_json_line(text: str) -> Any:
    """One JSON value, within ``MAX_JSON_DEPTH``; raises ``JsonLineError`` in plain words.

    The nesting is measured before parsing (only when the line has enough brackets to be deep,
    so ordinary records cost one ``count``): the stdlib parser recurses once per level and a
    line of 100,000 ``[`` raised RecursionError. Integers of more than 4,300 digits are
    Python's own limit (a ValueError that is not a JSONDecodeError).
    """
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH:
        depth = _json_depth(text)
        if depth > MAX_JSON_DEPTH:
            raise JsonLineError(f"nested {depth:,} levels deep; the limit is {MAX_JSON_DEPTH}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonLineError(f"not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise JsonLineError(f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError:  # int() refuses more than sys.get_int_max_str_digits() digits
        raise JsonLineError("holds a number with more than 4,300 digits") from None
