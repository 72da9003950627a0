"""What the app loads after its first frame, imported in a thread.

The first frame needs Textual, the prompt and a new session's side panes alone; then the
config and the facade (the session engine, the agent) load: ~0.15 s of imports on a 2-core
machine, and the conversation's (~45 ms) when it is mounted (`conversation_loaded`). Imported
on the event loop, they held it: keys typed at the prompt meanwhile showed only after them, and
a message typed and sent at once went that much later. In a thread, the loop takes its turns
between theirs (the interpreter switches threads every few milliseconds), so the prompt shows
what is typed while they load. The config is read and the model chosen in the same thread
(`settings_after_first_frame`): each hop between the loop and a thread waited for the other's
turn, while the first message typed waited for all of them.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kode_tui.config import Config, ModelChoice

AFTER_FIRST_FRAME = (
    "kode_tui.config",
    "kode_tui.soul.facade",
    "kode_tui.ui.widgets.approval",
    "kode_tui.ui.widgets.banner",
    "kode_tui.ui.widgets.mode_badge",
)
"""In the order the app uses them: the config, the facade, the panes `attach()` mounts. The
conversation's are `CONVERSATION`'s."""

CONVERSATION = "kode_tui.ui.widgets.conversation"
"""The conversation pane and its blocks, Markdown and syntax (~45 ms): a message typed while
the agent started goes before they load (`conversation_loaded`)."""


def load_after_first_frame() -> None:
    """Import `AFTER_FIRST_FRAME` and the agent's modules (in a thread: `asyncio.to_thread`)."""
    for name in AFTER_FIRST_FRAME:
        importlib.import_module(name)
    from kode_tui.soul.facade import AgentSession

    AgentSession.load_agent()


def settings_after_first_frame(
    config_file: Path | None,
    model_flag: str | None,
    config: Config | None = None,
    choice: ModelChoice | None = None,
) -> tuple[Config, ModelChoice]:
    """`load_after_first_frame`, then the config read (unless given) and the model chosen
    (unless given): one thread's work, as the app needs it before the agent starts. Raises
    `ConfigError` when the config is wrong."""
    load_after_first_frame()
    from kode_tui.config import load_config, resolve_model

    if config is None:
        config = load_config(config_file)
    return config, choice if choice is not None else resolve_model(config, model_flag)


async def conversation_loaded() -> None:
    """Import `CONVERSATION` in a thread, unless it is already."""
    if CONVERSATION not in sys.modules:
        await asyncio.to_thread(importlib.import_module, CONVERSATION)
