"""The facade's thinking effort (`/think`, Alt+T, `AgentSession.thinking`): the session's level,
sent only to a model that takes one (`soul/thinking.py`)."""

from __future__ import annotations

import asyncio

from kode_tui.session.state import ThinkingLevel
from kode_tui.soul import thinking
from kode_tui.soul.facade.live import Live

__all__ = ["Thinking"]


class Thinking:
    """The session's thinking effort: read, set, cycled."""

    levels: tuple[ThinkingLevel, ...] = thinking.LEVELS
    """`off`, `low`, `medium`, `high`: the order Alt+T cycles through."""

    def __init__(self, live: Live) -> None:
        self._live = live

    @property
    def level(self) -> ThinkingLevel:
        """The session's thinking effort (sent only to a model that takes one)."""
        return self._live.session.state.thinking

    @property
    def supported(self) -> bool:
        """Whether the current model takes a thinking effort."""
        choice = self._live.choice
        return choice is not None and thinking.supports_thinking(choice)

    async def set(self, level: ThinkingLevel) -> None:
        """Make `level` the session's thinking effort, saved at once; the next request of a
        model that supports it carries it."""
        self._live.session.state.thinking = level
        self.apply()
        await asyncio.to_thread(self._live.session.save_state)

    def apply(self) -> None:
        """Give the model's provider the level (after a switch of model, too)."""
        soul = self._live.running
        if soul is not None:
            thinking.apply(soul.provider, self._live.choice, self.level)

    @staticmethod
    def parse(text: str) -> ThinkingLevel | None:
        """The level `text` names (any case), or None."""
        return thinking.parse_level(text)

    def following(self) -> ThinkingLevel:
        """The level after the session's, `high` going back to `off` (Alt+T)."""
        return thinking.next_level(self.level)
