"""Judgments outside the Judge screen: a grade from a Search result, the ceiling of a limit.

A grade from Search is a judgment of the TYPED query, so Evaluate can count it only if the
query is in a query set. The query joins a set the analyst picks, by default the workspace's
``SEARCH_SET`` (made on the first grade): judgments name their query by text, so a grade
given here also counts wherever the same query sits in another set (e.g. the sample's
Cranfield queries). Grading without any set was rejected (the grade would be stored but no
Evaluate run could find its query), and so was asking for a set before the first grade (one
more step between seeing a result and grading it).

The ceiling of a limit (``core.analysis.truncation.limit_ceiling``) is judged by the
workspace's grades of the query or by judgment files (the query found by its text); it reads
the query's candidates once more, only when the analyst asks for it, so the Truncation
screen without judgments costs what it did.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from pydantic import BaseModel, ConfigDict

from core.analysis.evaluation import parse_qrels, parse_queries
from core.analysis.truncation import CeilingPoint, limit_ceiling
from core.domain.judging import LOCAL_RATER, MAX_QUERIES, QuerySet, SetQuery
from core.service.common import (
    UNLIMITED,
    bounded_candidates,
    check_k,
    check_limits,
    checked_terms,
    combine_judgments,
    decoded_file,
    workspace_profile,
)
from core.service.runner import StoreRunner
from core.stores.port import tenant_of

#: The query set a grade from a Search result joins unless the analyst picks another.
SEARCH_SET: Final = "Graded from Search"
#: How a query's id is made when it joins a set from Search (then numbered).
SEARCH_ID_PREFIX: Final = "search-"


def query_text(query: str) -> str:
    """A query as judgments and sets keep it: whitespace collapsed (as ``grade`` keeps it)."""
    return " ".join(query.split())


class CeilingJudgments(BaseModel):
    """What judges a ceiling: the workspace's grades (by passage or document) or files."""

    model_config = ConfigDict(frozen=True)

    #: Judge documents at their best passage (files always do: qrels judge documents).
    by_document: bool = False
    #: Queries and qrels files (as Evaluate reads them); None: the workspace's own grades.
    files: tuple[bytes, bytes] | None = None


class LimitCeiling(BaseModel):
    """The ceiling of each limit for one query, and how much judges it."""

    model_config = ConfigDict(frozen=True)

    points: list[CeilingPoint]
    #: Ids (passages or documents) judged for this query, and those judged relevant (> 0).
    judged: int
    relevant: int
    by_document: bool


class GradingActions(StoreRunner):
    """Search's grades (the query joins a set) and the Truncation sweep's ceiling."""

    #: The signed-in person's e-mail in a ``for_user`` view; None without sign-in.
    user: str | None = None

    def add_to_query_set(self, query: str, query_set: str = SEARCH_SET, *, workspace: str) -> bool:
        """Put ``query`` in the set (made if the workspace has none of that name); False when
        it is there already. ``ValueError`` for a query that cannot be one (``checked_terms``,
        the rule every search applies), or a full set."""
        text = query_text(query)
        return self._call(self._add(text, query_set, workspace))

    async def _add(self, text: str, name: str, workspace: str) -> bool:
        tenant = await tenant_of(self._store, workspace)
        checked_terms(text, await workspace_profile(self._store, workspace))
        found = await self._store.get_query_set(tenant, name)
        queries = found.queries if found is not None else ()
        if any(q.text == text for q in queries):
            return False
        if len(queries) >= MAX_QUERIES:
            raise ValueError(f"the query set “{name}” holds {MAX_QUERIES:,} queries already")
        ids = {q.query_id for q in queries}
        number = len(queries) + 1
        while f"{SEARCH_ID_PREFIX}{number}" in ids:
            number += 1
        added = SetQuery(query_id=f"{SEARCH_ID_PREFIX}{number}", text=text)
        await self._store.save_query_set(
            QuerySet(
                tenant_id=tenant,
                name=name,
                queries=(*queries, added),
                created_at=found.created_at if found is not None else datetime.now(UTC),
            )
        )
        return True

    def my_grades(self, query: str, *, workspace: str) -> dict[str, int]:
        """Passage id -> the grade this rater (the signed-in e-mail, or "local") gave it for
        ``query``: what a Search result shows as its grade, or as unjudged."""
        tenant = self._tenant(workspace)
        rater = self.user or LOCAL_RATER
        found = self._call(self._store.list_judgments(tenant, [query_text(query)]))
        return {j.chunk_id: j.grade for j in found if j.rater == rater}

    def limit_ceiling(
        self,
        query: str,
        k: int,
        limits: list[int],
        judged: CeilingJudgments,
        *,
        workspace: str,
    ) -> LimitCeiling:
        """Per limit, BM25's nDCG@k and the best any ordering of the kept candidates reaches.

        No points when nothing judges the query. ``JudgmentError`` for unreadable files.
        """
        check_k(k)
        limits = check_limits(limits)
        return self._call_query(query, self._ceiling(query, k, limits, judged, workspace))

    async def _ceiling(
        self, query: str, k: int, limits: list[int], judged: CeilingJudgments, workspace: str
    ) -> LimitCeiling:
        tenant = await tenant_of(self._store, workspace)
        text = query_text(query)
        by_document = judged.by_document or judged.files is not None
        if judged.files is not None:
            queries = parse_queries(decoded_file(judged.files[0], "queries"))
            qrels = parse_qrels(decoded_file(judged.files[1], "qrels"))
            ids = [q for q, t in queries.items() if query_text(t) == text and q in qrels]
            grades = qrels[ids[0]] if ids else {}
        else:
            found = await self._store.list_judgments(tenant, [text])
            grades = combine_judgments(found, by_document=by_document).get(text, {})
        relevant = sum(1 for g in grades.values() if g > 0)
        points: list[CeilingPoint] = []
        if relevant:
            terms = checked_terms(query, await workspace_profile(self._store, workspace))
            full = await bounded_candidates(self._store, terms, tenant, UNLIMITED)
            documents = (
                {d: [c.id for c in await self._store.get_by_source(d, tenant)] for d in grades}
                if by_document
                else None
            )
            points = limit_ceiling(terms, full, k, limits, grades, documents)
        return LimitCeiling(
            points=points, judged=len(grades), relevant=relevant, by_document=by_document
        )
