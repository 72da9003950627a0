"""No import circles in kode_tui/ (STYLE.md 6e): a module never imports, directly or through
others, a module that imports it; a circle is two concerns knotted together, whatever the import
is hidden in (a function, `TYPE_CHECKING`)."""

from __future__ import annotations

from collections.abc import Mapping, Set
from pathlib import Path

from tests.import_graph import import_graph


def circles(graph: Mapping[str, Set[str]]) -> set[frozenset[str]]:
    """The modules that reach themselves through their imports, grouped: each group holds the
    modules that all reach each other (a strongly connected component)."""
    reach = {module: _reachable(graph, module) for module in graph}
    return {
        frozenset(other for other in reach[module] if module in reach[other])
        for module in graph
        if module in reach[module]
    }


def _reachable(graph: Mapping[str, Set[str]], start: str) -> set[str]:
    """Every module of `graph` that `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for imported in graph[todo.pop()] & graph.keys():
            if imported not in seen:
                seen.add(imported)
                todo.append(imported)
    return seen


def described(circle: frozenset[str], graph: Mapping[str, Set[str]]) -> str:
    """A circle as the imports that make it: `a imports b; b imports a`."""
    return "; ".join(
        f"{module} imports {', '.join(sorted(graph[module] & circle))}" for module in sorted(circle)
    )


def test_no_module_imports_itself_through_others() -> None:
    graph = import_graph()
    found = [described(circle, graph) for circle in circles(graph)]
    assert not found, "import circles:\n" + "\n".join(found)


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """Imports in a function, under TYPE_CHECKING and relative ones all make edges, and
    `from package import module` is an edge to the module."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "def later():\n    from pkg.sub import b\n",
        "sub/__init__.py": "from . import b\n",
        "sub/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..c import C\n",
        "c.py": "import json\nfrom pkg import a\nclass C: ...\n",
        "d.py": "from .sub import b\n",
    }
    for name, text in files.items():
        (package / name).write_text(text)
    graph = import_graph(package)
    assert graph["pkg.a"] == {"pkg.sub.b"}
    assert graph["pkg.sub"] == {"pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"typing", "pkg.c"}
    assert graph["pkg.c"] == {"json", "pkg.a"}
    assert graph["pkg.d"] == {"pkg.sub.b"}
    assert circles(graph) == {frozenset({"pkg.a", "pkg.sub.b", "pkg.c"})}
    assert described(frozenset({"pkg.a", "pkg.sub.b", "pkg.c"}), graph) == (
        "pkg.a imports pkg.sub.b; pkg.c imports pkg.a; pkg.sub.b imports pkg.c"
    )
