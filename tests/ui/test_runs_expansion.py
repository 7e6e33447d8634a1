"""Runs measures query expansion (issue 47 item 5): the helped/hurt ledger on the sample's own
grades, its numbers the facade's, and both runs saved for Compare in one click, where the
randomisation test gives the ledger's p-value for the same pair."""

from __future__ import annotations

import uuid

import pytest
from streamlit.testing.v1 import AppTest

from core.analysis.sentences import escape_text
from core.service import SAMPLE_CORPUS, SAMPLE_QUERY_SET, ExpansionSpec, learned_from_judged

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")

pytestmark = pytest.mark.usefixtures("in_memory_store")


@pytest.fixture(scope="module")
def graded(in_memory_store: None) -> str:
    from pages.common import get_service

    name = f"rm3-{uuid.uuid4().hex[:8]}"
    get_service().load_sample(workspace=name)
    get_service().import_sample_grades(workspace=name)
    return name


def test_runs_shows_what_rm3_did_per_query_and_saves_both_runs_for_compare(graded: str) -> None:
    from pages.common import get_service

    service = get_service()
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["ws"] = graded
    at.run()
    at.switch_page("pages/runs.py").run()
    at.button(key="runs_measure_rm3").click().run()
    assert not at.exception, [e.value for e in at.exception]
    ledger = service.expansion_ledger(
        SAMPLE_QUERY_SET, 10, 1000, workspace=graded, expand=ExpansionSpec()
    )
    text = "\n".join(m.value for m in at.markdown)
    assert escape_text(ledger.summary) in text
    table = next(f.value for f in at.dataframe if "relevant brought in" in f.value.columns)
    assert list(table["change"]) == [r.change for r in ledger.rows]
    assert list(table["of them no query term"]) == [len(r.recovered_mismatch) for r in ledger.rows]
    at.button(key="runs_ledger_save").click().run()
    assert not at.exception
    saved = service.saved_runs(workspace=graded)
    assert len(saved) == 2 and saved[1].name.endswith("· RM3")
    # Picked for the analyst, baseline first: Compare shows the pair without a hunt.
    assert [label.split(" · 20")[0] for label in at.multiselect(key="runs_pick").value] == [
        run.name for run in saved
    ]
    versus = at.dataframe[-1].value
    assert list(versus["randomisation p"]) == [ledger.significance.p_value]


def test_with_expand_on_diagnose_shows_the_rm3_runs_causes_the_facades(graded: str) -> None:
    from pages.common import get_service

    service = get_service()
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["ws"] = graded
    at.run()
    at.switch_page("pages/runs.py").run()
    at.toggle(key="runs_expand").set_value(True).run()
    at.button(key="runs_diagnose").click().run()
    assert not at.exception, [e.value for e in at.exception]
    expected = service.diagnose(
        SAMPLE_QUERY_SET, 10, 1000, workspace=graded, expand=ExpansionSpec()
    )
    typed = service.diagnose(SAMPLE_QUERY_SET, 10, 1000, workspace=graded)
    assert expected.lost != typed.lost
    assert [i.value for i in at.info] == [expected.ceiling_note]
    table = next(f.value for f in at.dataframe if "nDCG lost" in f.value.columns)
    assert list(table["nDCG lost"]) == [q.ndcg_lost for q in expected.queries]


def test_runs_measures_feedback_from_the_grades_without_the_passages_it_learned_from(
    graded: str,
) -> None:
    from pages.common import get_service

    service = get_service()
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["ws"] = graded
    at.run()
    at.switch_page("pages/runs.py").run()
    # Said before anything is measured: what it learned from is in the judged set.
    assert escape_text(learned_from_judged(10)) in [c.value for c in at.caption]
    at.button(key="runs_measure_rocchio").click().run()
    assert not at.exception, [e.value for e in at.exception]
    found = service.evaluate_residual(SAMPLE_QUERY_SET, 10, 1000, workspace=graded)
    assert sum(len(units) for units in found.fed_back.values()) > 0
    assert escape_text(found.note) in "\n".join(m.value for m in at.markdown)
    means = next(f.value for f in at.dataframe if "run" in f.value.columns)
    assert list(means["run"]) == [found.typed.label, found.expanded.label]
    assert list(means["nDCG@10"]) == [found.typed.mean_ndcg, found.expanded.mean_ndcg]
    assert list(means["AP"]) == [found.typed.mean_ap, found.expanded.mean_ap]
    table = next(f.value for f in at.dataframe if "passages fed back" in f.value.columns)
    assert list(table["passages fed back"]) == [
        len(found.fed_back[r.query_id]) for r in found.typed.rows
    ]
    assert list(table["nDCG@10 as typed"]) == [r.ndcg for r in found.typed.rows]
    assert list(table["nDCG@10 with feedback"]) == [r.ndcg for r in found.expanded.rows]
