"""``python -m core search``: what the Search screen shows, as tables or JSON lines (a score
in Elasticsearch's explain shape: value, description, details)."""

from __future__ import annotations

import argparse
from typing import IO, Final

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text

from core.analysis.presentation import explanation_rows
from core.analysis.sentences import dropped_characters_line
from core.domain.bm25 import IdfForm, ScoreExplanation, TermContribution
from core.ingest.names import terminal_safe
from core.service.search import RankedPassage, SearchResult
from core.terminal.common import (
    EXIT_UNUSABLE,
    _json_line,
    _known_workspace,
    _open_service,
    expansion_of,
    number_column,
    refusal,
)

#: How each IDF form is computed, in an explanation's words.
IDF_FORMULAS: Final = {
    IdfForm.LUCENE: "ln(1 + (N - df + 0.5) / (df + 0.5))",
    IdfForm.CLASSIC: "ln((N - df + 0.5) / (df + 0.5))",
}


def _leaf(value: object, description: str) -> dict[str, object]:
    return {"value": value, "description": description, "details": []}


def _term_node(part: TermContribution, explanation: ScoreExplanation) -> dict[str, object]:
    """One term's part of a score: contribution = idf * tf part (weight * idf * tf part for a
    weighted term of an expanded query), each with its inputs."""
    weighted = part.term in explanation.weights
    formula = "(weight * idf) * tf part" if weighted else "idf * tf part"
    return {
        "value": part.contribution,
        "description": f"term {part.term!r}: contribution, computed as {formula} from:",
        "term": part.term,
        "details": [
            *(
                [_leaf(part.weight, "weight, the term's weight in the expanded query")]
                if weighted
                else []
            ),
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
            "characters_dropped": result.characters_dropped,
            "n_docs": result.n_docs,
            "avg_doc_length": result.avg_doc_length,
            "doc_frequencies": result.doc_frequencies,
            "matching_passages": result.matching_passages,
            "candidates_returned": result.candidates_returned,
            "cut_by_limit": result.cut_by_limit,
            "shown": len(result.passages),
            "empty_reason": result.empty_reason,
            **({"expansion": result.expansion.model_dump()} if result.expansion else {}),
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
                **(
                    {"rank_before": passage.rank_before, "brought_by": passage.brought_by}
                    if result.expansion is not None
                    else {}
                ),
                "score": score_node(passage, explain),
            },
        )


#: Characters of a passage's text the results table shows.
SNIPPET_CHARS: Final = 60


def _snippet(text: str) -> Text:
    flat = " ".join(text.split())
    cut = flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1] + "…"
    return Text(terminal_safe(cut))


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
    if result.characters_dropped:  # the screens' words (``dropped_characters_line``)
        console.print(
            terminal_safe(dropped_characters_line(result.characters_dropped)),
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
    if result.expansion is not None:
        console.print(_expansion_table(result))
    table = Table(title="Results")
    table.add_column("rank", justify="right")
    number_column(table, "score")
    table.add_column("source", overflow="fold")
    table.add_column("passage", justify="right")
    table.add_column("candidate", justify="right")
    table.add_column("passage id", overflow="fold")
    if result.expansion is not None:
        table.add_column("before", justify="right")
        table.add_column("brought by", overflow="fold")
    table.add_column("text")
    for passage in result.passages:
        chunk = passage.chunk
        moved: list[str | Text] = []
        if result.expansion is not None:
            before = "-" if passage.rank_before is None else str(passage.rank_before)
            moved = [before, Text(terminal_safe(passage.brought_by or ""))]
        table.add_row(
            str(passage.rank),
            repr(passage.score),
            Text(terminal_safe(chunk.source_id)),
            str(chunk.chunk_index + 1),
            str(passage.candidate_position),
            chunk.id,
            *moved,
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


def _expansion_table(result: SearchResult) -> Table:
    """The expanded query: each term's weight, its two parts, and the feedback it came from."""
    assert result.expansion is not None
    expansion = result.expansion
    rank = {p.chunk_id: p.rank for p in expansion.feedback}
    title = f"Expanded query: {expansion.spec.label}"
    if expansion.note:
        title += f" ({expansion.note})"
    table = Table(title=Text(terminal_safe(title)))
    table.add_column("term", overflow="fold")
    for name in ("weight", "query part", "feedback part"):
        number_column(table, name)
    table.add_column("from feedback passages (rank: part)", overflow="fold")
    for term in expansion.terms:
        sources = ", ".join(f"{rank[s.chunk_id]}: {s.part!r}" for s in term.sources)
        table.add_row(
            Text(terminal_safe(term.term + ("" if term.typed else " (added)"))),
            repr(term.weight),
            repr(term.query_part),
            repr(term.feedback_part),
            sources or "-",
        )
    return table


def _explanation_table(passage: RankedPassage) -> Table:
    """One passage's explanation, a row per query term in the screen's order."""
    chunk = passage.chunk
    title = terminal_safe(
        f"rank {passage.rank} · source {chunk.source_id} · passage {chunk.chunk_index + 1} "
        f"({chunk.id})"
    )
    table = Table(title=Text(title))
    table.add_column("term", overflow="fold")
    weighted = ("weight",) if passage.explanation.weights else ()
    columns = (*weighted, *EXPLANATION_COLUMNS[1:], "contribution")
    for name in columns:
        number_column(table, name)
    for row in explanation_rows(passage.explanation):
        cells = [Text(terminal_safe(str(row["term"])))]
        for name in columns:
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
            expand = expansion_of(args)
        except ValidationError as exc:
            console.print(f"error: not searched: {refusal(exc)}", markup=False, highlight=False)
            return EXIT_UNUSABLE
        try:
            result = service.search(
                args.query, args.k, args.limit, workspace=workspace, expand=expand
            )
        except ValueError as exc:  # a bound of core.service.bounds, in its own words
            console.print(f"error: not searched: {refusal(exc)}", markup=False, highlight=False)
            return EXIT_UNUSABLE
    finally:
        service.close()
    if args.json:
        _search_lines(result, args.explain, console.file)
    else:
        _search_tables(result, args.explain, console)
    return 0
