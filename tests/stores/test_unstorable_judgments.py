"""Evaluate's files holding a NUL or a lone surrogate are refused on PostgreSQL as in memory.

PostgreSQL's text cannot hold NUL (a saved run failed with CharacterNotInRepertoireError),
so the refusal has to come at the file's line, before any search or write, in the same
sentence as the in-memory store's (tests/unit/service/test_service_analysis.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from core.analysis.evaluation import JudgmentError, parse_qrels, parse_queries
from core.service.facade import LexplainService
from core.settings import Settings

WS = "judged"


@pytest.fixture
def service(database_url: str) -> Iterator[LexplainService]:
    settings = Settings(
        store="postgres", database_url=database_url, database_schema=f"t_{uuid.uuid4().hex}"
    )
    svc = LexplainService.from_settings(settings)
    reports = svc.upload_files([("184.txt", b"Wing flutter at high speed.")], workspace=WS)
    assert all(r.error is None for r in reports)
    yield svc
    svc.close()


@pytest.mark.parametrize(
    ("queries", "qrels", "prefix", "bad"),
    [
        (b'{"_id": "1", "text": "aero\\u0000"}\n', b"1\t184.txt\t1\n", "queries", 0),
        (b'{"_id": "1", "text": "aero\\ud800"}\n', b"1\t184.txt\t1\n", "queries", 0),
        (b"1\twing\n", b"1\t184\x00.txt\t1\n", "qrels", 1),
    ],
)
def test_evaluate_and_diagnose_files_on_postgres_name_the_line_and_keep_the_workspace(
    service: LexplainService, queries: bytes, qrels: bytes, prefix: str, bad: int
) -> None:
    with pytest.raises(JudgmentError) as core_error:
        (parse_queries, parse_qrels)[bad]((queries, qrels)[bad])
    sentence = f"{prefix} file: {core_error.value}"
    with pytest.raises(JudgmentError) as error:
        service.evaluate(queries, qrels, 10, [1000], workspace=WS)
    assert str(error.value) == sentence
    with pytest.raises(JudgmentError) as error:
        service.diagnose_files(queries, qrels, 10, 1000, workspace=WS)
    assert str(error.value) == sentence
    assert service.judged_coverage(b"1\t184.txt\t1\n", workspace=WS).present == 1
