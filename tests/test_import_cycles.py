"""No package of core imports itself in a circle: each can be read from its leaves up.

A circle (``readers`` asked the worker to parse, the worker imported ``readers`` to serve)
means neither module can be understood, tested or replaced alone, and Python's partial-import
errors show up only in whichever order a caller happens to import. The check is an AST walk
over the modules of each package, as tests/test_layering.py walks them for layers; imports
inside functions count too (they still tie the two modules together).
"""

from __future__ import annotations

import pytest

from tests.test_layering import ROOT, core_imports, module_name, python_files

#: The packages held to "no circle" (each checked among its own modules); ``core`` is all of it.
ACYCLIC_PACKAGES = ("core", "core/ingest", "core/stores/postgres", "core/service")


def import_graph(folder: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports."""
    modules = {module_name(path): path for path in python_files(folder)}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        named = core_imports(path)
        # Each import counts for the most specific module it names (``a.b.c`` is module
        # ``a.b`` when ``c`` is a name in it), not for every package above it.
        targets = set()
        for n in named:
            owners = [m for m in modules if n == m or n.startswith(m + ".")]
            if owners:
                targets.add(max(owners, key=len))
        graph[name] = targets - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports in ``graph`` (its modules in order), or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_the_cycle_finder_names_a_circle_and_passes_a_tree() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize("folder", ACYCLIC_PACKAGES)
def test_a_package_of_core_has_no_import_circle(folder: str) -> None:
    graph = import_graph(folder)
    assert len(graph) > 3, f"{folder}: too few modules found"
    cycle = find_cycle(graph)
    assert cycle is None, f"{folder} imports in a circle: {' -> '.join(cycle or [])}"


def test_the_parse_sandbox_imports_no_reader() -> None:
    formats = ("readers", "plain_text", "html_text", "pdf_text", "docx_text", "beir", "folders")
    readers = tuple(f"core.ingest.{name}" for name in formats)
    imported = core_imports(ROOT / "core" / "ingest" / "parse_worker.py")
    assert not {n for n in imported if n.startswith(readers)}, sorted(imported)
