"""What a page rerun costs the server next to the service call it shows (issue 22).

Streamlit runs every session's script in one interpreter, so what a rerun costs beyond its
service call is what a team of analysts queues for. This runs ``app.py`` in this process with
Streamlit's AppTest and times each script run in the script thread
(``ScriptRunner._run_script``: the script, every element built, hashed and queued), with the
compiled scripts kept across runs as a server keeps them (AppTest compiles every page anew on
every run, ~80 ms of AST rewriting a server pays once). Per page, queries alternate: one query
is typed into the page and timed, the next is given to the page's service call directly and
timed, so machine load hits both alike and neither finds the other's result cached.
Ratio = rerun p50 / service call p50. Opening a Search result's explanation (or its whole
text) is no rerun: each is an HTML ``<details>`` in the result's card that the browser opens
without a message to the server, so there is nothing server-side to time (it was a full
rerun, 16.2 ms on Cranfield, while each was a tracked ``st.expander``); the row says so.
``--bars`` times the ways of drawing ten contribution bars.

    .venv/bin/python -m bench.bench_rerun                        # Cranfield, in memory
    .venv/bin/python -m bench.bench_rerun --store embedded       # Cranfield, embedded PostgreSQL
    .venv/bin/python -m bench.bench_rerun --passages 100000      # synthetic Zipf, in memory

Each page's figures are recorded in bench/results/rerun.json (``bench.results.record``) unless
``--no-write`` or ``--profile`` is given (a profiled run's times include the profiler).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from bench import bench_scale, scale_setup
from bench.results import record

ROOT = Path(__file__).resolve().parents[1]
#: The workspace the Cranfield runs load the sample into.
WORKSPACE = "bench-rerun"
#: Queries typed per page (and as many given to the service call).
QUERIES = 40
#: k and limit of every call (the pages' defaults).
K, LIMIT = 10, 1000


#: Issue 50's target: a Search rerun at most this many times its search.
TARGET_RATIO = 5.0
#: What opening a Search result's explanation costs the server, said in its row.
OPEN_NOTE = "open an explanation: no rerun, an HTML details element the browser opens"
#: Each page's service call, as the recorded rows name it.
CALLS = {page: f"service.{page}" for page in ("search", "truncation", "compare")}


#: cProfile of the script thread's runs of one page when ``--profile`` is given (else None).
PROFILE: Any = None


def _server_like() -> list[float]:
    """Patch AppTest to run as a server does; returns the list each script run's time lands in."""
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.runtime.scriptrunner import script_cache, script_runner
    from streamlit.testing.v1 import app_test

    class ServerPagesManager(PagesManager):  # as tests/ui/conftest.py says why
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            PagesManager.uses_pages_directory = False
            super().__init__(*args, **kwargs)

    cast(Any, app_test).PagesManager = ServerPagesManager
    compiled: dict[str, Any] = {}
    compile_once = script_cache.ScriptCache.get_bytecode

    def get_bytecode(self: Any, path: str) -> Any:
        if path not in compiled:
            compiled[path] = compile_once(self, path)
        return compiled[path]

    cast(Any, script_cache.ScriptCache).get_bytecode = get_bytecode
    runs: list[float] = []
    run_script = script_runner.ScriptRunner._run_script

    def timed(self: Any, rerun_data: Any) -> None:
        started = time.perf_counter()
        if PROFILE is not None:
            PROFILE.enable()
        try:
            run_script(self, rerun_data)
        finally:
            if PROFILE is not None:
                PROFILE.disable()
            runs.append(time.perf_counter() - started)

    cast(Any, script_runner.ScriptRunner)._run_script = timed
    return runs


def _prebuilt(passages: int) -> tuple[str, list[str]]:
    """A Zipf corpus in an in-memory store the app will use (as bench_browser builds it)."""
    from core.service import LexplainService
    from core.stores.memory import InMemoryChunkStore
    from core.stores.port import Workspace

    ids, texts, token_lists = scale_setup.zipf_corpus(passages)
    store = InMemoryChunkStore()

    async def fill(ids: list[str], texts: list[str]) -> None:
        await store.upsert_workspace(
            Workspace(tenant_id=scale_setup.TENANT, name=scale_setup.WORKSPACE)
        )
        for offset in range(0, len(ids), scale_setup.BATCH):
            end = offset + scale_setup.BATCH
            await store.upsert_many(bench_scale._chunks(ids[offset:end], texts[offset:end]))
        await store.lexical_candidates(["w0"], scale_setup.TENANT, 1)

    started = time.perf_counter()
    asyncio.run(fill(ids, texts))
    print(f"built {passages:,} passages in {time.perf_counter() - started:.0f} s", flush=True)
    del ids, texts

    async def same_store() -> Any:
        return store

    def from_settings(cls: type[LexplainService], settings: Any = None) -> LexplainService:
        return cls(same_store, store_label="in-memory (prebuilt by bench_rerun)")

    LexplainService.from_settings = classmethod(from_settings)  # type: ignore[method-assign,assignment]
    return scale_setup.WORKSPACE, [" ".join(t) for t in token_lists[: 2 * QUERIES + 1]]


def _cranfield(store: str) -> tuple[str, list[str]]:
    from pages.common import get_service

    if store == "memory":
        os.environ["LEXPLAIN_STORE"] = "memory"
    else:
        os.environ.pop("LEXPLAIN_STORE", None)
        os.environ["LEXPLAIN_DATA_DIR"] = tempfile.mkdtemp(prefix="bench-rerun-")
    os.environ.pop("LEXPLAIN_DATABASE_URL", None)
    get_service().load_sample(workspace=WORKSPACE)
    lines = (ROOT / "data" / "cranfield" / "queries.jsonl").read_text().splitlines()
    return WORKSPACE, [json.loads(line)["text"] for line in lines[: 2 * QUERIES + 1]]


def _p50(values: list[float]) -> float:
    return statistics.median(values) * 1000


def measure(workspace: str, queries: list[str], profile: str | None = None) -> list[dict[str, Any]]:
    """Per page: typed-query rerun p50, service call p50, ratio.

    With ``profile`` naming a page, that page's script runs are profiled (cProfile in the
    script thread) and the top functions by cumulative time printed; the timings then include
    the profiler's overhead.
    """
    global PROFILE
    from streamlit.testing.v1 import AppTest

    from core.service import Ranker, RankerKind
    from pages.common import get_service

    runs = _server_like()
    service = get_service()
    a, b = Ranker.of(RankerKind.WORKSPACE), Ranker.of(RankerKind.CLASSIC)
    calls: dict[str, tuple[str, Callable[[str], object]]] = {
        "search": ("q", lambda q: service.search(q, K, LIMIT, workspace=workspace)),
        "truncation": ("t_q", lambda q: service.truncation(q, K, LIMIT, workspace=workspace)),
        "compare": ("c_q", lambda q: service.compare(q, a, b, K, LIMIT, workspace=workspace)),
    }
    rows = []
    for page, (key, call) in calls.items():
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at.query_params["ws"] = workspace
        at.run()
        if page != "search":
            at.switch_page(f"pages/{page}.py").run()
        at.text_input(key=key).input(queries[-1]).run()  # warm: imports, first image
        typed: list[float] = []
        direct: list[float] = []
        if page == profile:
            import cProfile

            PROFILE = cProfile.Profile()
        for i in range(QUERIES):
            runs.clear()
            at.text_input(key=key).input(queries[2 * i]).run()
            assert not at.exception, [e.value for e in at.exception]
            typed.append(sum(runs))
            started = time.perf_counter()
            call(queries[2 * i + 1])
            direct.append(time.perf_counter() - started)
        if PROFILE is not None:
            import pstats

            pstats.Stats(PROFILE).sort_stats("cumulative").print_stats(45)
            PROFILE = None
        row = {
            "page": page,
            "rerun_p50_ms": _p50(typed),
            "call_p50_ms": _p50(direct),
            "ratio": _p50(typed) / _p50(direct),
            "reruns": len(typed),
        }
        rows.append(row)
    return rows


def bar_styles(workspace: str, query: str, repeat: int = 20) -> dict[str, float]:
    """ms to build one result list's ten contribution bars, three ways (server side only)."""
    import plotly.graph_objects as go
    import plotly.io

    from core.analysis.presentation import contribution_bar_html, term_colours
    from pages.common import get_service

    result = get_service().search(query, K, LIMIT, workspace=workspace)
    colours = term_colours(result.distinct_terms)
    top = max(p.score for p in result.passages)

    def segments(passage: Any) -> list[Any]:
        return sorted(
            (p for p in passage.explanation.terms if p.contribution > 0),
            key=lambda p: (-p.contribution, p.term),
        )

    def ten_figures() -> None:  # what the page did before: a validated figure per passage
        for passage in result.passages:
            figure = go.Figure()
            for part in segments(passage):
                figure.add_trace(
                    go.Bar(
                        x=[part.contribution],
                        y=[""],
                        orientation="h",
                        marker_color=colours[part.term],
                        text=[f"{part.term} {part.contribution:.2f}"],
                    )
                )
            figure.update_layout(barmode="stack", height=70, xaxis={"range": [0, top]})
            plotly.io.to_json(figure, validate=False)

    def one_figure_from_a_dict() -> None:  # st.plotly_chart validates a dict spec too
        ranks = [f"#{p.rank}" for p in result.passages]
        data = [
            {
                "type": "bar",
                "orientation": "h",
                "name": term,
                "y": ranks,
                "x": [
                    next((s.contribution for s in p.explanation.terms if s.term == term), 0.0)
                    for p in result.passages
                ],
                "marker": {"color": colours[term]},
            }
            for term in result.distinct_terms
        ]
        spec = {"data": data, "layout": {"barmode": "stack", "xaxis": {"range": [0, top]}}}
        plotly.io.to_json(go.Figure(spec), validate=False)

    def html() -> None:
        for passage in result.passages:
            contribution_bar_html(passage.explanation, colours, top)

    timings = {}
    for name, build in (
        ("ten Plotly figures", ten_figures),
        ("one Plotly figure from a dict spec", one_figure_from_a_dict),
        ("HTML/CSS (contribution_bar_html)", html),
    ):
        build()
        started = time.perf_counter()
        for _ in range(repeat):
            build()
        timings[name] = (time.perf_counter() - started) / repeat * 1000
    return timings


def rows_to_record(corpus: str, rows: list[dict[str, Any]], command: str) -> list[dict[str, Any]]:
    """One result row per page: the rerun against its call (Search's row says an explanation
    opens with no rerun)."""
    recorded = []
    for row in rows:
        page = row["page"]
        target = f" (target <= {TARGET_RATIO:g}x)" if page == "search" else ""
        recorded.append(
            {
                "workload": f"{corpus}, {page.capitalize()} page rerun vs {CALLS[page]}, p50",
                "lexplain": f"rerun {row['rerun_p50_ms']:.1f} ms"
                + (f" ({OPEN_NOTE})" if page == "search" else ""),
                "peer": f"{CALLS[page]} {row['call_p50_ms']:.2f} ms",
                "ratio": f"{row['ratio']:.1f}x{target}",
                "command": command,
                "reruns": row["reruns"],
            }
        )
    return recorded


def main() -> None:
    global QUERIES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("memory", "embedded"), default="memory")
    parser.add_argument("--passages", type=int, help="a synthetic Zipf corpus, in memory")
    parser.add_argument("--bars", action="store_true", help="also time the bar styles")
    parser.add_argument("--profile", choices=("search", "truncation", "compare"))
    parser.add_argument("--queries", type=int, default=QUERIES, help="typed per page")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    QUERIES = args.queries
    os.chdir(ROOT)
    if args.passages:
        workspace, queries = _prebuilt(args.passages)
        corpus = f"Zipf {args.passages:,} in memory"
    else:
        workspace, queries = _cranfield(args.store)
        corpus = "Cranfield " + ("in memory" if args.store == "memory" else "embedded PostgreSQL")
    rows = measure(workspace, queries, args.profile)
    print(f"\n{corpus}; k = {K}, limit = {LIMIT:,}; {QUERIES} typed queries per page\n")
    print("| page | rerun p50 ms | service call p50 ms | ratio |")
    print("|---|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['page']} | {row['rerun_p50_ms']:.1f} | {row['call_p50_ms']:.2f} | "
            f"{row['ratio']:.1f} |"
        )
    print(f"\nSearch: {OPEN_NOTE}.")
    if args.bars:
        print("\n| ten contribution bars drawn as | ms per result list |\n|---|---:|")
        for name, ms in bar_styles(workspace, queries[0]).items():
            print(f"| {name} | {ms:.2f} |")
    print(json.dumps(rows))
    if not (args.no_write or args.profile):
        command = ".venv/bin/python -m bench.bench_rerun" + (
            f" --passages {args.passages}" if args.passages else f" --store {args.store}"
        )
        record("rerun", rows_to_record(corpus, rows, command))


if __name__ == "__main__":
    main()
