"""What-if rankers: the workspace's BM25, the textbook BM25 and user k1/b, over one read."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from uuid import UUID

import pytest
from pydantic import ValidationError

from core.analysis import rankers
from core.analysis.rankers import Ranker, RankerKind, compare_rankers, explain_under, rank_with
from core.domain.bm25 import BM25_B, BM25_K1, IdfForm, QueryScorer, corpus_stats
from core.domain.chunks import StoredChunk
from core.domain.classic import BM25
from core.domain.ranking import LexicalCandidate, LexicalCandidates, rank_chunks
from core.domain.steps import finish
from core.domain.tokenize import tokenize

TENANT = UUID("00000000-0000-0000-0000-000000000012")

TEXTS = [
    "wing wing flutter",
    "wing body",
    "body drag nozzle shock",
    "flutter of a long slender wing body combination at supersonic speed with heating",
    "shock shock wing",
]


def read(texts: list[str], query: str) -> tuple[list[str], LexicalCandidates]:
    """What a store's unlimited candidate read returns for ``query`` over ``texts``."""
    terms = tokenize(query)
    docs = [tokenize(t) for t in texts]
    candidates = []
    for index, (text, tokens) in enumerate(zip(texts, docs, strict=True)):
        counts = Counter(tokens)
        tfs = {t: counts[t] for t in set(terms) if counts[t]}
        if tfs:
            chunk = StoredChunk(
                tenant_id=TENANT,
                source_id=f"doc{index}",
                text=text,
                chunk_index=0,
                start_char=0,
                end_char=len(text),
            )
            candidates.append(
                LexicalCandidate(chunk=chunk, doc_length=len(tokens), term_frequencies=tfs)
            )
    stats = corpus_stats(docs, terms)
    return terms, LexicalCandidates(stats=stats, candidates=candidates, matching=len(candidates))


def test_a_textbook_score_equals_the_formula_worked_by_hand() -> None:
    texts = ["wing wing flutter", "wing body", "body drag nozzle shock"]
    terms, candidates = read(texts, "flutter wing")
    first = next(c for c in candidates.candidates if c.chunk.text == texts[0])
    # N = 3, avgdl = (3 + 2 + 4) / 3 = 3, dl = 3, so the length factor is exactly 1.
    # df(wing) = 2: idf = ln((3 - 2 + 0.5) / (2 + 0.5)) = ln(0.6) < 0; df(flutter) = 1: ln(5/3).
    # k1 = 1.5: wing tf 2 gives 2·2.5 / (2 + 1.5); flutter tf 1 gives 1·2.5 / (1 + 1.5) = 1.
    by_hand = math.log(1.5 / 2.5) * (2 * 2.5 / (2 + 1.5)) + math.log(2.5 / 1.5) * 1.0
    assert by_hand == pytest.approx(-0.2189252673, abs=1e-10)
    explanation = explain_under(Ranker.of("classic"), terms, candidates, first.chunk.id)
    assert explanation is not None
    assert explanation.score == pytest.approx(by_hand, rel=1e-15)
    assert explanation.idf_form is IdfForm.CLASSIC and (explanation.k1, explanation.b) == (
        1.5,
        0.75,
    )
    (ranked,) = [
        r for r in rank_with(Ranker.of("classic"), terms, candidates, 3) if r.chunk == first.chunk
    ]
    assert ranked.score == explanation.score


def test_a_custom_score_equals_the_lucene_formula_worked_by_hand() -> None:
    texts = ["wing wing flutter", "wing body", "body drag nozzle shock"]
    terms, candidates = read(texts, "wing")
    second = next(c for c in candidates.candidates if c.chunk.text == texts[1])
    # k1 = 0.5, b = 1: dl/avgdl = 2/3, so the norm is 0.5·(2/3); idf = ln(1 + 1.5/2.5).
    by_hand = math.log(1 + 1.5 / 2.5) * (1 * 1.5) / (1 + 0.5 * (2 / 3))
    explanation = explain_under(
        Ranker.of("custom", k1=0.5, b=1.0), terms, candidates, second.chunk.id
    )
    assert explanation is not None and explanation.score == pytest.approx(by_hand, rel=1e-15)


def test_the_workspace_ranker_is_exactly_the_search_ranking() -> None:
    terms, candidates = read(TEXTS, "wing body shock flutter")
    assert rank_with(Ranker.of("workspace"), terms, candidates, 10) == rank_chunks(
        terms, candidates, 10
    )
    # A custom ranker with the workspace's own parameters goes the generic way to the same list.
    same = rank_with(Ranker.of("custom", k1=BM25_K1, b=BM25_B), terms, candidates, 10)
    assert same == rank_chunks(terms, candidates, 10)


def test_the_textbook_ranker_over_every_match_orders_like_the_classic_class() -> None:
    terms, candidates = read(TEXTS, "wing body shock flutter")
    model = BM25([tokenize(t) for t in TEXTS])
    ranked = rank_with(Ranker.of("classic"), terms, candidates, 10)
    by_class = [i for i in model.rank(terms) if TEXTS[i] in {r.chunk.text for r in ranked}]
    assert [r.chunk.text for r in ranked] == [TEXTS[i] for i in by_class]
    for r in ranked:
        assert r.score == model.score(terms, TEXTS.index(r.chunk.text))


def test_a_negative_textbook_score_is_ranked_not_dropped() -> None:
    terms, candidates = read(TEXTS, "wing")
    ranked = rank_with(Ranker.of("classic"), terms, candidates, 10)
    assert len(ranked) == len(candidates.candidates) == 4
    assert all(r.score < 0 for r in ranked)  # wing is in 4 of 5 passages


def test_fixed_rankers_refuse_other_parameters_and_custom_ones_are_bounded() -> None:
    assert (Ranker.of("workspace").k1, Ranker.of("workspace").b) == (BM25_K1, BM25_B)
    assert Ranker.of("classic", k1=9, b=0).k1 == 1.5
    with pytest.raises(ValidationError, match="use the custom ranker"):
        Ranker(kind=RankerKind.WORKSPACE, k1=2.0, b=0.75)
    for k1, b in [(-0.1, 0.5), (1.0, 1.5), (math.inf, 0.5), (1.0, math.nan)]:
        with pytest.raises(ValidationError):
            Ranker.of("custom", k1=k1, b=b)
    with pytest.raises(ValueError):
        Ranker.of("bm42")


def test_comparing_two_rankers_reports_lists_movement_and_overlap() -> None:
    terms, candidates = read(TEXTS, "wing body shock flutter")
    a, b = Ranker.of("workspace"), Ranker.of("classic")
    comparison = compare_rankers(terms, candidates, 2, a, b)
    assert comparison.a == rank_with(a, terms, candidates, 2)
    assert comparison.b == rank_with(b, terms, candidates, 2)
    ids_a = [r.chunk.id for r in comparison.a]
    ids_b = [r.chunk.id for r in comparison.b]
    assert comparison.shared == len(set(ids_a) & set(ids_b))
    assert comparison.overlap == comparison.shared / 2
    assert {m.chunk_id for m in comparison.movements} == set(ids_a) | set(ids_b)
    full_a = [r.chunk.id for r in rank_with(a, terms, candidates, 99)]
    full_b = [r.chunk.id for r in rank_with(b, terms, candidates, 99)]
    for m in comparison.movements:
        assert m.rank_a == full_a.index(m.chunk_id) + 1
        assert m.rank_b == full_b.index(m.chunk_id) + 1
        assert m.movement == m.rank_a - m.rank_b
        assert (m.in_top_a, m.in_top_b) == (m.chunk_id in ids_a, m.chunk_id in ids_b)
    assert comparison.ranked == len(candidates.candidates)


def test_comparing_builds_each_top_k_set_once_however_many_passages_move(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Linear in k: a set rebuilt per passage made k = 10^9 quadratic (timed out at 120 s)."""
    texts = [f"wing {'flutter ' * (i % 7)}body{i}" for i in range(300)]
    terms, candidates = read(texts, "wing flutter")
    built: list[int] = []

    def counted(items: object = ()) -> set[object]:
        made = set(items)  # type: ignore[call-overload]
        built.append(len(made))
        return made

    monkeypatch.setattr(rankers, "set", counted, raising=False)
    a, b = Ranker.of("workspace"), Ranker.of("classic")
    per_k = {}
    for k in (30, 300):
        built.clear()
        assert len(compare_rankers(terms, candidates, k, a, b).movements) >= k
        per_k[k] = len(built)
    assert per_k[30] == per_k[300] < 30


def test_the_same_ranker_twice_overlaps_fully_and_nothing_moves() -> None:
    terms, candidates = read(TEXTS, "wing body")
    same = compare_rankers(terms, candidates, 3, Ranker.of("classic"), Ranker.of("classic"))
    assert same.overlap == 1.0 and all(m.movement == 0 for m in same.movements)
    empty = compare_rankers([], candidates, 3, Ranker.of("classic"), Ranker.of("workspace"))
    assert empty.overlap == 1.0 and empty.a == empty.b == [] and empty.movements == []


def test_explaining_a_passage_that_is_not_a_candidate_gives_none() -> None:
    terms, candidates = read(TEXTS, "wing")
    assert explain_under(Ranker.of("classic"), terms, candidates, "0" * 64) is None


@pytest.mark.parametrize(
    "ranker", [Ranker.of("classic"), Ranker.of("custom", k1=0.4, b=0.2)], ids=lambda r: r.kind
)
def test_each_what_if_result_is_explained_under_its_own_ranker(ranker: Ranker) -> None:
    terms, candidates = read(TEXTS, "wing body shock flutter")
    for result in rank_with(ranker, terms, candidates, 10):
        explanation = result.explanation
        assert (explanation.k1, explanation.b, explanation.idf_form) == (
            ranker.k1,
            ranker.b,
            ranker.idf_form,
        )
        assert explanation.score == result.score


@pytest.mark.parametrize(
    "ranker",
    [Ranker.of("workspace"), Ranker.of("classic"), Ranker.of("custom", k1=0.4, b=0.2)],
    ids=lambda r: r.kind,
)
@pytest.mark.parametrize("k", [0, 1, 3, 10])
def test_the_scored_top_k_is_rank_withs_rows_and_scores_and_explains_nothing(
    ranker: Ranker, k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ties (the same words twice, in either order) are broken by chunk id, as rank_with does;
    # the rows in descending id order too, so a tie left in row order would show.
    terms, read_in_order = read([*TEXTS, "wing body", "body wing"], "wing body shock flutter")
    backwards = LexicalCandidates(
        stats=read_in_order.stats,
        candidates=sorted(read_in_order.candidates, key=lambda c: c.chunk.id, reverse=True),
        matching=read_in_order.matching,
    )
    weighed = {"wing": 0.3, "body": 1.0, "shock": 0.7, "flutter": 1.2}
    for candidates, weights in itertools.product((read_in_order, backwards), (None, weighed)):
        ranked = rank_with(ranker, terms, candidates, k, weights)
        with monkeypatch.context() as patched:
            for name in ("explain", "explain_columns"):
                patched.setattr(QueryScorer, name, lambda *a, **kw: pytest.fail("explained"))
            rows, scores = finish(rankers.top_scored_steps(ranker, terms, candidates, k, weights))
        assert [c.id for c in candidates.chunks(rows)] == [r.chunk.id for r in ranked]
        assert scores[rows].tolist() == [r.score for r in ranked]


def test_every_ranker_kind_has_one_row_and_every_choice_and_label_derives_from_it() -> None:
    from core.analysis.pooling import LIMITED, POOL_RANKER_LABELS, POOL_RANKERS, PoolSpec
    from core.analysis.rankers import KIND_LABELS, RANKERS, RUN_KINDS

    assert [row.kind for row in RANKERS] == list(RankerKind)
    assert set(KIND_LABELS) == set(RankerKind)
    for row in RANKERS:
        ranker = Ranker.of(row.kind, 0.9, 0.4)
        assert ranker.idf_form is row.idf_form
        assert (ranker.k1, ranker.b) == (row.fixed or (0.9, 0.4))
        assert ranker.label == row.label.format(k1=ranker.k1, b=ranker.b)
        assert (row.kind.value in POOL_RANKERS) == (row.pool is not None)
        assert (row.kind in RUN_KINDS) == row.in_runs
    assert POOL_RANKERS[0] == LIMITED and set(POOL_RANKER_LABELS) == set(POOL_RANKERS)
    assert Ranker.of(RankerKind.WORKSPACE).label == "workspace BM25 (k1 1.2, b 0.75)"
    assert Ranker.of(RankerKind.CLASSIC).label == "textbook BM25 (k1 1.5, b 0.75, classic idf)"
    assert Ranker.of(RankerKind.CUSTOM, 2, 0.5).label == "BM25 k1 2, b 0.5"
    with pytest.raises(ValueError, match="no pool ranker 'nonsense'"):
        PoolSpec(rankers=("nonsense",), limit=10)


def test_best_first_is_each_prefix_and_rank_of_each_place_of_the_order_of_every_candidate() -> None:
    # Ties (equal scores decided by chunk id), zero and negative scores (a classic idf is
    # negative for a common term), rows in no id order: every prefix as the full sort gives it.
    import numpy as np

    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(0, 40))
        scores = rng.choice([-1.5, 0.0, 0.25, 1.0, 2.0, 3.5], size=n)
        id_order = rng.permutation(n).astype(np.int64)
        rows = np.flatnonzero(rng.random(n) < 0.8).astype(np.int64)
        full = rows[np.lexsort((id_order[rows], -scores[rows]))]
        for k in range(len(rows) + 2):
            assert rankers.best_first(rows, scores, id_order, k).tolist() == full[:k].tolist()
        for place, row in enumerate(full.tolist(), 1):
            assert rankers.rank_of(row, rows, scores, id_order) == place
        for row in sorted(set(range(n)) - set(rows.tolist())):
            assert rankers.rank_of(row, rows, scores, id_order) is None
