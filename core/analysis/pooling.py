"""What a rater grades next: the pool of a query, and how far they are through a set.

Pure: the service reads the candidates and the grades (``core.service.judging``) and hands
them here.

A pool is the union of the top ``depth`` of the rankers the analyst picks, ordered by a hash
of the passage id so the order reveals no ranker. The pool's ids are ranked WITHOUT
explanations (``top_rows``/``score_all``): the Judge screen shows text, not scores, and
building one explanation per pooled passage per ranker was most of a pool's cost.

Progress is counted against pools, not against a fixed number: a query is finished when the
rater graded its whole pool. ``SetProgress`` is computed once (a pool per query the rater has
started) and then moved forward from each pool a grade changes (``with_pool``), so the screen
need not recompute every pool after every grade. Recomputing it per grade was the
alternative: it is exact when the corpus changes under the rater, and costs a pool per started
query per keypress, which a set of hundreds of queries cannot afford in 300 ms.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.analysis.rankers import MAX_K1, RANKERS, Ranker, RankerKind, score_all
from core.domain.bm25 import BM25_B, BM25_K1
from core.domain.chunks import StoredChunk
from core.domain.ranking import LexicalCandidates, candidate_scores, top_rows

#: How deep each ranker's list goes into a pool (TREC pools to 100; 10 is one screen).
POOL_DEPTH: Final = 10
#: Deepest pool a ranker may add: beyond 100 a query's pool is a day's work for one rater.
MAX_POOL_DEPTH: Final = 100


#: A pool ranker: ``LIMITED`` or the kind of a ``RANKERS`` row with a pool label (which pools
#: over every candidate, unlimited).
PoolRanker = str
#: The workspace's BM25 over the candidates its limit keeps (what Search shows): the one pool
#: ranker that is not a row of the ranker table.
LIMITED: Final = "limited"
#: Every pool ranker, in the order the Judge screen offers them.
POOL_RANKERS: Final[tuple[PoolRanker, ...]] = (
    LIMITED,
    *(row.kind.value for row in RANKERS if row.pool is not None),
)
#: How the Judge screen names each pool ranker.
POOL_RANKER_LABELS: Final[dict[PoolRanker, str]] = {
    LIMITED: "workspace BM25 at its limit",
    **{row.kind.value: row.pool for row in RANKERS if row.pool is not None},
}


class PoolSpec(BaseModel):
    """Which rankers pool a query, how deep, at which limit, and the variant's k1 and b."""

    model_config = ConfigDict(frozen=True)

    rankers: tuple[PoolRanker, ...] = (LIMITED, RankerKind.WORKSPACE, RankerKind.CLASSIC)
    depth: int = Field(default=POOL_DEPTH, ge=1, le=MAX_POOL_DEPTH)
    #: The workspace's limit for the limited ranker (the service's default is Search's).
    limit: int = Field(ge=1)
    k1: float = Field(default=BM25_K1, ge=0.0, le=MAX_K1, allow_inf_nan=False)
    b: float = Field(default=BM25_B, ge=0.0, le=1.0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _some_ranker(self) -> Self:
        if not self.rankers:
            raise ValueError("a pool needs at least one ranker: choose one or more")
        unknown = [r for r in self.rankers if r not in POOL_RANKER_LABELS]
        if unknown:
            raise ValueError(f"no pool ranker {unknown[0]!r} (one of: {', '.join(POOL_RANKERS)})")
        return self

    def handed(self, full: LexicalCandidates) -> list[tuple[Ranker, LexicalCandidates]]:
        """Each chosen ranker with the candidates it ranks (the limited one sees the head)."""
        handed: list[tuple[Ranker, LexicalCandidates]] = []
        for chosen in dict.fromkeys(self.rankers):
            if chosen == LIMITED:
                handed.append((Ranker.of(RankerKind.WORKSPACE), full.head(self.limit)))
            else:
                handed.append((Ranker.of(chosen, self.k1, self.b), full))
        return handed


class PoolPassage(BaseModel):
    """A passage to grade: its text, and this rater's grade (None until given)."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    source_id: str
    text: str
    grade: int | None


class JudgingPool(BaseModel):
    """One query of a set with the pool to grade, in an order that reveals no ranker."""

    model_config = ConfigDict(frozen=True)

    query: str
    #: The query's terms as the workspace tokenises them (what the screen highlights).
    terms: list[str]
    position: int
    queries: int
    passages: list[PoolPassage]
    #: Why the pool is empty, as every result list says it (``core.service.common.empty_reason``:
    #: no terms left after stopwords, no letters or digits, no passage holds a term); None when
    #: it holds a passage.
    empty_reason: str | None = None

    @property
    def graded(self) -> int:
        return sum(p.grade is not None for p in self.passages)

    @property
    def finished(self) -> bool:
        """Whether this rater graded the whole pool (an empty pool has nothing to grade)."""
        return self.graded == len(self.passages)

    @property
    def next_ungraded(self) -> int | None:
        """Index of the first passage this rater has not graded; None when all are."""
        return next((i for i, p in enumerate(self.passages) if p.grade is None), None)

    def graded_as(self, chunk_id: str, grade: int) -> JudgingPool:
        """This pool after the rater graded ``chunk_id`` (what ``grade`` stored), unread."""
        return self.model_copy(
            update={
                "passages": [
                    p.model_copy(update={"grade": grade}) if p.chunk_id == chunk_id else p
                    for p in self.passages
                ]
            }
        )


class SetProgress(BaseModel):
    """How far one rater is through a query set, counted against each query's pool."""

    model_config = ConfigDict(frozen=True)

    queries: int
    #: Texts of the queries the rater graded at least one passage of.
    started: frozenset[str]
    #: Texts of the queries whose whole pool the rater graded.
    finished: frozenset[str]
    #: Where to resume: the query last graded if unfinished, else the next unfinished one.
    resume_at: int = Field(ge=0)

    def with_pool(self, pool: JudgingPool) -> SetProgress:
        """This progress after ``pool`` changed (a grade given): its query's state from it."""
        started = self.started | {pool.query} if pool.graded else self.started - {pool.query}
        done = pool.finished and bool(pool.passages)
        finished = self.finished | {pool.query} if done else self.finished - {pool.query}
        return self.model_copy(
            update={"started": started, "finished": finished, "resume_at": pool.position}
        )


def pool_order(query: str, chunk_ids: Sequence[str]) -> list[str]:
    """The pool's ids in an order that depends on the query and the id, never on a ranker."""
    return sorted(chunk_ids, key=lambda i: hashlib.sha256(f"{query}\0{i}".encode()).digest())


def pooled_rows(
    terms: Sequence[str], full: LexicalCandidates, spec: PoolSpec
) -> dict[str, StoredChunk]:
    """id -> passage of the union of each chosen ranker's top ``spec.depth`` (no explanations)."""
    found: dict[str, StoredChunk] = {}
    for ranker, handed in spec.handed(full):
        if ranker.kind is RankerKind.WORKSPACE:
            rows = top_rows(candidate_scores(terms, handed), handed.id_order, spec.depth)
        else:
            rows = score_all(ranker, terms, handed)[0][: spec.depth]
        fresh = [int(r) for r in rows if handed.ids[r] not in found]
        for chunk in handed.chunks(fresh):
            found[chunk.id] = chunk
    return found
