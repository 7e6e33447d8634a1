"""Helpers that the benchmarks, the tests and the scripts share, none of them a benchmark.

- ``chromium.py``: Debian's Chromium and the arguments every browser run launches it with (the
  browser tests, the README's picture, the fresh-clone bench).
- ``process_tree.py``: the peak memory of a command's process tree, read from ``/proc`` (the
  loader benches and the full-size probe test).
- ``alternation.py``: idle and during samples in alternating blocks (bench_stall, and its unit
  test).

Why a package of its own: these lived in ``bench/``, so ``scripts/screenshot.py`` and the tests
imported the benchmarks' package to reach them, an import against the layers (a script or a test
depending on a benchmark), and ``bench/`` was two things. Rejected: ``tests/support/``, since a
script and the benches would then import the tests' package, the same inversion the other way.
"""
