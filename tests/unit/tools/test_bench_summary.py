"""bench/README.md is what ``bench/summary.py`` writes from ``bench/results/*.json``, and the
summary takes every result file present, in either shape a bench writes."""

from __future__ import annotations

import json
from pathlib import Path

from bench import summary
from bench.results import RESULTS, record


def test_the_bench_readme_is_generated_from_the_committed_result_files() -> None:
    assert not summary.stale(summary.README, RESULTS), "run .venv/bin/python -m bench.summary"


def test_a_hand_edit_of_the_readme_makes_it_stale(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(summary.render(RESULTS), encoding="utf-8")
    assert not summary.stale(readme, RESULTS)
    edited = readme.read_text(encoding="utf-8").replace("| 55 / 72 ms |", "| 50 / 70 ms |")
    readme.write_text(edited, encoding="utf-8")
    assert summary.stale(readme, RESULTS)


def test_a_result_file_written_by_another_bench_appears_in_the_table(tmp_path: Path) -> None:
    rows = [
        {
            "workload": "entities GUM all (108 documents, 4438 names)",
            "tool": "lexplain rules",
            "metrics": {"overlap": {"all": {"f1": 0.59}}},
            "load": [0.57, 0.65, 1.03],
            "date": "2026-12-06T04:42:28+00:00",
            "commit": "357d7b2",
        }
    ]
    (tmp_path / "entities.json").write_text(json.dumps(rows), encoding="utf-8")
    page = summary.render(tmp_path)
    assert (
        "| entities | entities GUM all (108 documents, 4438 names) | tool lexplain rules, "
        "overlap F1 0.59 |  |  | 0.57 | 2026-12-06 | `357d7b2` |" in page
    )


def test_a_rerun_replaces_its_workloads_row_and_keeps_the_others(tmp_path: Path) -> None:
    old = {"workload": "a", "lexplain": "1 ms", "command": "x", "date": "2026-12-01"}
    kept = {"workload": "b", "lexplain": "2 ms", "command": "y", "date": "2026-12-01"}
    record("demo", [old, kept], source="transcribed from a test", folder=tmp_path)
    record("demo", [{"workload": "a", "lexplain": "0.5 ms", "command": "x"}], folder=tmp_path)
    rows = json.loads((tmp_path / "demo.json").read_text(encoding="utf-8"))["rows"]
    assert [(r["workload"], r["lexplain"], r["source"]) for r in rows] == [
        ("a", "0.5 ms", "measured"),
        ("b", "2 ms", "transcribed from a test"),
    ]
    page = summary.render(tmp_path)
    assert "| 2026-12-01 † |" in page and page.count(" † |") == 1
