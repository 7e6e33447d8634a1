"""After an evaluation: why each relevant passage was lost, and which k1 and b would do better.

Both read each graded query of a set at the run's limit, as ``evaluate_judged`` does (the set's
queries that have a grade, the grades combined over raters), and hand the columns to
``core.analysis``: ``diagnosis`` (one cause per lost relevant passage; a relevant passage past
the limit is placed from the read's own postings, ``LexicalCandidates.places``, never by a
second, unlimited read)
and ``tuning`` (a k1 x b grid scored from the same columns). What needs the store beyond that
read is done here, once per run: the text of the passages no query term reaches (their own
highest tf x idf terms, one df read for all of them) and whether a graded passage still exists.
Rejected: a method per screen that re-read per lost passage (Search's "why not?"), a round
trip per passage. An expanded run (RM3) is diagnosed on its own ranking: each query is expanded
as Evaluate's expanded run expands it (``run_ranking.expansion_weights``, from the typed read at
the limit) and the expanded term set is what is read and scored, so the causes are the expanded
run's; diagnosing the typed run and annotating the added terms was rejected, since a passage an
added term recovered would still be listed lost.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Callable
from contextlib import aclosing
from functools import partial
from typing import Final
from uuid import UUID

import numpy as np
import numpy.typing as npt

from core.analysis.diagnosis import (
    RELEVANT,
    LostCause,
    LostPassage,
    QueryDiagnosis,
    RunDiagnosis,
    diagnose_documents,
    diagnose_query,
    own_terms,
    passage_rows,
    summarise,
)
from core.analysis.expansion import ExpansionSpec
from core.analysis.judgment_files import JudgmentError
from core.analysis.rankers import Ranker, RankerKind, rank_documents
from core.analysis.sentences import passage_label
from core.analysis.tuning import (
    GridSpec,
    TuningGrid,
    TuningQuery,
    grid_points,
    grid_result,
    query_grid_steps,
)
from core.checkpoint import checkpoint, stepped
from core.domain.bm25 import CorpusStats
from core.domain.judging import QuerySet
from core.domain.places import Place
from core.domain.ranking import LexicalCandidates
from core.domain.tokenize import Profile, tokenize
from core.service.common import (
    MAX_QUERY_TERMS,
    READ_AHEAD,
    READ_AHEAD_CELLS,
    UNLIMITED,
    bounded_candidates,
    check_diagnosed,
    check_grid,
    check_k_limit,
    check_query_terms,
    checked_terms,
    combine_judgments,
    judged_files,
    read_ahead,
    workspace_profile,
)
from core.service.run_ranking import expansion_weights
from core.service.runner import ProgressCallback, StoreRunner
from core.stores.port import tenant_of

#: Distinct terms of the lost passages' texts read per df lookup (the query bound).
_DF_TERMS: Final = MAX_QUERY_TERMS
#: Documents whose passages (or their ids) are read at once: one round trip for
#: a run's few, a bounded read for the largest (2,000 queries' mismatches).
_SOURCES_READ: Final = 500


class DiagnosisActions(StoreRunner):
    """Runs and Evaluate's diagnosis and the k1/b grid."""

    def _graded(
        self, query_set: str, workspace: str, by_document: bool
    ) -> tuple[QuerySet, dict[str, dict[str, int]]]:
        tenant = self._tenant(workspace)
        found = self._call(self._store.get_query_set(tenant, query_set))
        if found is None:
            raise KeyError(f"no query set “{query_set}” in “{workspace}”")
        texts = [q.text for q in found.queries]
        grades = combine_judgments(
            self._call(self._store.list_judgments(tenant, texts)), by_document=by_document
        )
        if not any(q.text in grades for q in found.queries):
            raise JudgmentError(f"no query of the set “{query_set}” has a grade yet")
        return found, grades

    def unit_label(self, unit_id: str, *, workspace: str) -> str:
        """How the screens name a judged unit a diagnosis lists: "source 184 · passage 1" for a
        passage id, "source 184" for a document judged by source id, as Search names them (a
        64-hex id meant nothing to an analyst); a unit no longer in the workspace says so."""
        tenant = self._tenant(workspace)
        chunk = self._call(self._store.get(unit_id, tenant))
        if chunk is not None:
            return passage_label(chunk.source_id, chunk.chunk_index)
        if self._call(self._store.get_by_source(unit_id, tenant)):
            return f"source {unit_id}"
        return f"a passage no longer in the workspace ({unit_id[:12]}…)"

    def diagnose(
        self,
        query_set: str,
        k: int,
        limit: int,
        *,
        workspace: str,
        ranker: Ranker | None = None,
        by_document: bool = False,
        expand: ExpansionSpec | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> RunDiagnosis:
        """Every graded query's lost relevant passages (``by_document``: documents, each at its
        best passage, as Runs' "by document" judges), each with its one cause, under
        ``ranker`` (the workspace's BM25 by default) at ``limit``; the queries by nDCG@k lost,
        most first. ``expand``: the run's expansion (``RunSpec.expand``, RM3), each query
        diagnosed on its expanded ranking, as Evaluate ranks that run."""
        check_k_limit(k, limit)
        used = ranker or Ranker.of(RankerKind.WORKSPACE)
        _check_expansion(expand)
        found, grades = self._graded(query_set, workspace, by_document)
        queries = {q.query_id: q.text for q in found.queries if q.text in grades}
        check_diagnosed(len(queries))
        judged = {query_id: grades[text] for query_id, text in queries.items()}
        return self._call_with_progress(
            lambda report: self._diagnose(
                queries, judged, k, limit, used, workspace, by_document, report, expand
            ),
            on_progress,
        )

    def diagnose_files(
        self,
        queries_data: bytes,
        qrels_data: bytes,
        k: int,
        limit: int,
        *,
        workspace: str,
        ranker: Ranker | None = None,
        expand: ExpansionSpec | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> RunDiagnosis:
        """``diagnose`` for Evaluate's judgment files (BEIR or TREC qrels judge documents, so
        by document), read as Evaluate reads them."""
        check_k_limit(k, limit)
        used = ranker or Ranker.of(RankerKind.WORKSPACE)
        _check_expansion(expand)
        queries, qrels = judged_files(queries_data, qrels_data)
        check_diagnosed(len(queries.keys() & qrels.keys()))
        return self._call_with_progress(
            lambda report: self._diagnose(
                queries, qrels, k, limit, used, workspace, True, report, expand
            ),
            on_progress,
        )

    async def _diagnose(
        self,
        queries: dict[str, str],
        grades: dict[str, dict[str, int]],
        k: int,
        limit: int,
        ranker: Ranker,
        workspace: str,
        by_document: bool,
        report: Callable[[int, int, str], None],
        expand: ExpansionSpec | None = None,
    ) -> RunDiagnosis:
        tenant = await tenant_of(self._store, workspace)
        profile = await workspace_profile(self._store, workspace)
        # Every query checked before the first is read (a refusal, not a diagnosis that dies
        # half-way), then each read while the one before it is diagnosed, as an Evaluate
        # reads (``read_ahead``): on PostgreSQL a query's round trips were waited for alone.
        typed = {q: checked_terms(text, profile, f"query {q}") for q, text in queries.items()}
        read = partial(self._diagnosis_read, typed, tenant, profile, limit, ranker, expand)
        largest = max((len(set(terms)) for terms in typed.values()), default=0)
        depth = READ_AHEAD if expand is None and largest * limit <= READ_AHEAD_CELLS else 0
        diagnosed: list[QueryDiagnosis] = []
        async with aclosing(read_ahead(read, queries, depth)) as reading:
            async for query_id, (terms, weights, head) in reading:
                text, judged = queries[query_id], grades[query_id]
                cut = head.matching > len(head)
                try:
                    if by_document:
                        sources = (
                            head.sources_at
                            if len(head.source_pool)
                            else (await self._sources(head, limit, tenant)).__getitem__
                        )
                        # Ranked first: only the relevant documents outside the top k are
                        # looked up (most are in it, and a query may have none outside).
                        ranking = rank_documents(terms, head, k, limit, ranker, sources, weights)
                        unseen = {d: g for d, g in judged.items() if d not in ranking.top}
                        rows, past = await self._documents(head, terms, tenant, unseen, cut)
                    else:
                        past = await self._past(head, terms, tenant, judged) if cut else {}
                except ValueError as exc:
                    raise ValueError(f"query {query_id}: {exc}") from None
                if by_document:
                    diagnosed.append(
                        diagnose_documents(
                            query_id, text, terms, head, judged, k, limit, ranker, sources,
                            rows, weights, past, ranking,
                        )
                    )  # fmt: skip
                else:
                    diagnosed.append(
                        diagnose_query(
                            query_id, text, terms, head, judged, k, limit, ranker, weights, past
                        )
                    )
                report(len(diagnosed), len(queries), query_id)
                await checkpoint()
        explained = await self._explained(diagnosed, tenant, profile, by_document)
        return summarise(k, limit, explained, None if expand is None else expand.label)

    async def _diagnosis_read(
        self,
        typed: dict[str, list[str]],
        tenant: UUID,
        profile: Profile,
        limit: int,
        ranker: Ranker,
        expand: ExpansionSpec | None,
        query_id: str,
    ) -> tuple[list[str], dict[str, float] | None, LexicalCandidates]:
        """One query's terms (an expanded run's: expanded), their weights and its read at
        ``limit``, Evaluate's."""
        terms, weights = typed[query_id], None
        try:
            if expand is not None and terms:
                terms, weights = await self._diagnosed_expansion(
                    terms, tenant, profile, limit, ranker, expand
                )
            return terms, weights, await bounded_candidates(self._store, terms, tenant, limit)
        except ValueError as exc:
            raise ValueError(f"query {query_id}: {exc}") from None

    async def _diagnosed_expansion(
        self,
        terms: list[str],
        tenant: UUID,
        profile: Profile,
        limit: int,
        ranker: Ranker,
        expand: ExpansionSpec,
    ) -> tuple[list[str], dict[str, float]]:
        """The expanded term set and its weights, as Evaluate's expanded run expands the query:
        feedback from ``ranker``'s ranking of the typed read at ``limit``."""
        head = await bounded_candidates(self._store, terms, tenant, limit)
        weights = await expansion_weights(ranker, terms, head, profile, expand)
        expanded = sorted(weights)
        check_query_terms(expanded, "the expanded query")
        return expanded, weights

    async def _past(
        self,
        head: LexicalCandidates,
        terms: list[str],
        tenant: UUID,
        judged: dict[str, int],
    ) -> dict[str, Place]:
        """The place, past ``head``'s cut, of each relevant passage outside it that holds a
        query term: the smallest limit keeping it (cut by the limit)."""
        shown = set(head.ids.tolist())
        units = [unit for unit, grade in judged.items() if grade >= RELEVANT and unit not in shown]
        return await self._placed(head, terms, tenant, units) if units else {}

    async def _documents(
        self,
        head: LexicalCandidates,
        terms: list[str],
        tenant: UUID,
        judged: dict[str, int],
        cut: bool,
    ) -> tuple[dict[str, list[int]], dict[str, Place]]:
        """Each relevant document of ``judged`` (the caller's: those outside the run's top k,
        which are not lost) with its rows in ``head`` (ascending, [] if none) and, for each with
        none when ``head`` is cut, its passage placed first past the cut: its passages' ids
        (``passage_ids_by_source``, ``_SOURCES_READ`` documents at a time, no passage copied)
        placed from the read's postings, whose place within the cut is the passage's row.
        Rejected: the source of every candidate searched for each document (a set of a
        thousand a query), ~1/5 of what a diagnosis by document cost beyond its Evaluate."""
        units = [unit for unit, grade in judged.items() if grade >= RELEVANT]
        of: dict[str, str] = {}
        for start in range(0, len(units), _SOURCES_READ):  # a qrels line can name thousands
            group = units[start : start + _SOURCES_READ]
            held = await self._store.passage_ids_by_source(group, tenant)
            of.update(
                (chunk_id, document) for document in group for chunk_id in held.get(document, [])
            )
        rows: dict[str, list[int]] = {unit: [] for unit in units}
        if head.places is not None:
            placed = head.places(list(of))
        else:  # the rows within the read searched, the others placed by an unlimited read
            within = passage_rows(head, dict.fromkeys(of), 0)
            placed = {chunk_id: Place(row, ()) for chunk_id, row in within.items()}
            if cut:
                placed |= await self._placed(
                    head, terms, tenant, [c for c in of if c not in within]
                )
        past: dict[str, Place] = {}
        for chunk_id, place in placed.items():
            document = of[chunk_id]
            if place.position < len(head):
                rows[document].append(place.position)
            elif document not in past or place.position < past[document].position:
                past[document] = place
        for found in rows.values():
            found.sort()
        return rows, {document: place for document, place in past.items() if not rows[document]}

    async def _placed(
        self, head: LexicalCandidates, terms: list[str], tenant: UUID, chunk_ids: list[str]
    ) -> dict[str, Place]:
        """``chunk_ids``' places past ``head``'s cut, from the read's own postings
        (``LexicalCandidates.places``, same snapshot). At issue 49's probes the unlimited
        read they took before (every matching passage's row, tf columns and source, for the
        two or three a query needs) was ~3/4 of ``diagnose_files`` and 4.4-4.7x its Evaluate.
        A store that does not place is read unlimited and its rows searched, as before."""
        if head.places is not None:
            return head.places(chunk_ids)
        full = await bounded_candidates(self._store, terms, tenant, UNLIMITED)
        found = passage_rows(full, dict.fromkeys(chunk_ids, None), len(head))
        return {
            chunk_id: Place(row, tuple(int(tf) for tf in full.tfs[row]))
            for chunk_id, row in found.items()
        }

    async def _sources(
        self, full: LexicalCandidates, limit: int, tenant: UUID
    ) -> npt.NDArray[np.object_]:
        """The source of each of the first ``limit`` candidates, from the read's source column
        (``LexicalCandidates.source_pool``, both stores fill it from their image). A store
        that does not is asked once for all of them (``source_ids``); copying each passage
        to read its source was 4.3 of a diagnosis's 6.1 s (issue 50: 300 queries x 1,000
        candidates), and the one lookup a third of what was left. A passage deleted since
        the read is looked up as the read saw it."""
        rows = np.arange(min(limit, len(full)))
        if len(full.source_pool) or not len(rows):
            return full.sources_at(rows)
        ids: list[str] = full.ids_at(rows).tolist()
        known = await self._store.source_ids(ids, tenant)
        if len(known) < len(ids):  # candidate ids are distinct
            gone = [row for row, chunk_id in enumerate(ids) if chunk_id not in known]
            ahead = full.chunks_ahead(gone)
            if inspect.isawaitable(ahead):  # a store reading them in one round trip
                await ahead
            known.update((chunk.id, chunk.source_id) for chunk in full.chunks(gone))
        found = np.empty(len(ids), dtype=object)
        found[:] = list(map(known.__getitem__, ids))
        return found

    async def _explained(
        self,
        queries: list[QueryDiagnosis],
        tenant: UUID,
        profile: Profile,
        by_document: bool = False,
    ) -> list[QueryDiagnosis]:
        """The vocabulary mismatches with their own terms (a document's: its passages' terms
        summed), and the ones no longer in the workspace marked."""
        unreached = {p.chunk_id for q in queries for p in q.lost if p.cause is LostCause.VOCABULARY}
        counts: dict[str, Counter[str]] = {}
        units = sorted(unreached)
        if by_document:  # a document's passages summed; many documents a read
            for start in range(0, len(units), _SOURCES_READ):
                group = units[start : start + _SOURCES_READ]
                for unit, chunks in (await self._store.get_by_sources(group, tenant)).items():
                    counts[unit] = Counter(t for c in chunks for t in tokenize(c.text, profile))
                    await checkpoint()
        else:
            for unit in units:
                one = await self._store.get(unit, tenant)
                if one is not None:
                    counts[unit] = Counter(tokenize(one.text, profile))
                await checkpoint()
        words = sorted({t for c in counts.values() for t in c})
        frequencies: dict[str, int] = {}
        stats = CorpusStats(n_docs=0, avg_doc_length=0.0)
        for start in range(0, len(words), _DF_TERMS):
            read = await self._store.lexical_candidates(words[start : start + _DF_TERMS], tenant, 0)
            frequencies.update(read.stats.doc_frequencies)
            stats = read.stats
        if words:
            stats = CorpusStats(
                n_docs=stats.n_docs,
                avg_doc_length=stats.avg_doc_length,
                doc_frequencies=frequencies,
            )

        def explained(passage: LostPassage) -> LostPassage:
            if passage.cause is not LostCause.VOCABULARY:
                return passage
            if passage.chunk_id not in counts:
                return passage.model_copy(update={"cause": LostCause.GONE})
            return passage.model_copy(
                update={"own_terms": own_terms(counts[passage.chunk_id], stats)}
            )

        changed = [(q, [explained(p) for p in q.lost]) for q in queries]
        # A query none of whose passages changed is kept as it is (a copy of each was ~6k
        # objects more of a 2,000-query diagnosis for the collector to walk).
        return [
            q if all(a is b for a, b in zip(lost, q.lost, strict=True)) else
            q.model_copy(update={"lost": lost})
            for q, lost in changed
        ]  # fmt: skip

    def tune(
        self,
        query_set: str,
        k: int,
        limit: int,
        *,
        workspace: str,
        grid: GridSpec | None = None,
        by_document: bool = False,
        on_progress: ProgressCallback | None = None,
    ) -> TuningGrid:
        """The mean metric of every (k1, b) of ``grid`` over the set's graded queries, each
        query's candidates read once at ``limit``; the best point tested against the
        workspace's setting."""
        check_k_limit(k, limit)
        spec = grid or GridSpec()
        found, grades = self._graded(query_set, workspace, by_document)
        check_grid(len(spec.k1s) * len(spec.bs), sum(q.text in grades for q in found.queries))
        return self._call_with_progress(
            lambda report: self._tune(
                found, grades, k, limit, spec, by_document, workspace, report
            ),
            on_progress,
        )

    async def _tune(
        self,
        found: QuerySet,
        grades: dict[str, dict[str, int]],
        k: int,
        limit: int,
        spec: GridSpec,
        by_document: bool,
        workspace: str,
        report: Callable[[int, int, str], None],
    ) -> TuningGrid:
        tenant = await tenant_of(self._store, workspace)
        profile = await workspace_profile(self._store, workspace)
        judged = [q for q in found.queries if q.text in grades]
        points = grid_points(spec)
        # Streamed: each query's candidates scored at every point as soon as read, then
        # dropped; holding every query's columns first took 2.4 GB at 10,000 queries.
        per_query: list[list[float]] = []
        for done, query in enumerate(judged, 1):
            terms = checked_terms(query.text, profile, f"query {query.query_id}")
            try:
                handed = await bounded_candidates(self._store, terms, tenant, limit)
            except ValueError as exc:
                raise ValueError(f"query {query.query_id}: {exc}") from None
            read = TuningQuery(
                query_id=query.query_id, terms=terms, candidates=handed, grades=grades[query.text]
            )
            per_query.append(
                await stepped(query_grid_steps(read, points, spec.metric, k, by_document))
            )
            report(done, len(judged), query.query_id)
            await checkpoint()
        ids = [q.query_id for q in judged]
        return await stepped(grid_result(ids, per_query, spec, k, limit, by_document))


def _check_expansion(expand: ExpansionSpec | None) -> None:
    """Refuse, before anything is read, an expansion a run cannot take (Rocchio learns from the
    grades the diagnosis judges by: measured on Search, one query at a time)."""
    if expand is not None and expand.method != "rm3":
        raise ValueError(
            "a run is diagnosed as typed or expanded by RM3; feedback from the grades (Rocchio) "
            "would be judged by the grades it learned from"
        )
