"""Imports point down only (DESIGN.md §1): ui -> soul -> tools -> session/wire -> message/config."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.import_graph import PACKAGE, import_graph, module_name

BOTTOM = {
    "kode_tui",
    "kode_tui.message",
    "kode_tui.paths",
    "kode_tui.config",
    "kode_tui.config_save",
    "kode_tui.errors",
    "kode_tui.fsutil",
    "kode_tui.gitcmd",
    "kode_tui.humanize",
    "kode_tui.masking",
    "kode_tui.model_launch",
    "kode_tui.pathnames",
    "kode_tui.prompt_history",
    "kode_tui.safetext",
    "kode_tui.watching",
    "kode_tui.workfiles",
}

# What each layer may import from kode_tui besides itself and the bottom layer.
ALLOWED = {
    "kode_tui.message": set(),
    "kode_tui.paths": set(),
    "kode_tui.config": set(),
    "kode_tui.config_save": set(),
    "kode_tui.fsutil": set(),
    "kode_tui.gitcmd": set(),
    "kode_tui.humanize": set(),
    "kode_tui.masking": set(),
    "kode_tui.model_launch": set(),
    "kode_tui.pathnames": set(),
    "kode_tui.prompt_history": set(),
    "kode_tui.safetext": set(),
    "kode_tui.watching": set(),
    "kode_tui.workfiles": set(),
    "kode_tui.errors": set(),
    "kode_tui.session": set(),
    "kode_tui.wire": set(),
    "kode_tui.tools": {"kode_tui.session", "kode_tui.wire"},
    "kode_tui.soul": {"kode_tui.session", "kode_tui.wire", "kode_tui.tools"},
    "kode_tui.ui": {"kode_tui.wire", "kode_tui.soul"},
    "kode_tui.print_mode": {"kode_tui.wire", "kode_tui.soul"},
    "kode_tui.acp": {"kode_tui.wire", "kode_tui.soul"},
}


def layer(module: str) -> str | None:
    for name in sorted(ALLOWED, key=len, reverse=True):
        if module == name or module.startswith(name + "."):
            return name
    return None


def test_imports_point_down_only() -> None:
    wrong = []
    for module, imported in import_graph().items():
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


FRONT_ENDS = ("kode_tui.ui", "kode_tui.print_mode", "kode_tui.acp")
FACADE = "kode_tui.soul.facade"
FRONT_END_MAY_IMPORT = {FACADE, "kode_tui.wire.events", "kode_tui.wire.readings"} | BOTTOM
"""A front end reaches the domain through the facade alone (DESIGN.md §1): besides it, the
wire's event models and how they read (titles, statuses, summaries: the same in every front
end), and the bottom layer's small helpers (message, config, paths, errors...)."""


def test_front_ends_reach_the_domain_through_the_facade_only() -> None:
    wrong = []
    for module, imported in import_graph().items():
        if not module.startswith(FRONT_ENDS):
            continue
        for target in imported:
            if not target.startswith("kode_tui") or target.startswith(
                ("kode_tui.ui", "kode_tui.acp")
            ):
                continue
            if target not in FRONT_END_MAY_IMPORT:
                wrong.append(f"{module} imports {target}")
    assert not wrong


def test_only_the_soul_and_the_facade_send_wire_events() -> None:
    """A front end renders events; it never puts one on the bus (`bus.send`)."""
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        module = module_name(path)
        if not module.startswith(FRONT_ENDS):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # A widget's `__main__` demo may feed it events; the app never does.
        tree.body = [node for node in tree.body if not _is_main_guard(node)]
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "send"
                and "bus" in ast.unparse(node.func.value)
            ):
                wrong.append(f"{module}:{node.lineno} {ast.unparse(node)}")
    assert not wrong


def _is_main_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)


def test_textual_stays_in_the_ui_and_the_model_libraries_in_the_llm_code() -> None:
    wrong = []
    for module, imported in import_graph().items():
        roots = {name.split(".")[0] for name in imported}
        if "textual" in roots and not module.startswith(("kode_tui.ui", "kode_tui.cli")):
            wrong.append(f"{module} imports textual")
        for library in ("litellm", "openai"):
            if library in roots and not module.startswith(("kode_tui.soul.llm", "kode_tui.tools")):
                wrong.append(f"{module} imports {library}")
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


def test_the_agent_loads_image_and_web_libraries_only_when_a_tool_uses_them() -> None:
    """Pillow, httpx, BeautifulSoup, markdownify and textual-image load at the first image,
    page or picture, not with the tool set: an agent that never uses them starts without them
    (~130 ms and ~10 MiB)."""
    import subprocess
    import sys

    libraries = ("PIL", "httpx", "bs4", "markdownify", "textual_image")
    code = (
        "import sys, kode_tui.soul.agent, kode_tui.soul.facade, kode_tui.ui.app\n"
        "from kode_tui.ui.widgets import blocks, conversation, prompt, prompt_images\n"
        f"print(sorted(m for m in {libraries!r} if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"


def test_a_new_sessions_agent_loads_without_the_parts_only_commands_and_tools_use(
    tmp_path: Path,
) -> None:
    """Opening a new session and building its agent is what a front end waits for before the
    first request: the command registry, stream-json, time travel, search, the MCP client (no
    server is configured), the libraries Glob, Grep, Shell's scopes and `.gitignore` rules
    use, tenacity (a model call's retries, after its first failure), SearchWeb (no search
    provider is configured) and configparser (no INI file is read for the code style) load
    when they are used; the project context's watch needs no anyio backend."""
    import subprocess
    import sys

    later = (
        "kode_tui.soul.facade.builtins",
        "kode_tui.soul.facade.commands",
        "kode_tui.soul.stream_json",
        "kode_tui.soul.facade.travel",
        "kode_tui.soul.timetravel",
        "kode_tui.session.timetravel",
        "kode_tui.session.search",
        "kode_tui.session.catalog",
        "kode_tui.tools.command_scope",
        "kode_tui.tools.mcp_client",
        "wcmatch",
        "bracex",
        "pathspec",
        "tenacity",
        "kode_tui.tools.web_search",
        "configparser",
        "anyio._backends._asyncio",
    )
    code = (
        "import asyncio, pathlib, sys\n"
        "from kode_tui.config import load_config, resolve_model\n"
        "from kode_tui.soul.facade import AgentSession\n"
        "async def main():\n"
        "    config = load_config(None)\n"
        "    opened = await AgentSession.open(pathlib.Path(sys.argv[1]))\n"
        "    await opened.start(config, resolve_model(config, 'demo'), announce=False)\n"
        "    await opened.close()\n"
        "asyncio.run(main())\n"
        f"print(sorted(m for m in {later!r} if m in sys.modules), 'kode_tui.tools.shell' in "
        "sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert result.stdout.strip() == "[] True"
