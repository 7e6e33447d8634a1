"""An unlimited read ranked from its postings gives the columns' ranking, bit for bit."""

from __future__ import annotations

from uuid import UUID

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from core.analysis.evaluation import documents_in_rank_order
from core.analysis.truncation import top_document_steps
from core.domain.bm25 import CorpusStats, QueryScorer
from core.domain.chunks import StoredChunk
from core.domain.postings import Posting, postings_candidate_steps
from core.domain.ranking import (
    LexicalCandidates,
    RankedChunk,
    candidate_score_steps,
    candidate_scores,
    rank_chunks,
    ranked_rows,
    top_rows,
)
from core.domain.steps import finish
from core.domain.unlimited import DEFERRED, UnlimitedCandidates, corpus_scores, top_corpus_rows

TENANT = UUID("00000000-0000-0000-0000-000000000050")
TERMS = ("a", "b", "c", "d", "e")

#: A corpus: per row, tf of each of TERMS (0 = absent), and its extra tokens.
rows_ = st.tuples(st.tuples(*[st.integers(0, 3)] * len(TERMS)), st.integers(0, 4))
corpora = st.lists(rows_, min_size=1, max_size=60)


def chunk(row: int) -> StoredChunk:
    text = f"passage {row}"
    return StoredChunk(
        tenant_id=TENANT, source_id=f"s{row % 3}", text=text, chunk_index=row, start_char=0,
        end_char=len(text),
    )  # fmt: skip


def read(
    corpus: list[tuple[tuple[int, ...], int]],
    limit: int,
    kept: dict[str, npt.NDArray[np.float64]] | None = None,
) -> LexicalCandidates:
    postings: list[Posting] = []
    for j in range(len(TERMS)):
        at = [r for r, (tfs, _) in enumerate(corpus) if tfs[j]]
        tfs_ = [corpus[r][0][j] for r in at]
        postings.append((np.array(at, dtype=np.int32), np.array(tfs_, dtype=np.int32)))
    lengths = np.array([sum(tfs) + extra for tfs, extra in corpus], dtype=np.int64)
    ids = np.empty(len(corpus), dtype=object)
    ids[:] = [f"id{r:03d}" for r in range(len(corpus))]
    stats = CorpusStats(
        n_docs=len(corpus),
        avg_doc_length=float(lengths.mean()),
        doc_frequencies={t: len(p[0]) for t, p in zip(TERMS, postings, strict=True)},
    )

    def chunks(rows: npt.NDArray[np.int64]) -> list[StoredChunk]:
        return [chunk(int(r)) for r in rows]

    return finish(
        postings_candidate_steps(
            stats, TERMS, postings, lengths, ids, limit, chunks, kept_scores=kept
        )
    )


def by_columns(
    terms: list[str], found: LexicalCandidates, k: int, weights: dict[str, float] | None
) -> list[RankedChunk]:
    """What ``rank_chunks`` did before: every row scored from the columns, the top k taken."""
    scores = candidate_scores(terms, found, weights)
    return ranked_rows(terms, found, top_rows(scores, found.id_order, k), scores, weights)


def bits(results: list[RankedChunk]) -> list[tuple[str, str, str]]:
    return [(r.chunk.id, r.score.hex(), r.explanation.model_dump_json()) for r in results]


queries = st.lists(st.sampled_from(TERMS), min_size=1, max_size=6)
weighted = st.one_of(st.none(), st.dictionaries(st.sampled_from(TERMS), st.floats(0.1, 3.0)))


@settings(max_examples=200, deadline=None)
@given(corpora, queries, st.integers(0, 70), weighted)
def test_an_unlimited_search_ranks_scores_and_explains_as_the_columns_do(
    corpus: list[tuple[tuple[int, ...], int]],
    terms: list[str],
    k: int,
    weights: dict[str, float] | None,
) -> None:
    weights = None if weights is None else {t: w for t, w in weights.items() if t in terms}
    kept: dict[str, npt.NDArray[np.float64]] = {}
    found = read(corpus, 2**62, kept)
    assert isinstance(found, UnlimitedCandidates) == (found.matching > 0)
    # The first plain search keeps its terms' contributions; the others read them (or not).
    plain = bits(rank_chunks(terms, found, k))
    direct = bits(rank_chunks(terms, found, k, weights))
    assert direct == bits(by_columns(terms, found, k, weights))
    assert plain == bits(rank_chunks(terms, found, k)) == bits(by_columns(terms, found, k, None))
    assert found.tfs.shape == (found.matching, len(TERMS))


def test_a_search_of_an_unlimited_read_builds_none_of_its_columns() -> None:
    corpus = [((r % 2, r % 3, 1, 0, r % 5), r % 4) for r in range(40)]
    found = read(corpus, 2**62)
    ranked = rank_chunks(["a", "c", "e"], found, 5)
    assert [r.chunk.chunk_index for r in ranked]
    assert "tfs" not in found.__dict__ and "id_order" not in found.__dict__
    assert len(found) == found.matching == 40 and found.cut_by_limit == 0


def test_the_head_of_an_unlimited_read_ranks_only_its_rows() -> None:
    corpus = [((r % 2, r % 3, 1, 0, r % 5), r % 4) for r in range(40)]
    found = read(corpus, 2**62)
    head = found.head(7)
    assert len(head) == 7
    assert bits(rank_chunks(["a", "b", "e"], head, 10)) == bits(
        by_columns(["a", "b", "e"], head, 10, None)
    )


def test_a_copy_of_an_unlimited_read_reads_the_same_columns() -> None:
    corpus = [((r % 2, r % 3, 1, 0, r % 5), r % 4) for r in range(20)]
    found = read(corpus, 2**62)
    copied = found.model_copy()
    assert "tfs=" in repr(copied) and copied == found
    assert np.array_equal(copied.tfs, found.tfs) and list(copied.ids) == list(found.ids)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4), st.integers(0, 2**32 - 1), st.integers(2, 6))
def test_the_sampled_top_rows_are_the_top_rows_ties_included(
    k: int, seed: int, values: int
) -> None:
    rng = np.random.default_rng(seed)
    # Few distinct scores, many rows: the sample's threshold falls on ties.
    scores = rng.integers(0, values, size=70 * 16 * k).astype(np.float64) / 4
    rows = np.arange(len(scores), dtype=np.int64)
    assert top_corpus_rows(scores, k).tolist() == top_rows(scores, rows, k).tolist()


def test_scoring_an_unlimited_read_builds_its_columns_in_steps() -> None:
    corpus = [((r % 2, r % 3, 1, 0, r % 5), r % 4) for r in range(40)]
    found = read(corpus, 2**62)
    steps = candidate_score_steps(["a", "c"], found)
    next(steps)  # the truncation order is a step before the tf columns
    assert "tfs" not in found.__dict__
    scores = finish(steps)
    assert found.tfs.shape == (40, len(TERMS))
    assert np.array_equal(scores[:39], candidate_scores(["a", "c"], read(corpus, 39)))


@settings(max_examples=200, deadline=None)
@given(corpora, queries, st.integers(0, 30), st.integers(1, 3))
def test_an_evaluate_of_an_unlimited_read_finds_the_columns_top_documents_without_them(
    corpus: list[tuple[tuple[int, ...], int]], terms: list[str], k: int, runs: int
) -> None:
    # Evaluate's top documents (core.analysis.truncation) at limits that cut nothing: ranked
    # from the postings, the same documents as every row's ranking read until k documents.
    found = read(corpus, 2**62)
    limits = [found.matching + extra for extra in range(runs)]
    documents = finish(top_document_steps(terms, found, k, limits))
    if found.matching:
        assert "tfs" not in found.__dict__  # no column of the read was built
    rows = top_rows(candidate_scores(terms, found), found.id_order, len(corpus))
    expected = documents_in_rank_order(c.source_id for c in found.chunks(rows))[:k]
    assert documents == [expected] * runs


def test_an_evaluate_of_an_unlimited_read_reads_on_until_it_has_k_documents() -> None:
    # The 40 best passages are of documents s0 and s1: the third document is further down.
    corpus = [((1 if r % 3 == 2 else 3, 0, 0, 0, 0), 0) for r in range(60)]
    found = read(corpus, 2**62)
    assert finish(top_document_steps(["a"], found, 3, [60])) == [["s0", "s1", "s2"]]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 7), st.booleans())
def test_terms_scored_together_have_the_bits_each_gets_scored_alone(
    seed: int, terms: int, weighted: bool
) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(200, 400))
    names = [f"t{j}" for j in range(terms)]
    postings = []
    for j in range(terms):
        # A few common terms (kept after a search) beside rare ones (scored each time).
        rows = np.flatnonzero(rng.random(n) < (0.5 if j % 3 == 0 else 0.01)).astype(np.int32)
        postings.append((rows, rng.integers(1, 9, len(rows)).astype(np.int32)))
    lengths = rng.integers(1, 300, n).astype(np.int64)
    stats = CorpusStats(
        n_docs=n,
        avg_doc_length=float(lengths.mean()),
        doc_frequencies={t: len(p[0]) for t, p in zip(names, postings, strict=True)},
    )
    weights = {names[1]: 0.37} if weighted else None
    scorer = QueryScorer(names, stats, weights=weights)
    alone = np.zeros(n)
    for term, (rows, tfs) in zip(names, postings, strict=True):
        if len(rows):
            np.add.at(alone, rows, scorer.score_columns((term,), tfs[:, None], lengths[rows]))
    kept: dict[str, npt.NDArray[np.float64]] = {}
    for _ in range(2):  # the second search reads the common terms' kept contributions
        together = finish(corpus_scores(scorer, names, names, postings, lengths, kept))
        assert together.tobytes() == alone.tobytes()
    common = {t for t, (rows, _) in zip(names, postings, strict=True) if len(rows) * 64 >= n}
    assert set(kept) == common


def test_an_unlimited_read_takes_the_models_default_for_each_field_it_was_not_given() -> None:
    """``deferred`` fills the fields it is not given from defaults kept at import: the values
    pydantic's own would give, a fresh array from each factory."""
    stats = CorpusStats(n_docs=1, avg_doc_length=1.0)
    reads = [UnlimitedCandidates.deferred({"stats": stats}, iter, iter) for _ in range(2)]  # type: ignore[arg-type]
    for name, info in LexicalCandidates.model_fields.items():
        if name in DEFERRED or name == "stats":
            continue
        expected = info.get_default(call_default_factory=True)
        got, other = reads[0].__dict__[name], reads[1].__dict__[name]
        if isinstance(expected, np.ndarray):
            assert (got.dtype, got.shape) == (expected.dtype, expected.shape), name
            assert got is not other, name
        else:
            assert got is expected or got == expected, name
