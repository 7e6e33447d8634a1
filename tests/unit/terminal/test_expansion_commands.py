"""The terminal's expanded runs (issue 47): ``diagnose --expand rm3`` prints the facade's
diagnosis of the expanded run and ``evaluate --expand rm3 --ledger`` the facade's helped/hurt
ledger, and ``evaluate --expand rocchio`` the facade's residual measurement, every number equal;
a parameter out of range, or a ledger without an expansion, is refused in one line."""

from __future__ import annotations

import json

import pytest

from core.analysis.diagnosis import CAUSE_NOTES
from core.analysis.expansion import ExpansionLedger, ExpansionSpec
from core.analysis.residual import ResidualEvaluation
from core.service import SAMPLE_QUERY_SET, LexplainService
from tests.unit.terminal.sample import SAMPLE, run, table_rows


@pytest.mark.postgres
def test_diagnose_expand_rm3_prints_the_facades_diagnosis_of_the_expanded_run(
    facade: LexplainService,
) -> None:
    facade.import_sample_grades(workspace=SAMPLE)
    spec = ExpansionSpec(fb_docs=8, fb_terms=12, original_weight=0.6)
    expected = facade.diagnose(SAMPLE_QUERY_SET, 10, 50, workspace=SAMPLE, expand=spec)
    typed = facade.diagnose(SAMPLE_QUERY_SET, 10, 50, workspace=SAMPLE)
    assert expected.lost != typed.lost and expected.expansion == spec.label

    status, out = run(
        "diagnose", "--workspace", SAMPLE, "--set", SAMPLE_QUERY_SET, "--limit", "50", "--json",
        "--expand", "rm3", "--fb-docs", "8", "--fb-terms", "12", "--original-weight", "0.6",
    )  # fmt: skip
    assert status == 0, out
    summary, *lost = [json.loads(line) for line in out.splitlines()]
    assert (summary["lost"], summary["expansion"]) == (expected.lost, spec.label)
    assert summary["by_cause"] == {c.value: n for c, n in expected.by_cause.items()}
    assert summary["ceiling"] == expected.ceiling_note
    want = [
        {
            "kind": "lost", "query_id": q.query_id, "query": q.query, "ndcg": q.ndcg,
            "ndcg_lost": q.ndcg_lost, **p.model_dump(mode="json"),
        }
        for q in expected.queries
        for p in q.lost
    ]  # fmt: skip
    assert lost == want

    status, out = run(
        "diagnose", "--workspace", SAMPLE, "--set", SAMPLE_QUERY_SET, "--limit", "50",
        "--expand", "rm3", "--fb-docs", "8", "--fb-terms", "12", "--original-weight", "0.6",
    )  # fmt: skip
    assert status == 0, out
    assert table_rows(out)[: len(expected.by_cause)] == [
        [c.value, str(n), repr(expected.share(c)), CAUSE_NOTES[c]]
        for c, n in expected.by_cause.items()
    ]
    assert "RM3 (feedback passages 8" in out


@pytest.mark.postgres
def test_diagnose_refuses_an_expansion_parameter_out_of_range_in_one_line(
    facade: LexplainService,
) -> None:
    status, out = run(
        "diagnose", "--workspace", SAMPLE, "--set", SAMPLE_QUERY_SET, "--expand", "rm3",
        "--original-weight", "1.5",
    )  # fmt: skip
    assert status == 2
    assert out.strip().splitlines() == [
        "error: --original-weight: Input should be less than or equal to 1"
    ]


@pytest.mark.postgres
def test_evaluate_ledger_prints_the_facades_expansion_ledger(facade: LexplainService) -> None:
    facade.import_sample_grades(workspace=SAMPLE)
    spec = ExpansionSpec(fb_terms=12)
    expected = facade.expansion_ledger(
        SAMPLE_QUERY_SET, 10, 50, workspace=SAMPLE, expand=spec, metric="recall"
    )
    assert expected.helped and expected.hurt and expected.recovered
    common = ("evaluate", "--workspace", SAMPLE, "--set", SAMPLE_QUERY_SET, "--limit", "50",
              "--expand", "rm3", "--fb-terms", "12", "--ledger", "--metric", "recall")  # fmt: skip

    status, out = run(*common, "--json")
    assert status == 0, out
    head, *rows = [json.loads(line) for line in out.splitlines()]
    assert (head.pop("kind"), head.pop("query_set"), head.pop("limit")) == (
        "ledger",
        SAMPLE_QUERY_SET,
        50,
    )
    assert head.pop("summary") == expected.summary
    assert {row.pop("kind") for row in rows} == {"query"}
    assert ExpansionLedger.model_validate({**head, "rows": rows}) == expected

    status, out = run(*common)
    assert status == 0, out
    assert expected.summary[:60] in out
    body = [cells for cells in table_rows(out) if len(cells) == 8]
    assert [(cells[0], cells[4]) for cells in body] == [
        (row.query_id, repr(row.change)) for row in expected.rows
    ]


@pytest.mark.postgres
def test_evaluate_ledger_without_an_expansion_is_refused_in_one_line(
    facade: LexplainService,
) -> None:
    status, out = run("evaluate", "--workspace", SAMPLE, "--set", SAMPLE_QUERY_SET, "--ledger")
    assert status == 2
    assert out.strip().splitlines() == [
        "error: --ledger needs --expand rm3 (the ledger compares the typed and the expanded run, "
        "by passage)"
    ]


@pytest.mark.postgres
def test_evaluate_expand_rocchio_prints_the_facades_residual_measurement_and_says_so(
    facade: LexplainService,
) -> None:
    facade.import_sample_grades(workspace=SAMPLE)
    spec = ExpansionSpec.rocchio().model_copy(update={"fb_docs": 5})
    expected = facade.evaluate_residual(SAMPLE_QUERY_SET, 10, 50, workspace=SAMPLE, expand=spec)
    assert expected.typed.rows and sum(map(len, expected.fed_back.values()))
    common = ("evaluate", "--workspace", SAMPLE, "--set", SAMPLE_QUERY_SET, "--limit", "50",
              "--expand", "rocchio", "--fb-docs", "5")  # fmt: skip

    status, out = run(*common, "--json")
    assert status == 0, out
    head, *runs = [json.loads(line) for line in out.splitlines()]
    assert (head.pop("kind"), head.pop("query_set")) == ("residual", SAMPLE_QUERY_SET)
    assert head.pop("note") == expected.note
    assert [(r.pop("kind"), r.pop("run")) for r in runs] == [("run", "typed"), ("run", "expanded")]
    typed, expanded = runs
    rebuilt = ResidualEvaluation.model_validate({**head, "typed": typed, "expanded": expanded})
    assert rebuilt == expected

    status, out = run(*common)
    assert status == 0, out
    assert "Residual ranking:" in out and "left out of both rankings" in out
    body = {cells[0]: cells for cells in table_rows(out) if len(cells) == 5}
    for row in expected.typed.rows:
        assert body[row.query_id][3] == repr(row.ndcg)


@pytest.mark.postgres
def test_evaluate_expand_rocchio_takes_beta_and_gamma_as_the_facade_does(
    facade: LexplainService,
) -> None:
    facade.import_sample_grades(workspace=SAMPLE)
    spec = ExpansionSpec.rocchio().model_copy(update={"fb_docs": 5, "beta": 0.4, "gamma": 0.0})
    expected = facade.evaluate_residual(SAMPLE_QUERY_SET, 10, 50, workspace=SAMPLE, expand=spec)
    default = facade.evaluate_residual(
        SAMPLE_QUERY_SET, 10, 50, workspace=SAMPLE,
        expand=ExpansionSpec.rocchio().model_copy(update={"fb_docs": 5}),
    )  # fmt: skip
    assert expected.expanded != default.expanded  # the weights reach the ranking

    status, out = run(
        "evaluate", "--workspace", SAMPLE, "--set", SAMPLE_QUERY_SET, "--limit", "50", "--json",
        "--expand", "rocchio", "--fb-docs", "5", "--beta", "0.4", "--gamma", "0",
    )  # fmt: skip
    assert status == 0, out
    head, _, expanded = [json.loads(line) for line in out.splitlines()]
    assert head["expansion"] == spec.label
    assert [r["ndcg"] for r in expanded["rows"]] == [r.ndcg for r in expected.expanded.rows]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (("--expand", "rocchio", "--beta", "1.5"),
         "error: --beta: Input should be less than or equal to 1"),
        (("--expand", "rocchio", "--gamma", "nan"),
         "error: --gamma: Input should be a finite number"),
        (("--expand", "rm3", "--beta", "0.5"),
         "error: --beta weigh feedback from the grades: give them with --expand rocchio"),
    ],
)  # fmt: skip
@pytest.mark.postgres
def test_evaluate_refuses_a_rocchio_weight_out_of_range_or_without_rocchio_in_one_line(
    facade: LexplainService, given: tuple[str, ...], said: str
) -> None:
    facade.import_sample_grades(workspace=SAMPLE)
    status, out = run("evaluate", "--workspace", SAMPLE, "--set", SAMPLE_QUERY_SET, *given)
    assert status == 2
    assert out.strip().splitlines() == [said]
