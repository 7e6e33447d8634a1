"""Why each relevant passage was lost: one cause per passage, from the run's own numbers.

A judged run ends at a metric; the analyst's next question is why a query lost and whether any
setting could have done better. BM25 over a bounded candidate scan loses a relevant passage in
exactly one of three ways, tested in this order, each ruling out the next:

1. *vocabulary mismatch*: it contains none of the query's terms (after the workspace's profile),
   so no k1, b or limit can retrieve it: the ceiling of every lexical setting;
2. *cut by the limit*: it matches, but the candidate rule (distinct query terms matched, then
   id) put it past the limit, so it was never scored; the smallest limit that keeps it is its
   position in that order;
3. *outranked*: it was a candidate and scored below the k-th passage; the per-term difference
   of contributions against the k-th says which term decided it.

An expanded run (``core.analysis.expansion``) is diagnosed in the same way against its expanded,
weighted term set: "a query term" is then a term of the expanded query, and the candidate rule
the one its read applied. Top-k passages nobody graded are listed apart (Judged@k's hole): a
lost relevant passage is not an unjudged one. Everything is read off the run's one unlimited
candidate read per query (the read Evaluate makes), scored by the run's ranker through
``core.domain.bm25``; nothing here reads a store. The alternative, a second read per lost
passage (the "why not?" of Search), cost a round trip per passage and could see another
snapshot than the run's.
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from copy import copy
from enum import StrEnum
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from core.analysis.rankers import (
    DocumentRanking,
    Ranker,
    best_first,
    matched_score_steps,
    rank_documents,
    rank_of,
    rows_ahead,
)
from core.domain.bm25 import (
    CorpusStats,
    QueryScorer,
    ScoreExplanation,
    inverse_document_frequency,
)
from core.domain.metrics import ndcg_at_k
from core.domain.models import built
from core.domain.places import Place
from core.domain.ranking import LexicalCandidates
from core.domain.steps import finish

#: A passage's own terms shown for a vocabulary mismatch (what the analyst might have typed).
OWN_TERMS: Final = 5
#: The grade from which a judged passage counts as relevant.
RELEVANT: Final = 1
#: Rows compared by ``np.isin`` at the cost of one id read by a binary search (a Python call):
#: ``passage_rows`` searches while its searches read fewer ids than this many times the rows.
_PROBE_COST: Final = 8


class LostCause(StrEnum):
    """Why a relevant passage is not in the top k, in the order they are tested."""

    VOCABULARY = "vocabulary mismatch"
    LIMIT = "cut by the limit"
    OUTRANKED = "outranked"
    #: Judged, but not in the workspace (deleted since, or never loaded): nothing to rank.
    GONE = "not in the workspace"


#: How each cause is said on a screen or a terminal.
CAUSE_NOTES: Final[dict[LostCause, str]] = {
    LostCause.VOCABULARY: "contains no query term: no k1, b or limit can retrieve it",
    LostCause.LIMIT: "matches, but the limit cut it before scoring",
    LostCause.OUTRANKED: "was scored, below the k-th passage",
    LostCause.GONE: "is judged but not in the workspace (deleted since, or never loaded)",
}


class OwnTerm(BaseModel):
    """One of a passage's own terms with its tf and idf, ranked by tf x idf."""

    model_config = ConfigDict(frozen=True)

    term: str
    tf: int
    idf: float
    weight: float


class TermDifference(BaseModel):
    """One query term's contribution to the lost passage and to the k-th, and the gap."""

    model_config = ConfigDict(frozen=True)

    term: str
    idf: float
    lost_tf: int
    lost_tf_part: float
    lost_contribution: float
    kth_tf: int
    kth_tf_part: float
    kth_contribution: float
    #: kth_contribution - lost_contribution: what the k-th gains over the lost passage here.
    gap: float


class LostPassage(BaseModel):
    """One judged-relevant passage outside the top k, with its one cause and its evidence."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    grade: int
    cause: LostCause
    #: Query terms it lacks (every one, for a vocabulary mismatch), sorted.
    missing_terms: list[str] = []
    #: Vocabulary mismatch: its highest tf x idf terms (filled by the service, from its text).
    own_terms: list[OwnTerm] = []
    #: Cut by the limit / outranked: distinct query terms it contains.
    matched_terms: int | None = None
    #: Cut by the limit: 1-based position in the candidate order, the count of the last
    #: candidate kept, and the smallest limit that keeps it (its position).
    position: int | None = None
    matched_at_cut: int | None = None
    smallest_limit: int | None = None
    #: Outranked: its rank among the scored candidates, its score, the k-th's score and id.
    rank: int | None = None
    score: float | None = None
    kth_score: float | None = None
    kth_chunk_id: str | None = None
    #: Outranked: per query term, the lost passage against the k-th, largest gap first.
    differences: list[TermDifference] = []

    @property
    def deciding_term(self) -> TermDifference | None:
        """The term on which the k-th passage gains most over this one (outranked only)."""
        return self.differences[0] if self.differences else None


class QueryDiagnosis(BaseModel):
    """One query of a run: its metric, every lost relevant passage, the unjudged top k."""

    model_config = ConfigDict(frozen=True)

    query_id: str
    query: str
    ndcg: float
    #: 1 - nDCG@k: what the query lost against an ideal ranking of its grades.
    ndcg_lost: float
    relevant: int
    lost: list[LostPassage]
    #: Passages in the top k nobody graded, in rank order.
    unjudged: list[str]


class RunDiagnosis(BaseModel):
    """A run's diagnosis: per query (most nDCG lost first) and the share of each cause."""

    model_config = ConfigDict(frozen=True)

    k: int
    limit: int
    queries: list[QueryDiagnosis]
    relevant: int
    lost: int
    by_cause: dict[LostCause, int]
    unjudged: int
    #: The expansion the run ranked with (``ExpansionSpec.label``); None: each query as typed.
    #: On an expanded run every cause is against the expanded term set.
    expansion: str | None = None

    def share(self, cause: LostCause) -> float:
        """The share of the lost relevant passages that ``cause`` lost (0.0 when none was)."""
        return self.by_cause.get(cause, 0) / self.lost if self.lost else 0.0

    @property
    def ceiling_note(self) -> str:
        """The vocabulary-mismatch share as the ceiling it is, in the screens' words."""
        share = self.share(LostCause.VOCABULARY)
        if self.expansion is not None:
            return (
                f"{share:.0%} of the lost relevant passages contain no term of the expanded "
                f"query ({self.expansion}): neither the typed words nor the ones the expansion "
                "added reach them, so no k1, b or limit can retrieve them. The rest are within "
                "reach of a better limit or better k1 and b."
            )
        return (
            f"{share:.0%} of the lost relevant passages contain no query term: no lexical "
            "setting (no k1, b or limit) can retrieve them; only other query words, stemming "
            "or a non-lexical ranker can. The rest are within reach of a better limit or "
            "better k1 and b."
        )


def _differences(
    lost: ScoreExplanation, kth: ScoreExplanation, stats: CorpusStats
) -> list[TermDifference]:
    mine = {t.term: t for t in lost.terms}
    theirs = {t.term: t for t in kth.terms}
    rows = []
    for term in sorted(set(mine) | set(theirs)):
        a, b = mine.get(term), theirs.get(term)
        either = a or b
        idf = either.idf if either is not None else inverse_document_frequency(term, stats)
        rows.append(
            built(
                TermDifference,
                dict(
                    term=term,
                    idf=idf,
                    lost_tf=a.tf if a else 0,
                    lost_tf_part=a.tf_part if a else 0.0,
                    lost_contribution=a.contribution if a else 0.0,
                    kth_tf=b.tf if b else 0,
                    kth_tf_part=b.tf_part if b else 0.0,
                    kth_contribution=b.contribution if b else 0.0,
                    gap=(b.contribution if b else 0.0) - (a.contribution if a else 0.0),
                ),
                _FIELDS[TermDifference],
            )
        )
    return sorted(rows, key=lambda r: (-r.gap, r.term))


def diagnose_query(
    query_id: str,
    query: str,
    terms: Sequence[str],
    full: LexicalCandidates,
    grades: Mapping[str, int],
    k: int,
    limit: int,
    ranker: Ranker,
    weights: Mapping[str, float] | None = None,
    past: Mapping[str, Place] | None = None,
) -> QueryDiagnosis:
    """One query's lost relevant passages from its read ``full`` at ``limit`` (Evaluate's:
    the first ``limit`` passages with a query term, in the truncation order) and ``past``:
    the place of each relevant passage past the cut that holds a query term (the read's
    ``places``); ``grades``: chunk id -> grade. The run's top k is ``ranker`` over the first
    ``limit`` candidates, as Evaluate ranks it. A graded passage neither read nor placed is
    a vocabulary mismatch here; the caller, who can ask the store, marks the ones since
    deleted (``LostCause.GONE``). ``weights``: an expanded run's term weights (``terms`` is
    then the expanded term set, ``full`` its read), as ``QueryScorer`` takes them."""
    read = full.head(limit)
    scorer = ranker.scorer(terms, read, weights)
    matched, scores = finish(matched_score_steps(ranker, terms, read, weights, scorer))
    # Only the top k is ordered; a rank below it is counted (the rows ahead of it), where a
    # sort of every candidate was ~60 us of a query's diagnosis at limit 1,000 (issue 49).
    order = best_first(matched, scores, read.id_order, k)
    head = min(limit, len(full))
    ids = full.ids_at(np.arange(head))
    relevant = [c for c, g in grades.items() if g >= RELEVANT]
    # Each relevant passage is searched for in its level (``passage_rows``): np.isin over
    # every row's id of an unlimited read (47,505 at issue 49's probes) was most of what a
    # diagnosis cost beyond its Evaluate, and a third of one at the largest limit. The rows
    # within the limit first, in row order, then those past it (as the isin gave them).
    found = passage_rows(full, dict.fromkeys(relevant, None), 0)
    rows = {unit: [row] for unit, row in sorted(found.items(), key=lambda f: f[1]) if row < head}
    rows.update((unit, [row]) for unit, row in found.items() if row >= head)
    kth_row = int(order[k - 1]) if len(order) >= k and k else None
    every = functools.cache(
        lambda: [str(i) for i in ids[best_first(matched, scores, read.id_order, len(matched))]]
    )

    def rank(unit: str) -> int | None:
        """``unit``'s 1-based rank: its row's, counted (a list of every ranked id, searched by
        ``_rank``, was another quarter at the largest limit), else the list's."""
        if (row := rows.get(unit)) is not None:
            return rank_of(row[0], matched, scores, read.id_order)
        return _rank(every(), unit)

    top = [str(i) for i in ids[order]] if k else []
    return _diagnosed(
        query_id, query, terms, full, grades, k, limit, scorer, scores, top, kth_row, rank,
        rows, past or {},
    )  # fmt: skip


def diagnose_documents(
    query_id: str,
    query: str,
    terms: Sequence[str],
    full: LexicalCandidates,
    grades: Mapping[str, int],
    k: int,
    limit: int,
    ranker: Ranker,
    sources_of: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.object_]],
    document_rows: Mapping[str, Sequence[int]],
    weights: Mapping[str, float] | None = None,
    past: Mapping[str, Place] | None = None,
    ranking: DocumentRanking | None = None,
) -> QueryDiagnosis:
    """``diagnose_query`` judged by document, as qrels judge: a document is in the top k at its
    best passage, and a lost one is diagnosed at the passage that came nearest (the best-scored
    of its candidates, else its first in the candidate order, else none: a mismatch).
    ``sources_of``: the source of each of some of the first ``limit`` rows (object array);
    ``document_rows``: each relevant document's rows in ``full`` (its passages that hold a
    query term, ascending), those of the top k's documents not needed; ``weights`` as for
    ``diagnose_query``; ``past``: each relevant document with no row at its passage placed
    first past the cut; ``ranking``: ``rank_documents``' answer, when the caller ranked first
    (to look up only the documents outside the top k: most relevant documents are in it).
    An outranked document's rank is the documents of the rows ahead of its best passage, plus
    one: counted, not sorted."""
    if ranking is None:
        ranking = rank_documents(terms, full, k, limit, ranker, sources_of, weights)
    elif (ranking.k, ranking.limit, len(ranking.head)) != (k, limit, min(limit, len(full))) or (
        ranking.head.stats is not full.stats
    ):
        raise ValueError("the ranking handed in is of another read, k or limit than this run's")
    head, scorer, matched, scores, top, kth_row, _, _ = ranking
    rows: dict[str, Sequence[int]] = {}
    # Matched rows are ascending rows of the head: as many as it has, they are all of them (a
    # read's every row holds a query term), and a row within it is ranked without a search.
    every = len(matched) == len(head)
    for document, found in document_rows.items():
        if not found:
            continue
        inside = [r for r in found if r < len(head)]
        if every:
            ranked = inside
        else:
            at = np.searchsorted(matched, inside).tolist()
            ranked = [
                r for r, a in zip(inside, at, strict=True) if a < len(matched) and matched[a] == r
            ]
        if ranked:  # a ranked document is diagnosed at its best passage
            best = (
                ranked[0]
                if len(ranked) == 1
                else best_first(np.array(ranked), scores, head.id_order, 1)[0]
            )
            rows[document] = [int(best)]
        else:
            rows[document] = sorted(found, key=lambda r: (r >= limit, r))

    def rank(document: str) -> int | None:
        # Its best passage's: the documents of the rows ranked above it, plus one.
        ahead = rows_ahead(rows[document][0], matched, scores, head.id_order)
        return None if ahead is None else len(set(sources_of(ahead).tolist())) + 1

    return _diagnosed(
        query_id, query, terms, full, grades, k, limit, scorer, scores, list(top), kth_row,
        rank, rows, past or {},
    )  # fmt: skip


def passage_rows(
    full: LexicalCandidates, wanted: Mapping[str, int | None], start: int
) -> dict[str, int]:
    """The row of each chunk id of ``wanted`` in ``full`` at or past ``start`` (left out if
    none). The truncation order is levels (distinct query terms held, most first), each in
    chunk-id order, so a passage is one binary search of its level's ids: ``wanted[id]``, the
    query terms it holds when the caller knows it, names the level tried first (then the
    others). When the searches would read more ids than the rows hold, the rows' ids are
    compared instead. Either way a row is returned only where its id is the one wanted."""
    found: dict[str, int] = {}
    if start >= len(full) or not wanted:
        return found
    matched = np.count_nonzero(full.tfs[start:] > 0, axis=1)
    cuts = [0, *(np.flatnonzero(np.diff(matched)) + 1).tolist(), len(matched)]
    levels = {int(matched[a]): (start + a, start + b) for a, b in itertools.pairwise(cuts)}
    probes = len(wanted) * len(levels) * max(1, len(matched).bit_length())
    # (A level in two blocks would be no truncation order: then every id is compared.)
    if probes * _PROBE_COST > len(matched) or len(levels) < len(cuts) - 1:
        ids = full.ids_at(np.arange(start, len(full)))
        for row in np.flatnonzero(np.isin(ids, list(wanted))).tolist():
            found.setdefault(str(ids[row]), start + row)
        return found
    pool, pooled = full.id_pool, full.id_rows

    def id_of(row: int) -> str:
        return str(pool[row] if pooled is None else pool[pooled[row]])

    for unit, hint in wanted.items():
        tried = [hint] if hint in levels else []
        for level in [*tried, *(each for each in levels if each != hint)]:
            low, high = levels[level]
            row = low + bisect.bisect_left(range(low, high), unit, key=id_of)
            if row < high and id_of(row) == unit:
                found[unit] = row
                break
    return found


def _place(ranked: list[str], unit: str) -> int | None:
    """``unit``'s first place in ``ranked`` (None if absent): one search."""
    try:
        return ranked.index(unit)
    except ValueError:
        return None


def _rank(ranked: list[str], unit: str) -> int | None:
    """``unit``'s 1-based place in ``ranked`` (None if absent): a search per outranked unit,
    where a dict of every ranked unit was a step per candidate for a few lookups a query."""
    at = _place(ranked, unit)
    return None if at is None else at + 1


def _diagnosed(
    query_id: str,
    query: str,
    terms: Sequence[str],
    full: LexicalCandidates,
    grades: Mapping[str, int],
    k: int,
    limit: int,
    scorer: QueryScorer,
    scores: npt.NDArray[np.float64],
    top_ids: list[str],
    kth_row: int | None,
    rank: Callable[[str], int | None],
    rows: Mapping[str, Sequence[int]],
    past: Mapping[str, Place],
) -> QueryDiagnosis:
    """The causes, given the run's ranking (``scorer``, the one it scored with): its first k
    units (passages or documents) ``top_ids``, the row of the k-th (None when fewer than k
    were ranked), ``rank``: a unit's 1-based rank (None if unranked), each relevant unit's
    rows in ``full`` (the one it is diagnosed at first), and ``past``: the place of each with
    none there past the cut."""
    ndcg = ndcg_at_k(top_ids, dict(grades), k)
    relevant = sorted(c for c, g in grades.items() if g >= RELEVANT)
    asked = sorted(set(terms))
    # The k-th's explanation once a passage is outranked (~20 us a query whose lost passages
    # were all cut by the limit or mismatched did not need), and the terms held at the cut
    # once one is cut: each made when first needed (a functools.cache each was ~5 us a query
    # to make). The scorer is the ranking's own (a second one was ~15 us an outranked query).
    kth_made: list[tuple[ScoreExplanation, str]] = []
    cut_made: list[int | None] = []

    def kth() -> tuple[ScoreExplanation, str]:
        if not kth_made:
            kth_made.append(_kth(scorer, full, kth_row))
        return kth_made[0]

    def at_cut() -> int | None:
        if not cut_made:
            cut_made.append(_matched(full, limit - 1) if limit > 0 else None)
        return cut_made[0]

    lost: list[LostPassage] = []
    shown = set(top_ids)
    for unit in relevant:
        if unit in shown:
            continue
        grade = grades[unit]
        found = rows.get(unit)
        placed = None if found else past.get(unit)
        if not found and placed is None:
            lost.append(
                _lost(
                    chunk_id=unit,
                    grade=grade,
                    cause=LostCause.VOCABULARY,
                    missing_terms=list(asked),
                )
            )
            continue
        if placed is not None:  # past the read's cut: read off its place
            row = placed.position
            held: Mapping[str, int] = {
                term: tf for term, tf in zip(full.terms, placed.tfs, strict=True) if tf
            }
        else:
            assert found  # a row in ``full``
            row = int(found[0])
            held = full.term_frequencies(row)
        missing = [t for t in asked if t not in held]
        if row >= limit:
            lost.append(
                _lost(
                    chunk_id=unit,
                    grade=grade,
                    cause=LostCause.LIMIT,
                    missing_terms=missing,
                    matched_terms=len(held),
                    position=row + 1,
                    matched_at_cut=at_cut(),  # the same row for every passage cut
                    smallest_limit=row + 1,
                )
            )
            continue
        assert kth_row is not None
        kth_explained, kth_id = kth()
        mine = scorer.explain(held, int(full.doc_lengths[row]))
        lost.append(
            _lost(
                chunk_id=unit,
                grade=grade,
                cause=LostCause.OUTRANKED,
                missing_terms=missing,
                matched_terms=len(held),
                position=row + 1,
                rank=rank(unit),
                score=float(scores[row]),
                kth_score=float(scores[kth_row]),
                kth_chunk_id=kth_id,
                differences=_differences(mine, kth_explained, full.stats),
            )
        )
    unjudged = [unit for unit in top_ids if unit not in grades]
    return built(
        QueryDiagnosis,
        {
            "query_id": query_id,
            "query": query,
            "ndcg": ndcg,
            "ndcg_lost": 1.0 - ndcg if relevant else 0.0,
            "relevant": len(relevant),
            "lost": lost,
            "unjudged": unjudged,
        },
        _FIELDS[QueryDiagnosis],
    )


#: Each frozen model's fields set, shared by every one built here (``built``'s ``fields``): a
#: diagnosis of 2,000 queries keeps ~14k of them alive (a set each, ~200 bytes), and its
#: survivors, 63k objects, made the collector walk the whole process once more (~0.1 s at
#: issue 49's probes: each full collection is a walk of every tracked object).
_FIELDS: Final = {
    model: set(model.model_fields) for model in (LostPassage, TermDifference, QueryDiagnosis)
}
#: Every field of a lost passage in declared order, each default its own object (not the
#: field's), the required ones None until said (``_lost``).
_LOST_TEMPLATE: Final = {
    name: None if info.is_required() else copy(info.default)
    for name, info in LostPassage.model_fields.items()
}


def _lost(**values: Any) -> LostPassage:
    """A ``LostPassage`` of values computed here (``built``, fields in declared order, each
    default one object shared by every lost passage built here): validating a model per lost
    passage, and pydantic's deep copy of each default list, were ~7% of a diagnosis of 2,000
    queries in memory, and the empty lists 13k of its survivors (``_FIELDS``). Nothing
    mutates a frozen model's list: a change is a ``model_copy(update=...)``, a new list."""
    return built(LostPassage, {**_LOST_TEMPLATE, **values}, _FIELDS[LostPassage])


def _kth(
    scorer: QueryScorer, full: LexicalCandidates, kth_row: int | None
) -> tuple[ScoreExplanation, str]:
    """The k-th passage's explanation by the run's scorer, and its chunk id (``kth_row``: its
    row in ``full``)."""
    assert kth_row is not None, "an outranked passage has a k-th above it"
    explained = scorer.explain(full.term_frequencies(kth_row), int(full.doc_lengths[kth_row]))
    return explained, str(full.ids_at([kth_row])[0])


def _matched(full: LexicalCandidates, row: int) -> int:
    """The distinct query terms row ``row`` holds (``matched_terms`` of that row alone)."""
    return int(np.count_nonzero(full.tfs[row] > 0))


def own_terms(tfs: Mapping[str, int], stats: CorpusStats, most: int = OWN_TERMS) -> list[OwnTerm]:
    """A passage's ``most`` highest tf x idf terms (``stats``: the df of each, whole corpus)."""
    weighted = [
        OwnTerm(term=t, tf=tf, idf=(idf := inverse_document_frequency(t, stats)), weight=tf * idf)
        for t, tf in tfs.items()
    ]
    return sorted(weighted, key=lambda o: (-o.weight, o.term))[:most]


def summarise(
    k: int, limit: int, queries: Sequence[QueryDiagnosis], expansion: str | None = None
) -> RunDiagnosis:
    """The run's diagnosis: queries by nDCG lost (most first, then id), counts by cause;
    ``expansion``: the label of the expansion the run ranked with (None: as typed)."""
    by_cause = dict.fromkeys(LostCause, 0)
    for query in queries:
        for passage in query.lost:
            by_cause[passage.cause] += 1
    ordered = sorted(queries, key=lambda q: (-q.ndcg_lost, q.query_id))
    return RunDiagnosis(
        k=k,
        limit=limit,
        queries=ordered,
        relevant=sum(q.relevant for q in queries),
        lost=sum(len(q.lost) for q in queries),
        by_cause={c: n for c, n in by_cause.items() if n or c is not LostCause.GONE},
        unjudged=sum(len(q.unjudged) for q in queries),
        expansion=expansion,
    )
