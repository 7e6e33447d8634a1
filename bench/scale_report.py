"""bench_scale's report: the tables, the issues' targets computed from a run, the plot, the
summary's rows (bench/results/scale.json).

Apart from the runner so each stays under 600 lines; it reads only a run's result rows
(``bench/scale.json``), so ``--replot`` and a reader of the JSON need nothing else.
"""

from __future__ import annotations

from typing import Any

from bench.scale_setup import ENGINES, EVALUATE_LIMITS, EVALUATE_QUERIES, LIMITS, LOADS, ROOT

RESULTS = ROOT / "bench" / "scale.json"
#: The peers the summary's rows compare the in-memory store with.
PEERS = ("bm25s", "tantivy")
#: The searches' names in a run's rows (``p50_<label>``): the two limits and none.
LABELS = (*(str(limit) for limit in LIMITS), "none")
PLOT = ROOT / "bench" / "scale.png"


def _fmt(value: Any, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _get(row: dict[str, Any] | None, key: str) -> float | None:
    return None if row is None or row.get(key) is None else float(row[key])


def _ratio(value: Any, peer: dict[str, Any] | None, key: str) -> float | None:
    return value / peer[key] if value is not None and peer and peer.get(key) else None


def table(results: list[dict[str, Any]]) -> str:
    """Every engine at every size: absolute figures (ms unless named) and the peer ratios."""
    lines = [
        "| corpus | passages | engine | build s | peak RSS MB | p50 @100 | p95 @100 "
        "| p50 @1000 | p95 @1000 | p50 @none | unlimited analysis p50 | Evaluate s "
        "| p50 ÷ bm25s @100 / @1000 / @none | p50 ÷ pg-fts @100 / @1000 / @none |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def peers(engine: str) -> dict[str, dict[str, Any]]:
        return {r["corpus"]: r for r in results if r["engine"] == engine and "skipped" not in r}

    bm25s, fts = peers("bm25s"), peers("pg-fts")
    for r in results:
        if r["engine"] in LOADS:
            continue
        if "skipped" in r:
            lines.append(f"| {r['corpus']} | | {r['engine']} | skipped: {r['skipped']} "
                         "| | | | | | | | | | |")  # fmt: skip
            continue
        cells = []
        for peer in (bm25s.get(r["corpus"]), fts.get(r["corpus"])):
            ratios = [_ratio(r.get(f"p50_{limit}"), peer, f"p50_{limit}") for limit in LABELS]
            cells.append("—" if ratios[0] is None else " / ".join(_fmt(x, 2) for x in ratios))
        lines.append(
            f"| {r['corpus']} | {r['passages']:,} | {r['engine']} | {_fmt(r['build_s'])} "
            f"| {_fmt(r['rss_mb'], 0)} | {_fmt(r['p50_100'], 2)} | {_fmt(r['p95_100'], 2)} "
            f"| {_fmt(r['p50_1000'], 2)} | {_fmt(r['p95_1000'], 2)} | {_fmt(r.get('p50_none'), 2)} "
            f"| {_fmt(r.get('analysis_p50'), 1)} | {_fmt(r.get('evaluate_s'), 1)} "
            f"| {cells[0]} | {cells[1]} |"
        )
    return "\n".join(lines)


def load_table(results: list[dict[str, Any]]) -> str:
    """The ``load`` command, end to end, into each server of ``LOADS``."""
    lines = [
        "| server | corpus | passages in the file | passages stored | seconds | passages/s "
        "| peak RSS MB | server errors |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        if r["engine"] not in LOADS:
            continue
        server = LOADS[r["engine"]]
        if "skipped" in r:
            lines.append(f"| {server} | {r['corpus']} | | | skipped: {r['skipped']} | | | |")
            continue
        lines.append(
            f"| {server} | {r['corpus']} | {r['passages']:,} | {r['passages_stored']:,} "
            f"| {_fmt(r['seconds'])} | {_fmt(r['passages_per_s'], 0)} | {_fmt(r['rss_mb'], 0)} "
            f"| {len(r['errors'])} |"
        )
    return "\n".join(lines)


def targets(results: list[dict[str, Any]]) -> str:
    """Each issue target, the figure measured in this run, and whether it was met."""
    by = {(r["engine"], r["corpus"]): r for r in results if "skipped" not in r}
    rows: list[tuple[str, str, str, float | None, float]] = []  # issue, what, corpus, value, bound
    for size in ("100000", "1000000"):
        memory, peer = by.get(("memory", size)), by.get(("bm25s", size))
        pg, fts = by.get(("postgres", size)), by.get(("pg-fts", size))
        for limit in LIMITS:
            key = f"p50_{limit}"
            rows.append(("8", f"memory search p50 @{limit} ÷ bm25s", size,
                         _ratio(_get(memory, key), peer, key), 1.0))  # fmt: skip
        for limit in LIMITS:
            key = f"p50_{limit}"
            bound = 0.15 if size == "100000" else 0.05
            rows.append(("9", f"postgres search p50 @{limit} ÷ pg-fts", size,
                         _ratio(_get(pg, key), fts, key), bound))  # fmt: skip
    million = "1000000"
    memory, peer, pg = (
        by.get(("memory", million)),
        by.get(("bm25s", million)),
        by.get(("postgres", million)),
    )
    rows.append(("8", "memory unlimited analysis p50, ms", million,
                 _get(memory, "analysis_p50"), 250.0))  # fmt: skip
    rows.append(
        (
            "8",
            "memory build ÷ bm25s",
            million,
            _ratio(_get(memory, "build_s"), peer, "build_s"),
            1.0,
        )
    )
    rows.append(
        (
            "8",
            "memory peak RSS ÷ bm25s",
            million,
            _ratio(_get(memory, "rss_mb"), peer, "rss_mb"),
            1.0,
        )
    )
    rows.append(("9", "postgres unlimited analysis p50, ms", million,
                 _get(pg, "analysis_p50"), 2000.0))  # fmt: skip
    memory_100k = by.get(("memory", "100000"))
    evaluate = f"Evaluate {EVALUATE_QUERIES} queries x {len(EVALUATE_LIMITS)} limits, memory, s"
    rows.append(("8", evaluate,
                 "100000", _get(memory_100k, "evaluate_s"), 10.0))  # fmt: skip
    lines = ["| issue | target | corpus | measured | bound | met |", "|---|---|---:|---:|---:|---|"]
    for issue, what, size, value, bound in rows:
        met = "—" if value is None else ("yes" if value <= bound else "**no**")
        lines.append(f"| {issue} | {what} | {int(size):,} | {_fmt(value, 2)} | {bound:g} | {met} |")
    for engine, server in LOADS.items():
        rate = _get(by.get((engine, "100000")), "passages_per_s")
        met = "—" if rate is None else ("yes" if rate >= 5000 else "**no**")
        lines.append(
            f"| 20 | load command, {server}, passages/s (at least) | 100,000 "
            f"| {_fmt(rate, 0)} | 5000 | {met} |"
        )
    return "\n".join(lines)


def plot(results: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 5))
    for engine in ENGINES:
        rows = sorted(
            (r for r in results if r["engine"] == engine and "skipped" not in r
             and r["corpus"] != "cranfield" and "p50_1000" in r),
            key=lambda r: r["passages"],
        )  # fmt: skip
        if rows:
            axis.plot([r["passages"] for r in rows], [r["p50_1000"] for r in rows], "o-",
                      label=f"{engine} (limit 1000)" if engine in ("memory", "postgres")
                      else engine)  # fmt: skip
        if engine == "memory" and rows:
            axis.plot([r["passages"] for r in rows], [r["analysis_p50"] for r in rows], "s--",
                      label="memory, unlimited analysis")  # fmt: skip
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("passages (synthetic Zipf)")
    axis.set_ylabel("search p50, ms (k = 10)")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(PLOT, dpi=110)


def record_figures(results: list[dict[str, Any]], command: str) -> None:
    """The in-memory store against bm25s and tantivy at each size, as rows of
    bench/results/scale.json (the whole run stays in ``bench/scale.json`` and the plot)."""
    from bench.results import record

    def engine(corpus: str, name: str) -> dict[str, Any] | None:
        found = [r for r in results if r["corpus"] == corpus and r["engine"] == name]
        return found[0] if found and "skipped" not in found[0] else None

    rows = []
    for corpus in dict.fromkeys(r["corpus"] for r in results):
        memory = engine(corpus, "memory")
        peers = [(name, row) for name in PEERS if (row := engine(corpus, name)) is not None]
        if memory is None or not peers:
            continue
        # A run from before the unlimited search has the two limits only.
        labels = [label for label in LABELS if f"p50_{label}" in memory]
        labels = [label for label in labels if all(f"p50_{label}" in row for _, row in peers)]
        ms = [f"{memory[f'p50_{label}']:.2f}" for label in labels]
        peer = [
            name + " " + " / ".join(f"{row[f'p50_{label}']:.2f}" for label in labels) + " ms"
            for name, row in peers
        ]
        ratio = [
            " / ".join(f"{memory[f'p50_{label}'] / row[f'p50_{label}']:.2f}x" for label in labels)
            + f" ({name})"
            for name, row in peers
        ]
        size = corpus if corpus == "cranfield" else f"{int(corpus):,} Zipf passages"
        rows.append(
            {
                "workload": f"{size}, search p50 @{' / @'.join(labels)}",
                "lexplain": f"memory {' / '.join(ms)} ms",
                "peer": "; ".join(peer),
                "ratio": "; ".join(ratio),
                "command": command,
            }
        )
    record("scale", rows)
