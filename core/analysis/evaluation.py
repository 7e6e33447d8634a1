"""Judged evaluation: read queries and relevance judgments, score a run per query.

Judgments come as BEIR qrels (``query-id corpus-id score`` TSV with a header) or
TREC qrels (``qid iteration docid grade``); both are read by one parser that
names the bad line rather than guessing. A file with a bad line is refused whole, naming the
line: skipping it would compute metrics over part of the judgments and show them as the whole
(the cost: one typo stops the run until it is fixed). Grades are finite integers of at most
``MAX_GRADE``; JSON query lines go through the readers' bounded JSON parser, so no line (deep
nesting, a 5,000-digit id, ``inf``) can raise anything but ``JudgmentError``.

A run is judged per source document: passages of one document collapse to the
document's best rank, as the qrels judge documents, not passages. The alternative,
judging passages, would need passage-level judgments no test collection ships.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Mapping, Sequence
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.analysis.judgment_files import (
    JudgmentError,
    beir_query,
    check_line_storable,
    grade_number,
    is_qrels_header,
    qrels_fields,
    quoted,
    text_lines,
)
from core.domain.metrics import (
    average_precision,
    judged_at_k,
    mrr,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)
from core.domain.steps import Steps, finish

#: Largest relevance grade accepted (TREC and BEIR use 0-4; anything huge is a broken file).
MAX_GRADE = 1_000_000
#: Queries whose metrics ``evaluate_run_steps`` computes between two steps.
METRIC_STEP = 32


class QueryScore(BaseModel):
    model_config = ConfigDict(frozen=True)

    query_id: str
    query: str
    ndcg: float
    recall: float
    mrr: float
    judged: int
    precision: float = 0.0
    average_precision: float = 0.0
    #: Judged@k: the share of the run's top k that has a judgment of any grade.
    judged_share: float = 0.0


class EvaluationRun(BaseModel):
    """Per-query metrics of one run (one k, one limit) and their means."""

    model_config = ConfigDict(frozen=True)

    k: int
    limit: int
    rows: list[QueryScore]
    mean_ndcg: float
    mean_recall: float
    mean_mrr: float
    mean_precision: float = 0.0
    #: MAP: average precision over the ranked top k, averaged over queries.
    mean_ap: float = 0.0
    #: Judged@k averaged over queries: how far the other means rest on judgments at all.
    mean_judged_share: float = 0.0
    #: query id -> the document ids judged, in rank order (at most k): what a user exports
    #: to compare with another system.
    ranked: dict[str, list[str]] = Field(default_factory=dict)
    #: query id -> the grade of each id of ``ranked`` in the same order, None where the id
    #: has no judgment: what a result list marks as unjudged (``marked_grades``).
    grades: dict[str, list[int | None]] = Field(default_factory=dict)
    #: What the run was, beyond its limit (workspace, ranker); empty for a plain limit run.
    label: str = ""
    #: The workspace the run ranked (where its per-query Search links go); a field, not a
    #: piece of ``label``, so a name containing the label's separator survives.
    workspace: str = ""


class TooManyJudged(ValueError):
    """A qrels file judges more of the queries than one run may score (``parse_qrels``'s
    ``most``); raised at the line that passes it, so the rest is never held."""

    def __init__(self, most: int, line: int) -> None:
        super().__init__(f"more than {most:,} judged queries (line {line:,} of the qrels file)")


def parse_qrels(
    data: bytes | str, *, only: Container[str] | None = None, most: int | None = None
) -> dict[str, dict[str, int]]:
    """query id -> {document id: grade}, from BEIR TSV or TREC qrels.

    ``only``: keep the judgments of these query ids alone (every line is still checked);
    ``most``: raise ``TooManyJudged`` at the line that brings the kept query ids past it. An
    Evaluate keeps only its queries' judgments and stops at its bound: a qrels file of 1M
    judged queries held them all before its refusal (432 MB of dicts above the file).
    """
    judgments: dict[str, dict[str, int]] = {}
    read = 0
    for number, line in enumerate(text_lines(data), start=1):
        fields = line.split()
        if not fields or (number == 1 and is_qrels_header(fields)):
            continue
        query_id, doc_id, grade = qrels_fields(fields, number)
        check_line_storable(query_id, "the query id", number)
        check_line_storable(doc_id, "the document id", number)
        value, read = _grade(grade, number), read + 1
        if only is not None and query_id not in only:
            continue
        graded = judgments.get(query_id)
        if graded is None:
            if most is not None and len(judgments) >= most:
                raise TooManyJudged(most, number)
            graded = judgments[query_id] = {}
        graded[doc_id] = value
    if not read:
        raise JudgmentError("no judgments found")
    return judgments


def _grade(text: str, number: int) -> int:
    """A grade as an int; fractions are truncated, as before (``int(float(...))``).

    Only what ``grade_number`` reads as a number ("1_000" and Arabic-Indic digits are refused).
    """
    value = grade_number(text)
    if value is None:
        raise JudgmentError(
            f"line {number}: grade {quoted(text)} is not a number (digits 0-9, an optional sign,"
            " point and exponent)"
        )
    if not math.isfinite(value) or abs(value) > MAX_GRADE:
        raise JudgmentError(
            f"line {number}: grade {quoted(text)} is not a grade (a finite number between"
            f" -{MAX_GRADE:,} and {MAX_GRADE:,})"
        )
    return int(value)


def parse_queries(data: bytes | str) -> dict[str, str]:
    """query id -> text, from BEIR queries.jsonl or a two-column TSV (id, text).

    An id given twice with two texts is refused, naming both lines: keeping the last one
    without a word evaluated a query the analyst did not see in the table (the same text
    twice is the same query, kept once).
    """
    queries: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for number, line in enumerate(text_lines(data), start=1):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            query_id, text = beir_query(line, number)
        else:
            query_id, sep, text = line.partition("\t")
            if not sep:
                raise JudgmentError(f"line {number}: expected JSON or 'id<TAB>text'")
            query_id, text = query_id.strip(), text.strip()
        check_line_storable(query_id, "the query id", number)
        check_line_storable(text, "a query", number)
        first = first_line.setdefault(query_id, number)
        if first != number and queries[query_id] != text:
            raise JudgmentError(
                f"line {number}: query id {quoted(query_id)} was already given on line {first}, "
                f"with another text ({quoted(queries[query_id])}); an id names one query"
            )
        queries[query_id] = text
    if not queries:
        raise JudgmentError("no queries found")
    return queries


def documents_in_rank_order(source_ids: Iterable[str]) -> list[str]:
    """Source ids of ranked passages, each document at its best (first) rank."""
    return list(dict.fromkeys(source_ids))


def marked_grades(ranked_ids: Sequence[str], judgments: Mapping[str, int]) -> list[int | None]:
    """The grade of each ranked id, None where it has no judgment (not "grade 0": the metrics
    count it as not relevant, a result list marks it as not known)."""
    return [judgments.get(doc) for doc in ranked_ids]


#: The per-query metrics a run (and a tuning grid) can be measured by, as the screens name them.
METRICS: Final[dict[str, str]] = {
    "ndcg": "nDCG@k",
    "recall": "recall@k",
    "precision": "P@k",
    "mrr": "MRR",
}
Metric = Literal["ndcg", "recall", "precision", "mrr"]


def metric_value(
    metric: Metric, ranked: Sequence[str], judgments: Mapping[str, int], k: int
) -> float:
    """One query's ``metric`` of its ranked ids against its judgments: the one place a run's
    per-query metric is computed (Evaluate, Runs and the tuning grid)."""
    if metric == "ndcg":
        return ndcg_at_k(ranked, judgments, k)
    if metric == "recall":
        return recall_at_k(ranked, judgments, k)
    if metric == "precision":
        return precision_at_k(ranked, judgments, k)
    return mrr(list(ranked)[:k], judgments)


def mean_of(values: Iterable[float]) -> float:
    """The mean a run reports (0.0 for no query): one summation order everywhere."""
    kept = list(values)
    return sum(kept) / (len(kept) or 1)


def evaluate_run(
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    ranked_documents: Mapping[str, Sequence[str]],
    k: int,
    limit: int,
    label: str = "",
    workspace: str = "",
) -> EvaluationRun:
    """Metrics per judged query (queries without judgments are left out) and their means."""
    return finish(evaluate_run_steps(queries, qrels, ranked_documents, k, limit, label, workspace))


def evaluate_run_steps(
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    ranked_documents: Mapping[str, Sequence[str]],
    k: int,
    limit: int,
    label: str = "",
    workspace: str = "",
) -> Steps[EvaluationRun]:
    """``evaluate_run`` with a step per ``METRIC_STEP`` queries (the service runs it between
    its checkpoints: 225 queries' metrics were 5-17 ms in one piece on the shared machine)."""
    rows: list[QueryScore] = []
    for query_id in (query_id for query_id in queries if query_id in qrels):
        if rows and len(rows) % METRIC_STEP == 0:
            yield
        rows.append(
            QueryScore(
                query_id=query_id,
                query=queries[query_id],
                ndcg=metric_value("ndcg", ranked_documents.get(query_id, []), qrels[query_id], k),
                recall=metric_value(
                    "recall", ranked_documents.get(query_id, []), qrels[query_id], k
                ),
                mrr=metric_value("mrr", ranked_documents.get(query_id, []), qrels[query_id], k),
                judged=sum(1 for grade in qrels[query_id].values() if grade > 0),
                precision=metric_value(
                    "precision", ranked_documents.get(query_id, []), qrels[query_id], k
                ),
                average_precision=average_precision(
                    list(ranked_documents.get(query_id, []))[:k], qrels[query_id]
                ),
                judged_share=judged_at_k(ranked_documents.get(query_id, []), qrels[query_id], k),
            )
        )
    return EvaluationRun(
        k=k,
        limit=limit,
        rows=rows,
        mean_ndcg=mean_of(r.ndcg for r in rows),
        mean_recall=mean_of(r.recall for r in rows),
        mean_mrr=mean_of(r.mrr for r in rows),
        mean_precision=mean_of(r.precision for r in rows),
        mean_ap=mean_of(r.average_precision for r in rows),
        mean_judged_share=mean_of(r.judged_share for r in rows),
        ranked={r.query_id: list(ranked_documents.get(r.query_id, []))[:k] for r in rows},
        grades={
            r.query_id: marked_grades(
                list(ranked_documents.get(r.query_id, []))[:k], qrels[r.query_id]
            )
            for r in rows
        },
        label=label,
        workspace=workspace,
    )
