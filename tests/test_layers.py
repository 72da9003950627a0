"""Imports point down only (DESIGN.md §1): ui -> soul -> tools -> session/wire -> message/config."""

from __future__ import annotations

import ast
from pathlib import Path

import kode_tui

PACKAGE = Path(kode_tui.__file__).parent
BOTTOM = {
    "kode_tui",
    "kode_tui.message",
    "kode_tui.paths",
    "kode_tui.config",
    "kode_tui.errors",
    "kode_tui.fsutil",
    "kode_tui.gitcmd",
    "kode_tui.humanize",
    "kode_tui.masking",
    "kode_tui.pathnames",
    "kode_tui.safetext",
}

# What each layer may import from kode_tui besides itself and the bottom layer.
ALLOWED = {
    "kode_tui.message": set(),
    "kode_tui.paths": set(),
    "kode_tui.config": set(),
    "kode_tui.fsutil": set(),
    "kode_tui.gitcmd": set(),
    "kode_tui.humanize": set(),
    "kode_tui.masking": set(),
    "kode_tui.pathnames": set(),
    "kode_tui.safetext": set(),
    "kode_tui.errors": set(),
    "kode_tui.session": set(),
    "kode_tui.wire": set(),
    "kode_tui.tools": {"kode_tui.session", "kode_tui.wire"},
    "kode_tui.soul": {"kode_tui.session", "kode_tui.wire", "kode_tui.tools"},
    "kode_tui.ui": {"kode_tui.session", "kode_tui.wire", "kode_tui.tools", "kode_tui.soul"},
}


def modules() -> dict[str, set[str]]:
    """Module name -> every module it imports (absolute names)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module)
        found[name] = imported
    return found


def layer(module: str) -> str | None:
    for name in sorted(ALLOWED, key=len, reverse=True):
        if module == name or module.startswith(name + "."):
            return name
    return None


def test_imports_point_down_only() -> None:
    wrong = []
    for module, imported in modules().items():
        own = layer(module)
        if own is None:  # cli.py and __main__ may import everything
            continue
        for target in imported:
            if not target.startswith("kode_tui") or target in BOTTOM:
                continue
            target_layer = layer(target)
            if target_layer != own and target_layer not in ALLOWED[own]:
                wrong.append(f"{module} imports {target}")
    assert not wrong


def test_textual_stays_in_the_ui_and_litellm_in_the_llm_code() -> None:
    wrong = []
    for module, imported in modules().items():
        roots = {name.split(".")[0] for name in imported}
        if "textual" in roots and not module.startswith(("kode_tui.ui", "kode_tui.cli")):
            wrong.append(f"{module} imports textual")
        if "litellm" in roots and not module.startswith(("kode_tui.soul.llm", "kode_tui.tools")):
            wrong.append(f"{module} imports litellm")
    assert not wrong


def test_the_first_frame_does_not_wait_for_pydantic() -> None:
    """The app's module loads the domain after its first frame; the helpers every layer uses
    (masking, safetext, pathnames) must not drag pydantic (~40 ms) into that first import."""
    import subprocess
    import sys

    code = "import sys, kode_tui.ui.app; print('pydantic' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"
