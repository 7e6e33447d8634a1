"""``python -m core evaluate``: what Runs shows for a query set's in-app grades."""

from __future__ import annotations

import argparse
from typing import IO, Final

from rich.console import Console
from rich.table import Table
from rich.text import Text

from core.analysis.evaluation import EvaluationRun
from core.ingest.names import terminal_safe
from core.service.bounds import check_k_limit
from core.service.facade import LexplainService
from core.service.run_ranking import RunSpec
from core.terminal.common import (
    EXIT_UNUSABLE,
    _json_line,
    expansion_of,
    number_column,
    on_a_set,
)

#: The means the Evaluate screen shows, by ``EvaluationRun`` field, and each query's figure
#: of the same metric, by ``QueryScore`` field.
EVALUATE_METRICS: Final = (
    ("nDCG", "mean_ndcg", "ndcg"),
    ("Recall", "mean_recall", "recall"),
    ("MRR", "mean_mrr", "mrr"),
    ("Judged", "mean_judged_share", "judged_share"),
)


def _evaluate_lines(run: EvaluationRun, args: argparse.Namespace, stream: IO[str]) -> None:
    """``evaluate --json``: the means' line, then one line per graded query."""
    _json_line(
        stream,
        {
            "kind": "means",
            "workspace": run.workspace,
            "query_set": args.query_set,
            "level": "document" if args.by_document else "passage",
            "label": run.label,
            "k": run.k,
            "limit": run.limit,
            "queries": len(run.rows),
            "mean_ndcg": run.mean_ndcg,
            "mean_recall": run.mean_recall,
            "mean_mrr": run.mean_mrr,
            "mean_judged_share": run.mean_judged_share,
            "mean_precision": run.mean_precision,
            "mean_ap": run.mean_ap,
        },
    )
    for row in run.rows:
        _json_line(
            stream,
            {
                "kind": "query",
                **row.model_dump(mode="json"),
                "ranked": run.ranked.get(row.query_id, []),
                "grades": run.grades.get(row.query_id, []),
            },
        )


def _evaluate_tables(run: EvaluationRun, args: argparse.Namespace, console: Console) -> None:
    """``evaluate``: the screen's means, its warning when not everything ranked is graded, and
    the per-query table."""
    k = run.k
    level = "by document" if args.by_document else "by passage"
    title = terminal_safe(
        f"Means over {len(run.rows)} judged queries · set {args.query_set!r} · {run.label} · "
        f"k {k} · {level}"
    )
    means = Table(title=Text(title))
    for label, _, _ in EVALUATE_METRICS:
        number_column(means, f"{label}@{k}")
    means.add_row(*(repr(getattr(run, field)) for _, field, _ in EVALUATE_METRICS))
    console.print(means)
    if run.mean_judged_share < 1:
        console.print(
            f"Judged@{k} is {run.mean_judged_share!r}: the other metrics count every unjudged "
            "result as not relevant, so they are lower bounds.",
            markup=False,
            highlight=False,
        )
    rows = Table(title="Per query")
    rows.add_column("query id", overflow="fold")
    rows.add_column("query")
    rows.add_column("judged", justify="right")
    for label, _, _ in EVALUATE_METRICS:
        number_column(rows, f"{label}@{k}")
    for row in run.rows:
        rows.add_row(
            Text(terminal_safe(row.query_id)),
            Text(terminal_safe(row.query)),
            str(row.judged),
            *(repr(getattr(row, field)) for _, _, field in EVALUATE_METRICS),
        )
    console.print(rows)


def evaluate(args: argparse.Namespace, console: Console) -> int:
    """``python -m core evaluate --workspace NAME --set SET``: 0 when evaluated, 2 when the
    command cannot run (store, workspace, no such set, no grade yet, a bound)."""

    def ask(service: LexplainService, workspace: str) -> list[EvaluationRun]:
        check_k_limit(args.k, args.limit)  # before the run is specified: the facade's sentence
        spec = RunSpec(workspace=workspace, limit=args.limit, expand=expansion_of(args))
        return service.evaluate_judged(
            args.query_set, args.k, [spec], workspace=workspace, by_document=args.by_document
        )

    runs = on_a_set(args, console, ask)
    if runs is None:
        return EXIT_UNUSABLE
    (run,) = runs
    if args.json:
        _evaluate_lines(run, args, console.file)
    else:
        _evaluate_tables(run, args, console)
    return 0
