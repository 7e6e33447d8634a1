"""A long question is a query on every path: one rule (``core.domain.query_cost``) decides.

Issue 48 item 4: a query-set file refused CISI's questions past 1,000 characters while
Evaluate's judgment files took the same questions. Here a question longer than CISI's longest
(Cranfield's longest questions asked as one) goes through the search box's call, a query set's
import, Evaluate's files, a diagnosis and Runs over a set; a query of too many distinct terms
or too many words is refused on each with the sentence ``query_refusal`` gives, and a set
with such lines keeps the rest and lists them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from core.domain.judging import MAX_GRADED_QUERY_BYTES, Judgment, QuerySet, SetQuery
from core.domain.query_cost import MAX_QUERY_TERMS, MAX_QUERY_WORDS, query_refusal
from core.service import JudgmentError, LexplainService, RunSpec
from core.settings import Settings
from tests.fixtures.queries import (
    CISI_LONGEST,
    CRANFIELD_QUERIES,
    cranfield_questions,
    long_question,
    too_many_terms,
)
from tests.fixtures.stores import settings_for

WS = "long"
CORPUS = CRANFIELD_QUERIES.parent / "corpus.jsonl"
#: The three queries every path is asked, and how each path answers: kept (""), or refused
#: with the end of this sentence (after "the query", "query q56", ...).
ASKED = {
    "a question longer than CISI's longest": (long_question(), ""),
    "one distinct term too many": (
        too_many_terms(MAX_QUERY_TERMS + 1),
        "has 1,025 distinct terms; at most 1,024 are searched: shorten it",
    ),
    "one word too many": (
        "wing " * (MAX_QUERY_WORDS + 1),
        "has 4,097 words; at most 4,096 are searched: shorten it",
    ),
}


@pytest.fixture(scope="module")
def service() -> Iterator[LexplainService]:
    svc = LexplainService.from_settings(Settings(store="memory"))
    lines = CORPUS.read_text(encoding="utf-8").splitlines()[:200]
    svc.upload_files([("corpus.jsonl", "\n".join(lines).encode())], workspace=WS)
    yield svc
    svc.close()


def _files(text: str) -> tuple[bytes, bytes]:
    """Evaluate's files: query 1 (a Cranfield question) and q56 (``text``), both judged."""
    queries = f"{json.dumps({'_id': '1', 'text': cranfield_questions()[0][1]})}\n"
    queries += f"{json.dumps({'_id': 'q56', 'text': text})}\n"
    return queries.encode(), b"query-id\tcorpus-id\tscore\n1\t1\t2\nq56\t12\t2\n"


def _graded_set(service: LexplainService, text: str) -> str:
    """A set holding ``text``, graded once: both written to the in-memory store directly, as a
    set and a grade kept before the rule was would be (every path now refuses the query, and a
    grade of a query past ``MAX_GRADED_QUERY_BYTES``)."""
    name = f"set {len(service.query_sets(workspace=WS))}"
    tenant = service._tenant(WS)
    first = cranfield_questions()[0][1]
    queries = (
        SetQuery(query_id="1", text=first),
        SetQuery(query_id="q56", text=" ".join(text.split())),
    )
    found = QuerySet(tenant_id=tenant, name=name, queries=queries, created_at=datetime.now(UTC))
    service._call(service._store.save_query_set(found))
    passage = service.search("wing", workspace=WS).passages[0].chunk
    graded = Judgment.model_construct(
        tenant_id=tenant, query=" ".join(text.split()), chunk_id=passage.id,
        source_id=passage.source_id, grade=2, rater="local", judged_at=datetime.now(UTC),
    )  # fmt: skip
    service._call(service._store.put_judgments(tenant, [graded]))
    return name


PATHS = ["search", "truncation", "add_to_set", "evaluate", "diagnose_files", "runs_over_a_set"]


def paths(service: LexplainService) -> dict[str, Callable[[str], Any]]:
    def evaluate(text: str) -> Any:
        return service.evaluate(*_files(text), 10, [1000], workspace=WS)

    def diagnose_files(text: str) -> Any:
        return service.diagnose_files(*_files(text), 10, 1000, workspace=WS)

    def runs_over_a_set(text: str) -> Any:
        name = _graded_set(service, text)
        spec = RunSpec(workspace=WS, limit=1000)
        return service.evaluate_judged(name, 10, [spec], workspace=WS)

    return {
        "search": lambda text: service.search(text, workspace=WS),
        "truncation": lambda text: service.truncation(text, 10, 1000, workspace=WS),
        "add_to_set": lambda text: service.add_to_query_set(text, "from search", workspace=WS),
        "evaluate": evaluate,
        "diagnose_files": diagnose_files,
        "runs_over_a_set": runs_over_a_set,
    }


@pytest.mark.parametrize("asked", list(ASKED))
@pytest.mark.parametrize("path", PATHS)
def test_every_path_takes_or_refuses_a_query_by_the_one_rule(
    service: LexplainService, path: str, asked: str
) -> None:
    text, said = ASKED[asked]
    assert query_refusal(text).removeprefix("the query ") == said  # the one rule's sentence
    if not said:
        assert len(text) > CISI_LONGEST
        paths(service)[path](text)
        return
    with pytest.raises(ValueError) as refused:
        paths(service)[path](text)
    assert str(refused.value).endswith(said)


def test_a_query_set_keeps_a_long_question_and_lists_each_refusable_line(
    service: LexplainService,
) -> None:
    lines = [
        cranfield_questions()[1][1],
        *(t for t, _ in ASKED.values()),
        cranfield_questions()[2][1],
    ]
    saved = service.save_query_set("cisi-like", "\n".join(lines), "lines", workspace=WS)
    assert saved.queries == 3
    kept = [q.text for q in service.query_set("cisi-like", workspace=WS).queries]
    assert kept == [lines[0], long_question(), lines[4]]
    assert [r.sentence for r in saved.refused] == [
        f"line 3: the query {ASKED['one distinct term too many'][1]}",
        f"line 4: the query {ASKED['one word too many'][1]}",
    ]


def test_a_file_of_only_refusable_lines_stores_nothing_and_the_set_of_that_name_stays(
    service: LexplainService,
) -> None:
    service.save_query_set("kept", "flutter\n", "lines", workspace=WS)
    with pytest.raises(ValueError, match=r"^no query can be kept: line 1: the query has 1,025"):
        service.save_query_set(
            "kept", ASKED["one distinct term too many"][0], "lines", workspace=WS
        )
    assert [q.text for q in service.query_set("kept", workspace=WS).queries] == ["flutter"]


@pytest.fixture(scope="module", params=["memory", "postgres"])
def each_store(request: pytest.FixtureRequest) -> Iterator[LexplainService]:
    """A few Cranfield documents in each store, through the service."""
    svc = LexplainService.from_settings(settings_for(request))
    lines = CORPUS.read_text(encoding="utf-8").splitlines()[:50]
    svc.upload_files([("corpus.jsonl", "\n".join(lines).encode())], workspace=WS)
    yield svc
    svc.close()


def test_every_store_keeps_a_grade_of_a_long_question_and_refuses_one_too_long_to_key_plainly(
    each_store: LexplainService,
) -> None:
    """PostgreSQL keys a grade by its query's text in a btree (at most 2,704 bytes an entry):
    an 8,864-character query failed there with the server's error; now every store refuses
    it in one sentence before writing, and takes CISI-length questions."""
    passage = each_store.search("wing", workspace=WS).passages[0].chunk.id
    each_store.grade(long_question(), passage, 2, workspace=WS)
    assert each_store.my_grades(long_question(), workspace=WS) == {passage: 2}
    texts = [text for _, text in cranfield_questions()]
    too_long = " ".join(texts[:80])  # searched fine: 8,864 characters, well within the rule
    assert query_refusal(too_long) == "" and len(too_long.encode()) > MAX_GRADED_QUERY_BYTES
    with pytest.raises(ValueError, match=r"^a query of 8,864 bytes cannot be graded: a grade is"):
        each_store.grade(too_long, passage, 2, workspace=WS)
    each_store.save_query_set("too long", too_long, "lines", workspace=WS)
    with pytest.raises(JudgmentError, match=r"^query 1: a query of 8,864 bytes cannot be graded"):
        each_store.import_judgments("1 0 1 2\n", "trec", "too long", workspace=WS)
    assert each_store.judgments(workspace=WS, queries=[too_long]) == []
