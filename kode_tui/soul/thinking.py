"""The thinking effort (`/think`): asked of a model as `reasoning_effort`, only when it takes one.

Whether it does: the alias's `reasoning = true|false` in config.toml when set, else litellm's
map (`supports_reasoning`). The level is the session's (state.json), so a resumed session keeps
it; a model switched to without support keeps it too, unsent, until one with support is chosen.
"""

from __future__ import annotations

from typing import get_args

from kode_tui.config import ModelChoice
from kode_tui.session.state import ThinkingLevel
from kode_tui.soul.llm import ChatProvider
from kode_tui.soul.llm.litellm_provider import LiteLLMProvider
from kode_tui.soul.llm.model_map import map_entry

LEVELS: tuple[ThinkingLevel, ...] = get_args(ThinkingLevel)
"""`off`, `low`, `medium`, `high`: the order the key cycles through."""


def supports_thinking(choice: ModelChoice) -> bool:
    """Whether `choice` takes a thinking effort (never the demo)."""
    if choice.is_demo:
        return False
    if choice.reasoning is not None:
        return choice.reasoning
    entry = map_entry(choice.model)
    return entry is not None and entry.supports_reasoning is True


def parse_level(text: str) -> ThinkingLevel | None:
    """The level `text` names (any case), or None."""
    word = text.strip().lower()
    return next((level for level in LEVELS if level == word), None)


def next_level(level: ThinkingLevel) -> ThinkingLevel:
    """The level after `level`, `high` going back to `off`."""
    return LEVELS[(LEVELS.index(level) + 1) % len(LEVELS)]


def apply(provider: ChatProvider, choice: ModelChoice | None, level: ThinkingLevel) -> None:
    """Make `provider`'s requests carry `level` when its model supports one, nothing else."""
    if not isinstance(provider, LiteLLMProvider):
        return  # the demo and scripted providers take no parameters
    supported = choice is not None and supports_thinking(choice)
    provider.reasoning_effort = level if supported and level != "off" else None
