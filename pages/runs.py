"""Runs: evaluate from the workspace's own grades, save runs, compare saved runs. Rendering only.

Every number is core's: ``evaluate_judged`` (the set's graded queries, by passage or by a
document's best passage, with Judged@k beside the other metrics), ``save_run`` (the run and
the grades as they stood), ``compare_saved_runs`` (win/tie/loss, means with 95% intervals,
the t-test and the randomisation test, RBO and Jaccard) and ``evaluate_residual`` (feedback
from the grades measured without the passages fed back, and the sentence why). The last
evaluation is kept in session state so saving it does not run the set again.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import plotly.graph_objects as go
import streamlit as st

from core.analysis.sentences import count, escape_text, saved_run_labels
from core.service import (
    DEFAULT_K,
    DEFAULT_LIMIT,
    K_MAX,
    KIND_LABELS,
    LIMIT_MAX,
    METRICS,
    RUN_KINDS,
    SAMPLE_QUERY_SET,
    ExpansionSpec,
    GridSpec,
    JudgmentError,
    Ranker,
    RankerKind,
    ResidualEvaluation,
    RunSpec,
    SavedRunSummary,
    TuningGrid,
    grid_values,
    learned_from_judged,
    one_sentence,
)
from pages.common import (
    WORKSPACE_PARAM,
    drop_other_workspace_results,
    grades_state,
    mark_out_of_date,
    offer_sample,
    remember,
    screen,
    workspace,
)
from pages.losses import render_diagnosis

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

#: Session keys of the last diagnosis, the last grid (with its set) and the last ledger.
DIAGNOSIS_KEY, TUNING_KEY, LEDGER_KEY = "runs_diagnosis", "runs_tuning", "runs_ledger"
#: Session key of the last residual measurement of feedback from the grades.
RESIDUAL_KEY = "runs_residual"
#: The residual measurement's means, as columns: label -> the run's field.
RESIDUAL_MEANS = {
    "nDCG@k": "mean_ndcg",
    "P@k": "mean_precision",
    "recall@k": "mean_recall",
    "MRR": "mean_mrr",
    "AP": "mean_ap",
}
#: Session key of the workspace the results below were computed in: another workspace's
#: results are dropped, not shown (marked "grades changed", and saved into this workspace).
RESULTS_WORKSPACE_KEY = "runs_workspace"
#: Set by "Widen … and tune again": the next run tunes the widened grid without a click.
TUNE_AGAIN_KEY = "_tune_again"
#: Key of Compare's multiselect of saved runs (set when runs are saved to compare).
PICK_KEY = "runs_pick"
#: The ranges the Tune sliders allow for k1 and for b.
K1_SLIDER, B_SLIDER = (0.0, 5.0), (0.0, 1.0)


@functools.cache  # once per run of this script (it defines the function anew each run)
def grades_now() -> tuple[int, str]:
    """The chosen set's grades as a comparable state (``pages.common.grades_state``): read once
    per run, not once per result shown; the only grade change on this screen (the sample's
    grades) happens before the first result asks."""
    return grades_state(service, chosen, ws)


def remember_inputs(key: str, settings: tuple[object, ...]) -> None:
    """Keep what the result under ``key`` was computed from: ``settings`` and the grades."""
    remember(key, settings, grades_now())


def out_of_date(key: str, settings: tuple[object, ...], button: str) -> None:
    """Say so above a result whose settings or grades changed since it was computed."""
    mark_out_of_date(key, settings, grades_now, button)


def pick_for_comparison(saved: Sequence[SavedRunSummary]) -> None:
    """Runs just saved, picked under Compare saved runs (the baseline first): no hunt."""
    label_of = {run_id: label for label, run_id in saved_run_labels(listed_runs()).items()}
    st.session_state[PICK_KEY] = [label_of[run.run_id] for run in saved]


def listed_runs() -> list[SavedRunSummary]:
    """The workspace's saved runs, as Compare saved runs lists them."""
    return service.saved_runs(workspace=ws)


def widen_and_tune(k1_range: tuple[float, float], b_range: tuple[float, float]) -> None:
    """The grid's ranges set to ``widened``'s and Tune run again (before the script reruns)."""
    st.session_state["tune_k1"] = k1_range
    st.session_state["tune_b"] = b_range
    st.session_state[TUNE_AGAIN_KEY] = True


def render_tuning(set_name: str, grid: TuningGrid) -> None:
    """The heatmap of mean metric over (k1, b), the best point and the workspace's marked,
    the test in words, and saving the best point as a run."""
    chart = go.Figure(
        go.Heatmap(
            z=grid.means, x=grid.k1s, y=grid.bs, colorscale="Viridis",
            colorbar={"title": grid.metric_label},
            hovertemplate="k1 %{x}, b %{y}: %{z:.4f}<extra></extra>",
        )
    )  # fmt: skip
    for point, name, symbol in ((grid.best, "best", "star"), (grid.workspace, "workspace", "x")):
        chart.add_trace(
            go.Scatter(
                x=[point.k1], y=[point.b], mode="markers+text", name=name, text=[name],
                textposition="top center", marker={"symbol": symbol, "size": 14, "color": "white"},
            )
        )  # fmt: skip
    chart.update_layout(
        height=380, margin={"t": 10, "b": 10}, xaxis_title="k1", yaxis_title="b", showlegend=False
    )
    st.plotly_chart(chart, key="tuning_chart", config={"displayModeBar": False})
    st.markdown(escape_text(grid.verdict))
    if grid.edge_note:
        st.info(escape_text(grid.edge_note))
        wider = grid.widened(K1_SLIDER, B_SLIDER)
        if wider is not None:
            (k1_low, k1_high), (b_low, b_high) = wider
            st.button(
                f"Widen to k1 {k1_low:g}–{k1_high:g}, b {b_low:g}–{b_high:g} and tune again",
                key="tuning_widen",
                on_click=widen_and_tune,
                args=wider,
            )
    if grid.significance.warning:
        st.warning(escape_text(grid.significance.warning))
    if st.button(
        f"Save k1 {grid.best.k1:g}, b {grid.best.b:g} and the workspace's setting as runs, "
        "to compare below",
        key="tuning_save",
    ):
        best = Ranker.of(RankerKind.CUSTOM, grid.best.k1, grid.best.b)
        own = Ranker.of(RankerKind.WORKSPACE)
        runs = service.evaluate_judged(
            set_name,
            grid.k,
            [RunSpec(workspace=ws, limit=grid.limit, ranker=r) for r in (own, best)],
            workspace=ws,
            by_document=grid.by_document,
        )
        saved = [
            service.save_run(
                name, run, ranker, set_name, workspace=ws, by_document=grid.by_document
            )
            for name, run, ranker in zip(
                (f"{own.label} · limit {grid.limit}", f"{best.label} · limit {grid.limit} (tuned)"),
                runs,
                (own, best),
                strict=True,
            )
        ]
        pick_for_comparison(saved)
        st.success(
            f"Saved “{saved[1].name}” and, as its baseline, “{saved[0].name}”: both are picked "
            "under Compare saved runs."
        )


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
drop_other_workspace_results(
    RESULTS_WORKSPACE_KEY, (LAST_KEY, LEDGER_KEY, RESIDUAL_KEY, DIAGNOSIS_KEY, TUNING_KEY)
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
if chosen == SAMPLE_QUERY_SET and st.button(
    "Use Cranfield's own judgments as grades",
    key="runs_sample_grades",
    help="The sample's qrels as this set's grades: 4 and 3 become 3, 2 and 1 stay. A pair "
    "naming a document the sample did not load (an empty one) is not stored, and is named.",
):
    imported = service.import_sample_grades(workspace=ws)
    st.success(f"{count(imported.stored, 'grade')} from Cranfield's judgments.")
    if imported.unknown_ids:  # the tooltip said 1,837 pairs, the banner 1,836 grades
        st.info(
            "Not stored: the judgments of "
            f"{count(len(imported.unknown_ids), 'document')} this workspace does not hold "
            f"({escape_text(', '.join(imported.unknown_ids))}): the sample leaves out empty "
            "documents."
        )
cols = st.columns(5)
k = int(cols[0].number_input("k", 1, K_MAX, DEFAULT_K, key="runs_k"))
limit = int(cols[1].number_input("Limit", 0, LIMIT_MAX, DEFAULT_LIMIT, key="runs_limit"))
kinds = [kind.value for kind in RUN_KINDS]
kind = cols[2].selectbox(
    "Ranker", kinds, key="runs_ranker", format_func=lambda k: KIND_LABELS[RankerKind(k)]
)
by_document = cols[3].toggle("By document", key="runs_by_document")
expanded = cols[4].toggle(
    "Expand (RM3)",
    key="runs_expand",
    help="Each query expanded from its own top passages (RM3, Anserini's defaults), then "
    "ranked again; Search shows one query's expansion term by term.",
)
ranker = Ranker.of(kind)
expand = ExpansionSpec() if expanded else None
#: What an evaluation or a diagnosis is computed from, besides the grades.
settings = (chosen, k, limit, kind, by_document, expanded)
if st.button("Evaluate", key="runs_evaluate", type="primary"):
    try:
        (run,) = service.evaluate_judged(
            chosen,
            k,
            [RunSpec(workspace=ws, limit=limit, ranker=ranker, expand=expand)],
            workspace=ws,
            by_document=by_document,
        )
    except (JudgmentError, KeyError, ValueError) as exc:  # a limit of 0: core's sentence
        st.error(escape_text(str(exc)))
    else:
        st.session_state[LAST_KEY] = (chosen, by_document, ranker, run, expand)
        remember_inputs(LAST_KEY, settings)
        # A new run gets its own default name: the box kept the last run's ("limit 1000" over
        # a run at limit 100), and saving named the run after settings it was not run at.
        st.session_state.pop("runs_name", None)

last = st.session_state.get(LAST_KEY)
if last is not None:
    set_name, level, used, run, used_expand = last
    out_of_date(LAST_KEY, settings, "Evaluate")
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
    # Every setting the run differs by in its default name: two runs at k 10 by passage and
    # k 3 by document were both offered as "workspace BM25 (…) · limit 1000".
    suffix = (" · by document" if level else "") + (" · RM3" if used_expand is not None else "")
    name = st.text_input(
        "Save as", value=f"{used.label} · k {run.k} · limit {run.limit}{suffix}", key="runs_name"
    )
    if st.button("Save this run", key="runs_save"):
        try:
            saved = service.save_run(
                name, run, used, set_name, workspace=ws, by_document=level, expand=used_expand
            )
        except ValueError as exc:  # a name pydantic refused: its sentence, not its dump
            st.error(f"Not saved: {escape_text(one_sentence(exc))}.")
        else:
            st.success(f"Saved “{escape_text(saved.name)}”.")

st.subheader("What query expansion did")
st.caption(
    "The workspace's BM25 at the k and limit above, each query as typed and expanded with RM3 "
    "(feedback from its own top 10 passages, 10 terms, the typed query's weight 0.5), judged "
    "by passage: per query the change, the relevant passages it brought in (and which of them "
    "no setting of the typed query could find), the ones it pushed out."
)
if st.button("Measure RM3", key="runs_measure_rm3"):
    try:
        with st.spinner("Ranking each graded query twice…"):
            st.session_state[LEDGER_KEY] = service.expansion_ledger(
                chosen, k, limit, workspace=ws, expand=ExpansionSpec()
            )
            remember_inputs(LEDGER_KEY, (chosen, k, limit))
    except (JudgmentError, KeyError, ValueError) as exc:
        st.error(escape_text(str(exc)))
ledger = st.session_state.get(LEDGER_KEY)
if ledger is not None:
    out_of_date(LEDGER_KEY, (chosen, k, limit), "Measure RM3")
    st.markdown(escape_text(ledger.summary))
    if ledger.significance.warning:
        st.warning(escape_text(ledger.significance.warning))
    st.dataframe(
        [
            {
                "query": r.query,
                "as typed": r.before,
                "expanded": r.after,
                "change": r.change,
                "relevant brought in": len(r.recovered),
                "of them no query term": len(r.recovered_mismatch),
                "relevant pushed out": len(r.lost),
            }
            for r in ledger.rows
        ],
        hide_index=True,
        key="runs_ledger_table",
    )
    if st.button("Save both as runs, to compare below", key="runs_ledger_save"):
        plain = RunSpec(workspace=ws, limit=limit)
        typed_run, expanded_run = service.evaluate_judged(
            chosen, k, [plain, plain.model_copy(update={"expand": ExpansionSpec()})],
            workspace=ws,
        )  # fmt: skip
        workspace_bm25 = Ranker.of(RankerKind.WORKSPACE)
        typed_name = f"{workspace_bm25.label} · limit {limit}"
        names = [typed_name, f"{typed_name} · RM3"]
        pick_for_comparison(
            [
                service.save_run(
                    saved_name, saved_run, workspace_bm25, chosen, workspace=ws, expand=expand_as
                )
                for saved_name, saved_run, expand_as in zip(
                    names, (typed_run, expanded_run), (None, ExpansionSpec()), strict=True
                )
            ]
        )
        st.success("Saved both: they are picked under Compare saved runs.")

st.subheader("What feedback from the grades did, measured honestly")
st.caption(escape_text(learned_from_judged(ExpansionSpec.rocchio().fb_docs)))
if st.button("Measure feedback from my grades (Rocchio)", key="runs_measure_rocchio"):
    try:
        with st.spinner("Ranking each graded query twice, the fed-back passages left out…"):
            st.session_state[RESIDUAL_KEY] = service.evaluate_residual(
                chosen, k, limit, workspace=ws
            )
            remember_inputs(RESIDUAL_KEY, (chosen, k, limit))
    except (JudgmentError, KeyError, ValueError) as exc:
        st.error(escape_text(str(exc)))
residual: ResidualEvaluation | None = st.session_state.get(RESIDUAL_KEY)
if residual is not None:
    out_of_date(RESIDUAL_KEY, (chosen, k, limit), "Measure feedback from my grades (Rocchio)")
    st.markdown(escape_text(residual.note))
    if residual.significance.warning:
        st.warning(escape_text(residual.significance.warning))
    st.dataframe(
        [
            {
                "run": measured.label,
                **{
                    label.replace("@k", f"@{measured.k}"): getattr(measured, field)
                    for label, field in RESIDUAL_MEANS.items()
                },
            }
            for measured in (residual.typed, residual.expanded)
        ],
        hide_index=True,
        key="runs_residual_means",
    )
    with_feedback = {r.query_id: r.ndcg for r in residual.expanded.rows}
    st.dataframe(
        [
            {
                "query": r.query,
                "passages fed back": len(residual.fed_back.get(r.query_id, [])),
                f"nDCG@{residual.typed.k} as typed": r.ndcg,
                f"nDCG@{residual.typed.k} with feedback": with_feedback[r.query_id],
            }
            for r in residual.typed.rows
        ],
        hide_index=True,
        key="runs_residual_table",
    )

st.subheader("Why relevant passages were lost")
st.caption(
    "Every graded-relevant passage outside the top k gets one cause, tested in this order: "
    "it contains no query term (no k1, b or limit can find it), the limit cut it before "
    "scoring, or it was scored below the k-th passage. At the k, limit, ranker and level (by "
    "passage, or by document at its best passage) above; with Expand (RM3) on, the expanded "
    "run is diagnosed, and 'query term' means a term of the expanded query."
)
if st.button("Diagnose", key="runs_diagnose"):
    try:
        with st.spinner("Reading each graded query once…"):
            st.session_state[DIAGNOSIS_KEY] = service.diagnose(
                chosen, k, limit, workspace=ws, ranker=ranker, by_document=by_document,
                expand=expand,
            )  # fmt: skip
            remember_inputs(DIAGNOSIS_KEY, settings)
    except (JudgmentError, KeyError, ValueError) as exc:
        st.error(escape_text(str(exc)))
diagnosis = st.session_state.get(DIAGNOSIS_KEY)
if diagnosis is not None:
    out_of_date(DIAGNOSIS_KEY, settings, "Diagnose")
    render_diagnosis(diagnosis, "runs", lambda unit: service.unit_label(unit, workspace=ws))

st.subheader("Tune k1 and b on these grades")
st.caption(
    "Every (k1, b) of the grid ranks the same candidates (one read per query at the limit "
    "above); the best point is tested against the workspace's k1 1.2, b 0.75 with the "
    "paired randomisation test, so a best that could be noise says so."
)
tune_cols = st.columns(4)
k1_range = tune_cols[0].slider("k1 from, to", *K1_SLIDER, (0.0, 3.0), 0.1, key="tune_k1")
k1_step = tune_cols[1].number_input("k1 step", 0.1, 5.0, 0.5, 0.1, key="tune_k1_step")
b_range = tune_cols[2].slider("b from, to", *B_SLIDER, (0.0, 1.0), 0.05, key="tune_b")
b_step = tune_cols[3].number_input("b step", 0.05, 1.0, 0.2, 0.05, key="tune_b_step")
metric_name = st.selectbox(
    "Metric",
    list(METRICS),
    format_func=lambda m: METRICS[m].replace("@k", f"@{k}"),
    key="tune_metric",
)
#: What a tuning is computed from, besides the grades (its ranker is the grid's).
tuning_settings = (chosen, k, limit, by_document, k1_range, k1_step, b_range, b_step, metric_name)
if st.button("Tune", key="runs_tune") or st.session_state.pop(TUNE_AGAIN_KEY, False):
    try:
        spec = GridSpec(
            k1s=grid_values(*k1_range, float(k1_step)),
            bs=grid_values(*b_range, float(b_step)),
            metric=metric_name,
        )
        bar = st.progress(0.0, text="Reading each graded query once…")

        def progress(done: int, total: int, _: str) -> None:
            bar.progress(done / total)

        st.session_state[TUNING_KEY] = (
            chosen,
            service.tune(
                chosen, k, limit, workspace=ws, grid=spec, by_document=by_document,
                on_progress=progress,
            ),
        )  # fmt: skip
        bar.empty()
        remember_inputs(TUNING_KEY, tuning_settings)
    except (JudgmentError, KeyError, ValueError) as exc:  # a grid pydantic refused, too
        st.error(escape_text(one_sentence(exc) if isinstance(exc, ValueError) else str(exc)))
tuned = st.session_state.get(TUNING_KEY)
if tuned is not None:
    out_of_date(TUNING_KEY, tuning_settings, "Tune")
    render_tuning(*tuned)

st.subheader("Compare saved runs")
saved_runs = listed_runs()
labels = saved_run_labels(saved_runs)
picked = st.multiselect(
    "Runs (the first is the baseline; 2 to 5)", list(labels), max_selections=5, key=PICK_KEY
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
