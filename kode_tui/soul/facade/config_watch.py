"""config.toml read again whenever it changes: a model alias added, a retry limit raised, a
theme switched apply without a restart (docs/configuration.md says what applies when).

The facade owns the config: this module watches and reads the file, `AgentSession.use_config`
applies what it can to the session and says what changed; a front end only shows that line.
A file that does not load (half written, say) keeps the config in use and is said in the one
line a start with it would have printed. The folder is watched, not the file: editors replace a
file rather than write it in place, and a file that does not exist yet may appear.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from kode_tui.config import Config, load_config
from kode_tui.errors import ConfigError
from kode_tui.paths import Paths

__all__ = ["NEXT_SESSION", "read_again", "watch_config", "what_changed"]

DEBOUNCE_MS = 300
"""Changes this close together are one: an editor's save is often a write and a rename."""

NEXT_SESSION = ("approval_mode", "hooks", "mcp", "sandbox", "tools", "web", "context")
"""What the agent is built from: a config read again changes them for the next session (hooks
and MCP servers run commands: none starts or changes mid-session unseen)."""


def read_again(config_file: Path | None) -> Config | str | None:
    """The config file (`--config`; None: the home's) read again: its Config, else the one line
    saying why it does not load, ending `(the config in use stays)`; None while the file is
    missing (an editor between deleting and writing it: the config in use stays, unsaid)."""
    file = config_file or Paths.current().config_file
    if not file.exists():
        return None
    try:
        return load_config(config_file)
    except ConfigError as error:
        return f"{error} (the config in use stays)"


def what_changed(old: Config, new: Config) -> list[str]:
    """What differs between two configs, in a few words each: `model two added`, `loop_control
    changed`, `hooks: from the next session`, `default_model: at the next start`."""
    said = [*_models_changed(old.models, new.models)]
    now = ("loop_control", "notifications", "pictures")
    said += [f"{name} changed" for name in now if getattr(old, name) != getattr(new, name)]
    if old.compaction.review != new.compaction.review:
        said.append("compaction.review changed")
    later = [name for name in NEXT_SESSION if getattr(old, name) != getattr(new, name)]
    if old.compaction.strategy != new.compaction.strategy:
        later.append("compaction.strategy")
    if later:
        said.append(f"{', '.join(later)}: from the next session")
    if old.default_model != new.default_model:
        said.append("default_model: at the next start")
    return said


def _models_changed(old: Mapping[str, object], new: Mapping[str, object]) -> list[str]:
    said = []
    for verb, names in (
        ("added", [name for name in new if name not in old]),
        ("changed", [name for name in new if name in old and old[name] != new[name]]),
        ("removed", [name for name in old if name not in new]),
    ):
        if names:
            noun = "model" if len(names) == 1 else "models"
            said.append(f"{noun} {', '.join(names)} {verb}")
    return said


async def watch_config(
    config_file: Path | None,
    use: Callable[[Config], Awaitable[str | None]],
    say: Callable[[str, bool], None],
) -> None:
    """Until cancelled: whenever the config file (`config_file`; None: the home's) changes,
    read it again (`read_again`) and hand a config that loads to `use`, then `say` (line,
    is_error) what `use` answered, if anything; a file that does not load is said as an error.
    Every change is read after it settled, so the last read is the file as saved."""
    # Imported here: the first frame need not wait for watchfiles' Rust extension.
    from kode_tui import watching

    file = config_file or Paths.current().config_file
    target = file.resolve()  # a symlinked config (dotfiles) changes where it points
    if not target.parent.is_dir():
        return

    def is_the_file(_change: object, path: str) -> bool:
        return Path(path).name == target.name

    async for _changes in watching.changes(
        target.parent, watch_filter=is_the_file, debounce=DEBOUNCE_MS, step=50, recursive=False
    ):
        read = await asyncio.to_thread(read_again, config_file)
        if isinstance(read, str):
            say(read, True)
        elif read is not None:
            note = await use(read)
            if note is not None:
                say(f"{file.name} read again{': ' if note else ''}{note}", False)
