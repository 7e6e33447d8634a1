"""Evaluate takes RM3 as a run setting (issue 47 item 5): run A expanded beside run B as typed,
from judgment files, with every mean and the diagnosis of run A the facade's for the same runs.
Feedback from the grades is not offered here (Runs measures it on a residual collection)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from core.service import SAMPLE_CORPUS, ExpansionSpec, LexplainService, RunSpec

APP = str(SAMPLE_CORPUS.parents[2] / "app.py")

pytestmark = pytest.mark.usefixtures("in_memory_store")


def test_run_a_expanded_with_rm3_shows_the_facades_means_and_diagnosis(cranfield: str) -> None:
    from pages.common import get_service

    service = get_service()
    queries, qrels = LexplainService.sample_judgments()
    runs = [
        RunSpec(workspace=cranfield, limit=1000, expand=ExpansionSpec()),
        RunSpec(workspace=cranfield, limit=1000),
    ]
    expanded, typed = service.evaluate_runs(queries, qrels, 10, runs)
    assert expanded.mean_ndcg != typed.mean_ndcg
    lost = service.diagnose_files(
        queries, qrels, 10, 1000, workspace=cranfield, expand=ExpansionSpec()
    )

    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["ws"] = cranfield
    at.run()
    at.switch_page("pages/evaluate.py").run()
    at.button(key="ev_sample").click().run()
    at.number_input(key="ev_limit_b").set_value(1000).run()
    at.toggle(key="ev_expand_A").set_value(True).run()
    at.button(key="ev_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    shown = {m.label: m.value for m in at.metric}
    assert shown[f"nDCG@10 · {runs[0].label}"] == f"{expanded.mean_ndcg:.4f}"
    assert shown[f"nDCG@10 · {runs[1].label}"] == f"{typed.mean_ndcg:.4f}"
    assert "RM3" in runs[0].label and "RM3" not in runs[1].label

    at.button(key="ev_diagnose").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert lost.expansion == ExpansionSpec().label
    assert [i.value for i in at.info if i.value == lost.ceiling_note] == [lost.ceiling_note]
    assert any(m.value.startswith(f"**{lost.lost:,} relevant passages**") for m in at.markdown)
