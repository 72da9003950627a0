"""Pydantic's plugins are off in the `kode-tui` command's process (kode_tui/pydantic_plugins.py):
looking for them imported importlib.metadata and read every package's entry points between the
UI's first frame and the first request."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kode_tui import cli, model_launch, pydantic_plugins
from tests.child_python import printed


def test_the_domain_loads_and_validates_without_looking_for_plugins(tmp_path: Path) -> None:
    """As the UI loads after its first frame: the config read and checked, the agent's modules
    and their models built, without importlib.metadata; a model still validates and refuses."""
    code = (
        "import sys\n"
        "from kode_tui import pydantic_plugins\n"
        "pydantic_plugins.turn_off()\n"
        "from kode_tui.ui import preload\n"
        "config, choice = preload.settings_after_first_frame(None, None)\n"
        "from kode_tui.config import LoopControl\n"
        "try:\n"
        "    LoopControl.model_validate({'max_steps_per_run': 'many'})\n"
        "except ValueError:\n"
        "    refused = True\n"
        "print('importlib.metadata' in sys.modules, choice.model, refused)\n"
    )
    env = model_launch._child_environment()
    env.pop("PYDANTIC_DISABLE_PLUGINS")
    env.update(KODE_TUI_HOME=str(tmp_path), KODE_TUI_OLLAMA_URL="")
    assert printed(code, env) == ["False", "demo", "True"]


def test_the_command_turns_them_off_before_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, pydantic_plugins.LOADER, raising=False)
    loaders = []
    monkeypatch.setattr(
        cli, "main", lambda: loaders.append(sys.modules.get(pydantic_plugins.LOADER)) or 0
    )
    monkeypatch.setattr(cli.model_launch, "stop_early", lambda: None)

    def leave(status: int) -> None:
        raise SystemExit(status)

    monkeypatch.setattr(cli.os, "_exit", leave)
    with pytest.raises(SystemExit):
        cli.run()
    assert loaders and list(loaders[0].get_plugins()) == []


def test_a_loader_already_imported_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    import pydantic.plugin._loader as real

    pydantic_plugins.turn_off()
    assert sys.modules[pydantic_plugins.LOADER] is real
