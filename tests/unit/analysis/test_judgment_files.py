"""Query sets and judgments read from and written to real files, in every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.analysis.judgment_files import (
    MAX_QUERIES,
    GradedPair,
    JudgmentError,
    JudgmentFormat,
    QueryFormat,
    RefusedQuery,
    SetQuery,
    read_judgments,
    read_queries,
    refused_heading,
    write_judgments,
    write_queries,
)
from core.domain.query_cost import MAX_QUERY_TERMS, MAX_QUERY_WORDS
from core.domain.tokenize import Profile
from tests.fixtures.queries import cranfield_questions, long_question, too_many_terms

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
    assert read_queries(data, fmt).queries == QUERIES


def test_queries_one_per_line_are_numbered_in_order(tmp_path: Path) -> None:
    data = _through_a_file(tmp_path, write_queries(QUERIES, QueryFormat.LINES) + "\n\n")
    read = read_queries(data, QueryFormat.LINES).queries
    assert [q.text for q in read] == [q.text for q in QUERIES]
    assert [q.query_id for q in read] == ["1", "2", "3"]


def test_the_shipped_cranfield_queries_read_as_a_set_of_225() -> None:
    queries = read_queries((CRANFIELD / "queries.jsonl").read_bytes(), QueryFormat.BEIR).queries
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
    assert read_queries(topics, QueryFormat.TREC).queries == [
        SetQuery(query_id="401", text="foreign minorities, Germany"),
        SetQuery(query_id="402", text="behavioral genetics"),
    ]


def test_a_csv_query_set_without_ids_is_numbered() -> None:
    read = read_queries('query\nwing\n"flutter, panel"\n', QueryFormat.CSV).queries
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
    assert len(read_queries(lines, QueryFormat.LINES).queries) == MAX_QUERIES
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
        assert read_queries(write_queries(queries, fmt), fmt).queries == queries, fmt


def _beir(rows: list[tuple[str, str]]) -> str:
    return "".join(f"{json.dumps({'_id': i, 'text': t})}\n" for i, t in rows)


def test_a_query_longer_than_cisis_longest_is_kept_in_every_format() -> None:
    long = SetQuery(query_id="56", text=long_question())
    for fmt in QueryFormat:
        read = read_queries(write_queries([QUERIES[0], long], fmt), fmt)
        assert [q.text for q in read.queries] == [QUERIES[0].text, long.text], fmt
        assert read.refused == [], fmt


def test_a_file_with_a_few_refusable_lines_keeps_the_rest_and_lists_each_refused_line() -> None:
    questions = cranfield_questions()[:6]
    rows = [*questions[:2], ("big1", too_many_terms(MAX_QUERY_TERMS + 1)), *questions[2:4]]
    rows += [("big2", "wing " * (MAX_QUERY_WORDS + 1)), *questions[4:]]
    read = read_queries(_beir(rows), QueryFormat.BEIR)
    assert [(q.query_id, q.text) for q in read.queries] == questions
    assert read.refused == [
        RefusedQuery(
            line=3,
            sentence="line 3: the query has 1,025 distinct terms; at most 1,024 are searched: "
            "shorten it",
        ),
        RefusedQuery(
            line=6,
            sentence="line 6: the query has 4,097 words; at most 4,096 are searched: shorten it",
        ),
    ]
    assert refused_heading(read.refused) == (
        "2 lines left out, the rest kept: each asks more than a query may."
    )


def test_a_refused_line_is_measured_under_the_workspaces_profile() -> None:
    # 1,025 distinct words as typed, 1,024 terms once "wings" is stemmed to "wing".
    text = too_many_terms(MAX_QUERY_TERMS - 1) + " wing wings"
    assert read_queries(f"flutter\n{text}\n", QueryFormat.LINES).refused[0].line == 2
    english = read_queries(f"flutter\n{text}\n", QueryFormat.LINES, Profile.ENGLISH)
    assert (len(english.queries), english.refused) == (2, [])


def test_a_trec_topic_refused_for_its_cost_is_named_by_the_line_it_starts_on() -> None:
    topics = "<top>\n<num> 1\n<title> wing\n</top>\n<top>\n<num> 2\n<title> "
    topics += too_many_terms(MAX_QUERY_TERMS + 1) + "\n</top>\n"
    read = read_queries(topics, QueryFormat.TREC)
    assert [q.query_id for q in read.queries] == ["1"]
    assert [r.line for r in read.refused] == [5]


def test_a_file_whose_every_query_is_refused_keeps_nothing_and_says_why() -> None:
    data = too_many_terms(MAX_QUERY_TERMS + 1) + "\n" + too_many_terms(MAX_QUERY_TERMS + 2) + "\n"
    with pytest.raises(
        JudgmentError,
        match=r"^no query can be kept: line 1: the query has 1,025 distinct terms.*"
        r"\(and 1 more line\)$",
    ):
        read_queries(data, QueryFormat.LINES)


@pytest.mark.parametrize("fmt", [QueryFormat.BEIR, QueryFormat.LINES])
def test_a_lone_surrogate_in_a_query_is_named_not_left_to_pydantics_sentence(
    fmt: QueryFormat,
) -> None:
    line = '{"_id": "1", "text": "aero\\ud800"}' if fmt is QueryFormat.BEIR else "aero\ud800"
    with pytest.raises(JudgmentError, match=r"^line 1: a query contains a lone surrogate U"):
        read_queries(line + "\n", fmt)


@pytest.mark.parametrize(
    ("data", "fmt", "sentence"),
    [
        ("q\x001 0 d1 1\n", JudgmentFormat.TREC, "line 1: the query contains a NUL"),
        ("q1\td\ud8001\t1\n", JudgmentFormat.BEIR, "line 1: the document id contains a lone"),
        ("query,docid,rating\nwing\x00,d1,1\n", JudgmentFormat.CSV, "line 2: the query contains"),
    ],
)
def test_a_judgments_file_naming_what_no_store_holds_is_refused_at_its_line(
    data: str, fmt: JudgmentFormat, sentence: str
) -> None:
    with pytest.raises(JudgmentError, match=sentence):
        read_judgments(data, fmt)
