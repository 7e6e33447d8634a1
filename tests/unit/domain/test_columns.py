"""``candidates_of``: the kernel's columns as the very model validation would have made."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from core.domain.bm25 import CorpusStats
from core.domain.columns import candidates_of
from core.domain.ranking import LexicalCandidates

STATS = CorpusStats(n_docs=5, avg_doc_length=3.0, doc_frequencies={"a": 2, "b": 1})


def _no_passages(rows: object) -> list[Any]:
    return []


def _fields(rows: int) -> dict[str, Any]:
    ids = np.array([f"{i:064x}" for i in range(5)], dtype=object)
    selected = np.arange(rows, dtype=np.int64)
    return {
        "stats": STATS,
        "terms": ("a", "b"),
        "id_pool": ids,
        "source_pool": np.array([f"s{i}" for i in range(5)], dtype=object),
        "id_rows": selected,
        "id_order": selected.copy(),
        "doc_lengths": np.full(rows, 3, dtype=np.int64),
        "tfs": np.ones((rows, 2), dtype=np.int64),
        "matching": 1,
        "lookup": _no_passages,
    }


@pytest.mark.parametrize("rows", [0, 3])
def test_the_kernels_candidates_are_the_model_validation_builds(rows: int) -> None:
    fields = _fields(rows)
    fast = candidates_of(**fields)
    checked = LexicalCandidates(**_fields(rows))
    assert type(fast) is LexicalCandidates
    assert fast == checked
    assert fast.matching == checked.matching == max(1, rows)
    assert fast.model_fields_set == checked.model_fields_set
    assert fast.__pydantic_private__ == checked.__pydantic_private__
    assert list(fast.ids) == list(checked.ids)
    assert fast.lookup is checked.lookup and fast.ahead is checked.ahead


def test_the_kernels_columns_are_frozen_as_the_validator_freezes_them() -> None:
    fast = candidates_of(**_fields(3))
    for column in (fast.id_rows, fast.id_order, fast.doc_lengths, fast.tfs):
        assert column is not None and not column.flags.writeable
    assert fast.id_pool.flags.writeable  # the store's own pool, indexed through id_rows


def test_an_empty_read_has_a_column_per_term() -> None:
    fast = candidates_of(stats=STATS, terms=("a", "b"), matching=0)
    assert fast.tfs.shape == (0, 2)
    assert fast == LexicalCandidates(stats=STATS, terms=("a", "b"), matching=0)
