"""Query sets and judgments read from and written to real files, in every format."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.analysis.judgment_files import (
    MAX_QUERIES,
    MAX_QUERY_CHARS,
    GradedPair,
    JudgmentError,
    JudgmentFormat,
    QueryFormat,
    SetQuery,
    read_judgments,
    read_queries,
    write_judgments,
    write_queries,
)

CRANFIELD = Path(__file__).resolve().parents[3] / "data" / "cranfield"
QUERIES = [
    SetQuery(query_id="1", text="wing flutter"),
    SetQuery(query_id="2", text='heat transfer, "laminar" <boundary> & layers'),
    SetQuery(query_id="q-3", text="résumé of shock waves"),
]
PAIRS = [
    GradedPair(query="1", doc_id="184", grade=3),
    GradedPair(query="1", doc_id="29", grade=0),
    GradedPair(query="q-3", doc_id="a1b2", grade=2),
]


def _through_a_file(tmp_path: Path, text: str) -> bytes:
    path = tmp_path / "upload"
    path.write_text(text, encoding="utf-8")
    return path.read_bytes()


@pytest.mark.parametrize("fmt", [QueryFormat.BEIR, QueryFormat.TREC, QueryFormat.CSV])
def test_a_query_set_reads_back_from_its_own_export(tmp_path: Path, fmt: QueryFormat) -> None:
    data = _through_a_file(tmp_path, write_queries(QUERIES, fmt))
    assert read_queries(data, fmt) == QUERIES


def test_queries_one_per_line_are_numbered_in_order(tmp_path: Path) -> None:
    data = _through_a_file(tmp_path, write_queries(QUERIES, QueryFormat.LINES) + "\n\n")
    read = read_queries(data, QueryFormat.LINES)
    assert [q.text for q in read] == [q.text for q in QUERIES]
    assert [q.query_id for q in read] == ["1", "2", "3"]


def test_the_shipped_cranfield_queries_read_as_a_set_of_225() -> None:
    queries = read_queries((CRANFIELD / "queries.jsonl").read_bytes(), QueryFormat.BEIR)
    assert len(queries) == 225
    assert queries[0].query_id == "1"


def test_classic_trec_topics_take_the_title_and_the_number() -> None:
    topics = (
        "<top>\n<num> Number: 401\n<title> foreign minorities,\n  Germany\n\n"
        "<desc> Description:\nWhat language and cultural differences ...\n"
        "<narr> Narrative:\nA relevant document will ...\n</top>\n\n"
        '<topic number="402" type="faceted">\n  <query>behavioral genetics</query>\n'
        "  <description>What is happening</description>\n</topic>\n"
    )
    assert read_queries(topics, QueryFormat.TREC) == [
        SetQuery(query_id="401", text="foreign minorities, Germany"),
        SetQuery(query_id="402", text="behavioral genetics"),
    ]


def test_a_csv_query_set_without_ids_is_numbered() -> None:
    read = read_queries('query\nwing\n"flutter, panel"\n', QueryFormat.CSV)
    assert read == [
        SetQuery(query_id="1", text="wing"),
        SetQuery(query_id="2", text="flutter, panel"),
    ]


@pytest.mark.parametrize(
    ("fmt", "data", "message"),
    [
        (QueryFormat.BEIR, '{"_id": "1", "text": "a"}\n{"_id": "2"}\n', "line 2: not a BEIR"),
        (
            QueryFormat.BEIR,
            '{"_id": "1", "text": "a"}\n{"_id": "1", "text": "b"}\n',
            "line 2: query id '1' was already used on line 1",
        ),
        (QueryFormat.LINES, "wing\nbody\nwing\n", "line 3: repeats the query of line 1"),
        (QueryFormat.LINES, "a\n" + "x" * (MAX_QUERY_CHARS + 1), "line 2: the query has 1,001"),
        (QueryFormat.CSV, "id,text\n1,a\n2\n", "line 3: 1 cells"),
        (QueryFormat.CSV, "words\nwing\n", "line 1: the header needs a 'query' column"),
        (QueryFormat.CSV, "query_id,query\nq 1,wing\n", "line 2: query id 'q 1'"),
        (QueryFormat.TREC, "<top>\n<num> Number: 1\n</top>\n", "line 1: the topic has no"),
        (QueryFormat.TREC, "<top>\n<num> 1\n<title> a\n", "line 1: the topic is never closed"),
        (QueryFormat.TREC, "stray\n<top>\n", "line 1: text outside"),
        (QueryFormat.LINES, "\n \n", "no queries"),
    ],
)
def test_a_bad_query_line_is_refused_by_number(fmt: QueryFormat, data: str, message: str) -> None:
    with pytest.raises(JudgmentError, match=message):
        read_queries(data, fmt)


def test_a_query_set_has_a_stated_maximum_size() -> None:
    lines = "".join(f"query {n}\n" for n in range(MAX_QUERIES))
    assert len(read_queries(lines, QueryFormat.LINES)) == MAX_QUERIES
    with pytest.raises(JudgmentError, match=f"line {MAX_QUERIES + 1}: a query set holds at most"):
        read_queries(lines + "one more\n", QueryFormat.LINES)


@pytest.mark.parametrize("fmt", list(JudgmentFormat))
def test_judgments_read_back_from_their_own_export(tmp_path: Path, fmt: JudgmentFormat) -> None:
    data = _through_a_file(tmp_path, write_judgments(PAIRS, fmt))
    assert read_judgments(data, fmt) == PAIRS


def test_quepid_csv_names_the_query_by_its_text() -> None:
    data = 'query,docid,rating\n"wing, swept",doc 7,3\nbody,d2,0\n'
    assert read_judgments(data, JudgmentFormat.CSV) == [
        GradedPair(query="wing, swept", doc_id="doc 7", grade=3),
        GradedPair(query="body", doc_id="d2", grade=0),
    ]


@pytest.mark.parametrize(
    ("fmt", "data", "message"),
    [
        (
            JudgmentFormat.TREC,
            "1 0 184 3\n1 0 29 4\n",
            "line 2: grade '4' is not one of 0, 1, 2, 3",
        ),
        (JudgmentFormat.TREC, "1 0 184 -1\n", "line 1: grade '-1'"),
        (JudgmentFormat.TREC, "1 0 184 2.5\n", "line 1: grade '2.5'"),
        (JudgmentFormat.TREC, "1 0 184 high\n", "line 1: grade 'high'"),
        (JudgmentFormat.TREC, "1 0 184 nan\n", "line 1: grade 'nan'"),
        (JudgmentFormat.TREC, "1 0 184 1\n1 0 185 \u0662\n", "line 2: grade '\u0662'"),
        (JudgmentFormat.TREC, "1 0 184 \u06f1\n", "line 1: grade '\u06f1'"),
        (JudgmentFormat.CSV, "query,docid,rating\na,b,0_1\n", "line 2: grade '0_1'"),
        (JudgmentFormat.TREC, "1 184 3\n", "line 1: expected 4 columns"),
        (JudgmentFormat.BEIR, "query-id\tcorpus-id\tscore\n1\t0\t184\t3\n", "line 2: expected 3"),
        (JudgmentFormat.BEIR, "1\t184\t3\n1\t184\t1\n", "line 2: grades '1' / '184' 1, but line 1"),
        (JudgmentFormat.CSV, "q,d,r\na,b,1\n", "line 1: the header must be query,docid,rating"),
        (JudgmentFormat.CSV, "query,docid,rating\na,b,1\nc,d\n", "line 3: 2 cells"),
        (JudgmentFormat.CSV, "query,docid,rating\na,b,7\n", "line 2: grade '7'"),
        (JudgmentFormat.CSV, "query,docid,rating\n", "no judgments"),
    ],
)
def test_a_bad_judgment_line_is_refused_by_number(
    fmt: JudgmentFormat, data: str, message: str
) -> None:
    with pytest.raises(JudgmentError, match=message):
        read_judgments(data, fmt)


def test_a_repeated_identical_judgment_is_read_once() -> None:
    pairs = read_judgments("1 0 184 3\n1 0 184 3\n", JudgmentFormat.TREC)
    assert pairs == [GradedPair(query="1", doc_id="184", grade=3)]


def test_an_id_with_whitespace_cannot_go_into_trec_qrels_but_can_into_csv() -> None:
    pairs = [GradedPair(query="1", doc_id="annual report.pdf", grade=2)]
    with pytest.raises(JudgmentError, match="export as CSV"):
        write_judgments(pairs, JudgmentFormat.TREC)
    assert read_judgments(write_judgments(pairs, JudgmentFormat.CSV), JudgmentFormat.CSV) == pairs


_texts = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(
    lambda t: t.split()
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_texts, min_size=1, max_size=8, unique_by=lambda t: " ".join(t.split())))
def test_any_query_text_survives_every_format(texts: list[str]) -> None:
    queries = [SetQuery(query_id=str(n), text=" ".join(t.split())) for n, t in enumerate(texts, 1)]
    for fmt in QueryFormat:
        assert read_queries(write_queries(queries, fmt), fmt) == queries, fmt
