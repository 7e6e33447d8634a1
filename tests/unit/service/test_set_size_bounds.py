"""How many queries one analysis takes (issue 49 item 1), each refused in one sentence before
anything is read.

An expanded run reads each graded query twice (typed, then expanded): at most 2,000 queries
(Rocchio's residual run of 10,000 took 134 s on PostgreSQL), in every action that expands a set:
Evaluate's RM3 run (a set's grades or judgment files) and the residual run; the expansion
ledger, which also diagnoses, at most 1,000 (2,000 took 78.9 s on PostgreSQL). A diagnosis
takes at most 2,000 judged queries (10,000 took 164-254 s on both stores), from a set's grades
(by passage and by document) and from judgment files alike. An Evaluate takes at most two runs
or limits (the screen's A and B), from every entry alike, and at a limit above 1,000 (the one
its 10,000 queries were measured at) at most 2,000 judged queries (10,000 at limit 10,000,000
took 84 s on PostgreSQL, 5,000 took 59.5 s); docs/bounds.md states each of these numbers as
core has it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.analysis.expansion import ExpansionSpec
from core.service import LexplainService, RunSpec
from core.service.bounds import (
    EVALUATE_MEASURED_LIMIT,
    MAX_DIAGNOSED_QUERIES,
    MAX_EVALUATE_QUERIES,
    MAX_EVALUATE_RUNS,
    MAX_EXPANDED_QUERIES,
    MAX_LEDGER_QUERIES,
    MAX_PARITY_QUERIES,
    MAX_UNCUT_EVALUATE_QUERIES,
    check_evaluated,
)
from core.stores.memory import InMemoryChunkStore

WS = "expanded"
#: One query more than an expanded run takes.
TOO_MANY = 2_001
UNCUT_REFUSAL = (
    "an Evaluate at a limit above 1,000 ranks more candidates of each query; at most 2,000 "
    "judged queries are evaluated at such a limit, not 2,001: use a limit of at most 1,000 or "
    "a smaller query set"
)
REFUSAL = (
    "an expanded run reads each query twice; at most 2,000 graded queries are expanded at "
    "once, not 2,001: use a smaller query set"
)
LEDGER_REFUSAL = (
    "an expansion ledger ranks each query typed and expanded and diagnoses it; at most 1,000 "
    "graded queries are in one ledger, not {}: use a smaller query set"
)
DIAGNOSIS_REFUSAL = (
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
    qrels = "".join(f"q{n} 0 d{n % 4}.txt 1\n" for n in range(TOO_MANY))
    svc.import_judgments(qrels, "trec", "big", workspace=WS)
    svc.save_query_set("small", lines.splitlines(keepends=True)[0], "beir", workspace=WS)
    svc.save_query_set(
        "ledger", "".join(lines.splitlines(keepends=True)[:1_001]), "beir", workspace=WS
    )
    svc.import_judgments("q0 0 d0.txt 1\n", "trec", "small", workspace=WS)
    yield svc
    svc.close()


def refusal(call: object) -> str:
    assert callable(call)
    with pytest.raises(ValueError) as raised:
        call()
    return str(raised.value)


def test_a_set_of_2_001_graded_queries_is_refused_by_every_expanded_action(
    service: LexplainService,
) -> None:
    rm3 = ExpansionSpec()
    typed, expanded = RunSpec(workspace=WS, limit=100), RunSpec(workspace=WS, limit=100, expand=rm3)
    files = service.export_query_set("big", "beir", workspace=WS).encode()
    qrels = service.export_judgments("big", "trec", workspace=WS, by_document=True).encode()
    assert refusal(lambda: service.evaluate_judged("big", 10, [typed, expanded], workspace=WS)) == (
        REFUSAL
    )
    assert refusal(lambda: service.evaluate_runs(files, qrels, 10, [expanded])) == REFUSAL
    assert refusal(lambda: service.evaluate_residual("big", 10, 100, workspace=WS)) == REFUSAL


def test_the_same_set_is_evaluated_as_typed_and_a_small_set_is_expanded(
    service: LexplainService,
) -> None:
    (run,) = service.evaluate_judged("big", 10, [RunSpec(workspace=WS, limit=100)], workspace=WS)
    assert len(run.rows) == TOO_MANY
    ledger = service.expansion_ledger("small", 10, 100, workspace=WS, expand=ExpansionSpec())
    assert len(ledger.rows) == 1
    assert len(service.evaluate_residual("small", 10, 100, workspace=WS).typed.rows) <= 1


def test_an_expansion_ledger_of_more_than_1_000_graded_queries_is_refused(
    service: LexplainService,
) -> None:
    rm3 = ExpansionSpec()
    for name, count in (("big", TOO_MANY), ("ledger", 1_001)):
        assert refusal(
            lambda name=name: service.expansion_ledger(name, 10, 100, workspace=WS, expand=rm3)
        ) == LEDGER_REFUSAL.format(f"{count:,}")


def test_2_001_judged_queries_are_refused_by_every_diagnosis(service: LexplainService) -> None:
    files = service.export_query_set("big", "beir", workspace=WS).encode()
    qrels = service.export_judgments("big", "trec", workspace=WS, by_document=True).encode()
    by_passage = refusal(lambda: service.diagnose("big", 10, 100, workspace=WS))
    by_document = refusal(lambda: service.diagnose("big", 10, 100, workspace=WS, by_document=True))
    assert by_passage == by_document == DIAGNOSIS_REFUSAL
    assert refusal(lambda: service.diagnose_files(files, qrels, 10, 100, workspace=WS)) == (
        DIAGNOSIS_REFUSAL
    )


def test_a_set_within_the_diagnosis_bound_is_diagnosed(service: LexplainService) -> None:
    assert len(service.diagnose("small", 10, 100, workspace=WS).queries) <= 1


def test_an_evaluate_of_more_runs_or_limits_than_the_screen_offers_is_refused_in_one_sentence(
    service: LexplainService,
) -> None:
    files = service.export_query_set("small", "beir", workspace=WS).encode()
    qrels = service.export_judgments("small", "trec", workspace=WS, by_document=True).encode()
    three = [RunSpec(workspace=WS, limit=limit) for limit in (10, 100, 1000)]
    assert refusal(lambda: service.evaluate(files, qrels, 10, [10, 100, 1000], workspace=WS)) == (
        "the number of limits must be a whole number from 1 to 2, got 3"
    )
    assert refusal(lambda: service.evaluate_runs(files, qrels, 10, three)) == (
        "the number of runs must be a whole number from 1 to 2, got 3"
    )
    assert refusal(lambda: service.evaluate_judged("small", 10, three, workspace=WS)) == (
        "the number of runs must be a whole number from 1 to 2, got 3"
    )
    assert refusal(lambda: service.evaluate_judged("small", 10, [], workspace=WS)) == (
        "the number of runs must be a whole number from 1 to 2, got 0"
    )
    assert refusal(lambda: service.evaluate(files, qrels, 10, [], workspace=WS)) == (
        "the number of limits must be a whole number from 1 to 2, got 0"
    )
    assert refusal(lambda: service.evaluate(files, qrels, 10, 100, workspace=WS)) == (  # type: ignore[arg-type]
        "the limits must be a list, got 100"
    )


def test_an_evaluate_of_two_runs_or_limits_is_run(service: LexplainService) -> None:
    files = service.export_query_set("small", "beir", workspace=WS).encode()
    qrels = service.export_judgments("small", "trec", workspace=WS, by_document=True).encode()
    assert len(service.evaluate(files, qrels, 10, [10, 100], workspace=WS)) == 2
    two = [RunSpec(workspace=WS, limit=10), RunSpec(workspace=WS, limit=100)]
    assert len(service.evaluate_runs(files, qrels, 10, two)) == 2
    assert len(service.evaluate_judged("small", 10, two, workspace=WS)) == 2


def test_2_001_judged_queries_at_a_limit_above_1_000_are_refused_by_every_evaluate(
    service: LexplainService,
) -> None:
    files = service.export_query_set("big", "beir", workspace=WS).encode()
    qrels = service.export_judgments("big", "trec", workspace=WS, by_document=True).encode()
    wide = [RunSpec(workspace=WS, limit=100), RunSpec(workspace=WS, limit=1_001)]
    assert refusal(lambda: service.evaluate(files, qrels, 10, [1_001], workspace=WS)) == (
        UNCUT_REFUSAL
    )
    assert refusal(lambda: service.evaluate_runs(files, qrels, 10, wide)) == UNCUT_REFUSAL
    assert refusal(lambda: service.evaluate_judged("big", 10, wide, workspace=WS)) == (
        UNCUT_REFUSAL
    )
    unlimited = [RunSpec(workspace=WS, limit=2**62)]
    assert refusal(lambda: service.evaluate_runs(files, qrels, 10, unlimited)) == UNCUT_REFUSAL


def test_an_evaluate_within_the_limit_it_was_measured_at_or_of_2_000_queries_is_not_refused(
    service: LexplainService,
) -> None:
    check_evaluated(MAX_UNCUT_EVALUATE_QUERIES, [2**62])
    (run,) = service.evaluate_judged("big", 10, [RunSpec(workspace=WS, limit=1_000)], workspace=WS)
    assert len(run.rows) == TOO_MANY


def test_docs_bounds_states_each_set_size_bound_core_uses() -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "bounds.md").read_text(encoding="utf-8")
    for stated in (
        f"**{MAX_EVALUATE_QUERIES:,} judged queries**",
        f"**{MAX_EVALUATE_RUNS:,} runs**",
        f"**{MAX_EXPANDED_QUERIES:,} graded queries in an expanded run**",
        f"**{MAX_LEDGER_QUERIES:,} graded queries in one expansion ledger**",
        f"**{MAX_DIAGNOSED_QUERIES:,} judged queries in one diagnosis**",
        f"**{MAX_PARITY_QUERIES:,} queries in a parity check**",
        f"**{MAX_UNCUT_EVALUATE_QUERIES:,} judged queries at a limit above "
        f"{EVALUATE_MEASURED_LIMIT:,}**",
    ):
        assert stated in text, stated
