"""Pydantic's plugins are off in kode-tui's processes.

At its first model pydantic looks for plugins (hooks such as an observability tool's, which it
finds among every installed package's entry points): it imports importlib.metadata, with email,
zipfile and csv (~9 ms on the 2-core bench machine), and reads the entry points (~5 ms), on the
UI's way from its first frame to the first request. kode-tui has no use for a plugin watching
its own models, so the `kode-tui` command (`cli.run`) turns them off before pydantic loads: the
model process through pydantic's own `PYDANTIC_DISABLE_PLUGINS` (`model_launch`), the UI
process by answering pydantic's `get_plugins()` itself, since that variable would reach every
program the user runs from it (a Shell command's own pydantic, an MCP server's) and still leave
the import. Only the command's process: tests and an embedding program keep pydantic's.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable
from typing import Any

LOADER = "pydantic.plugin._loader"
"""Where pydantic finds its plugins: `get_plugins()`, the one name pydantic imports from it
(`pydantic.plugin._schema_validator`, at a model's first validator)."""


def turn_off() -> None:
    """No pydantic plugin in this process (call before pydantic's first model; a loader
    already imported is left as it is)."""
    if LOADER in sys.modules:
        return
    loader = types.ModuleType(
        LOADER, "kode-tui: no pydantic plugins (kode_tui/pydantic_plugins.py)"
    )
    loader.get_plugins = _no_plugins  # type: ignore[attr-defined]
    sys.modules[LOADER] = loader


def _no_plugins(*_: Any, **__: Any) -> Iterable[Any]:
    return ()
