"""Every benchmark still imports, and the cheap ones still run: a bench cannot rot unseen.

Benches are never part of the test run as measurements (their figures are reported, never
asserted), so a rename in core or tests/ used to surface only when someone next ran one
(``bench_judge --part browser`` failed with an AttributeError for a session after Chromium's
settings moved). This imports every module of ``bench/`` (a renamed import fails here), resolves
the names ``bench_judge`` reads from the browser tests by name, and runs the smallest setting of
the benches whose smallest setting takes seconds in-process: ``bench_image`` (5,000 passages,
~0.1 s) and ``bench_judge``'s runs part (2,000 passages: 300 graded queries evaluated, five runs
saved and compared, ~4 s). The whole file costs CI about 10 s of one core (6 s of tests, the
rest pytest starting).
Rejected: running every bench small. The others start servers (embedded PostgreSQL, Citus,
Streamlit and Chromium), clone the repository or sweep peers, tens of seconds to minutes each
even at their smallest; their imports are held here, their runs are not.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
#: Every module of bench/, found on disk so a new bench is held without editing a list.
BENCH_MODULES = sorted(
    f"bench.{path.stem}" for path in (ROOT / "bench").glob("*.py") if path.stem != "__init__"
)


@pytest.mark.parametrize("module", BENCH_MODULES)
def test_every_bench_module_imports(module: str) -> None:
    assert importlib.import_module(module).__name__ == module


def test_bench_judges_browser_part_finds_the_browser_tests_helpers_it_reads_by_name() -> None:
    helpers = importlib.import_module("bench.bench_judge").e2e_helpers()
    assert all(callable(helper) for helper in helpers)


def test_bench_image_runs_its_smallest_write() -> None:
    bench_image = importlib.import_module("bench.bench_image")
    result = bench_image.run(5_000)
    assert result["passages"] == 5_000
    assert len(result["runs"]) == bench_image.RUNS


def test_bench_judge_evaluates_saves_and_compares_runs_on_a_small_workspace() -> None:
    result = importlib.import_module("bench.bench_judge").runs(2_000)
    assert result["passages"] == 2_000
    assert result["compare_5x300_s"] > 0
