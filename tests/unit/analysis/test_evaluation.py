"""Reading judgments and scoring a run per query."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from core.analysis.evaluation import (
    JudgmentError,
    documents_in_rank_order,
    evaluate_run,
    parse_qrels,
    parse_queries,
)

DATA = Path(__file__).resolve().parents[3] / "data" / "cranfield"


def test_beir_and_trec_qrels_read_the_same() -> None:
    beir = parse_qrels("query-id\tcorpus-id\tscore\n1\t184\t3\n1\t29\t1\n2\t12\t4\n")
    trec = parse_qrels("1 0 184 3\n1 0 29 1\n2 0 12 4\n")
    assert beir == trec == {"1": {"184": 3, "29": 1}, "2": {"12": 4}}


def test_the_shipped_cranfield_judgments_and_queries_read_whole() -> None:
    qrels = parse_qrels((DATA / "qrels.tsv").read_bytes())
    queries = parse_queries((DATA / "queries.jsonl").read_bytes())
    assert len(queries) == 225
    assert sum(len(v) for v in qrels.values()) == 1837


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("1\t184\n", "line 1: expected 3"),
        ("1 184 high\n", "line 1: grade 'high'"),
        ("", "no judgments"),
    ],
)
def test_a_bad_qrels_line_is_named(data: str, message: str) -> None:
    with pytest.raises(JudgmentError, match=message):
        parse_qrels(data)


def test_a_bad_query_line_is_named() -> None:
    with pytest.raises(JudgmentError, match="line 2"):
        parse_queries('{"_id": "1", "text": "wing"}\n{"_id": "2"\n')


def test_a_query_id_given_twice_with_two_texts_is_refused_naming_both_lines() -> None:
    with pytest.raises(JudgmentError) as refusal:
        parse_queries("q1\twing flutter\nq2\tshock\nq1\tboundary layer\n")
    assert str(refusal.value) == (
        "line 3: query id 'q1' was already given on line 1, with another text ('wing flutter');"
        " an id names one query"
    )
    jsonl = '{"_id": "q1", "text": "wing"}\n{"_id": "q1", "text": "wing"}\n'
    assert parse_queries(jsonl) == {"q1": "wing"}  # the same query twice is one query


def test_passages_of_one_document_count_at_its_best_rank() -> None:
    assert documents_in_rank_order(["7", "3", "7", "9", "3"]) == ["7", "3", "9"]


def test_a_run_is_scored_per_judged_query_and_averaged() -> None:
    run = evaluate_run(
        queries={"1": "wing", "2": "body", "3": "unjudged"},
        qrels={"1": {"a": 1}, "2": {"b": 2, "c": 1}},
        ranked_documents={"1": ["a"], "2": ["x", "b"]},
        k=10,
        limit=100,
    )
    assert [r.query_id for r in run.rows] == ["1", "2"]
    assert run.rows[0].ndcg == 1.0
    assert run.rows[1].mrr == 0.5
    assert run.rows[1].recall == 0.5
    idcg = 2 + 1 / math.log2(3)
    assert run.rows[1].ndcg == pytest.approx((2 / math.log2(3)) / idcg)
    assert run.mean_mrr == 0.75


def test_a_run_carries_the_ranked_documents_it_judged_cut_at_k() -> None:
    run = evaluate_run(
        queries={"1": "wing", "2": "body", "3": "unjudged"},
        qrels={"1": {"a": 1}, "2": {"b": 2}},
        ranked_documents={"1": ["a", "q", "r"], "3": ["z"]},
        k=2,
        limit=100,
    )
    assert run.ranked == {"1": ["a", "q"], "2": []}


@pytest.mark.parametrize("grade", ["inf", "1e400", "9" * 5000, "nan", "-inf"])
def test_a_grade_that_is_not_a_finite_number_is_named_never_an_overflow(grade: str) -> None:
    with pytest.raises(JudgmentError, match=r"line 2: grade .* not a"):
        parse_qrels(f"query-id\tcorpus-id\tscore\n1\td1\t{grade}\n")


@pytest.mark.parametrize(
    "grade",
    ["1_000", "1_0", "\u0661", "\u0662\u0663", "\u06f3", "\uff11", "\u0967", "nan"],
    ids=["underscores", "short-underscore", "arabic-indic-1", "arabic-indic-23",
         "extended-arabic-indic-3", "fullwidth-1", "devanagari-1", "nan"],
)  # fmt: skip
def test_a_grade_python_reads_but_no_judgment_file_means_is_refused_naming_its_line(
    grade: str,
) -> None:
    judged = f"query-id\tcorpus-id\tscore\n1\td1\t1\n2\td2\t{grade}\n"
    with pytest.raises(JudgmentError, match=r"^line 3: "):
        parse_qrels(judged)


@pytest.mark.parametrize("grade", ["0", "1", "-1", "+2", "2.5", "1e2", ".5", "3."])
def test_a_grade_written_as_judgment_files_write_them_is_read(grade: str) -> None:
    assert parse_qrels(f"1 d1 {grade}") == {"1": {"d1": int(float(grade))}}


@pytest.mark.parametrize(
    "line",
    [
        '{"_id": "2", "text": "x", "m": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"_id": ' + "9" * 5000 + ', "text": "x"}',
        '{"_id": 1}',
    ],
    ids=["deep-json", "5000-digit-id", "no-text"],
)
def test_a_hostile_query_line_is_named_never_a_crash(line: str) -> None:
    with pytest.raises(JudgmentError, match="line 2: not a BEIR query"):
        parse_queries('{"_id": "1", "text": "wing"}\n' + line + "\n")


def test_qrels_read_for_some_queries_keep_only_theirs_and_still_check_every_line() -> None:
    qrels = "query-id\tcorpus-id\tscore\n1\t184\t3\n2\t12\t4\n1\t29\t1\n"
    assert parse_qrels(qrels, only={"1"}) == {"1": {"184": 3, "29": 1}}
    assert parse_qrels(qrels, only=set()) == {}  # judgments, none of these queries'
    with pytest.raises(JudgmentError, match="line 3: grade "):
        parse_qrels(qrels.replace("12\t4", "12\tx"), only={"1"})


@pytest.mark.parametrize(
    ("parse", "data", "sentence"),
    [
        (parse_queries, '{"_id": "q1", "text": "aero\\u0000"}\n', "line 1: a query contains a NUL"),
        (parse_queries, "q1\twing\nq\ud8002\tflutter\n", "line 2: the query id contains a lone"),
        (parse_qrels, "q1 0 d\x001 1\n", "line 1: the document id contains a NUL"),
        (parse_qrels, "q\x001\td1\t1\n", "line 1: the query id contains a NUL"),
    ],
)
def test_a_character_no_store_holds_is_refused_naming_the_line_as_judge_does(
    parse: object, data: str, sentence: str
) -> None:
    assert callable(parse)
    with pytest.raises(JudgmentError, match=sentence):
        parse(data)
