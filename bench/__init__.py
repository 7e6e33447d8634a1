"""Benchmarks against peers, run as modules from the repository root (`-m bench.bench_scale`).

A package, so that a benchmark imports `core` and its sibling benchmarks from the checkout it sits
in without editing `sys.path`; an installed (editable) lexplain was rejected: one shared venv would
point every worktree at whichever checkout installed it.
"""
