"""Runs: evaluate from the workspace's own grades, save runs, compare saved runs. Rendering only.

Every number is core's: ``evaluate_judged`` (the set's graded queries, by passage or by a
document's best passage, with Judged@k beside the other metrics), ``save_run`` (the run and
the grades as they stood) and ``compare_saved_runs`` (win/tie/loss, means with 95%
intervals, the t-test and the randomisation test, RBO and Jaccard). The last evaluation is
kept in session state so saving it does not run the set again.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from core.analysis.presentation import count, escape_text
from core.service import (
    DEFAULT_K,
    DEFAULT_LIMIT,
    K_MAX,
    LIMIT_MAX,
    JudgmentError,
    Ranker,
    RankerKind,
    RunSpec,
)
from pages.common import WORKSPACE_PARAM, offer_sample, screen, workspace

#: Session key of the last evaluation: (set, by_document, ranker, runs).
LAST_KEY = "runs_last"
#: The metrics a run shows, in order, with their labels.
COLUMNS = {
    "ndcg": "nDCG@k",
    "precision": "P@k",
    "recall": "recall@k",
    "mrr": "MRR",
    "average_precision": "AP",
    "judged_share": "Judged@k",
}

service = screen()
ws = workspace()
st.title("Runs")
# First line: how this screen differs from Evaluate, the other one that evaluates.
st.caption(
    "This workspace's grades (made on **Judge**), one run at a time; a saved run keeps the "
    "grades as they stood, and saved runs are compared with significance tests. **Evaluate** "
    "scores judgment files (BEIR, TREC), or two limits or rankers side by side, and saves nothing."
)
st.page_link(
    "pages/evaluate.py",
    label="Evaluate: judgment files, or two limits side by side",
    icon=":material/fact_check:",
    query_params={WORKSPACE_PARAM: ws},
)
if service.is_empty(workspace=ws):
    offer_sample(service)
    st.stop()
sets = [s.name for s in service.query_sets(workspace=ws)]
if not sets:
    st.info("Make a query set and grade some passages on the Judge screen first.")
    st.stop()

st.subheader("Evaluate from this workspace's grades")
chosen = st.selectbox("Query set", sets, key="runs_set")
cols = st.columns(4)
k = int(cols[0].number_input("k", 1, K_MAX, DEFAULT_K, key="runs_k"))
limit = int(cols[1].number_input("Limit", 0, LIMIT_MAX, DEFAULT_LIMIT, key="runs_limit"))
kinds = [RankerKind.WORKSPACE.value, RankerKind.CLASSIC.value]
kind = cols[2].selectbox("Ranker", kinds, key="runs_ranker")
by_document = cols[3].toggle("By document", key="runs_by_document")
ranker = Ranker.of(kind)
if st.button("Evaluate", key="runs_evaluate", type="primary"):
    try:
        (run,) = service.evaluate_judged(
            chosen,
            k,
            [RunSpec(workspace=ws, limit=limit, ranker=ranker)],
            workspace=ws,
            by_document=by_document,
        )
    except (JudgmentError, KeyError) as exc:
        st.error(str(exc))
    else:
        st.session_state[LAST_KEY] = (chosen, by_document, ranker, run)

last = st.session_state.get(LAST_KEY)
if last is not None:
    set_name, level, used, run = last
    means = st.columns(len(COLUMNS))
    values = [run.mean_ndcg, run.mean_precision, run.mean_recall, run.mean_mrr, run.mean_ap]
    for column, label, value in zip(
        means, COLUMNS.values(), [*values, run.mean_judged_share], strict=True
    ):
        column.metric(label.replace("@k", f"@{run.k}"), f"{value:.4f}")
    if run.mean_judged_share < 1:
        st.warning(
            f"Judged@{run.k} is {run.mean_judged_share:.0%}: the other metrics count every "
            "unjudged result as not relevant, so they are lower bounds. Grade more on Judge."
        )
    table = [{"query": r.query, **{COLUMNS[m]: getattr(r, m) for m in COLUMNS}} for r in run.rows]
    st.dataframe(table, hide_index=True, key="runs_table")
    name = st.text_input("Save as", value=f"{used.label} · limit {run.limit}", key="runs_name")
    if st.button("Save this run", key="runs_save"):
        saved = service.save_run(name, run, used, set_name, workspace=ws, by_document=level)
        st.success(f"Saved “{saved.name}”.")

st.subheader("Compare saved runs")
saved_runs = service.saved_runs(workspace=ws)
labels = {f"{r.name} · {r.saved_at:%Y-%m-%d %H:%M:%S}": r.run_id for r in saved_runs}
picked = st.multiselect(
    "Runs (the first is the baseline; 2 to 5)", list(labels), max_selections=5, key="runs_pick"
)
metric = st.selectbox("Metric", list(COLUMNS), format_func=lambda m: COLUMNS[m], key="runs_metric")
if len(picked) >= 2:
    result = service.compare_saved_runs([labels[p] for p in picked], metric or "ndcg", workspace=ws)
    st.markdown(
        f"Over {count(len(result.queries), 'query', 'queries')} every run measured"
        + (f" ({count(result.unpaired, 'query', 'queries')} left out)" if result.unpaired else "")
        + "."
    )
    st.dataframe(
        [
            {"run": n, "mean": m.mean, "95% low": m.low, "95% high": m.high}
            for n, m in zip(result.names, result.means, strict=True)
        ],
        hide_index=True,
        key="runs_means",
    )
    rows = []
    for v in result.versus:
        rows.append(
            {
                "run": v.name,
                "wins": v.outcome.wins,
                "ties": v.outcome.ties,
                "losses": v.outcome.losses,
                "t-test p": v.t_test.p_value,
                "randomisation p": v.randomisation.p_value,
                "RBO": v.rbo,
                "Jaccard@k": v.jaccard,
            }
        )
        if v.t_test.warning:
            st.warning(f"{escape_text(v.name)}: {escape_text(v.t_test.warning)}")
    st.dataframe(rows, hide_index=True, key="runs_versus")
    chart = go.Figure(
        [
            go.Bar(name=label, x=[v.name for v in result.versus], y=values)
            for label, values in (
                ("wins", [v.outcome.wins for v in result.versus]),
                ("ties", [v.outcome.ties for v in result.versus]),
                ("losses", [v.outcome.losses for v in result.versus]),
            )
        ]
    )
    chart.update_layout(barmode="stack", height=280, margin={"t": 10, "b": 10})
    st.plotly_chart(chart, key="runs_chart", config={"displayModeBar": False})
elif saved_runs:
    st.caption("Pick two to five saved runs.")
