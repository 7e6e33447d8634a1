"""The screens' numbers in a terminal: ``python -m core search|evaluate|diagnose``.

``search`` prints what Search shows (``LexplainService.search``), ``evaluate`` what Runs shows
for a query set's in-app grades (``evaluate_judged``), ``diagnose`` why each graded-relevant
passage was lost (``diagnose``), from the same facade calls, as tables or as JSON lines (a
score as Elasticsearch's explain writes one: value, description, details), so analysts can
script, diff and share them. Every number is the facade's; nothing here computes one. Kept
apart from ``core.cli`` (loading and administering the store), which dispatches here.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import IO, Final

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from core.analysis.diagnosis import CAUSE_NOTES, LostCause, LostPassage, RunDiagnosis
from core.analysis.evaluation import EvaluationRun
from core.analysis.judgment_files import JudgmentError
from core.analysis.presentation import explanation_rows
from core.domain.bm25 import IdfForm, ScoreExplanation, TermContribution
from core.ingest.names import terminal_safe
from core.service.analysis import RunSpec
from core.service.common import DEFAULT_K, DEFAULT_LIMIT
from core.service.facade import LexplainService, StoreUnavailable
from core.service.search import RankedPassage, SearchResult
from core.settings import Settings

#: Exit status when the command could not run at all (as ``core.cli``'s).
EXIT_UNUSABLE = 2


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The query commands' parsers, under ``python -m core``."""
    search = commands.add_parser(
        "search",
        help="rank a workspace's passages for a query, as the Search screen does",
        description=(
            "Rank the workspace's passages for QUERY (LexplainService.search): the query's "
            "terms, N, avgdl, how many passages matched and how many the limit cut, then each "
            "ranked passage's score; --explain adds each query term's idf, TF part and "
            "contribution. --json prints one JSON object per line instead: the query first, "
            "then a line per passage whose score is {value, description, details} (the shape "
            "of Elasticsearch's explain)."
        ),
    )
    search.add_argument("query", metavar="QUERY", help="the query, as typed on the screen")
    _query_arguments(search, "results listed")
    search.add_argument(
        "--explain", action="store_true", help="each query term's idf, TF part and contribution"
    )
    search.add_argument("--json", action="store_true", help="one JSON object per line")
    evaluate = commands.add_parser(
        "evaluate",
        help="evaluate a query set of a workspace against its grades, as the Evaluate screen does",
        description=(
            "Evaluate the query set SET of the workspace against the grades given to it in the "
            "app (LexplainService.evaluate_judged, the workspace's own BM25 at --limit): the "
            "means (nDCG@k, Recall@k, MRR@k, Judged@k) and every graded query's figures. "
            "Queries nobody graded are left out. --json prints one JSON object per line: the "
            "means first, then a line per query."
        ),
    )
    _query_arguments(evaluate, "the depth of every metric (nDCG@k, ...)")
    evaluate.add_argument(
        "--set", dest="query_set", required=True, metavar="SET", help="the query set's name"
    )
    evaluate.add_argument(
        "--by-document",
        action="store_true",
        help="judge documents (a document's grade is its best passage's) instead of passages",
    )
    evaluate.add_argument("--json", action="store_true", help="one JSON object per line")
    diagnose = commands.add_parser(
        "diagnose",
        help="why each graded-relevant passage of a query set was lost, as Runs shows it",
        description=(
            "For the query set SET of the workspace (its in-app grades, by passage; the "
            "workspace's BM25 at --limit), every relevant passage outside the top k with its "
            "one cause: vocabulary mismatch (it holds no query term), cut by the limit (and the "
            "smallest limit that makes it a candidate), or outranked (its rank and score, the "
            "k-th's, and the term that decided it). First the share of each cause, then the "
            "queries by nDCG@k lost. --json prints one JSON object per line: the summary, then "
            "a line per lost passage."
        ),
    )
    _query_arguments(diagnose, "the depth the passages are lost from")
    diagnose.add_argument(
        "--set", dest="query_set", required=True, metavar="SET", help="the query set's name"
    )
    diagnose.add_argument(
        "--by-document",
        action="store_true",
        help="judge documents, each at its best passage (a document's grade is its best passage's)",
    )
    diagnose.add_argument("--json", action="store_true", help="one JSON object per line")


def _query_arguments(command: argparse.ArgumentParser, k_means: str) -> None:
    """What ``search`` and ``evaluate`` share: the workspace, k (``k_means`` says what it is
    there), limit and the store."""
    command.add_argument("--workspace", required=True, metavar="NAME", help="the workspace")
    command.add_argument(
        "--k", type=int, default=DEFAULT_K, metavar="N", help=f"{k_means} (default {DEFAULT_K})"
    )
    command.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=(
            "candidates the store hands to BM25, chosen by matched-term count, before any "
            f"scoring (default {DEFAULT_LIMIT})"
        ),
    )
    command.add_argument("--database-url", metavar="URL", default=None, help="as for load")


def load_settings(database_url: str | None) -> Settings:
    """The app's settings, with ``--database-url`` (when given) in place of the environment's."""
    if database_url:
        return Settings(database_url=database_url)
    return Settings()


def _open_service(database_url: str | None, console: Console) -> LexplainService | None:
    """The facade on the store the settings (or ``--database-url``) name, as the app opens it;
    None once the reason is printed."""
    try:
        return LexplainService.from_settings(load_settings(database_url))
    except ValidationError as exc:
        problems = "; ".join(str(e["msg"]) for e in exc.errors())
        console.print(f"error: settings: {problems}", markup=False, highlight=False)
    except StoreUnavailable as exc:
        console.print(f"error: {exc}", markup=False, highlight=False)
    return None


#: Workspaces an unknown name's message lists (the rest are counted).
LISTED_WORKSPACES: Final = 10


def _known_workspace(service: LexplainService, name: str, console: Console) -> str | None:
    """The workspace's name as kept (``linked_workspace``: "secret" opens "Secret"); None once
    it is said that there is none such (a search of it would find nothing, not say why)."""
    try:
        linked = service.linked_workspace(name)
    except ValueError as exc:
        console.print(f"error: {terminal_safe(str(exc))}", markup=False, highlight=False)
        return None
    if linked.outcome == "open":
        return linked.name
    names = service.list_workspaces()
    known = ", ".join(repr(w) for w in names[:LISTED_WORKSPACES]) or "none"
    if len(names) > LISTED_WORKSPACES:
        known += f", … and {len(names) - LISTED_WORKSPACES} more"
    console.print(
        terminal_safe(f"error: there is no workspace {name!r} (workspaces: {known})"),
        markup=False,
        highlight=False,
    )
    return None


def _json_line(stream: IO[str], record: dict[str, object]) -> None:
    """One JSON object on one line; floats as ``repr`` writes them, so they read back exactly.

    ASCII only: a name's control or bidirectional characters arrive escaped, never raw on a
    terminal."""
    stream.write(json.dumps(record, allow_nan=False) + "\n")


#: How each IDF form is computed, in an explanation's words.
IDF_FORMULAS: Final = {
    IdfForm.LUCENE: "ln(1 + (N - df + 0.5) / (df + 0.5))",
    IdfForm.CLASSIC: "ln((N - df + 0.5) / (df + 0.5))",
}


def _leaf(value: object, description: str) -> dict[str, object]:
    return {"value": value, "description": description, "details": []}


def _term_node(part: TermContribution, explanation: ScoreExplanation) -> dict[str, object]:
    """One term's part of a score: contribution = idf * tf part, each with its inputs."""
    return {
        "value": part.contribution,
        "description": f"term {part.term!r}: contribution, computed as idf * tf part from:",
        "term": part.term,
        "details": [
            {
                "value": part.idf,
                "description": f"idf, computed as {IDF_FORMULAS[explanation.idf_form]} from:",
                "details": [
                    _leaf(part.df, "df, passages containing the term"),
                    _leaf(part.n_docs, "N, passages in the workspace"),
                ],
            },
            {
                "value": part.tf_part,
                "description": (
                    "tf part, computed as tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)) "
                    "from:"
                ),
                "details": [
                    _leaf(part.tf, "tf, occurrences of the term in the passage"),
                    _leaf(explanation.k1, "k1, term frequency saturation"),
                    _leaf(explanation.b, "b, length normalisation"),
                    _leaf(part.doc_length, "dl, length of the passage in tokens"),
                    _leaf(part.avg_doc_length, "avgdl, average passage length in tokens"),
                ],
            },
        ],
    }


def score_node(passage: RankedPassage, explain: bool) -> dict[str, object]:
    """A passage's score in Elasticsearch's explain shape (value, description, details).

    With ``explain`` the details are every query term's row, in term order: the matched terms
    add up, in that order, to the value exactly (``ScoreExplanation``), the others add 0."""
    explanation = passage.explanation
    if not explain:
        return _leaf(passage.score, "BM25 score (--explain adds each term's part)")
    return {
        "value": passage.score,
        "description": (
            f"BM25 score (k1 = {explanation.k1!r}, b = {explanation.b!r}), sum of each query "
            "term's contribution:"
        ),
        "details": [_term_node(part, explanation) for part in explanation.every_term()],
    }


def _search_lines(result: SearchResult, explain: bool, stream: IO[str]) -> None:
    """``search --json``: the query's line, then one line per ranked passage."""
    _json_line(
        stream,
        {
            "kind": "query",
            "workspace": result.workspace,
            "query": result.query,
            "k": result.k,
            "limit": result.limit,
            "profile": result.profile.value,
            "terms": result.terms,
            "stopwords_dropped": result.stopwords_dropped,
            "n_docs": result.n_docs,
            "avg_doc_length": result.avg_doc_length,
            "doc_frequencies": result.doc_frequencies,
            "matching_passages": result.matching_passages,
            "candidates_returned": result.candidates_returned,
            "cut_by_limit": result.cut_by_limit,
            "shown": len(result.passages),
            "empty_reason": result.empty_reason,
        },
    )
    for passage in result.passages:
        _json_line(
            stream,
            {
                "kind": "passage",
                "rank": passage.rank,
                "chunk_id": passage.chunk.id,
                "source_id": passage.chunk.source_id,
                "chunk_index": passage.chunk.chunk_index,
                "candidate_position": passage.candidate_position,
                "score": score_node(passage, explain),
            },
        )


#: Characters of a passage's text the results table shows.
SNIPPET_CHARS: Final = 60


def _snippet(text: str) -> Text:
    flat = " ".join(text.split())
    cut = flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1] + "…"
    return Text(terminal_safe(cut))


def _number_column(table: Table, name: str) -> None:
    # Folded, never cut short: a number shown is the whole number.
    table.add_column(name, justify="right", overflow="fold")


def _search_tables(result: SearchResult, explain: bool, console: Console) -> None:
    """``search``: the screen's lines above the results, the results, and each explanation."""
    said = terminal_safe(
        f"workspace {result.workspace!r} · query {result.query!r} · k {result.k} · "
        f"limit {result.limit} · {result.profile.value} profile"
    )
    console.print(said, markup=False, highlight=False)
    terms = " ".join(result.terms) or "(none)"
    dropped = ", ".join(result.stopwords_dropped) or "none"
    console.print(
        terminal_safe(f"terms: {terms}   dropped as stopwords: {dropped}"),
        markup=False,
        highlight=False,
    )
    corpus = f"corpus: N = {result.n_docs} passages, avgdl = {result.avg_doc_length!r} tokens"
    if result.terms:
        corpus += (
            f" · {len(result.passages)} of {result.matching_passages} matching passages shown"
            f" · {result.cut_by_limit} cut by the limit ({result.candidates_returned} scored)"
        )
    console.print(corpus, markup=False, highlight=False)
    if result.empty_reason is not None:
        console.print(f"no results: {result.empty_reason}", markup=False, highlight=False)
        return
    table = Table(title="Results")
    table.add_column("rank", justify="right")
    _number_column(table, "score")
    table.add_column("source", overflow="fold")
    table.add_column("passage", justify="right")
    table.add_column("candidate", justify="right")
    table.add_column("passage id", overflow="fold")
    table.add_column("text")
    for passage in result.passages:
        chunk = passage.chunk
        table.add_row(
            str(passage.rank),
            repr(passage.score),
            Text(terminal_safe(chunk.source_id)),
            str(chunk.chunk_index + 1),
            str(passage.candidate_position),
            chunk.id,
            _snippet(chunk.text),
        )
    console.print(table)
    if not explain:
        return
    for passage in result.passages:
        console.print(_explanation_table(passage))
        console.print(
            f"total = {passage.score!r} (the sum of the contribution column)",
            markup=False,
            highlight=False,
        )


#: The explanation table's columns, as the Search screen heads them (``explanation_rows``).
EXPLANATION_COLUMNS: Final = ("term", "tf", "df", "N", "idf", "dl", "avgdl", "TF part")


def _explanation_table(passage: RankedPassage) -> Table:
    """One passage's explanation, a row per query term in the screen's order."""
    chunk = passage.chunk
    title = terminal_safe(
        f"rank {passage.rank} · source {chunk.source_id} · passage {chunk.chunk_index + 1} "
        f"({chunk.id})"
    )
    table = Table(title=Text(title))
    table.add_column("term", overflow="fold")
    for name in (*EXPLANATION_COLUMNS[1:], "contribution"):
        _number_column(table, name)
    for row in explanation_rows(passage.explanation):
        cells = [Text(terminal_safe(str(row["term"])))]
        for name in (*EXPLANATION_COLUMNS[1:], "contribution"):
            value = row[name]
            cells.append(Text(repr(value) if isinstance(value, float) else str(value)))
        table.add_row(*cells)
    return table


def search(args: argparse.Namespace, console: Console) -> int:
    """``python -m core search QUERY --workspace NAME``: 0 when searched (found or not), 2
    when the command cannot run (store, workspace, a bound of the query)."""
    service = _open_service(args.database_url, console)
    if service is None:
        return EXIT_UNUSABLE
    try:
        workspace = _known_workspace(service, args.workspace, console)
        if workspace is None:
            return EXIT_UNUSABLE
        try:
            result = service.search(args.query, args.k, args.limit, workspace=workspace)
        except ValueError as exc:  # a bound of core.service.bounds, in its own words
            console.print(f"error: not searched: {exc}", markup=False, highlight=False)
            return EXIT_UNUSABLE
    finally:
        service.close()
    if args.json:
        _search_lines(result, args.explain, console.file)
    else:
        _search_tables(result, args.explain, console)
    return 0


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
        _number_column(means, f"{label}@{k}")
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
        _number_column(rows, f"{label}@{k}")
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
    service = _open_service(args.database_url, console)
    if service is None:
        return EXIT_UNUSABLE
    try:
        workspace = _known_workspace(service, args.workspace, console)
        if workspace is None:
            return EXIT_UNUSABLE
        try:
            (run,) = service.evaluate_judged(
                args.query_set,
                args.k,
                [RunSpec(workspace=workspace, limit=args.limit)],
                workspace=workspace,
                by_document=args.by_document,
            )
        except KeyError as exc:  # no such set: its message names it
            console.print(f"error: {terminal_safe(exc.args[0])}", markup=False, highlight=False)
            return EXIT_UNUSABLE
        except (JudgmentError, ValueError) as exc:  # no grade yet, or a bound
            console.print(f"error: {terminal_safe(str(exc))}", markup=False, highlight=False)
            return EXIT_UNUSABLE
    finally:
        service.close()
    if args.json:
        _evaluate_lines(run, args, console.file)
    else:
        _evaluate_tables(run, args, console)
    return 0


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
    service = _open_service(args.database_url, console)
    if service is None:
        return EXIT_UNUSABLE
    try:
        workspace = _known_workspace(service, args.workspace, console)
        if workspace is None:
            return EXIT_UNUSABLE
        try:
            run = service.diagnose(
                args.query_set, args.k, args.limit, workspace=workspace,
                by_document=args.by_document,
            )  # fmt: skip
        except KeyError as exc:
            console.print(f"error: {terminal_safe(exc.args[0])}", markup=False, highlight=False)
            return EXIT_UNUSABLE
        except (JudgmentError, ValueError) as exc:
            console.print(f"error: {terminal_safe(str(exc))}", markup=False, highlight=False)
            return EXIT_UNUSABLE
    finally:
        service.close()
    if args.json:
        _diagnosis_lines(run, args, console.file)
    else:
        _diagnosis_tables(run, args, console)
    return 0


#: The commands this module runs, by name (``core.cli.main`` dispatches them here).
COMMANDS: Final[dict[str, Callable[[argparse.Namespace, Console], int]]] = {
    "search": search,
    "evaluate": evaluate,
    "diagnose": diagnose,
}
