"""Parity's first difference, found over whole columns (issue 49 item 1: a loop over every row
ran a parity of 1,000 queries past 120 s on 47k passages): each kind of difference is named
at the first row that has one, as the row-by-row comparison named it."""

from __future__ import annotations

from collections import Counter
from uuid import UUID

import numpy as np

from core.domain.bm25 import corpus_stats
from core.domain.chunks import StoredChunk
from core.domain.ranking import LexicalCandidate, LexicalCandidates
from core.service.parity import first_difference

TENANT = UUID("00000000-0000-0000-0000-0000000000f2")
TERMS = ["wing", "flow"]
DOCS = [["wing", "flow", f"filler{i}"] + ["wing"] * (i % 3) for i in range(12)]


def answer() -> LexicalCandidates:
    """Every passage matching TERMS, in the store contract's order."""
    rows = []
    for i, tokens in enumerate(DOCS):
        text = " ".join(tokens)
        chunk = StoredChunk(
            tenant_id=TENANT, source_id=f"d{i}", text=text, chunk_index=0, start_char=0,
            end_char=len(text),
        )  # fmt: skip
        tfs = {t: n for t, n in Counter(tokens).items() if t in TERMS}
        rows.append(LexicalCandidate(chunk=chunk, doc_length=len(tokens), term_frequencies=tfs))
    rows.sort(key=lambda c: (-len(c.term_frequencies), c.chunk.id))
    return LexicalCandidates(stats=corpus_stats(DOCS, TERMS), candidates=rows)


def changed(column: str, rows: list[int], by: int = 1) -> LexicalCandidates:
    """The answer with ``column`` (doc_lengths or tfs) raised by ``by`` at ``rows``."""
    read = answer()
    values = np.array(getattr(read, column))
    values[rows] += by
    return read.model_copy(update={column: values})


def test_two_identical_answers_have_no_difference() -> None:
    assert first_difference(TERMS, answer(), answer()) is None


def test_a_length_drifted_in_two_rows_is_named_at_the_first() -> None:
    reference = answer()
    found = first_difference(TERMS, reference, changed("doc_lengths", [4, 9]))
    assert found is not None
    what, chunk_id = found
    assert chunk_id == reference.ids[4]
    length = int(reference.doc_lengths[4])
    assert what == f"{chunk_id} has length {length} in memory but {length + 1} in the store"


def test_term_counts_that_differ_are_named_before_a_later_row_s_length() -> None:
    reference = answer()
    checked = changed("tfs", [2]).model_copy(
        update={"doc_lengths": np.array(reference.doc_lengths) + (np.arange(12) == 7)}
    )
    assert first_difference(TERMS, reference, checked) == (
        f"{reference.ids[2]} has other term frequencies in the store",
        reference.ids[2],
    )


def test_a_store_that_hands_one_candidate_fewer_is_named_at_the_missing_row() -> None:
    reference = answer()
    rows = list(reference.candidates)[:-1]
    checked = LexicalCandidates(stats=reference.stats, candidates=rows)
    last = reference.ids[-1]
    assert first_difference(TERMS, reference, checked) == (
        f"candidate 12 is {last} in memory but nothing in the store",
        last,
    )


def test_other_corpus_statistics_show_as_the_first_row_s_score() -> None:
    reference = answer()
    stats = reference.stats.model_copy(
        update={"avg_doc_length": reference.stats.avg_doc_length + 1}
    )
    found = first_difference(TERMS, reference, reference.model_copy(update={"stats": stats}))
    assert found is not None
    assert found[1] == reference.ids[0]
    assert " in memory but " in found[0] and found[0].startswith(f"{reference.ids[0]} scores ")
