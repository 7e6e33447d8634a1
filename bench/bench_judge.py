"""Issue 18's three speeds: grade -> next passage in Chromium, comparing five saved runs of 300
queries, evaluating 300 queries of in-app grades over a 100k-passage workspace.

Reported, never asserted (bench/README.md). The browser part serves ``app.py`` with
``streamlit run`` on the in-memory store (the e2e launcher), loads the sample, and times each
digit pressed on the Judge screen until the progress line shows the grade, polling on every
animation frame (Playwright's ``expect`` polls at 100-1000 ms steps, which the e2e test's
figures include). The other two parts build the synthetic Zipf corpus of ``bench_scale`` in
memory and go through the facade as the Runs screen does.

    .venv/bin/python -m bench.bench_judge --part browser --grades 40
    .venv/bin/python -m bench.bench_judge --part runs --passages 100000
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from bench import bench_scale, scale_setup
from bench.results import record
from tools.chromium import CHROMIUM, CHROMIUM_ARGS

if TYPE_CHECKING:
    from core.service import LexplainService

#: Queries in the evaluated set and in each saved run (the issue's figure).
SET_QUERIES = 300
#: Grades per query of the synthetic judgments (passages drawn from each query's top 20).
GRADED_PER_QUERY = 5
#: Limits of the five saved runs compared.
RUN_LIMITS = (100, 300, 1000, 3000, 10_000)


def percentile(values: list[float], q: int) -> float:
    return float(np.percentile(values, q))


def e2e_helpers() -> tuple[Any, Any, Any, Any]:
    """The browser tests' launcher, settle, workspace opener and key warm-up, by name.

    Imported by name (tests/ is not type-checked), so a rename there fails only when this runs:
    tests/unit/tools/test_benches_import.py calls it. Chromium's path and arguments come from
    ``tools.chromium``, as the browser tests' own do (session 16's bench read them from
    test_browser after they moved and failed with an AttributeError).
    """
    e2e = importlib.import_module("tests.e2e.test_browser")
    judge = importlib.import_module("tests.e2e.test_browser_judge")
    return e2e.streamlit_app, e2e.settle, e2e.open_workspace, judge.wake_keys


def browser(grades: int) -> dict[str, Any]:
    """Seconds from a digit pressed to the progress line showing it, ``grades`` times."""
    from playwright.sync_api import expect, sync_playwright

    streamlit_app, settle, open_workspace, wake_keys = e2e_helpers()

    took: list[float] = []
    with streamlit_app(log_name="streamlit-bench-judge.log") as server, sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = chromium.new_page(viewport={"width": 1280, "height": 1600})
        open_workspace(page, f"{server}/judge?ws=bench-judge", "bench-judge")
        settle(page)
        page.get_by_role("button", name="Load the sample collection").click()
        expect(page.get_by_text("Loaded 1,398 passages")).to_be_visible(timeout=600_000)
        page.goto(f"{server}/judge?ws=bench-judge")
        expect(page.get_by_text("Query 1 of 225")).to_be_visible(timeout=60_000)
        settle(page)
        wake_keys(page)
        for n in range(grades):
            before = page.locator(".lx-passage").first.inner_text()
            page.get_by_role("heading", name="Judge").click()
            started = time.perf_counter()
            page.keyboard.press(str(n % 4))
            page.wait_for_function(
                "before => { const p = document.querySelector('.lx-passage');"
                " return p && p.innerText !== before; }",
                arg=before,
                polling="raf",
                timeout=60_000,
            )
            took.append(time.perf_counter() - started)
            settle(page)
        chromium.close()
    return {
        "grades": len(took),
        "p50_s": statistics.median(took),
        "p95_s": percentile(took, 95),
        "max_s": max(took),
    }


def scale_service(opener: Any) -> LexplainService:
    """A facade on the store ``opener`` opens (bench_scale's), with its workspace."""
    from core.service import LexplainService
    from core.stores.port import Workspace

    async def factory() -> Any:
        store = await opener()
        await store.upsert_workspace(
            Workspace(tenant_id=scale_setup.TENANT, name=scale_setup.WORKSPACE)
        )
        return store

    return LexplainService(factory)


def graded_set(service: LexplainService, ws: str, name: str = "bench") -> list[str]:
    """Save SET_QUERIES distinct Zipf queries as the set ``name`` and grade them as a rater
    would: GRADED_PER_QUERY passages drawn from each query's top 20, grades 0-3 (seeded)."""
    rng = np.random.default_rng(scale_setup.SEED + 3)
    cdf = np.cumsum(1.0 / np.arange(1, scale_setup.VOCABULARY + 1) ** scale_setup.ZIPF_S)
    cdf /= cdf[-1]
    queries: list[str] = []
    while len(queries) < SET_QUERIES:
        words = np.searchsorted(cdf, rng.random(int(rng.integers(3, 7))))
        text = " ".join(f"w{int(r)}" for r in words)
        if text not in queries:
            queries.append(text)
    service.save_query_set(name, "\n".join(queries), "lines", workspace=ws)
    for text in queries:  # grades as a rater would give them: from each query's top 20
        hits = service.search(text, k=20, workspace=ws).passages
        for n in rng.choice(len(hits), min(GRADED_PER_QUERY, len(hits)), replace=False):
            service.grade(text, hits[int(n)].chunk.id, int(rng.integers(0, 4)), workspace=ws)
    return queries


def runs(passages: int) -> dict[str, Any]:
    """Evaluate 300 queries from in-app grades, save five runs, compare them (seconds)."""
    from core.service import RunSpec
    from core.service.bounds import MAX_EVALUATE_RUNS

    ids, texts, _ = scale_setup.zipf_corpus(passages)
    started = time.perf_counter()
    _, _, opener = bench_scale.build_memory(ids, texts)
    built = time.perf_counter() - started
    assert opener is not None
    del texts

    service = scale_service(opener)
    ws = scale_setup.WORKSPACE
    try:
        graded_set(service, ws)
        started = time.perf_counter()
        service.evaluate_judged("bench", 10, [RunSpec(workspace=ws, limit=1000)], workspace=ws)
        evaluate_one = time.perf_counter() - started
        started = time.perf_counter()
        evaluated = [  # an Evaluate takes MAX_EVALUATE_RUNS runs at most: five in groups
            run
            for first in range(0, len(RUN_LIMITS), MAX_EVALUATE_RUNS)
            for run in service.evaluate_judged(
                "bench",
                10,
                [
                    RunSpec(workspace=ws, limit=limit)
                    for limit in RUN_LIMITS[first:][:MAX_EVALUATE_RUNS]
                ],
                workspace=ws,
            )
        ]
        evaluate_five = time.perf_counter() - started
        saved = []
        for limit, run in zip(RUN_LIMITS, evaluated, strict=True):
            spec = RunSpec(workspace=ws, limit=limit)
            saved.append(
                service.save_run(f"limit {limit}", run, spec.ranker, "bench", workspace=ws)
            )
        started = time.perf_counter()
        result = service.compare_saved_runs([s.run_id for s in saved], workspace=ws)
        compare = time.perf_counter() - started
        assert len(result.queries) == SET_QUERIES
    finally:
        service.close()
    return {
        "passages": passages,
        "build_s": built,
        "evaluate_300_s": evaluate_one,
        "evaluate_300_x5_s": evaluate_five,
        "compare_5x300_s": compare,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["browser", "runs", "all"], default="all")
    parser.add_argument("--grades", type=int, default=40)
    parser.add_argument("--passages", type=int, default=100_000)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    command = ".venv/bin/python -m bench.bench_judge"
    if args.part in ("runs", "all"):
        measured = runs(args.passages)
        print(measured)
        record("judge", [{
            "workload": f"compare five saved runs of 300 queries, {args.passages:,} passages",
            "lexplain": f"{measured['compare_5x300_s']:.2f} s",
            "peer": "target 1 s",
            "ratio": f"{measured['compare_5x300_s']:.2f}x target",
            "command": f"{command} --part runs --passages {args.passages}",
        }])  # fmt: skip
    if args.part in ("browser", "all"):
        timed = browser(args.grades)
        print(timed)
        record("judge", [{
            "workload": f"grade -> next passage in Chromium, p50 / p95, {timed['grades']} grades",
            "lexplain": f"{1000 * timed['p50_s']:.0f} / {1000 * timed['p95_s']:.0f} ms",
            "peer": "target 200 ms",
            "ratio": f"{timed['p50_s'] / 0.2:.2f}x target",
            "command": f"{command} --part browser --grades {args.grades}",
        }])  # fmt: skip
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
