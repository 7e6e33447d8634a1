"""Search and explanations: one ranked list with the arithmetic behind every score.

The actions read the store once per query (``lexical_candidates`` with the user's
limit, which also counts what matched) and hand ``core.domain.ranking`` the candidates;
nothing here scores. Re-reading unlimited to count the matches was rejected: two
reads may see two snapshots and cost a second round trip.
"""

from __future__ import annotations

import csv
import io
from itertools import islice
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from core.analysis.expansion import Expansion, ExpansionSpec, Feedback, rm3, rocchio
from core.analysis.predictors import QueryDifficulty, query_difficulty
from core.checkpoint import checkpoint, stepped
from core.domain.bm25 import ScoreExplanation, explain_score
from core.domain.chunks import StoredChunk
from core.domain.entities import Entity
from core.domain.filters import PassageFilter
from core.domain.ranking import (
    LexicalCandidates,
    RankedChunk,
    candidate_score_steps,
    rank_steps,
    top_rows,
)
from core.domain.tokenize import Profile, tokenize
from core.service.common import (
    UNLIMITED,
    QueryView,
    bounded_candidates,
    check_k_limit,
    check_query_terms,
    checked_terms,
    chips,
    combine_judgments,
    empty_reason,
    entity_names,
    filter_words,
    query_view,
    workspace_entry,
    workspace_profile,
)
from core.service.runner import StoreRunner
from core.stores.port import tenant_of


class PassageView(BaseModel):
    """A passage with the names of the entities it mentions."""

    model_config = ConfigDict(frozen=True)

    chunk: StoredChunk
    entities: list[Entity] = Field(default_factory=list)


class RankedPassage(BaseModel):
    """One ranked result: rank (1-based), score, the arithmetic, and entity names."""

    model_config = ConfigDict(frozen=True)

    rank: int
    chunk: StoredChunk
    score: float
    explanation: ScoreExplanation
    entities: list[Entity] = Field(default_factory=list)
    #: 1-based position in the store's candidate order (matched-term count desc, id asc).
    candidate_position: int
    #: With an expansion: its rank in the unexpanded ranking at the same limit (None: it held
    #: no typed term, or the limit cut it there). Without one: None.
    rank_before: int | None = None
    #: With an expansion, for a passage that entered the top k: the added term contributing
    #: most to its score (None: it was in the unexpanded top k too, or no added term helped).
    brought_by: str | None = None


class SearchResult(QueryView):
    """Everything the search page shows for one query, all numbers from core."""

    n_docs: int
    avg_doc_length: float
    doc_frequencies: dict[str, int]
    #: Passages containing at least one query term (in the whole corpus).
    matching_passages: int
    #: Candidates the store handed to BM25 (at most ``limit``).
    candidates_returned: int
    #: Matching passages the limit cut before scoring.
    cut_by_limit: int
    passages: list[RankedPassage]
    #: The filter the candidates were restricted to (None: the whole workspace).
    within: PassageFilter | None = None
    #: That filter in words, its entities by name ("" without a filter).
    within_words: str = ""
    #: Passages containing a query term that the filter excluded (before the limit; 0
    #: without a filter). ``matching_passages`` counts only those it admits.
    filtered_out: int = 0
    #: The query performance predictors from the numbers above (None when no terms).
    difficulty: QueryDifficulty | None = None
    #: The expansion the passages were ranked with (None: the query as typed). With one, the
    #: statistics, counts and candidates are those of the expanded term set's read.
    expansion: Expansion | None = None

    def to_json(self) -> str:
        """The result list with every explanation, as JSON."""
        return self.model_dump_json(indent=2)

    def to_csv(self) -> str:
        """One row per (passage, query term): the explanation table of every result."""
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(
            [
                "rank",
                "score",
                "source_id",
                "chunk_index",
                "start_char",
                "end_char",
                "chunk_id",
                "term",
                "tf",
                "df",
                "N",
                "idf",
                "dl",
                "avgdl",
                "tf_part",
                "contribution",
            ]
        )
        for passage in self.passages:
            chunk = passage.chunk
            for part in passage.explanation.every_term():
                writer.writerow(
                    [
                        passage.rank,
                        repr(passage.score),
                        chunk.source_id,
                        chunk.chunk_index,
                        chunk.start_char,
                        chunk.end_char,
                        chunk.id,
                        part.term,
                        part.tf,
                        part.df,
                        part.n_docs,
                        repr(part.idf),
                        part.doc_length,
                        repr(part.avg_doc_length),
                        repr(part.tf_part),
                        repr(part.contribution),
                    ]
                )
        return out.getvalue()


def brought_by(explanation: ScoreExplanation, added: set[str]) -> str | None:
    """The added term contributing most to a passage's score (ties: the first by term)."""
    best = max(
        (p for p in explanation.terms if p.term in added and p.contribution > 0),
        key=lambda p: (p.contribution, [-ord(c) for c in p.term]),
        default=None,
    )
    return None if best is None else best.term


class SearchActions(StoreRunner):
    """The Search screen's actions."""

    def search(
        self,
        query: str,
        k: int = 10,
        limit: int = 1000,
        *,
        workspace: str,
        within: PassageFilter | None = None,
        expand: ExpansionSpec | None = None,
    ) -> SearchResult:
        """Rank the workspace's passages for ``query``; says why when nothing is found.

        ``within`` narrows the candidates to sources, entities or metadata values before the
        limit (``core.domain.filters``); the statistics stay the whole workspace's.
        ``expand``: rank again with the query expanded (``core.analysis.expansion``) from the
        unexpanded ranking's top passages at the same limit and filter.
        """
        check_k_limit(k, limit)
        if within is not None and within.empty:
            within = None
        return self._call_query(query, self._search(query, k, limit, workspace, within, expand))

    async def _search(
        self,
        query: str,
        k: int,
        limit: int,
        workspace: str,
        within: PassageFilter | None,
        expand: ExpansionSpec | None = None,
    ) -> SearchResult:
        tenant, profile = await workspace_entry(self._store, workspace)
        generation = await self._store.generation(tenant)
        # An entity correction changes a filter's passages and the chips, not the generation.
        fixes = tuple(await self._store.entity_corrections(tenant))
        key = ("search", tenant, profile, generation, fixes, query, k, limit, within, expand)
        # Feedback from grades depends on grades, which the generation does not count: not kept.
        keep = expand is None or expand.method != "rocchio"
        cached = self._results.get(key) if keep else None
        if isinstance(cached, SearchResult):
            return cached
        result = await self._ranked(query, k, limit, workspace, profile, within, expand, tenant)
        if keep:
            self._results.put(key, result)
        return result

    async def _ranked(
        self,
        query: str,
        k: int,
        limit: int,
        workspace: str,
        profile: Profile,
        within: PassageFilter | None = None,
        expand: ExpansionSpec | None = None,
        tenant: UUID | None = None,
    ) -> SearchResult:
        if tenant is None:
            tenant = await tenant_of(self._store, workspace)
        view = query_view(query, k, limit, workspace, profile)
        terms = view["terms"]
        # One read, one snapshot: the store counts what matched and hands over ``limit``.
        handed = await bounded_candidates(self._store, terms, tenant, limit, within)
        await checkpoint()
        ranked: list[RankedChunk] = []
        if expand is not None and terms:  # the typed top k is not shown: no explanations
            scores = await stepped(candidate_score_steps(terms, handed))
            top_scores = scores[top_rows(scores, handed.id_order, k)].tolist()
        else:
            ranked = await stepped(rank_steps(terms, handed, k))
            top_scores = [r.score for r in ranked]
        # From the read's own numbers: no second read (core.analysis.predictors).
        difficulty = (
            query_difficulty(
                terms,
                handed.stats,
                handed.matching,
                handed.cut_by_limit,
                top_scores,
                filtered_out=handed.filtered_out,
            )
            if terms
            else None
        )
        expansion: Expansion | None = None
        before: dict[str, int] = {}
        if expand is not None and terms:
            expansion, before, handed, ranked = await self._expanded(
                query, terms, handed, k, limit, tenant, profile, within, expand
            )
        matching = handed.matching
        position = {chunk_id: i + 1 for i, chunk_id in enumerate(handed.ids)}
        names = await entity_names(self._store, [r.chunk for r in ranked], tenant)
        top_before = set(islice(before, k))  # ``before`` is in rank order
        added = set(expansion.added) if expansion is not None else set()
        passages = [
            RankedPassage(
                rank=i + 1,
                chunk=r.chunk,
                score=r.score,
                explanation=r.explanation,
                entities=chips(r.chunk, names),
                candidate_position=position[r.chunk.id],
                rank_before=before.get(r.chunk.id),
                brought_by=(
                    brought_by(r.explanation, added)
                    if expansion is not None and r.chunk.id not in top_before
                    else None
                ),
            )
            for i, r in enumerate(ranked)
        ]
        stats = handed.stats
        n_docs, avg_doc_length = stats.n_docs, stats.avg_doc_length
        if not terms:
            # The store reads nothing for no terms (contract); the corpus is still there.
            summary = await self._store.corpus_summary(tenant)
            n_docs, avg_doc_length = summary.passages, summary.avg_doc_length
        return SearchResult(
            **view,
            empty_reason=empty_reason(
                terms, matching, len(passages), handed.filtered_out, view["query"]
            ),
            n_docs=n_docs,
            avg_doc_length=avg_doc_length,
            doc_frequencies=dict(stats.doc_frequencies),
            matching_passages=matching,
            candidates_returned=len(handed),
            cut_by_limit=handed.cut_by_limit,
            passages=passages,
            within=within,
            within_words=await filter_words(self._store, within, tenant),
            filtered_out=handed.filtered_out,
            difficulty=difficulty,
            expansion=expansion,
        )

    async def _graded_passages(self, query: str, tenant: UUID) -> list[tuple[StoredChunk, int]]:
        """The passages graded for ``query`` (its raters' grades combined), in id order."""
        grades = combine_judgments(await self._store.list_judgments(tenant, [query]))
        found = []
        for chunk_id, grade in sorted(grades.get(query, {}).items()):
            chunk = await self._store.get(chunk_id, tenant)
            if chunk is not None:
                found.append((chunk, grade))
        return found

    async def _expanded(
        self,
        query: str,
        terms: list[str],
        handed: LexicalCandidates,
        k: int,
        limit: int,
        tenant: UUID,
        profile: Profile,
        within: PassageFilter | None,
        spec: ExpansionSpec,
    ) -> tuple[Expansion, dict[str, int], LexicalCandidates, list[RankedChunk]]:
        """The expansion of ``terms`` from their ranking's top ``spec.fb_docs`` (in ``handed``,
        the read at ``limit``), every passage's unexpanded rank, and the expanded read and
        ranking: the candidate rule applies to the expanded term set (a second read)."""
        scores = await stepped(candidate_score_steps(terms, handed))  # kept from the first
        order = top_rows(scores, handed.id_order, len(handed))
        if spec.method == "rocchio":
            expansion = rocchio(terms, await self._graded_passages(query, tenant), profile, spec)
        else:
            rows = order[: spec.fb_docs]
            chunks = handed.chunks(rows)
            scored = zip(chunks, scores[rows].tolist(), strict=True)
            expansion = rm3(terms, [Feedback(c, s) for c, s in scored], profile, spec)
        # Rank order, so the first k keys are the unexpanded top k (one column read, not 1,000).
        ranked_ids = map(str, handed.ids_at(order).tolist())
        before = dict(zip(ranked_ids, range(1, len(order) + 1), strict=True))
        weights = expansion.weights
        expanded = sorted(weights)
        check_query_terms(expanded, "the expanded query")
        again = await bounded_candidates(self._store, expanded, tenant, limit, within)
        await checkpoint()
        ranked = await stepped(rank_steps(expanded, again, k, weights))
        return expansion, before, again, ranked

    def explain(self, query: str, chunk_id: str, *, workspace: str) -> ScoreExplanation:
        """The explanation of one passage for ``query``, whether or not it was ranked."""
        return self._call_query(query, self._explain(query, chunk_id, workspace))

    async def _explain(self, query: str, chunk_id: str, workspace: str) -> ScoreExplanation:
        tenant = await tenant_of(self._store, workspace)
        profile = await workspace_profile(self._store, workspace)
        terms = checked_terms(query, profile)
        found = await bounded_candidates(self._store, terms, tenant, UNLIMITED)
        row = found.row_of(chunk_id)
        if row is not None:
            return explain_score(
                terms, found.term_frequencies(row), int(found.doc_lengths[row]), found.stats
            )
        chunk = await self._store.get(chunk_id, tenant)
        if chunk is None:
            raise KeyError(f"no passage {chunk_id} in workspace {workspace!r}")
        # It contains no query term: every tf is 0, and so is every contribution.
        return explain_score(terms, {}, len(tokenize(chunk.text, profile)), found.stats)
