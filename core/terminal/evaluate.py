"""``python -m core evaluate``: what Runs shows for a query set's in-app grades; with
``--expand rm3 --ledger`` what Runs' Measure RM3 shows (the expansion's helped/hurt ledger); with
``--expand rocchio`` feedback from the grades, measured by residual ranking."""

from __future__ import annotations

import argparse
from typing import IO, Final

from rich.console import Console
from rich.table import Table
from rich.text import Text

from core.analysis.evaluation import EvaluationRun
from core.analysis.expansion import ExpansionLedger
from core.analysis.residual import ResidualEvaluation
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


def _ledger_lines(ledger: ExpansionLedger, args: argparse.Namespace, stream: IO[str]) -> None:
    """``evaluate --expand rm3 --ledger --json``: the ledger's totals (every field of the
    facade's ``ExpansionLedger`` but its rows, and its summary sentence), then a line per query
    (every field of its ``LedgerRow``), most helped first."""
    _json_line(
        stream,
        {
            "kind": "ledger",
            "query_set": args.query_set,
            "limit": args.limit,
            **ledger.model_dump(mode="json", exclude={"rows"}),
            "summary": ledger.summary,
        },
    )
    for row in ledger.rows:
        _json_line(stream, {"kind": "query", **row.model_dump(mode="json")})


def _ledger_tables(ledger: ExpansionLedger, args: argparse.Namespace, console: Console) -> None:
    """``evaluate --expand rm3 --ledger``: the ledger's sentence, the test's warning, and a row
    per query (the facade's numbers, as repr)."""
    console.print(Text(terminal_safe(ledger.summary)))
    if ledger.significance.warning:
        console.print(Text(terminal_safe(ledger.significance.warning)))
    title = terminal_safe(
        f"Helped and hurt · set {args.query_set!r} · limit {args.limit} · {ledger.expansion}"
    )
    rows = Table(title=Text(title))
    rows.add_column("query id", overflow="fold")
    rows.add_column("query")
    for name in ("as typed", "expanded", "change"):
        number_column(rows, name)
    for name in ("relevant brought in", "of them no typed term", "relevant pushed out"):
        rows.add_column(name, justify="right")
    for row in ledger.rows:
        rows.add_row(
            Text(terminal_safe(row.query_id)),
            Text(terminal_safe(row.query)),
            repr(row.before),
            repr(row.after),
            repr(row.change),
            str(len(row.recovered)),
            str(len(row.recovered_mismatch)),
            str(len(row.lost)),
        )
    console.print(rows)


def ledger(args: argparse.Namespace, console: Console) -> int:
    """``evaluate --expand rm3 --ledger``: the facade's ``expansion_ledger`` (by passage, the
    workspace's BM25 at ``--limit``); 2 when it cannot run, or without ``--expand`` or with
    ``--by-document`` (the ledger judges passages)."""
    if args.expand != "rm3" or args.by_document:
        why = "--ledger needs --expand rm3" if args.expand != "rm3" else "--ledger judges passages"
        console.print(
            f"error: {why} (the ledger compares the typed and the expanded run, by passage)",
            markup=False,
            highlight=False,
        )
        return EXIT_UNUSABLE

    def ask(service: LexplainService, workspace: str) -> ExpansionLedger:
        expand = expansion_of(args)
        assert expand is not None
        return service.expansion_ledger(
            args.query_set, args.k, args.limit, workspace=workspace, expand=expand,
            metric=args.metric,
        )  # fmt: skip

    found = on_a_set(args, console, ask)
    if found is None:
        return EXIT_UNUSABLE
    if args.json:
        _ledger_lines(found, args, console.file)
    else:
        _ledger_tables(found, args, console)
    return 0


def _residual_lines(found: ResidualEvaluation, args: argparse.Namespace, stream: IO[str]) -> None:
    """``evaluate --expand rocchio --json``: the residual measurement (every field of the
    facade's ``ResidualEvaluation`` but its two runs, and its note), then each run whole."""
    _json_line(
        stream,
        {
            "kind": "residual",
            "query_set": args.query_set,
            **found.model_dump(mode="json", exclude={"typed", "expanded"}),
            "note": found.note,
        },
    )
    for which, run in (("typed", found.typed), ("expanded", found.expanded)):
        _json_line(stream, {"kind": "run", "run": which, **run.model_dump(mode="json")})


def _residual_tables(found: ResidualEvaluation, console: Console) -> None:
    """``evaluate --expand rocchio``: the note (what was left out), both runs' means on the
    residual collection, and each measured query's nDCG under both."""
    console.print(Text(terminal_safe(found.note)))
    if found.significance.warning:
        console.print(Text(terminal_safe(found.significance.warning)))
    k = found.typed.k
    means = Table(title="Means on the residual collection (fed-back passages left out)")
    means.add_column("run", overflow="fold")
    for label, _, _ in EVALUATE_METRICS:
        number_column(means, f"{label}@{k}")
    for run in (found.typed, found.expanded):
        means.add_row(
            Text(terminal_safe(run.label)),
            *(repr(getattr(run, field)) for _, field, _ in EVALUATE_METRICS),
        )
    console.print(means)
    rows = Table(title="Per query (residual)")
    rows.add_column("query id", overflow="fold")
    rows.add_column("query")
    rows.add_column("fed back", justify="right")
    number_column(rows, f"nDCG@{k} typed")
    number_column(rows, f"nDCG@{k} Rocchio")
    after = {r.query_id: r.ndcg for r in found.expanded.rows}
    for row in found.typed.rows:
        rows.add_row(
            Text(terminal_safe(row.query_id)),
            Text(terminal_safe(row.query)),
            str(len(found.fed_back.get(row.query_id, []))),
            repr(row.ndcg),
            repr(after[row.query_id]),
        )
    console.print(rows)


def residual(args: argparse.Namespace, console: Console) -> int:
    """``evaluate --expand rocchio``: the facade's ``evaluate_residual`` (by passage); 2 when it
    cannot run, or with ``--by-document``."""
    if args.by_document:
        console.print(
            "error: --expand rocchio judges passages (the residual collection leaves out the "
            "passages fed back)",
            markup=False,
            highlight=False,
        )
        return EXIT_UNUSABLE

    def ask(service: LexplainService, workspace: str) -> ResidualEvaluation:
        return service.evaluate_residual(
            args.query_set, args.k, args.limit, workspace=workspace, expand=expansion_of(args)
        )

    found = on_a_set(args, console, ask)
    if found is None:
        return EXIT_UNUSABLE
    if args.json:
        _residual_lines(found, args, console.file)
    else:
        _residual_tables(found, console)
    return 0


def evaluate(args: argparse.Namespace, console: Console) -> int:
    """``python -m core evaluate --workspace NAME --set SET``: 0 when evaluated, 2 when the
    command cannot run (store, workspace, no such set, no grade yet, a bound)."""
    if args.ledger:
        return ledger(args, console)
    if args.expand == "rocchio":
        return residual(args, console)

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
