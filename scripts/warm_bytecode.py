"""Write the bytecode of what the app imports, once, at install (issue 50 item 1).

uv installs no ``.pyc`` files, so a fresh clone's first ``streamlit run`` compiled every module
it imported while the newcomer waited: ``import streamlit``, pandas, plotly and lexplain's own
modules were about 4-5 s of the first page (bench_first_result ``--import-times``). pip compiles
at install by default; this does the same for exactly what the app imports, found by reading
the import statements of ``app.py``, ``pages/`` and ``core/`` (so a new import is warmed without
a list to keep in step) plus what ``streamlit run`` and ``st.dataframe`` import on their own.

Rejected: ``uv pip install --compile-bytecode`` (the whole environment, ~9,000 files of which the
app imports a fraction: about 17 s more install for the same app time) and compiling on the
first page in a background thread (the same CPU, on the same 2 cores, while the newcomer waits).

Page scripts are never imported (importing one would run it); every module of ``core`` and the
helper modules of ``pages`` are, which runs nothing but definitions. Run by ``scripts/setup.sh``
after each install, in the project's folder: ``.venv/bin/python scripts/warm_bytecode.py``.
"""

from __future__ import annotations

import ast
import compileall
import importlib
import importlib.util
import sys
import time
import warnings
from pathlib import Path

#: The project's folder (this file is in scripts/).
ROOT = Path(__file__).resolve().parents[1]
#: Imported by ``streamlit run`` and by ``st.dataframe``, never by lexplain's own code.
BESIDE = ("streamlit.web.bootstrap", "streamlit.dataframe_util", "pyarrow", "pandas")
#: Compiled whole: Streamlit's server imports its own modules as it goes (its web server stack,
#: icons, emoji), which no import statement of ours names; together ~1,000 small files.
WHOLE = ("streamlit", "uvicorn", "starlette", "websockets", "anyio", "h11", "pyarrow")


def page_scripts() -> set[str]:
    """The screens app.py runs as scripts (each ``st.Page`` of a ``pages`` file): not imported."""
    tree = ast.parse((ROOT / "app.py").read_text())
    return {
        node.value.removesuffix(".py").replace("/", ".")
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("pages/")
    }


def project_files() -> list[Path]:
    """``app.py`` and every Python file of ``pages/`` and ``core/``."""
    pages = sorted((ROOT / "pages").rglob("*.py"))
    return [ROOT / "app.py", *pages, *sorted((ROOT / "core").rglob("*.py"))]


def module_name(path: Path) -> str:
    """``core/service/facade.py`` -> ``core.service.facade`` (``__init__`` names its package)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_names(paths: list[Path]) -> set[str]:
    """Every module named by an absolute import statement in ``paths``."""
    names: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
    return names


def modules_to_import() -> list[str]:
    """What the app imports: the statements' modules, the project's own modules, ``BESIDE``."""
    scripts = page_scripts()
    files = project_files()
    own = {
        module_name(path)
        for path in files
        if path.name not in ("app.py", "__main__.py")  # a __main__ runs when imported
    } - scripts
    wanted = (imported_names(files) | own | set(BESIDE)) - scripts - {"__future__"}
    return sorted(wanted)


def warm(whole: tuple[str, ...] = WHOLE, modules: list[str] | None = None) -> tuple[int, list[str]]:
    """Compile ``whole`` packages, import ``modules`` (default: what the app imports).

    Returns how many modules are loaded and which of ``modules`` could not be imported.
    """
    # Writing it is the point, whatever PYTHONDONTWRITEBYTECODE says.
    sys.dont_write_bytecode = False
    sys.path.insert(0, str(ROOT))
    compileall.compile_file(str(ROOT / "app.py"), quiet=1)
    for package in whole:
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            compileall.compile_dir(folder, quiet=1, workers=0)
    failed = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in modules_to_import() if modules is None else modules:
            try:
                importlib.import_module(name)
            except Exception:  # optional or platform modules: nothing to warm
                failed.append(name)
    return len(sys.modules), failed


def main() -> None:
    started = time.perf_counter()
    loaded, failed = warm()
    seconds = time.perf_counter() - started
    print(f"bytecode written for {loaded:,} modules in {seconds:.1f} s", file=sys.stderr)
    if failed:
        print("not importable here (skipped): " + ", ".join(failed), file=sys.stderr)


if __name__ == "__main__":
    main()
