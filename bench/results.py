"""The one writer of a benchmark's figures: ``record(name, rows)`` -> ``bench/results/<name>.json``.

bench/README.md is generated from these files (``bench/summary.py``), so today's figure for
every benchmark is a file in the repository, written by the bench that measured it, with the
date, the commit and the machine's load beside it. Rejected: each bench editing the README (a
3,193-line diary nobody could find today's figure in, bench/history.md now) and one results
database (a file per bench merges without conflicts when two helpers bench at once).

A row is a flat dict: ``workload``, ``lexplain``, ``peer``, ``ratio`` (short text, as the table
shows it), ``command`` (what reproduces it); ``load``, ``date`` and ``commit`` are filled in
from the machine when the bench leaves them out, and ``source`` says where the figure came from
("measured", or "transcribed from bench/history.md, ..." for one copied from the diary rather
than rerun). A new row replaces the file's row of the same workload and keeps the others, so a
rerun at one setting leaves the other settings' figures (and transcribed ones) in place.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: Where the result files live (committed: the summary is regenerated from them).
RESULTS = Path(__file__).resolve().parent / "results"
#: Paths whose changes do not make a measured checkout dirty (the figures themselves).
FIGURES = (":!bench/results", ":!bench/README.md")
#: The columns every row has once recorded, in the summary's order.
COLUMNS = ("workload", "lexplain", "peer", "ratio", "load", "date", "commit", "command")


def _commit() -> str:
    """The checkout's short commit, ``-dirty`` when its tracked files other than the figures
    (bench/results, bench/README.md) differ from it."""
    root = RESULTS.parent.parent
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", *FIGURES],
        cwd=root,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return f"{head}-dirty" if dirty else head


def record(
    name: str,
    rows: Sequence[Mapping[str, Any]],
    *,
    source: str = "measured",
    folder: Path = RESULTS,
) -> Path:
    """Write ``rows`` as the benchmark ``name``'s figures of today, replacing its last ones."""
    stamp = {
        "load": f"{os.getloadavg()[0]:.1f}",
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "commit": _commit() if folder == RESULTS else "",
    }
    filled = []
    for row in rows:
        missing = {"workload", "lexplain", "command"} - set(row)
        if missing:
            raise ValueError(f"a row of {name} has no {', '.join(sorted(missing))}")
        merged = {"peer": "", "ratio": "", **stamp, "source": source, **row}
        order = (*COLUMNS, "source")
        filled.append(
            {key: merged[key] for key in order}
            | {key: value for key, value in merged.items() if key not in order}
        )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    kept: list[dict[str, Any]] = []
    if path.exists():
        new = {row["workload"]: row for row in filled}
        for old in json.loads(path.read_text(encoding="utf-8"))["rows"]:
            kept.append(new.pop(old["workload"], old))
        filled = kept + [row for row in filled if row["workload"] in new]
    body = {"bench": name, "rows": filled}
    path.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
