"""The import graph of `kode_tui/`, read from its source with `ast`: what each module imports.

Every import statement counts, wherever it is: at module level, inside a function, under
`if TYPE_CHECKING:`. Relative imports are resolved, and `from package import name` is an import
of the submodule `package.name` when there is one (else of `package`). tests/test_layers.py
checks that the imports point down, tests/test_import_cycles.py that they make no circle.
"""

from __future__ import annotations

import ast
from importlib.util import resolve_name
from pathlib import Path

import kode_tui

PACKAGE = Path(kode_tui.__file__).parent


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """`kode_tui/wire/events.py` is `kode_tui.wire.events`; a package is its `__init__.py`."""
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module name -> the absolute name of every module it imports, outside ones included
    (`textual.widgets`, `json`)."""
    files = {module_name(path, package): path for path in sorted(package.rglob("*.py"))}
    return {name: _imports(name, path, set(files)) for name, path in files.items()}


def _imports(name: str, path: Path, modules: set[str]) -> set[str]:
    # What `from .x import y` is relative to: a package itself, else the package of the module.
    anchor = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = resolve_name("." * node.level + (node.module or ""), anchor)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.add(submodule if submodule in modules else source)
    return found
