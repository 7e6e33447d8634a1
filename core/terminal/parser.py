"""The one parser of ``python -m core``: every command's arguments and help, in one place.

Kept apart from the commands themselves so ``--help`` reads as one page and a new command is
one ``add_parser`` here plus its module (docs/layout.md's checklist).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from core.analysis.evaluation import METRICS
from core.analysis.expansion import (
    FB_DOCS,
    FB_TERMS,
    ORIGINAL_WEIGHT,
    ROCCHIO_ALPHA,
    ROCCHIO_BETA,
    ROCCHIO_GAMMA,
)
from core.analysis.judgment_files import QueryFormat
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.ingest import bulk
from core.terminal.common import (
    DATABASE_URL_ENV,
    DB_TOOLS,
    query_arguments,
)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description="lexplain bulk operations")
    commands = parser.add_subparsers(dest="command", required=True)
    load = commands.add_parser(
        "load",
        help="load files, folders or a BEIR folder into a workspace",
        description=(
            "Load files (txt, md, html, pdf, docx, jsonl), folders of them (recursively), or a "
            "BEIR folder (corpus.jsonl) into a workspace."
        ),
    )
    load.add_argument(
        "paths", nargs="+", metavar="PATH", type=Path, help="a file, a folder, or a BEIR folder"
    )
    load.add_argument(
        "--workspace",
        required=True,
        metavar="NAME",
        help="workspace to load into (created if new; the same name is the same workspace)",
    )
    load.add_argument(
        "--profile",
        choices=[p.value for p in Profile],
        default=DEFAULT_PROFILE.value,
        help=(
            "tokenizer profile of a NEW workspace: plain, or english (Snowball stemming); "
            "an existing workspace keeps its own"
        ),
    )
    load.add_argument(
        "--database-url",
        metavar="URL",
        default=None,
        help=(
            f"PostgreSQL URL (default: ${DATABASE_URL_ENV}; with neither: the embedded "
            "PostgreSQL the app uses)"
        ),
    )
    load.add_argument(
        "--dry-run",
        action="store_true",
        help="read, cut and check everything into memory; keep nothing",
    )
    load.add_argument(
        "--owner",
        metavar="EMAIL",
        default=None,
        help=(
            "owner of a NEW workspace (with sign-in, only its owner and members open it); an "
            "existing workspace must already have this owner"
        ),
    )
    load.add_argument(
        "--whole-documents", action="store_true", help="keep each document as one passage"
    )
    load.add_argument(
        "--full-priority",
        action="store_true",
        help=(
            f"run at normal CPU priority (by default a load runs at nice {bulk.LOAD_NICENESS}, and "
            "so do the embedded server's processes serving it, so the app's searches go first)"
        ),
    )
    load.add_argument(
        "--entities",
        metavar="LIST.csv",
        type=Path,
        help="CSV of name,kind,aliases (aliases separated by ';' or '|')",
    )
    db = commands.add_parser(
        "db",
        help=(
            "the embedded PostgreSQL: status, stop, or run pg_dump/pg_restore/psql against it; "
            "parity: check a workspace's store against an in-memory copy"
        ),
        description=(
            "status: where the embedded server's data lives and whether it runs. stop: stop it "
            "(even if an app still uses it). pg_dump|pg_restore|psql|pg_dumpall ARGS...: run "
            "the embedded PostgreSQL's own tool against it (started for the duration if needed). "
            "parity --workspace NAME [--queries N] [--limit N] [--database-url URL]: ask the "
            "store and an in-memory copy of the workspace the same sampled queries and compare "
            "every candidate and score bit for bit. repair: rebuild the counters and index of "
            "any workspace of the configured store whose counters disagree with its passages, "
            "and remove what deleted workspaces left."
        ),
    )
    db.add_argument(
        "action", choices=("status", "stop", "parity", "repair", *DB_TOOLS), metavar="ACTION"
    )
    db.add_argument("tool_args", nargs=argparse.REMAINDER, metavar="ARGS")
    owner = commands.add_parser(
        "owner",
        help="give a workspace an owner (with sign-in, only its owner and members open it)",
        description=(
            "Make EMAIL the owner of the workspace NAME: for a workspace made without sign-in "
            "or by load (it has none, so with sign-in nobody sees it), or to hand one over."
        ),
    )
    owner.add_argument("workspace", metavar="NAME")
    owner.add_argument("email", metavar="EMAIL")
    owner.add_argument("--database-url", metavar="URL", default=None, help="as for load")
    reextract = commands.add_parser(
        "reextract",
        help="find a workspace's entities again (after an extractor upgrade), atomically",
        description=(
            "Find the entities of every passage of the workspace NAME again with this "
            "version's extractor (and an entity list, if given), in one atomic write, and "
            "print the entities of each kind before and after. Corrections made on the "
            "Entities screen stay."
        ),
    )
    reextract.add_argument("--workspace", required=True, metavar="NAME")
    reextract.add_argument(
        "--entities",
        metavar="LIST.csv",
        type=Path,
        help="CSV of name,kind,aliases, as for load (its entities win over the rules' guesses)",
    )
    reextract.add_argument("--database-url", metavar="URL", default=None, help="as for load")
    add_query_commands(commands)
    return parser


def add_query_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    query_arguments(search, "results listed")
    search.add_argument(
        "--explain", action="store_true", help="each query term's idf, TF part and contribution"
    )
    search.add_argument("--json", action="store_true", help="one JSON object per line")
    expansion_arguments(
        search,
        "expand the query by pseudo-relevance feedback (RM3) from its own top passages, "
        "then rank again; prints each added term's weight and where it came from",
    )
    evaluate = commands.add_parser(
        "evaluate",
        help="evaluate a query set of a workspace against its grades, as the Evaluate screen does",
        description=(
            "Evaluate the query set SET of the workspace against the grades given to it in the "
            "app (LexplainService.evaluate_judged, the workspace's own BM25 at --limit): the "
            "means (nDCG@k, Recall@k, MRR@k, Judged@k) and every graded query's figures. "
            "Queries nobody graded are left out. --json prints one JSON object per line: the "
            "means first, then a line per query. --expand rm3 --ledger prints instead what the "
            "expansion did, query by query (LexplainService.expansion_ledger)."
        ),
    )
    query_arguments(evaluate, "the depth of every metric (nDCG@k, ...)")
    evaluate.add_argument(
        "--set", dest="query_set", required=True, metavar="SET", help="the query set's name"
    )
    evaluate.add_argument(
        "--by-document",
        action="store_true",
        help="judge documents (a document's grade is its best passage's) instead of passages",
    )
    expansion_arguments(
        evaluate,
        "rm3: expand each query with RM3 (Anserini's defaults unless given), then rank it; "
        "rocchio: feedback from the grades of each query's typed top --fb-docs, measured by "
        "residual ranking (those passages left out of both runs and of the judged set)",
        ("rm3", "rocchio"),
    )
    evaluate.add_argument(
        "--ledger",
        action="store_true",
        help=(
            "with --expand: the helped/hurt ledger, as Runs' Measure RM3 shows it (by passage): "
            "per query the metric typed and expanded, the relevant passages the expansion "
            "brought in (and which of them no typed term reached) and the ones it pushed out, "
            "with the paired randomisation test"
        ),
    )
    evaluate.add_argument(
        "--metric",
        choices=tuple(METRICS),
        default="ndcg",
        help="the ledger's metric at k (default ndcg)",
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
    query_arguments(diagnose, "the depth the passages are lost from")
    diagnose.add_argument(
        "--set", dest="query_set", required=True, metavar="SET", help="the query set's name"
    )
    diagnose.add_argument(
        "--by-document",
        action="store_true",
        help="judge documents, each at its best passage (a document's grade is its best passage's)",
    )
    expansion_arguments(
        diagnose,
        "diagnose the RM3-expanded run (as evaluate --expand rm3 ranks it): every cause is "
        "against the expanded query's terms",
    )
    diagnose.add_argument("--json", action="store_true", help="one JSON object per line")

    queries = commands.add_parser(
        "import-queries",
        help="keep a query-set file in a workspace, as the Judge screen's New query set does",
        description=(
            "Read FILE (one query per line, BEIR queries.jsonl, TREC topics or CSV with a "
            "'query' column) and keep it as the query set SET of the workspace (a set of that "
            "name is replaced). A line whose query costs more than a query may (docs/bounds.md) "
            "is left out and listed with its number, the rest kept: exit status 1. A file that "
            "cannot be read stores nothing: exit status 2."
        ),
    )
    queries.add_argument("file", type=Path, metavar="FILE", help="the query-set file")
    queries.add_argument("--workspace", required=True, metavar="NAME", help="the workspace")
    queries.add_argument(
        "--set", dest="query_set", required=True, metavar="SET", help="the query set's name"
    )
    queries.add_argument(
        "--format",
        choices=[f.value for f in QueryFormat],
        default=QueryFormat.LINES.value,
        help="lines (default), beir (queries.jsonl), trec (topics) or csv",
    )
    queries.add_argument("--database-url", metavar="URL", default=None, help="as for load")
    queries.add_argument("--json", action="store_true", help="one JSON object per line")


def expansion_arguments(
    command: argparse.ArgumentParser, expand_means: str, methods: tuple[str, ...] = ("rm3",)
) -> None:
    """``--expand`` (one of ``methods``) and its parameters, as search, evaluate and diagnose
    take them (``common.expansion_of`` makes the spec); ``expand_means`` says what it does."""
    command.add_argument("--expand", choices=methods, default=None, help=expand_means)
    command.add_argument(
        "--fb-docs",
        type=int,
        default=FB_DOCS,
        metavar="N",
        help=f"feedback passages (RM3), or the typed top whose grades are fed back ({FB_DOCS})",
    )
    command.add_argument(
        "--fb-terms", type=int, default=FB_TERMS, metavar="N", help=f"terms kept ({FB_TERMS})"
    )
    command.add_argument(
        "--original-weight",
        type=float,
        default=None,
        metavar="X",
        help=(
            f"the typed query's share of the weights, 0..1 (RM3 {ORIGINAL_WEIGHT:g}, Rocchio's "
            f"alpha {ROCCHIO_ALPHA:g})"
        ),
    )
    if "rocchio" not in methods:
        return
    command.add_argument(
        "--beta",
        type=float,
        default=None,
        metavar="X",
        help=f"Rocchio: the weight of the passages graded relevant, 0..1 ({ROCCHIO_BETA:g})",
    )
    command.add_argument(
        "--gamma",
        type=float,
        default=None,
        metavar="X",
        help=f"Rocchio: the weight of the passages graded 0, 0..1 ({ROCCHIO_GAMMA:g})",
    )
