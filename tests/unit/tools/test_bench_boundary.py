"""bench/ only benchmarks: nothing outside it imports it but the benches' own tests.

Shared helpers (Chromium's launch settings, a process tree's peak memory, alternating samples)
live in ``tools/``; a script, a test or core importing ``bench`` would make the benchmarks a
library again. Checked by the same AST walk as the layering test, over every Python file outside
``bench/``, ``.venv`` and ``vendor/``.
"""

from __future__ import annotations

from pathlib import Path

from tests.test_layering import ROOT, imported_modules, module_name

#: Folders whose files are not the project's own (or are the benchmarks themselves).
SKIPPED = ("bench", ".venv", "vendor", ".git")


def imports_bench(source: str, module: str) -> bool:
    """Whether ``source`` (the text of ``module``) imports ``bench`` or one of its modules and
    is not a test of the benches themselves (``test_bench_*.py``: a bench's own test, or the
    summary's), which import what they test as any test does."""
    if module.rsplit(".", 1)[-1].startswith("test_bench_"):
        return False
    return "bench" in imported_modules(source, module)


def project_files() -> list[Path]:
    return [
        path
        for path in sorted(ROOT.rglob("*.py"))
        if path.relative_to(ROOT).parts[0] not in SKIPPED
    ]


def test_no_script_test_or_core_module_imports_the_benchmarks() -> None:
    importers = [
        str(path.relative_to(ROOT))
        for path in project_files()
        if imports_bench(path.read_text(encoding="utf-8"), module_name(path))
    ]
    assert importers == []


def test_the_boundary_check_sees_an_import_of_a_bench_and_passes_one_of_tools() -> None:
    assert imports_bench("from bench.bench_scale import ENGINES\n", "tools.planted")
    assert imports_bench("from bench import scale_setup\n", "scripts.planted")
    assert not imports_bench("from tools.chromium import CHROMIUM\n", "scripts.planted")


def test_a_test_of_the_benches_may_import_them_and_another_test_may_not() -> None:
    source = "from bench.bench_entities import score\n"
    assert not imports_bench(source, "tests.unit.test_bench_entities")
    assert imports_bench(source, "tests.unit.domain.test_entities")
