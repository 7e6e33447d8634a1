"""bench/ only benchmarks: nothing outside it imports it, but a bench's own test.

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
    """Whether ``source`` (the text of ``module``) imports from ``bench`` anything but its own
    subject: a bench's own test (``test_bench_entities`` for ``bench.bench_entities``) may
    import that bench, as any test imports what it tests; nothing else may."""
    stem = module.rsplit(".", 1)[-1]
    own = "bench." + stem.removeprefix("test_") if stem.startswith("test_bench_") else None

    def allowed(name: str) -> bool:
        return own is not None and (name in ("bench", own) or name.startswith(own + "."))

    names = imported_modules(source, module)
    return any(
        (name == "bench" or name.startswith("bench.")) and not allowed(name) for name in names
    )


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


def test_a_benchs_own_test_may_import_that_bench_and_no_other() -> None:
    own = "from bench.bench_entities import score\n"
    assert not imports_bench(own, "tests.unit.test_bench_entities")
    other = "from bench.bench_load import server\n"
    assert imports_bench(other, "tests.unit.test_bench_entities")
