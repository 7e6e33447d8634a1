"""The ids a read has met (core.ingest.seen): compact, and never wrong about a duplicate."""

from __future__ import annotations

import pytest

from core.ingest import seen as seen_module
from core.ingest.beir import jsonl_parts
from core.ingest.seen import RECENT_IDS, FirstFiles, SeenIds


def test_an_id_met_long_ago_is_found_with_the_mark_it_was_added_with() -> None:
    seen = SeenIds()
    for number in range(5 * RECENT_IDS):
        seen.add(f"a{number}", number + 1)
    assert len(seen._runs) >= 1 and len(seen._recent) < RECENT_IDS  # most are folded
    assert seen.get("a0") == 1
    assert seen.get(f"a{4 * RECENT_IDS}") == 4 * RECENT_IDS + 1
    assert seen.get(f"a{5 * RECENT_IDS - 1}") == 5 * RECENT_IDS
    assert seen.get("a") is None and seen.get(f"a{5 * RECENT_IDS}") is None
    assert len(seen) == 5 * RECENT_IDS


def test_ids_whose_hashes_collide_are_still_different_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(seen_module, "_hash", lambda _: 7)
    seen = SeenIds()
    for number in range(2 * RECENT_IDS):
        seen.add(f"x{number}", number)
    assert seen._runs  # folded: found through the hashes, every one of them equal
    assert seen.get("x") is None and seen.get("x1x") is None and seen.get("y1") is None
    assert seen.get("x12") == 12 and seen.get("x0") == 0


@pytest.mark.parametrize("colliding", [False, True])
def test_ids_the_codec_cannot_write_plainly_are_kept_and_found(
    colliding: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if colliding:  # then only the ids' bytes tell them apart
        monkeypatch.setattr(seen_module, "_hash", lambda _: 7)
    seen = SeenIds()
    odd = ["bad\udcff", "\u00e9", "e\u0301", "\x00", ""]
    for number, source_id in enumerate(odd + [f"n{n}" for n in range(RECENT_IDS)]):
        seen.add(source_id, number)
    assert seen._runs
    assert [seen.get(each) for each in ["\u00e9", "bad\udcfe", "bad\udcff", "e", ""]] == [
        1,
        None,
        0,
        None,
        4,
    ]


def test_an_upload_names_the_file_an_id_was_first_met_in_or_the_id_itself() -> None:
    first = FirstFiles()
    for number in range(3 * RECENT_IDS):
        first.add(f"d{number}", "first.jsonl")
    first.add("lone", "lone")  # given without a file: its label is the id itself
    for number in range(RECENT_IDS):
        first.add(f"e{number}", "second.jsonl")
    assert first.get("d5") == "first.jsonl" and first.get("e5") == "second.jsonl"
    assert first.get("lone") == "lone" and first.get("d") is None
    assert first._labels == ["first.jsonl", "second.jsonl"]  # each name kept once


def test_a_jsonl_names_a_duplicate_by_the_line_of_an_id_met_thousands_of_lines_before() -> None:
    lines = [b'{"_id": "d%d", "text": "word %d"}' % (n, n) for n in range(3 * RECENT_IDS)]
    lines += [b'{"_id": "d7", "text": "again"}', b'{"_id": " d8 ", "title": "t", "text": "x"}']
    parts = list(jsonl_parts(lines))
    assert sum(len(part.documents) for part in parts) == 3 * RECENT_IDS
    problems = [problem for part in parts for problem in part.problems]
    assert [(p.line, p.reason) for p in problems] == [
        (3 * RECENT_IDS + 1, "duplicate _id 'd7' (first on line 8) — line skipped"),
        (3 * RECENT_IDS + 2, "duplicate _id ' d8 ' (first on line 9) — line skipped"),
    ]
