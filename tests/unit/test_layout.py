"""The maps of the code are true: docs/layout.md, each package's docstring, every path cited.

A newcomer finds the file to change from docs/layout.md and the package docstrings; a map that
names a moved module, misses a package or cites a file the repository does not have sends them
the wrong way, so each of those fails here. The module table is generated from the docstrings
(``scripts/layout.py``); these tests hold that it was regenerated.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import layout  # noqa: E402

#: A path of the repository as docs and docstrings cite one.
CITED = re.compile(
    r"(?<![\w/.-])((?:core|pages|tests|bench|tools|scripts|docs|data)/[\w/.-]*\w"
    r"\.(?:py|md|sh|jsonl|json|csv|png|toml))(?![\w.])"
)
#: Files whose citations are history, not maps (the benchmarks' dated diary).
HISTORY = {"bench/history.md"}
#: Where benches write their figures: a cited result file exists once its bench has run.
WRITTEN_BY_RUNS = "bench/results/"
#: The contract document kept outside the repository, which no file here may send a reader to.
OUTSIDE = "DESIGN" + ".md"
#: Folders whose files are checked for citations.
CITING = ("docs", "core", "pages", "tools", "bench", "scripts", "tests")


def packages() -> list[Path]:
    return sorted(
        p.parent
        for tree in layout.TREES
        for p in (ROOT / tree).rglob("__init__.py")
        if "__pycache__" not in p.parts
    )


def test_the_module_table_in_docs_layout_is_the_one_the_docstrings_make() -> None:
    text = layout.LAYOUT.read_text(encoding="utf-8")
    assert layout.regenerated(text) == text, (
        "docs/layout.md is stale: a module was added, moved or removed, or its docstring's "
        "first sentence changed. Run .venv/bin/python scripts/layout.py"
    )


@pytest.mark.parametrize("path", layout.modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_says_what_it_is_in_its_first_sentence(path: Path) -> None:
    assert layout.first_sentence(path), f"{path.relative_to(ROOT)} has no docstring"


@pytest.mark.parametrize("package", packages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_package_docstring_names_each_module_and_package_it_holds(package: Path) -> None:
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
    assert doc, f"{package.relative_to(ROOT)}/__init__.py has no docstring"
    held = [p.stem for p in package.glob("*.py") if p.name != "__init__.py"]
    held += [d.name for d in package.iterdir() if (d / "__init__.py").exists()]
    unnamed = [n for n in held if not re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", doc)]
    assert not unnamed, f"{package.relative_to(ROOT)}'s docstring does not name {unnamed}"


def prose_of(source: str) -> str:
    """A module's docstrings and comments: where it cites files (its strings may be test data)."""
    tree = ast.parse(source)
    docs = [
        ast.get_docstring(node) or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    comments = [line.split("#", 1)[1] for line in source.splitlines() if "#" in line]
    return "\n".join(docs + comments)


def citations() -> list[tuple[str, str]]:
    """(citing file, cited path) for every repository path a doc or module cites."""
    found = []
    files = [ROOT / "README.md"] + [
        p for folder in CITING for p in (ROOT / folder).rglob("*") if p.suffix in (".md", ".py")
    ]
    for path in files:
        name = path.relative_to(ROOT).as_posix()
        if name in HISTORY or "__pycache__" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".py":
            text = prose_of(text)
        for match in CITED.finditer(text):
            found.append((name, match.group(1)))
    return found


def test_every_path_a_doc_or_a_module_cites_is_in_the_repository() -> None:
    missing = sorted(
        {(f, c) for f, c in citations() if not (ROOT / c).exists() and WRITTEN_BY_RUNS not in c}
    )
    assert not missing, f"cited but not in the repository: {missing}"


def test_no_file_cites_a_design_document_the_repository_does_not_hold() -> None:
    citing = sorted({f for f, _ in citations()})
    assert citing, "the citation scan found nothing: the pattern is broken"
    for folder in CITING:
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            assert OUTSIDE not in text or (ROOT / OUTSIDE).exists(), path


def test_the_checklists_name_only_files_that_exist() -> None:
    text = layout.LAYOUT.read_text(encoding="utf-8")
    hand = text[: text.index(layout.BEGIN)]
    named = re.findall(r"`([\w./<>-]+/[\w.<>-]+)`", hand)
    assert len(named) > 20, "the how-to checklists name too few files"
    missing = [n for n in named if "<" not in n and not (ROOT / n.rstrip("/")).exists()]
    assert not missing, f"docs/layout.md names files that do not exist: {missing}"


#: Longest module in lines: past it a module is two things (issue 45's bound).
MAX_MODULE_LINES = 600


@pytest.mark.parametrize("path", layout.modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_is_over_six_hundred_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(ROOT)}: {lines} lines; split it"
