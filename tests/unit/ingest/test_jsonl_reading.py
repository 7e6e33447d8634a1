"""A JSONL corpus read on the short path gives exactly what the full path gives, line for line.

The reader takes a short path for plain records (``core.ingest.beir``); these tests hold it to
the full path, which runs every check, on hostile and careless lines and on generated ones: the
same documents (ids, texts, titles, metadata), the same problems with the same line numbers
and words, the same notes, the same refusal of a file with no usable line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.ingest import beir
from core.ingest.beir import Oversized
from core.ingest.results import ReadError

#: Lines each of which the short path must not get wrong (one record per line).
HOSTILE: list[bytes] = [
    b'{"_id": "plain", "title": "A title", "text": "some text"}',
    b'{"_id": 42, "text": "a number as id"}',
    b'{"_id": true, "text": "a boolean as id"}',
    b'{"_id": "  padded  ", "text": "spaces around the id"}',
    b'{"_id": "tab\\there", "text": "a control character in the id"}',
    b'{"_id": "del\x7fid", "text": "DEL in the id"}',
    b'{"_id": "del\\u007fid2", "text": "DEL escaped"}',
    b'{"_id": "caf\xc3\xa9", "text": "not ASCII"}',
    b'{"_id": "zw\\u200bid", "text": "zero width"}',
    b'{"_id": "nul\\u0000id", "text": "NUL in the id"}',
    b'{"_id": "sur\\ud800id", "text": "surrogate in the id"}',
    b'{"_id": "text-nul", "text": "a\\u0000b"}',
    b'{"_id": "title-nul", "title": "t\\u0000", "text": "b"}',
    b'{"_id": "text-sur", "text": "a \\udc00 b"}',
    b'{"_id": "title-sur", "title": "\\ud801", "text": "b"}',
    b'{"_id": "accented", "title": "\xc3\xa9t\xc3\xa9", "text": "\xc3\xa0 la plage"}',
    b'{"_id": "title-int", "title": 3, "text": "x"}',
    b'{"_id": "text-list", "text": ["x"]}',
    b'{"_id": "text-null", "title": "only a title", "text": null}',
    b'{"_id": "empty", "title": "", "text": ""}',
    b'{"_id": "blank", "title": "   ", "text": " \\n "}',
    b'{"_id": "   ", "text": "blank id"}',
    b'{"_id": "", "text": "empty id"}',
    b'{"text": "no id"}',
    b'{"_id": "plain", "text": "a duplicate of the first"}',
    b'{"_id": " plain ", "text": "a duplicate once stripped"}',
    b'{"_id": "' + b"x" * 512 + b'", "text": "the longest id kept"}',
    b'{"_id": "' + b"y" * 513 + b'", "text": "one too long"}',
    b'  {"_id": "leading-space", "text": "x"}',
    b'{"_id": "trailing", "text": "x"}   \r',
    b'{"_id": "formfeed", "text": "x"}\x0c',
    b'{"_id": "a", "text": "x"} {"_id": "b", "text": "y"}',
    b'{"_id": "a2", "text": "x"},',
    b'{"_id": "extra", "text": "x"} trailing words',
    b'["not", "an", "object"]',
    b'"a string"',
    b"null",
    b"17",
    b"",
    b"   ",
    b"\x0c",
    b'{"_id": "bad-utf8", "text": "\xff\xfe"}',
    b'{"_id": "deep", "text": "x", "more": ' + b"[" * 70 + b"]" * 70 + b"}",
    b'{"_id": "shallow", "text": "x", "more": ' + b"[" * 10 + b"]" * 10 + b"}",
    b'{"_id": "brackets-in-text", "text": "' + b"[{" * 40 + b'"}',
    b'{"_id": "big-number", "n": ' + b"9" * 5000 + b', "text": "x"}',
    b'{"_id": "nan", "n": NaN, "text": "x"}',
    b'{"_id": "twice", "_id": "keys", "text": "the last key wins"}',
    b'{"_id": "escaped\\"quote", "text": "x"}',
    b'{"_id": "slash/id", "text": "kept verbatim"}',
    b'{"_id": "broken", "text": "no end',
    b"{oops",
]


def read(lines: Sequence[bytes | Oversized], *, short: bool) -> list[Any]:
    """Everything a read gives, part by part, in comparable form (or the refusal)."""
    try:
        return [
            (
                [(d.source_id, d.text, d.title, d.metadata) for d in part.documents],
                [(p.line, p.reason) for p in part.problems],
                list(part.notes),
            )
            for part in beir._parts(iter(lines), short=short)
        ]
    except ReadError as exc:
        return [("refused", exc.reason)]


def test_the_short_path_reads_hostile_lines_exactly_as_the_full_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(beir, "RECORDS_PER_PART", 7)  # parts end inside the list too
    lines = [line + b"\n" for line in HOSTILE] + [Oversized(70_000_000, 67_108_864)]
    full = read(lines, short=False)
    assert read(lines, short=True) == full
    kept = [source_id for documents, _, _ in full for source_id, *_ in documents]
    assert "plain" in kept and "42" in kept and "x" * 512 in kept
    problems = dict(problem for _, problems, _ in full for problem in problems)
    assert problems[len(lines)].startswith("the record is 66.8 MB, over the limit of 64.0 MB")


def test_a_byte_order_mark_before_the_first_record_is_dropped_on_both_paths() -> None:
    lines = [b'\xef\xbb\xbf{"_id": "first", "text": "x"}\n', b'{"_id": "second", "text": "y"}']
    assert read(lines, short=True) == read(lines, short=False)
    assert read(lines, short=True)[0][0][0][0] == "first"


def test_a_file_with_no_usable_line_is_refused_in_the_same_words_on_both_paths() -> None:
    lines = [b"{oops\n", b'{"_id": "", "text": "x"}\n', b'{"_id": "e", "text": ""}\n']
    assert read(lines, short=True) == read(lines, short=False)
    assert read(lines, short=True)[0][0] == "refused"


_TEXTS = st.one_of(
    st.text(max_size=12),
    st.text(alphabet="ab \t\x00\x7f\u200b\ud800é", max_size=6),
    st.integers(-3, 3),
    st.none(),
    st.booleans(),
)
_RECORDS = st.dictionaries(st.sampled_from(["_id", "title", "text", "other"]), _TEXTS)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(
        st.one_of(
            _RECORDS.map(lambda r: json.dumps(r).encode()),
            _RECORDS.map(lambda r: json.dumps(r, ensure_ascii=False).encode("utf-8", "replace")),
            st.binary(max_size=24),
        ),
        max_size=12,
    )
)
def test_the_short_path_reads_generated_lines_exactly_as_the_full_path(
    records: list[bytes],
) -> None:
    lines = [record.replace(b"\n", b" ") + b"\n" for record in records]
    assert read(lines, short=True) == read(lines, short=False)
