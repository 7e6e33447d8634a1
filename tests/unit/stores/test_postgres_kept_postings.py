"""Common terms' live postings kept with one generation's image, and only those."""

from __future__ import annotations

import numpy as np
import pytest

from core.domain.postings import EMPTY_POSTING, Posting
from core.stores.postgres.kept_postings import KEEP_PER_PASSAGE, KEEP_SHARE, KeptPostings

#: Live passages of the image the keep belongs to.
LIVE = 640


def posting(size: int, first: int = 0) -> Posting:
    rows = np.arange(first, first + size, dtype=np.int32)
    return rows, np.full(size, 2, dtype=np.int32)


def test_a_common_term_read_once_is_handed_back_without_its_blocks_the_next_time() -> None:
    keep = KeptPostings()
    common = posting(LIVE // KEEP_SHARE)
    first = keep.merged(["wing"], [common], {"wing": 10}, LIVE)
    assert first[0] is common
    assert keep.known(["wing", "flow"]) == {"wing": keep.terms["wing"]}
    (rows, tfs), df = keep.terms["wing"]
    assert df == 10 and rows.tolist() == common[0].tolist() and tfs.tolist() == common[1].tolist()
    again = keep.merged(["flow", "wing"], [posting(1), EMPTY_POSTING], {"flow": 1}, LIVE)
    assert again[1] == (rows, tfs) and again[0][0].tolist() == [0]


def test_a_kept_posting_is_a_read_only_copy_of_what_was_read() -> None:
    keep = KeptPostings()
    common = posting(LIVE)
    keep.merged(["wing"], [common], {"wing": LIVE}, LIVE)
    rows, tfs = keep.terms["wing"][0]
    assert not np.shares_memory(rows, common[0]) and not np.shares_memory(tfs, common[1])
    with pytest.raises(ValueError):
        rows[0] = 5


def test_a_rare_term_or_one_with_no_live_passage_is_not_kept() -> None:
    keep = KeptPostings()
    rare = posting(LIVE // KEEP_SHARE - 1)
    keep.merged(["rare", "gone"], [rare, posting(LIVE)], {"rare": len(rare[0])}, LIVE)
    assert keep.terms == {} and keep.held == 0


def test_the_keep_stops_at_its_postings_per_live_passage() -> None:
    keep = KeptPostings()
    terms = [f"w{i}" for i in range(KEEP_PER_PASSAGE + 2)]
    postings = [posting(LIVE) for _ in terms]
    merged = keep.merged(terms, postings, dict.fromkeys(terms, LIVE), LIVE)
    assert merged == postings
    assert list(keep.terms) == terms[:KEEP_PER_PASSAGE]
    assert keep.held == KEEP_PER_PASSAGE * LIVE
