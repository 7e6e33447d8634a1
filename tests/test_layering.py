"""The layering is enforced, not hoped for: an AST walk over every module.

An AST check rather than import-linter: no extra tool, no config file to keep in
step, and the rules read as the sentences DESIGN.md writes them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Modules of the domain: pure, no store, no screen, no facade.
DOMAIN = (
    "tokenize",
    "bm25",
    "ranking",
    "rankers",
    "chunks",
    "metrics",
    "classic",
    "entities",
    "readers",
    "postings",
)
#: What a page may import from core: the facade and pure formatting helpers.
PAGE_ALLOWED_CORE = ("core.service", "core.presentation", "core.highlight", "core.settings")


def imported_modules(source: str, module: str) -> set[str]:
    """Every module an import statement in ``source`` names (``a.b`` also yields ``a``)."""
    found: set[str] = set()
    package = module.rsplit(".", 1)[0] if "." in module else ""
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, base] if base else parts)
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for name in names:
            pieces = name.split(".")
            found.update(".".join(pieces[: i + 1]) for i in range(len(pieces)))
    return found


def python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def test_the_checker_sees_every_form_of_import() -> None:
    source = "import streamlit as st\nfrom core.stores import memory\nfrom ..stores.port import X\n"
    found = imported_modules(source, "core.sub.mod")
    assert {"streamlit", "core.stores", "core.stores.memory", "core.stores.port"} <= found


@pytest.mark.parametrize("path", python_files("core"), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_never_imports_streamlit(path: Path) -> None:
    found = imported_modules(path.read_text(encoding="utf-8"), module_name(path))
    assert "streamlit" not in found, f"{path.name} imports streamlit: core must not know screens"


@pytest.mark.parametrize("name", DOMAIN)
def test_the_domain_never_imports_a_store_or_the_facade(name: str) -> None:
    path = ROOT / "core" / f"{name}.py"
    if not path.exists():
        pytest.fail(f"core/{name}.py is part of the domain and must exist")
    found = imported_modules(path.read_text(encoding="utf-8"), f"core.{name}")
    forbidden = {"core.stores", "core.service", "core.indexing", "asyncpg", "streamlit"} & found
    assert not forbidden, f"core/{name}.py imports {sorted(forbidden)}"


def page_files() -> list[Path]:
    return [ROOT / "app.py", *python_files("pages")]


@pytest.mark.parametrize("path", page_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_screens_reach_core_only_through_the_facade(path: Path) -> None:
    if not path.exists():
        pytest.fail(f"{path.name} is missing")
    found = imported_modules(path.read_text(encoding="utf-8"), module_name(path))
    deeper = {
        name
        for name in found
        if name.startswith("core.") and not name.startswith(PAGE_ALLOWED_CORE)
    }
    assert not deeper, f"{path.name} imports {sorted(deeper)}: pages call core.service only"


#: The facade's screen families: each stands alone on the shared runner and common views.
SERVICE_FAMILIES = ("search", "analysis", "library", "corpus")


@pytest.mark.parametrize("name", SERVICE_FAMILIES)
def test_a_screen_family_of_the_facade_depends_only_on_the_runner_and_common(name: str) -> None:
    path = ROOT / "core" / "service" / f"{name}.py"
    if not path.exists():
        pytest.fail(f"core/service/{name}.py is a screen family and must exist")
    found = imported_modules(path.read_text(encoding="utf-8"), f"core.service.{name}")
    siblings = {m for m in found if m.startswith("core.service.") and m.count(".") == 2} - {
        "core.service.runner",
        "core.service.common",
    }
    assert not siblings, f"core/service/{name}.py imports {sorted(siblings)}"
