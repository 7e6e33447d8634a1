"""The layering is enforced, not hoped for: an AST walk over every module.

The layers are folders of ``core`` (``domain``, ``analysis``, ``ingest``, ``stores``,
``service``), and the rules are about import prefixes, so a module added to a folder is
held to its layer's rule without anyone updating a list. An AST check rather than
import-linter: no extra tool, no config file to keep in step, and the rules read as the
sentences docs/layout.md writes them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The layers, lowest first: what each may import from core besides its own folder.
#: ``core.checkpoint`` (giving way to interactive calls) and ``core.processes`` (workers that
#: never run the caller's script again) are the runtime primitives any layer above the domain
#: may use.
LAYERS: dict[str, tuple[str, ...]] = {
    "core.domain": (),
    "core.ingest": ("core.domain", "core.checkpoint", "core.processes", "core.stores.port"),
    "core.analysis": ("core.domain", "core.checkpoint", "core.ingest.jsonlines"),
    "core.stores": ("core.domain", "core.checkpoint", "core.processes", "core.settings"),
}
#: What no layer below the facade may import at all, whatever it is allowed from core.
NEVER_BELOW_THE_FACADE = ("streamlit", "core.service")
#: What the domain, in particular, may not reach even indirectly by name.
NOT_IN_THE_DOMAIN = ("asyncpg",)
#: What a page may import from core: the facade and pure formatting helpers.
PAGE_ALLOWED_CORE = (
    "core.service",
    "core.analysis.presentation",
    "core.analysis.marking",
    "core.analysis.explanation_html",
    "core.analysis.sentences",
    "core.settings",
)


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
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def core_imports(path: Path) -> set[str]:
    """The most specific ``core.…`` names a module imports (prefixes of them dropped)."""
    found = imported_modules(path.read_text(encoding="utf-8"), module_name(path))
    core = {name for name in found if name.startswith("core.")}
    return {name for name in core if not any(o.startswith(name + ".") for o in core)}


def allowed(name: str, own: str, extra: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in (own, *extra))


def test_the_checker_sees_every_form_of_import() -> None:
    source = "import streamlit as st\nfrom core.stores import memory\nfrom ..stores.port import X\n"
    found = imported_modules(source, "core.sub.mod")
    assert {"streamlit", "core.stores", "core.stores.memory", "core.stores.port"} <= found


def test_every_module_of_core_sits_in_a_layer_folder_or_is_named_at_the_top() -> None:
    top = {p.stem for p in (ROOT / "core").glob("*.py")}
    named = {"__init__", "__main__", "settings", "checkpoint", "processes"}
    assert top <= named, sorted(top)
    folders = {p.name for p in (ROOT / "core").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == {"domain", "analysis", "ingest", "stores", "service", "terminal"}, sorted(
        folders
    )


@pytest.mark.parametrize("path", python_files("core"), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_never_imports_streamlit(path: Path) -> None:
    found = imported_modules(path.read_text(encoding="utf-8"), module_name(path))
    assert "streamlit" not in found, f"{path.name} imports streamlit: core must not know screens"


def layered_files() -> list[tuple[str, Path]]:
    return [(layer, path) for layer in LAYERS for path in python_files(layer.replace(".", "/"))]


@pytest.mark.parametrize(
    ("layer", "path"),
    layered_files(),
    ids=lambda v: str(v.relative_to(ROOT)) if isinstance(v, Path) else v,
)
def test_a_layer_imports_only_itself_and_the_layers_below(layer: str, path: Path) -> None:
    found = imported_modules(path.read_text(encoding="utf-8"), module_name(path))
    upward = {n for n in core_imports(path) if not allowed(n, layer, LAYERS[layer])}
    never = set(NEVER_BELOW_THE_FACADE) & found
    if layer == "core.domain":
        never |= set(NOT_IN_THE_DOMAIN) & found
    assert not upward and not never, f"{path.name} ({layer}) imports {sorted(upward | never)}"


#: What the settings (read by every layer from the stores up) may import from core.
SETTINGS_ALLOWED_CORE = ("core.domain",)


def test_the_settings_import_nothing_of_core_above_the_domain() -> None:
    path = ROOT / "core" / "settings.py"
    upward = {
        n for n in core_imports(path) if not allowed(n, "core.settings", SETTINGS_ALLOWED_CORE)
    }
    assert not upward, f"core/settings.py imports {sorted(upward)}: every layer reads the settings"


def test_the_layer_rule_catches_a_domain_module_importing_a_store() -> None:
    source = "from core.stores.port import ChunkStore\n"
    path = ROOT / "core" / "domain" / "bm25.py"
    found = imported_modules(source, module_name(path))
    core = {n for n in found if n.startswith("core.")}
    most = {n for n in core if not any(o.startswith(n + ".") for o in core)}
    assert {n for n in most if not allowed(n, "core.domain", LAYERS["core.domain"])} == {
        "core.stores.port.ChunkStore"
    }


def page_files() -> list[Path]:
    return [ROOT / "app.py", *python_files("pages")]


@pytest.mark.parametrize("path", page_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_screens_reach_core_only_through_the_facade(path: Path) -> None:
    if not path.exists():
        pytest.fail(f"{path.name} is missing")
    deeper = {name for name in core_imports(path) if not name.startswith(PAGE_ALLOWED_CORE)}
    assert not deeper, f"{path.name} imports {sorted(deeper)}: pages call core.service only"


#: Service modules that are no screen family but what families share besides the runner and
#: ``common``: how an Evaluate run ranks one query (its spec, an expanded run's second read).
SHARED_BY_FAMILIES = ("run_ranking",)


def service_families() -> list[Path]:
    skip = {"__init__", "runner", "common", "facade", "access", *SHARED_BY_FAMILIES}
    return [p for p in python_files("core/service") if p.stem not in skip]


@pytest.mark.parametrize("path", service_families(), ids=lambda p: p.stem)
def test_a_screen_family_of_the_facade_depends_only_on_the_runner_and_common(path: Path) -> None:
    found = imported_modules(path.read_text(encoding="utf-8"), module_name(path))
    siblings = {m for m in found if m.startswith("core.service.") and m.count(".") == 2} - {
        "core.service.runner",
        "core.service.common",
        *(f"core.service.{shared}" for shared in SHARED_BY_FAMILIES),
        f"core.service.{path.stem}",
    }
    assert not siblings, f"core/service/{path.name} imports {sorted(siblings)}"
