"""Evaluate: judged metrics of the ranking at one or two candidate limits. Rendering only.

Judgments come from files (queries + qrels) or from the workspace's own grades (a query set,
``service.evaluate_judged``: by passage, or by a document's best passage as for qrels).
Every run shows Judged@k (the share of its top k with a judgment) beside its metrics, and
the result lists mark what is unjudged (``EvaluationRun.grades``), so a high score over few
judgments reads as one.

Runs A and B may also differ in ranker (the workspace's BM25, the textbook one, or
BM25 with chosen k1/b), in expansion (RM3, a run setting as on Runs; feedback from the grades
is measured on Runs, where it is left out of what judges it) and in workspace (e.g. the
plain and english profiles of the same files), shown with the same table, deltas and CSV.
Every number comes from ``service.evaluate``/``service.evaluate_runs`` (one unlimited
candidate read per query and workspace, sliced per limit, ranked per ranker, judged by
``core.analysis.evaluation``) and ``compare_runs`` (differences B − A). The result is kept
in session state, so sorting the table or switching the metric does not re-run 225 queries;
re-running on every rerun was rejected for that.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from core.analysis.sentences import escape_text
from core.service import (
    DEFAULT_K,
    DEFAULT_LIMIT,
    EVALUATE_BOUNDS_NOTE,
    K_MAX,
    KIND_LABELS,
    LIMIT_MAX,
    MAX_K1,
    EvaluationComparison,
    EvaluationRun,
    ExpansionSpec,
    JudgmentError,
    LexplainService,
    QueryComparison,
    Ranker,
    RankerKind,
    RunSpec,
    compare_runs,
)
from pages.common import (
    EVALUATE_JUDGMENTS_KEY,
    WORKSPACE_PARAM,
    drop_other_workspace_results,
    grades_state,
    mark_out_of_date,
    ndcg_histogram,
    offer_sample,
    remember,
    screen,
    workspace,
)
from pages.losses import render_diagnosis
from pages.narrowing import narrowing

#: Session key of the chosen judgments: (label, queries bytes, qrels bytes).
JUDGMENTS_KEY = EVALUATE_JUDGMENTS_KEY
#: Session key of the last evaluation and the inputs it answered.
RESULT_KEY = "ev_result"
#: Session key of run A's last diagnosis.
DIAGNOSIS_KEY = "ev_diagnosis"
#: Session key of the workspace the result and diagnosis were computed in (another
#: workspace's are dropped, not marked "the settings above changed").
RESULTS_WORKSPACE_KEY = "ev_workspace"
#: Metrics of the table: label -> attribute of a QueryScore.
METRICS = {"nDCG": "ndcg", "Recall": "recall", "MRR": "mrr", "Judged": "judged_share"}
#: Where the judgments come from (the source radio's options).
FROM_FILES, FROM_GRADES = "judgment files", "this workspace's grades"
#: How a result list marks a ranked passage or document nobody judged.
UNJUDGED = "<span class='lx-unjudged' style='color:#E45756'>unjudged</span>"
#: Per-query table: the query column's width, a row tall enough for three wrapped lines of
#: query text, and the table's height (about eight rows).
QUERY_PX, ROW_PX, TABLE_PX = 330, 72, 620
#: Limit B before anyone chose: a tenth of the default, to show what a smaller limit costs.
LIMIT_B = DEFAULT_LIMIT // 10
#: Where a custom ranker's k1 and b start (core's constants).
CUSTOM_DEFAULT = Ranker.of(RankerKind.CUSTOM)
#: The Search page is the default page, served at the app's root: a link goes there.
SEARCH_URL = "./"


def use_sample() -> None:
    """Button callback: the sample's queries and judgments become the chosen judgments."""
    queries, qrels = LexplainService.sample_judgments()
    st.session_state[JUDGMENTS_KEY] = ("the sample's judgments (Cranfield)", queries, qrels)


def search_link(query: str, k: int, limit: int, ws: str | None = None) -> str:
    params = {"q": query, "k": str(k), "limit": str(limit), "ws": ws or workspace()}
    return SEARCH_URL + "?" + urlencode(params)


def run_name(run: EvaluationRun) -> str:
    return run.label or f"limit {run.limit:,}"


def column_name(run: str, evaluated: EvaluationRun) -> str:
    return f"{run}: {run_name(evaluated)}"


def ranker_input(side: str, column: Any) -> Ranker:
    kind = RankerKind(
        column.selectbox(
            f"ranker {side}",
            list(RankerKind),
            key=f"ev_ranker_{side}",
            format_func=lambda k: KIND_LABELS[RankerKind(k)],
        )
    )
    if kind is not RankerKind.CUSTOM:
        return Ranker.of(kind)
    left, right = column.columns(2)
    k1 = left.number_input(
        f"k1 {side}",
        min_value=0.0,
        max_value=MAX_K1,
        value=CUSTOM_DEFAULT.k1,
        step=0.1,
        key=f"ev_k1_{side}",
    )
    b = right.number_input(
        f"b {side}",
        min_value=0.0,
        max_value=1.0,
        value=CUSTOM_DEFAULT.b,
        step=0.05,
        key=f"ev_b_{side}",
    )
    return Ranker.of(kind, k1=float(k1), b=float(b))


def expansion_input(side: str, column: Any) -> ExpansionSpec | None:
    """Run ``side``'s expansion: RM3 with Anserini's defaults when on (a run setting, as on
    Runs), else None. Feedback from grades is not offered here: judged by the grades it learned
    from it flatters itself; Runs measures it honestly."""
    on = column.toggle(
        f"Expand {side} (RM3)",
        key=f"ev_expand_{side}",
        help="Each query expanded from its own top passages (RM3: 10 feedback passages, "
        "10 terms, the typed query's share 0.5), then ranked again.",
    )
    return ExpansionSpec() if on else None


def table_rows(result: EvaluationComparison, metric: str, k: int) -> list[dict[str, object]]:
    a, b = result.a, result.b

    def value(row: QueryComparison, run: str) -> float | None:
        score = row.a if run == "a" else row.b
        return None if score is None else float(getattr(score, metric))

    rows: list[dict[str, object]] = []
    for row in result.rows:
        line: dict[str, object] = {
            "query id": row.query_id,
            "query": row.query,
            "judged": row.judged,
            column_name("A", a): value(row, "a"),
            "Judged@k A": row.a.judged_share,
        }
        if b is not None:
            line[column_name("B", b)] = value(row, "b")
            line["Judged@k B"] = None if row.b is None else row.b.judged_share
            line["B − A"] = row.difference(metric)
        line["Search A"] = search_link(row.query, k, a.limit, a.workspace or None)
        if b is not None:
            line["Search B"] = search_link(row.query, k, b.limit, b.workspace or None)
        rows.append(line)
    return rows


def ranked_label(item: str, run: EvaluationRun, passages: bool) -> str:
    """A ranked id as the screens name it: a passage by its source and number."""
    if not passages:
        return f"document {escape_text(item)}"
    chunk = service.passage(item, workspace=run.workspace or workspace())
    if chunk is None:
        return f"passage {escape_text(item)}"
    return f"source {escape_text(chunk.source_id)} · passage {chunk.chunk_index + 1}"


def render_lists(result: EvaluationComparison, passages: bool) -> None:
    """One query's top k per run, each result with its grade or marked unjudged."""
    st.markdown("**Result lists** (each result's grade; unjudged ones marked)")
    by_id = {row.query_id: row for row in result.rows}
    chosen = st.selectbox(
        "Query",
        list(by_id),
        format_func=lambda q: f"{q}: {by_id[q].query}",
        key="ev_list_query",
    )
    if chosen is None:
        return
    runs = [(side, r) for side, r in (("A", result.a), ("B", result.b)) if r is not None]
    for column, (side, run) in zip(st.columns(len(runs)), runs, strict=True):
        lines = [f"**{side}: {escape_text(run_name(run))}**"]
        for rank, (item, grade) in enumerate(
            zip(run.ranked.get(chosen, []), run.grades.get(chosen, []), strict=True), start=1
        ):
            mark = UNJUDGED if grade is None else f"grade {grade}"
            lines.append(f"{rank}. {ranked_label(item, run, passages)} &nbsp; {mark}")
        column.markdown("  \n".join(lines), unsafe_allow_html=True)


def file_judgments() -> tuple[str, bytes, bytes] | None:
    """The chosen queries and qrels files (or the sample's), kept across reruns."""
    left, right = st.columns(2)
    queries_file = left.file_uploader(
        "Queries (BEIR queries.jsonl, or TSV: id<TAB>text)",
        type=["jsonl", "tsv", "txt"],
        help=EVALUATE_BOUNDS_NOTE,
    )
    qrels_file = right.file_uploader(
        "Judgments (BEIR qrels TSV, or TREC qrels)", type=["tsv", "txt", "qrels"]
    )
    st.button("Use the sample's judgments (Cranfield)", key="ev_sample", on_click=use_sample)
    uploaded = (
        (queries_file.file_id, qrels_file.file_id)
        if queries_file is not None and qrels_file is not None
        else None
    )
    # A new pair of files wins; the same pair does not undo a later click on the sample button.
    if (
        queries_file is not None
        and qrels_file is not None
        and uploaded != st.session_state.get("_ev_uploaded")
    ):
        st.session_state["_ev_uploaded"] = uploaded
        st.session_state[JUDGMENTS_KEY] = (
            f"{queries_file.name} and {qrels_file.name}",
            queries_file.getvalue(),
            qrels_file.getvalue(),
        )
    chosen: tuple[str, bytes, bytes] | None = st.session_state.get(JUDGMENTS_KEY)
    if chosen is None:
        st.info("Upload a queries file and a judgments file, or use the sample's judgments.")
    else:
        st.caption(f"Judgments: {escape_text(chosen[0])}")
    return chosen


def grade_judgments() -> tuple[str, bool] | None:
    """The query set whose in-app grades judge the runs, and the level (by document or not)."""
    sets = [s.name for s in service.query_sets(workspace=workspace())]
    if not sets:
        st.info(
            "This workspace has no query set yet: make one on the Judge screen, or grade a "
            "result on the Search screen."
        )
        return None
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    chosen = str(left.selectbox("Query set", sets, key="ev_set"))
    by_document = right.toggle(
        "by document",
        key="ev_by_document",
        help="Judge documents at their best passage (as qrels do) instead of passage by passage.",
    )
    st.caption(
        "Queries nobody graded are left out; a result nobody graded counts as not relevant "
        "and is marked unjudged below."
    )
    return chosen, bool(by_document)


def render_result(result: EvaluationComparison, passages: bool = False) -> None:
    a, b = result.a, result.b
    k = a.k
    st.subheader(f"Means over {len(a.rows):,} judged queries")
    columns = st.columns(4)
    means = (
        (f"nDCG@{k}", a.mean_ndcg, None if b is None else b.mean_ndcg, result.ndcg_delta),
        (f"Recall@{k}", a.mean_recall, None if b is None else b.mean_recall, result.recall_delta),
        (f"MRR@{k}", a.mean_mrr, None if b is None else b.mean_mrr, result.mrr_delta),
        (
            f"Judged@{k}",
            a.mean_judged_share,
            None if b is None else b.mean_judged_share,
            result.judged_delta,
        ),
    )
    for column, (label, at_a, at_b, delta) in zip(columns, means, strict=True):
        column.metric(f"{label} · {run_name(a)}", f"{at_a:.4f}")
        if b is not None and at_b is not None and delta is not None:
            column.metric(
                f"{label} · {run_name(b)}",
                f"{at_b:.4f}",
                delta=f"{delta:+.4f}",
                help=f"the difference to {run_name(a)}",
            )
    for side, run in (("A", a), ("B", b)):
        if run is not None and run.mean_judged_share < 1:
            st.warning(
                f"Judged@{k} of {side} ({escape_text(run_name(run))}) is "
                f"{run.mean_judged_share:.0%}: the other metrics count every unjudged result as "
                "not relevant, so they are lower bounds. The result lists below mark what is "
                "unjudged."
            )
    label = st.radio("Metric in the table", list(METRICS), horizontal=True, key="ev_metric")
    metric = METRICS[label]
    st.markdown(
        f"**Per query** ({label}@{k}; click a column header to sort; a link opens the query "
        "on the Search page)"
    )
    rows = table_rows(result, metric, k)
    # Every column but the query is narrow (a run's column is headed by its side, its full name
    # on hover and above), and rows are tall enough for the query to wrap (Streamlit wraps text
    # in rows above 4rem): at 1280 px the query text was cut off after a few words.
    config: dict[str, Any] = {
        "query id": st.column_config.TextColumn("id", width=50),
        "query": st.column_config.TextColumn(width=QUERY_PX),
        "judged": st.column_config.NumberColumn(width=60, help="relevant judgments"),
        "B − A": st.column_config.NumberColumn(format="%+.4f", width="small"),
    }
    for name, run in (("A", a), ("B", b)):
        if run is not None:
            config[column_name(name, run)] = st.column_config.NumberColumn(
                f"{label} {name}", format="%.4f", width="small", help=column_name(name, run)
            )
            config[f"Judged@k {name}"] = st.column_config.NumberColumn(
                f"Judged@{k} {name}", format="%.2f", width="small"
            )
            config[f"Search {name}"] = st.column_config.LinkColumn(
                f"Search {name}",
                display_text="open",
                width=65,
                help=f"this query on the Search page, k = {k}, limit {run.limit:,}",
            )
    st.dataframe(
        rows,
        column_config=config,
        hide_index=True,
        key="ev_table",
        row_height=ROW_PX,
        height=TABLE_PX,
    )
    st.plotly_chart(
        ndcg_histogram(
            [r for r in (a, b) if r is not None],
            [column_name(side, r) for side, r in (("A", a), ("B", b)) if r is not None],
        ),
        key="ev_histogram",
        config={"displayModeBar": False},
    )
    render_lists(result, passages)
    st.download_button(
        "Export CSV (every metric per query)",
        result.to_csv(),
        file_name="lexplain-evaluation.csv",
        mime="text/csv",
    )


service = screen()
st.title("Evaluate")
# First line: how this screen differs from Runs, the other one that evaluates.
st.caption(
    "Judgment files (BEIR, TREC) or this workspace's grades, with one or two limits, rankers, "
    "workspaces or expansions (RM3) side by side; nothing is saved. **Runs** evaluates this "
    "workspace's grades and saves runs, to compare them later with significance tests."
)
st.page_link(
    "pages/runs.py",
    label="Runs: save and compare runs of this workspace's grades",
    icon=":material/leaderboard:",
    query_params={WORKSPACE_PARAM: workspace()},
)
st.markdown(
    "Judged quality of the ranking at one or two candidate **limits**: nDCG, Recall and MRR "
    "at k, per query and on average, with **Judged@k** (the share of the top k that has a "
    "judgment) beside them. With judgment files, documents are judged at their best passage; "
    "with this workspace's grades, passage by passage or by document."
)
drop_other_workspace_results(RESULTS_WORKSPACE_KEY, (RESULT_KEY, DIAGNOSIS_KEY))
offer_sample(service)

source = st.radio("Judgments from", [FROM_FILES, FROM_GRADES], horizontal=True, key="ev_source")
judgments: tuple[str, bytes, bytes] | None = None
#: From grades: (query set, by document); None when judging by files.
graded: tuple[str, bool] | None = None
if source == FROM_FILES:
    judgments = file_judgments()
else:
    graded = grade_judgments()
col_k, col_a, col_b, col_compare = st.columns([1, 1, 1, 2])
k = int(col_k.number_input("k", min_value=1, max_value=K_MAX, value=DEFAULT_K, key="ev_k"))
limit_a = int(
    col_a.number_input(
        "limit A",
        min_value=0,
        max_value=LIMIT_MAX,
        value=DEFAULT_LIMIT,
        step=100,
        key="ev_limit_a",
    )
)
compare = col_compare.checkbox("compare with limit B", value=True, key="ev_compare")
limit_b = int(
    col_b.number_input(
        "limit B",
        min_value=0,
        max_value=LIMIT_MAX,
        value=LIMIT_B,
        step=100,
        key="ev_limit_b",
        disabled=not compare,
    )
)
limits = [limit_a, limit_b] if compare else [limit_a]
rank_a, rank_b = st.columns(2)
ranker_a = ranker_input("A", rank_a)
ranker_b = ranker_input("B", rank_b)
expand_a = expansion_input("A", rank_a)
expand_b = expansion_input("B", rank_b)
names = service.list_workspaces()
workspace_b = str(
    rank_b.selectbox(
        "workspace B",
        names,
        index=names.index(workspace()) if workspace() in names else 0,
        key="ev_workspace_b",
        help="Compare two workspaces, e.g. the plain and english profiles of the same files.",
        disabled=not compare,
    )
)
# Both runs narrowed alike (a filter names this workspace's sources and entities).
within = narrowing(service, workspace())
specs = [
    RunSpec(workspace=workspace(), limit=limit_a, ranker=ranker_a, within=within, expand=expand_a)
]
if compare:
    specs.append(
        RunSpec(
            workspace=workspace_b,
            limit=limit_b,
            ranker=ranker_b,
            within=within if workspace_b == workspace() else None,
            expand=expand_b,
        )
    )
#: Limits only (the workspace's ranker, one workspace, as typed): runs named by their limits.
limits_only = all(
    s.ranker.kind is RankerKind.WORKSPACE and s.workspace == workspace() and s.expand is None
    for s in specs
)

# Before and instead of a table of zeros: how much of what is judged this workspace holds.
coverage = None
if judgments is not None:
    try:
        coverage = service.judged_coverage(judgments[2], workspace=workspace())
    except JudgmentError:
        coverage = None  # the run reports it, naming file and line
none_present = coverage is not None and coverage.present == 0
if coverage is not None and none_present:
    st.warning(
        f"None of the {coverage.judged_documents:,} documents these judgments name is in the "
        f"workspace “{escape_text(workspace())}”, so every metric would be 0. Load the "
        "collection they judge into this workspace first (for the sample's judgments: the "
        "sample collection)."
    )
elif coverage is not None:
    st.caption(
        f"{coverage.present:,} of the {coverage.judged_documents:,} judged documents are in "
        "this workspace."
    )
run = st.button(
    "Run the evaluation",
    key="ev_run",
    type="primary",
    disabled=(judgments is None and graded is None) or none_present,
)
#: What the runs are judged by, as the stale-result caption names it.
judged_by = (
    judgments[0]
    if judgments is not None
    else f"the grades of “{graded[0]}”" + (" by document" if graded[1] else "")
    if graded is not None
    else None
)
#: Ranked ids are passages (in-app grades, passage by passage), not documents.
passage_level = graded is not None and not graded[1]
#: The judgment files' contents (a file uploaded again under the same name may differ).
files_digest = (
    hashlib.sha256(judgments[1] + b"\0" + judgments[2]).hexdigest() if judgments else None
)
#: What a result below was computed from besides the grades; a change marks it out of date.
result_inputs = (judged_by, files_digest, workspace(), k, tuple(specs))
diagnosis_inputs = (judged_by, files_digest, workspace(), k, limit_a, ranker_a, expand_a)


@functools.cache  # once per run of this script (it defines the function anew each run)
def grades_now() -> tuple[int, str] | None:
    """The chosen set's grades today (``pages.common.grades_state``), read once per run; None
    for files."""
    return grades_state(service, graded[0], workspace()) if graded is not None else None


if run and (judgments is not None or graded is not None):
    bar = st.progress(0.0, text="Evaluating…")

    def progress(done: int, total: int, query_id: str) -> None:
        bar.progress(done / total, text=f"Evaluating… query {done:,} of {total:,}")

    runs: list[EvaluationRun] = []
    try:
        if graded is not None:
            runs = service.evaluate_judged(
                graded[0],
                k,
                specs,
                workspace=workspace(),
                by_document=graded[1],
                on_progress=progress,
            )
        elif judgments is not None and limits_only and within is None:
            runs = service.evaluate(
                judgments[1], judgments[2], k, limits, workspace=workspace(), on_progress=progress
            )
        elif judgments is not None:
            runs = service.evaluate_runs(judgments[1], judgments[2], k, specs, on_progress=progress)
    except (JudgmentError, KeyError) as exc:
        bar.empty()
        st.session_state.pop(RESULT_KEY, None)
        st.error(f"The judgments cannot be used: {escape_text(str(exc))}")
    except ValueError as exc:  # a bound of core.service.bounds (a limit of 0), in its own words
        bar.empty()
        st.session_state.pop(RESULT_KEY, None)
        st.error(f"Not evaluated: {escape_text(str(exc))}.")
    else:
        bar.empty()
        st.session_state[RESULT_KEY] = (compare_runs(*runs), passage_level)
        remember(RESULT_KEY, result_inputs, grades_now())

stored = st.session_state.get(RESULT_KEY)
if stored is not None and not none_present:
    mark_out_of_date(RESULT_KEY, result_inputs, grades_now, "Run the evaluation")
    render_result(*stored)

st.subheader("Why relevant passages were lost (run A)")
st.caption(
    "Each judged-relevant document (with this workspace's grades by passage: passage) outside "
    "run A's top k, with its one cause: it holds no query term, the limit cut it, or it was "
    "scored below the k-th. The same diagnosis as on Runs."
)
if st.button("Diagnose run A", key="ev_diagnose", disabled=(judgments is None and graded is None)):
    try:
        with st.spinner("Reading each judged query once…"):
            if graded is not None:
                lost = service.diagnose(
                    graded[0], k, limit_a, workspace=workspace(), ranker=ranker_a,
                    by_document=graded[1], expand=expand_a,
                )  # fmt: skip
            elif judgments is not None:
                lost = service.diagnose_files(
                    judgments[1], judgments[2], k, limit_a, workspace=workspace(),
                    ranker=ranker_a, expand=expand_a,
                )  # fmt: skip
        st.session_state[DIAGNOSIS_KEY] = lost
        remember(DIAGNOSIS_KEY, diagnosis_inputs, grades_now())
    except (JudgmentError, KeyError, ValueError) as exc:
        st.session_state.pop(DIAGNOSIS_KEY, None)
        st.error(f"Not diagnosed: {escape_text(str(exc))}")
diagnosed = st.session_state.get(DIAGNOSIS_KEY)
if diagnosed is not None:
    mark_out_of_date(DIAGNOSIS_KEY, diagnosis_inputs, grades_now, "Diagnose run A")
    render_diagnosis(diagnosed, "ev", lambda unit: service.unit_label(unit, workspace=workspace()))
