"""``python -m core diagnose``: Runs' diagnosis, why each graded-relevant passage was lost (of
the typed run, or with ``--expand rm3`` of the expanded run, as Runs' Expand toggle diagnoses)."""

from __future__ import annotations

import argparse
from typing import IO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from core.analysis.diagnosis import CAUSE_NOTES, LostCause, LostPassage, RunDiagnosis
from core.terminal.common import EXIT_UNUSABLE, _json_line, expansion_of, on_a_set


def _diagnosis_lines(run: RunDiagnosis, args: argparse.Namespace, stream: IO[str]) -> None:
    _json_line(
        stream,
        {
            "kind": "summary",
            "query_set": args.query_set,
            "k": run.k,
            "limit": run.limit,
            "relevant": run.relevant,
            "lost": run.lost,
            "unjudged_in_top_k": run.unjudged,
            "expansion": run.expansion,
            "by_cause": {c.value: n for c, n in run.by_cause.items()},
            "shares": {c.value: run.share(c) for c in run.by_cause},
            "ceiling": run.ceiling_note,
        },
    )
    for query in run.queries:
        for lost in query.lost:
            record: dict[str, object] = {
                "kind": "lost",
                "query_id": query.query_id,
                "query": query.query,
                "ndcg": query.ndcg,
                "ndcg_lost": query.ndcg_lost,
            }
            record.update(lost.model_dump(mode="json"))
            _json_line(stream, record)


def _diagnosis_tables(run: RunDiagnosis, args: argparse.Namespace, console: Console) -> None:
    causes = Table(
        title=(
            f"{run.lost} of {run.relevant} relevant passages outside the top {run.k} · set "
            f"{args.query_set!r} · limit {run.limit}"
            + (f" · {run.expansion}" if run.expansion else "")
        )
    )
    for name in ("cause", "passages", "share", "what it means"):
        causes.add_column(name)
    for cause, n in run.by_cause.items():
        causes.add_row(cause.value, str(n), repr(run.share(cause)), CAUSE_NOTES[cause])
    console.print(causes)
    console.print(run.ceiling_note, markup=False, highlight=False)
    console.print(
        f"{run.unjudged} passages of the top {run.k}s have no grade (unknown, not lost).",
        markup=False,
        highlight=False,
    )
    queries = Table(title="Queries by nDCG lost")
    for name in ("query", f"nDCG@{run.k}", "lost", *[c.value for c in run.by_cause], "unjudged"):
        queries.add_column(name, overflow="fold")
    for query in run.queries:
        if not query.lost:
            continue
        queries.add_row(
            Text(query.query),
            repr(query.ndcg),
            str(len(query.lost)),
            *[str(sum(1 for p in query.lost if p.cause is c)) for c in run.by_cause],
            str(len(query.unjudged)),
        )
    console.print(queries)
    passages = Table(title="Lost passages")
    for name in ("query", "passage", "grade", "cause", "evidence"):
        passages.add_column(name, overflow="fold")
    for query in run.queries:
        for lost in query.lost:
            passages.add_row(
                query.query_id, lost.chunk_id[:12], str(lost.grade), lost.cause.value,
                Text(_evidence(lost, run.k)),
            )  # fmt: skip
    console.print(passages)


def _evidence(lost: LostPassage, k: int) -> str:
    """What makes a lost passage's cause, in one line (the facade's numbers, as repr)."""
    if lost.cause is LostCause.VOCABULARY:
        own = ", ".join(f"{o.term} (tf {o.tf}, idf {o.idf!r})" for o in lost.own_terms)
        return f"lacks {', '.join(lost.missing_terms)}; its own terms: {own}"
    if lost.cause is LostCause.LIMIT:
        return (
            f"matches {lost.matched_terms} of the query's terms, candidate #{lost.position}, "
            "the last kept "
            f"matched {lost.matched_at_cut}; smallest limit {lost.smallest_limit}"
        )
    if lost.cause is LostCause.OUTRANKED and lost.deciding_term is not None:
        d = lost.deciding_term
        return (
            f"rank {lost.rank}, score {lost.score!r} < {lost.kth_score!r} (rank {k}); decided "
            f"on {d.term}: idf {d.idf!r}, TF part {d.lost_tf_part!r} vs {d.kth_tf_part!r}"
        )
    return CAUSE_NOTES[lost.cause]


def diagnose(args: argparse.Namespace, console: Console) -> int:
    """``python -m core diagnose --workspace NAME --set SET``: 0 when diagnosed, 2 when the
    command cannot run (store, workspace, no such set, no grade yet, a bound)."""
    run = on_a_set(
        args,
        console,
        lambda service, workspace: service.diagnose(
            args.query_set,
            args.k,
            args.limit,
            workspace=workspace,
            by_document=args.by_document,
            expand=expansion_of(args),
        ),
    )
    if run is None:
        return EXIT_UNUSABLE
    if args.json:
        _diagnosis_lines(run, args, console.file)
    else:
        _diagnosis_tables(run, args, console)
    return 0
