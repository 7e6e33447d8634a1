"""Query sets and judgments in and out, in the formats analysts already exchange.

Query sets: one query per line (typed or pasted), BEIR ``queries.jsonl``, TREC topics (the
classic ``<top>``/``<num>``/``<title>`` blocks, and the ``<topic number=..>``/``<query>``
form of the later tracks) and CSV with a header (``query_id,query``; ``query`` alone
numbers them). Judgments: TREC qrels (``qid 0 docid grade``), BEIR qrels TSV
(``query-id corpus-id score`` with its header) and CSV ``query,docid,rating`` with a header,
the format Quepid and OpenSearch's Search Relevance Workbench exchange; there ``query`` is
the query's text, in TREC and BEIR its id.

A query file whose line cannot be read (bad JSON, a repeated id or text, a row of the wrong
width) is refused whole, naming the line: it is not what its format says, and taking the good
lines would store part of a file and show it as the whole (the cost: one typo stops an import
until it is fixed). A line that reads but asks more than a query may cost
(``core.domain.query_cost``, the rule every search path applies) is the exception: it is left
out and listed, line number and sentence, beside the queries kept (``QueryFile.refused``), so a
set with a few over-long questions (CISI's 8 of 76 past 1,000 characters, before that bound
was replaced) imports the rest and says which were not; refusing the file whole for them was
rejected, as it lost every good query over a few the analyst cannot shorten without changing
the collection. Grades in the app are 0-3 (not relevant, related, relevant, perfect); a grade
outside it, or not a whole number, is refused per line rather than clamped, since a 4 on
another tool's scale means something a 3 here does not. Two lines grading the same pair
differently are refused too (which one was meant?). Query text is stored with its
whitespace collapsed to single spaces, so every format can write it back on one line. Ids
may not hold whitespace: TREC and BEIR files separate columns by it.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
from collections.abc import Iterator, Sequence
from enum import StrEnum
from typing import Final, NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError

from core.analysis.sentences import count
from core.domain.chunks import storable_text_problem
from core.domain.judging import MAX_QUERIES, TOP_GRADE, SetQuery
from core.domain.query_cost import query_refusal
from core.domain.tokenize import DEFAULT_PROFILE, Profile
from core.ingest.jsonlines import JsonLineError, parse_json_line

#: Judgment lines in one imported file.
MAX_JUDGMENTS: Final[int] = 1_000_000
#: Characters of a bad value quoted in a message.
_QUOTED: Final[int] = 40
#: A TREC topic's start, id and title (classic and later forms).
_TOP = re.compile(r"<top>|<topic\b[^>]*>", re.IGNORECASE)
_TOPIC_NUMBER = re.compile(r'number\s*=\s*"([^"]*)"', re.IGNORECASE)
_NUM = re.compile(r"<num>\s*(?:number:)?\s*(.*?)\s*(?:</num>)?\s*$", re.IGNORECASE)
_TITLE = re.compile(r"<(title|query)>\s*(?:topic:)?(.*?)(?:</(?:title|query)>)?\s*$", re.IGNORECASE)
_END = re.compile(r"</top>|</topic>", re.IGNORECASE)
#: Header names accepted for each CSV column (lower case).
_ID_COLUMNS = ("query_id", "query-id", "qid", "id")
_DOC_COLUMNS = ("docid", "doc_id", "doc-id", "corpus-id", "document")
_GRADE_COLUMNS = ("rating", "grade", "score", "relevance")


class JudgmentError(ValueError):
    """A queries or judgments file that cannot be read; the message names the line."""


class QueryFormat(StrEnum):
    LINES = "lines"
    BEIR = "beir"
    TREC = "trec"
    CSV = "csv"


class JudgmentFormat(StrEnum):
    TREC = "trec"
    BEIR = "beir"
    CSV = "csv"


class GradedPair(BaseModel):
    """One line of a judgments file: ``query`` is the id (TREC, BEIR) or the text (CSV)."""

    model_config = ConfigDict(frozen=True)

    query: str
    doc_id: str
    grade: int


class RefusedQuery(BaseModel):
    """A line of a query file left out because the query costs more than a query may."""

    model_config = ConfigDict(frozen=True)

    #: The line the query starts on (a TREC topic's ``<top>``).
    line: int
    #: "line 56: the query has 1,100 distinct terms; at most 1,024 are searched: shorten it".
    sentence: str


def refused_heading(refused: Sequence[RefusedQuery]) -> str:
    """What a screen or the terminal says above the refused lines' sentences."""
    lines = count(len(refused), "line")
    return f"{lines} left out, the rest kept: each asks more than a query may."


class QueryFile(NamedTuple):
    """What a query file gives: the queries kept, in file order, and the lines left out."""

    queries: list[SetQuery]
    refused: list[RefusedQuery]


def text_lines(data: bytes | str) -> list[str]:
    """The lines of a UTF-8 file (a byte-order mark dropped)."""
    text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    return text.splitlines()


def quoted(value: str) -> str:
    """``value`` in quotes for a message, cut to a readable length."""
    return repr(value if len(value) <= _QUOTED else value[:_QUOTED] + "…")


def check_line_storable(value: str, what: str, number: int) -> str:
    """``value`` if every store can hold it, else one sentence naming the line and the character.

    The same check and wording as Judge's (``a query contains a NUL character at offset 4``):
    a NUL passed by Evaluate showed invisibly in its table, as ``%00`` in the Search link, and
    failed on PostgreSQL when the run was saved, where refusing it at the line is one sentence.
    """
    problem = storable_text_problem(value)
    if problem is not None:
        raise JudgmentError(f"line {number}: {what} {problem}")
    return value


def qrels_fields(fields: Sequence[str], number: int) -> tuple[str, str, str]:
    """(query id, document id, grade text) of a BEIR (3 columns) or TREC (4) qrels line."""
    if len(fields) == 3:
        return fields[0], fields[1], fields[2]
    if len(fields) == 4:
        return fields[0], fields[2], fields[3]
    raise JudgmentError(
        f"line {number}: expected 3 (BEIR) or 4 (TREC) columns, found {len(fields)}"
    )


def is_qrels_header(fields: Sequence[str]) -> bool:
    return bool(fields) and fields[0].lower() in {"query-id", "query_id", "qid"}


def beir_query(line: str, number: int) -> tuple[str, str]:
    """(id, text) of one BEIR ``queries.jsonl`` line; an integer ``_id`` is read as text."""
    try:
        row = parse_json_line(line)
    except JsonLineError as exc:
        raise JudgmentError(f"line {number}: not a BEIR query ({exc})") from None
    query_id = row.get("_id") if isinstance(row, dict) else None
    text = row.get("text") if isinstance(row, dict) else None
    if isinstance(query_id, int) and not isinstance(query_id, bool):
        query_id = str(query_id)
    if not isinstance(query_id, str) or not isinstance(text, str):
        raise JudgmentError(
            f'line {number}: not a BEIR query (it needs an "_id" and a "text" string)'
        )
    return query_id, text


def _collapsed(text: str) -> str:
    return " ".join(text.split())


class _QuerySet:
    """Collects queries, refusing what a set may not hold, line by line."""

    def __init__(self, profile: Profile) -> None:
        self.queries: list[SetQuery] = []
        self.refused: list[RefusedQuery] = []
        self._profile = profile
        self._ids: dict[str, int] = {}
        self._texts: dict[str, int] = {}

    def add(self, query_id: str | None, raw_text: str, number: int) -> None:
        text = _collapsed(raw_text)
        query_id = (str(len(self.queries) + 1) if query_id is None else query_id).strip()
        if not text:
            raise JudgmentError(f"line {number}: the query is empty")
        # Before pydantic: its str refuses a lone surrogate without naming it.
        check_line_storable(text, "a query", number)
        check_line_storable(query_id, "the query id", number)
        refusal = query_refusal(text, self._profile)
        if refusal:  # left out and listed, the rest of the file kept
            self.refused.append(RefusedQuery(line=number, sentence=f"line {number}: {refusal}"))
            return
        if not query_id or any(c.isspace() for c in query_id):
            raise JudgmentError(
                f"line {number}: query id {quoted(query_id)} is empty or has spaces"
            )
        if query_id in self._ids:
            raise JudgmentError(
                f"line {number}: query id {quoted(query_id)} was already used on line"
                f" {self._ids[query_id]}"
            )
        if text in self._texts:
            raise JudgmentError(
                f"line {number}: repeats the query of line {self._texts[text]} ({quoted(text)})"
            )
        if len(self.queries) == MAX_QUERIES:
            raise JudgmentError(f"line {number}: a query set holds at most {MAX_QUERIES:,} queries")
        try:
            query = SetQuery(query_id=query_id, text=text)
        except ValidationError as exc:
            problem = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise JudgmentError(f"line {number}: {problem}") from None
        self._ids[query_id] = self._texts[text] = number
        self.queries.append(query)


def _csv_rows(data: bytes | str) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of each non-empty CSV row; quoted newlines kept in their cell."""
    text = "\n".join(text_lines(data))
    reader = csv.reader(io.StringIO(text))
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                yield reader.line_num, row
    except csv.Error as exc:
        raise JudgmentError(f"line {reader.line_num}: not CSV ({exc})") from None


def _column(header: Sequence[str], names: Sequence[str]) -> int | None:
    lowered = [cell.strip().lower() for cell in header]
    return next((lowered.index(name) for name in names if name in lowered), None)


def _trec_topics(data: bytes | str, into: _QuerySet) -> None:
    start = 0  # line of the open topic; 0 when none is open
    query_id: str | None = None
    title: list[str] | None = None
    reading_title = False
    for number, line in enumerate(text_lines(data), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if _TOP.match(stripped):
            if start:
                raise JudgmentError(f"line {number}: a topic starts before line {start}'s ends")
            start, title, reading_title = number, None, False
            found = _TOPIC_NUMBER.search(stripped)
            query_id = found.group(1) if found else None
            continue
        if not start:
            raise JudgmentError(f"line {number}: text outside a <top> topic")
        if _END.match(stripped):
            if query_id is None or not title:
                raise JudgmentError(f"line {start}: the topic has no <num> or no <title>")
            into.add(query_id, html.unescape(" ".join(title)), start)
            start, query_id, title = 0, None, None
            continue
        num, heading = _NUM.match(stripped), _TITLE.match(stripped)
        if num:
            query_id, reading_title = num.group(1), False
        elif heading and title is None:
            title, reading_title = [heading.group(2)], "</" not in stripped
        elif stripped.startswith("<"):
            reading_title = False
        elif reading_title and title is not None:
            ended = re.search(r"</(?:title|query)>\s*$", stripped, re.IGNORECASE)
            title.append(stripped[: ended.start()] if ended else stripped)
            reading_title = not ended
    if start:
        raise JudgmentError(f"line {start}: the topic is never closed (</top>)")


def read_queries(
    data: bytes | str, fmt: QueryFormat, profile: Profile = DEFAULT_PROFILE
) -> QueryFile:
    """A query set from a file or pasted text, its queries measured under the workspace's
    ``profile``: the queries kept and the lines refused for what they cost; ``JudgmentError``
    names the first line that cannot be read, or says that no query could be kept."""
    found = _QuerySet(profile)
    if fmt is QueryFormat.LINES:
        for number, line in enumerate(text_lines(data), start=1):
            if line.strip():
                found.add(None, line, number)
    elif fmt is QueryFormat.BEIR:
        for number, line in enumerate(text_lines(data), start=1):
            if line.strip():
                found.add(*beir_query(line, number), number)
    elif fmt is QueryFormat.TREC:
        _trec_topics(data, found)
    else:
        rows = _csv_rows(data)
        number, header = next(rows, (0, []))
        text_at, id_at = _column(header, ("query", "text")), _column(header, _ID_COLUMNS)
        if text_at is None:
            raise JudgmentError(f"line {max(number, 1)}: the header needs a 'query' column")
        for number, row in rows:
            if len(row) != len(header):
                raise JudgmentError(
                    f"line {number}: {len(row)} cells where the header has {len(header)}"
                )
            found.add(None if id_at is None else row[id_at], row[text_at], number)
    if not found.queries and found.refused:
        more = len(found.refused) - 1
        also = f" (and {count(more, 'more line')})" if more else ""
        raise JudgmentError(f"no query can be kept: {found.refused[0].sentence}{also}")
    if not found.queries:
        raise JudgmentError("no queries found")
    return QueryFile(found.queries, found.refused)


def write_queries(queries: Sequence[SetQuery], fmt: QueryFormat) -> str:
    """A query set as a file ``read_queries`` reads back to the same set (LINES renumbers)."""
    if fmt is QueryFormat.LINES:
        return "".join(f"{q.text}\n" for q in queries)
    if fmt is QueryFormat.BEIR:
        return "".join(f"{_json({'_id': q.query_id, 'text': q.text})}\n" for q in queries)
    if fmt is QueryFormat.TREC:
        return "".join(
            f"<top>\n<num> Number: {q.query_id}\n<title> {_xml(q.text)}\n</top>\n\n"
            for q in queries
        )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["query_id", "query"])
    writer.writerows([q.query_id, q.text] for q in queries)
    return out.getvalue()


def _json(value: dict[str, str]) -> str:
    return json.dumps(value, ensure_ascii=False)


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


#: A grade as judgment files write one: ASCII digits only, no "_" separators (re.ASCII: \d is 0-9).
GRADE_PATTERN = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def grade_number(text: str) -> float | None:
    """``text`` as a number if a judgment file could mean it as one, else None.

    As trec_eval reads grades: ASCII digits, an optional sign, point and exponent. Python's
    ``float`` also takes "1_000", Arabic-Indic digits and "nan"/"inf", which no judgment file
    means as a grade.
    """
    return float(text) if GRADE_PATTERN.fullmatch(text) else None


def app_grade(text: str, number: int) -> int:
    """A grade of the app's scale (a whole number 0-3), or ``JudgmentError`` naming the line."""
    value = grade_number(text)
    if value is None or not value.is_integer() or not 0 <= value <= TOP_GRADE:
        raise JudgmentError(
            f"line {number}: grade {quoted(text)} is not one of 0, 1, 2, {TOP_GRADE}"
            " (not relevant, related, relevant, perfect)"
        )
    return int(value)


def read_judgments(data: bytes | str, fmt: JudgmentFormat) -> list[GradedPair]:
    """Graded pairs from a judgments file; ``JudgmentError`` names the first bad line."""
    pairs: list[GradedPair] = []
    seen: dict[tuple[str, str], tuple[int, int]] = {}

    def add(query: str, doc_id: str, grade_text: str, number: int) -> None:
        grade = app_grade(grade_text, number)
        query, doc_id = query.strip(), doc_id.strip()
        if not query or not doc_id:
            raise JudgmentError(f"line {number}: the query or the document is empty")
        check_line_storable(query, "the query", number)
        check_line_storable(doc_id, "the document id", number)
        earlier = seen.get((query, doc_id))
        if earlier is not None:
            if earlier[1] != grade:
                raise JudgmentError(
                    f"line {number}: grades {quoted(query)} / {quoted(doc_id)} {grade}, but line"
                    f" {earlier[0]} graded it {earlier[1]}"
                )
            return
        if len(pairs) == MAX_JUDGMENTS:
            raise JudgmentError(f"line {number}: a file holds at most {MAX_JUDGMENTS:,} judgments")
        seen[(query, doc_id)] = (number, grade)
        pairs.append(GradedPair(query=query, doc_id=doc_id, grade=grade))

    if fmt is JudgmentFormat.CSV:
        rows = _csv_rows(data)
        number, header = next(rows, (0, []))
        columns = (
            _column(header, ("query",)),
            _column(header, _DOC_COLUMNS),
            _column(header, _GRADE_COLUMNS),
        )
        if None in columns:
            raise JudgmentError(f"line {max(number, 1)}: the header must be query,docid,rating")
        at_query, at_doc, at_grade = (c for c in columns if c is not None)
        for number, row in rows:
            if len(row) != len(header):
                raise JudgmentError(
                    f"line {number}: {len(row)} cells where the header has {len(header)}"
                )
            add(row[at_query], row[at_doc], row[at_grade], number)
    else:
        columns_wanted = 4 if fmt is JudgmentFormat.TREC else 3
        for number, line in enumerate(text_lines(data), start=1):
            fields = line.split()
            if not fields or (number == 1 and is_qrels_header(fields)):
                continue
            if len(fields) != columns_wanted:
                raise JudgmentError(
                    f"line {number}: expected {columns_wanted} columns ({fmt.name} qrels),"
                    f" found {len(fields)}"
                )
            add(*qrels_fields(fields, number), number)
    if not pairs:
        raise JudgmentError("no judgments found")
    return pairs


def write_judgments(pairs: Sequence[GradedPair], fmt: JudgmentFormat) -> str:
    """Graded pairs as a file ``read_judgments`` reads back to the same pairs.

    TREC and BEIR separate columns by whitespace, so an id holding some (a document named
    "annual report.pdf") is refused with ``JudgmentError``; CSV quotes it.
    """
    if fmt is JudgmentFormat.CSV:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["query", "docid", "rating"])
        writer.writerows([p.query, p.doc_id, p.grade] for p in pairs)
        return out.getvalue()
    for pair in pairs:
        for value in (pair.query, pair.doc_id):
            if not value or any(c.isspace() for c in value):
                raise JudgmentError(
                    f"{quoted(value)} holds whitespace, which {fmt.name} qrels cannot carry;"
                    " export as CSV instead"
                )
    if fmt is JudgmentFormat.TREC:
        return "".join(f"{p.query} 0 {p.doc_id} {p.grade}\n" for p in pairs)
    header = "query-id\tcorpus-id\tscore\n"
    return header + "".join(f"{p.query}\t{p.doc_id}\t{p.grade}\n" for p in pairs)
