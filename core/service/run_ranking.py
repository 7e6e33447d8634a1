"""How an Evaluate run ranks one query: the run's spec, a document run's top documents, an
expanded run's second read, and a residual run's two rankings (``core.analysis.residual``).

Apart from ``core.service.analysis`` (the actions), which was at the 600-line bound; these are
the parts of a run that do not depend on the screen that asked for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from core.analysis.evaluation import documents_in_rank_order
from core.analysis.expansion import ExpansionSpec, Feedback, rm3_weights, rocchio
from core.analysis.rankers import Ranker, RankerKind, rank_with_steps, top_scored_steps
from core.analysis.residual import fed_back
from core.checkpoint import checkpoint, stepped
from core.domain.filters import PassageFilter
from core.domain.ranking import LexicalCandidates
from core.domain.steps import finish
from core.domain.tokenize import Profile
from core.service.common import UNLIMITED, bounded_candidates, check_query_terms
from core.stores.port import ChunkStore

#: The limit of an Evaluate run that scores every matching passage.
NO_LIMIT: Final = UNLIMITED


class RunSpec(BaseModel):
    """One Evaluate run: which workspace, which limit, which ranker."""

    model_config = ConfigDict(frozen=True)

    workspace: str
    limit: int = Field(ge=0)
    ranker: Ranker = Field(default_factory=lambda: Ranker.of(RankerKind.WORKSPACE))
    #: Only the passages this admits may be candidates (None: the whole workspace).
    within: PassageFilter | None = None
    #: Each query expanded before it is ranked (``core.analysis.expansion``); None: as typed.
    expand: ExpansionSpec | None = None

    @property
    def label(self) -> str:
        """How tables and the CSV name this run."""
        limit = "no limit" if self.limit >= NO_LIMIT else f"limit {self.limit}"
        more = (f" · within {self.within.describe()}" if self.within else "") + (
            f" · {self.expand.label}" if self.expand else ""
        )
        return f"{self.workspace} · {limit} · {self.ranker.label}{more}"


def top_documents(
    ranker: Ranker,
    terms: Sequence[str],
    handed: LexicalCandidates,
    k: int,
    weights: Mapping[str, float] | None = None,
) -> list[str]:
    """The first ``k`` source ids in rank order: more passages are ranked while documents repeat.

    Scores and ids only (``top_scored_steps``): a run shows no passage's explanation, and
    building them (the ranked passages' every term) was most of an expanded Evaluate. Ranking
    every candidate to find k documents would look up hundreds of passages; doubling stops early.
    """
    want = k
    while True:
        rows, _ = finish(top_scored_steps(ranker, terms, handed, want, weights))
        documents = documents_in_rank_order(c.source_id for c in handed.chunks(rows))
        if len(documents) >= k or len(rows) < want:
            return documents[:k]
        want *= 2


async def expansion_weights(
    ranker: Ranker,
    terms: list[str],
    handed: LexicalCandidates,
    profile: Profile,
    expand: ExpansionSpec,
) -> dict[str, float]:
    """The expanded query's weights (term -> weight) of a run's query: RM3 from the top
    ``expand.fb_docs`` passages ``ranker`` ranks among ``handed`` (the read at the run's
    limit). Evaluate's and Diagnose's expanded runs both expand here, so they rank alike."""
    if expand.method != "rm3":
        raise ValueError(
            "a run expands by RM3 only: feedback from the analyst's grades (Rocchio) is "
            "measured on Search, one query at a time"
        )
    rows, scores = await stepped(top_scored_steps(ranker, terms, handed, expand.fb_docs))
    feedback = [
        Feedback(chunk, score)
        for chunk, score in zip(handed.chunks(rows), scores[rows].tolist(), strict=True)
    ]
    return rm3_weights(terms, feedback, profile, expand)


async def expanded_top(
    store: ChunkStore,
    spec: RunSpec,
    terms: list[str],
    full: LexicalCandidates,
    tenant: UUID,
    profile: Profile,
    k: int,
    passages: bool,
) -> list[str]:
    """An expanded run's top ``k`` ids for a query: feedback from its ranker at its limit,
    the expanded terms read again, ranked with the expansion's weights."""
    assert spec.expand is not None
    if not terms:
        return []
    weights = await expansion_weights(
        spec.ranker, terms, full.head(spec.limit), profile, spec.expand
    )
    expanded = sorted(weights)
    again = await bounded_candidates(store, expanded, tenant, spec.limit, spec.within)
    await checkpoint()
    if passages:
        rows, _ = await stepped(top_scored_steps(spec.ranker, expanded, again, k, weights))
        return [str(unit) for unit in again.ids_at(rows).tolist()]
    return top_documents(spec.ranker, expanded, again, k, weights)


async def residual_rankings(
    store: ChunkStore,
    terms: list[str],
    tenant: UUID,
    profile: Profile,
    limit: int,
    k: int,
    grades: Mapping[str, int],
    expand: ExpansionSpec,
) -> tuple[list[str], list[str], list[str]]:
    """A query's typed and Rocchio-expanded rankings (the workspace's BM25 at ``limit``, deep
    enough that ``k`` remain once the fed-back passages are out) and the passages fed back: the
    graded ones in the typed top ``expand.fb_docs``, their grades Rocchio's feedback (id order,
    as Search's Rocchio reads a query's grades)."""
    if not terms:
        return [], [], []
    ranker = Ranker.of(RankerKind.WORKSPACE)
    handed = await bounded_candidates(store, terms, tenant, limit)
    typed = await stepped(rank_with_steps(ranker, terms, handed, k + expand.fb_docs))
    typed_ids = [r.chunk.id for r in typed]
    fed = fed_back(typed_ids, grades, expand.fb_docs)
    chunk_of = {r.chunk.id: r.chunk for r in typed}
    feedback = [(chunk_of[unit], grades[unit]) for unit in sorted(fed)]
    weights = rocchio(terms, feedback, profile, expand).weights
    expanded = sorted(weights)
    check_query_terms(expanded, "the expanded query")
    again = await bounded_candidates(store, expanded, tenant, limit)
    await checkpoint()
    top = await stepped(rank_with_steps(ranker, expanded, again, k + len(fed), weights=weights))
    return typed_ids, [r.chunk.id for r in top], fed
