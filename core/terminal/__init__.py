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
from collections.abc import Callable
from typing import Final

from rich.console import Console

from core.terminal.common import _query_arguments, load_settings
from core.terminal.diagnose import diagnose as diagnose_command
from core.terminal.evaluate import evaluate as evaluate_command
from core.terminal.search import search as search_command

__all__ = ["COMMANDS", "add_commands", "load_settings"]


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


#: The commands this module runs, by name (``core.cli.main`` dispatches them here).
COMMANDS: Final[dict[str, Callable[[argparse.Namespace, Console], int]]] = {
    "search": search_command,
    "evaluate": evaluate_command,
    "diagnose": diagnose_command,
}
