"""An RM3 search through the facade (issue 47 items 1, 2 and 4): the passages are ranked with
the expansion's weights, every explanation row is weight * idf * TF part and the rows add up to
the score, and each passage says where it stood before and which added term brought it in."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.analysis.expansion import ExpansionSpec
from core.service import LexplainService
from core.settings import Settings

QUERIES = Path(__file__).resolve().parents[3] / "data" / "cranfield" / "queries.jsonl"
#: Cranfield's first queries, the sample's own.
CHECKED = 8


@pytest.fixture(scope="module")
def service() -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(Settings(store="memory"))
    svc.load_sample(workspace="default")
    yield svc
    svc.close()


def queries() -> list[str]:
    with QUERIES.open(encoding="utf-8") as lines:
        return [json.loads(line)["text"] for _, line in zip(range(CHECKED), lines, strict=False)]


@pytest.mark.parametrize("query", queries())
def test_an_rm3_search_ranks_by_the_expansions_weights_and_every_explanation_adds_up(
    service: LexplainService, query: str
) -> None:
    result = service.search(query, 10, 1000, workspace="default", expand=ExpansionSpec())
    expansion = result.expansion
    assert expansion is not None and expansion.added, "RM3 added no term to a Cranfield query"
    weights = expansion.weights
    assert set(result.doc_frequencies) == set(weights)
    for passage in result.passages:
        total = 0.0
        for part in passage.explanation.terms:
            assert part.weight == weights[part.term]
            assert part.contribution == (part.weight * part.idf) * part.tf_part
            total += part.contribution
        assert total == passage.score


@pytest.mark.parametrize("query", queries())
def test_each_passage_says_its_rank_before_and_the_added_term_that_brought_it_in(
    service: LexplainService, query: str
) -> None:
    plain = service.search(query, 10, 1000, workspace="default")
    result = service.search(query, 10, 1000, workspace="default", expand=ExpansionSpec())
    assert result.expansion is not None
    before = {p.chunk.id: p.rank for p in plain.passages}
    added = set(result.expansion.added)
    for passage in result.passages:
        if passage.chunk.id in before:
            assert passage.rank_before == before[passage.chunk.id]
            assert passage.brought_by is None
        else:
            assert passage.rank_before is None or passage.rank_before > 10
            contributions = {
                p.term: p.contribution for p in passage.explanation.terms if p.term in added
            }
            if contributions:
                assert passage.brought_by == min(
                    contributions, key=lambda t: (-contributions[t], t)
                )
            else:
                assert passage.brought_by is None
    assert all(p.rank_before is None and p.brought_by is None for p in plain.passages)
    assert plain.expansion is None


def test_the_feedback_is_the_unexpanded_rankings_top_passages(service: LexplainService) -> None:
    query = queries()[0]
    plain = service.search(query, 10, 1000, workspace="default")
    result = service.search(query, 5, 1000, workspace="default", expand=ExpansionSpec(fb_docs=10))
    assert result.expansion is not None
    assert [f.chunk_id for f in result.expansion.feedback] == [p.chunk.id for p in plain.passages]
    assert [f.score for f in result.expansion.feedback] == [p.score for p in plain.passages]
