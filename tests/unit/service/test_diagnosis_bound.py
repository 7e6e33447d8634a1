"""A diagnosis takes at most 2,000 judged queries (issue 49 item 1: 10,000 took 164-254 s on
both stores), refused in one sentence before anything is read, from a set's grades (by passage
and by document) and from judgment files alike."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from core.service import LexplainService
from core.stores.memory import InMemoryChunkStore

WS = "diagnosed"
#: One judged query more than a diagnosis takes.
TOO_MANY = 2_001
REFUSAL = (
    "a diagnosis explains every lost relevant passage of every query; at most 2,000 judged "
    "queries are diagnosed at once, not 2,001: use a smaller query set or judgment file"
)


@pytest.fixture(scope="module")
def service() -> Iterator[LexplainService]:
    async def opened() -> InMemoryChunkStore:
        return InMemoryChunkStore()

    svc = LexplainService(opened)
    svc.upload_files(
        [(f"d{i}.txt", f"wing flutter word{i}".encode()) for i in range(4)], workspace=WS
    )
    lines = "".join(f'{{"_id": "q{n}", "text": "wing word{n}"}}\n' for n in range(TOO_MANY))
    svc.save_query_set("big", lines, "beir", workspace=WS)
    svc.import_judgments(
        "".join(f"q{n} 0 d{n % 4}.txt 1\n" for n in range(TOO_MANY)), "trec", "big", workspace=WS
    )
    svc.save_query_set("small", lines.splitlines(keepends=True)[0], "beir", workspace=WS)
    svc.import_judgments("q0 0 d0.txt 1\n", "trec", "small", workspace=WS)
    yield svc
    svc.close()


def refusal(call: object) -> str:
    assert callable(call)
    with pytest.raises(ValueError) as raised:
        call()
    return str(raised.value)


def test_2_001_judged_queries_are_refused_by_every_diagnosis(service: LexplainService) -> None:
    files = service.export_query_set("big", "beir", workspace=WS).encode()
    qrels = service.export_judgments("big", "trec", workspace=WS, by_document=True).encode()
    by_passage = refusal(lambda: service.diagnose("big", 10, 100, workspace=WS))
    by_document = refusal(lambda: service.diagnose("big", 10, 100, workspace=WS, by_document=True))
    assert by_passage == by_document == REFUSAL
    assert refusal(lambda: service.diagnose_files(files, qrels, 10, 100, workspace=WS)) == REFUSAL


def test_a_set_within_the_bound_is_diagnosed(service: LexplainService) -> None:
    diagnosis = service.diagnose("small", 10, 100, workspace=WS)
    assert len(diagnosis.queries) <= 1
