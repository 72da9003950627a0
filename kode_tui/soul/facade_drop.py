"""The facade's drop from context (`/drop`): plan which messages go (tool calls with their
results), show the saving, then drop them in one rotation with reason `edit` that History
can restore like any other.

`AgentSession` (facade.py) is made of this and the rest; it lives here so each part reads whole.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kode_tui.session import Context
from kode_tui.session.drop import DropPlan, apply_drop, checkpoint_span, plan_drop
from kode_tui.wire import events as ev

if TYPE_CHECKING:
    from kode_tui.soul.agent import Agent
    from kode_tui.wire.bus import WireBus

__all__ = ["DropPlan", "Drops"]


class Drops:
    """Drop chosen messages, or the messages of a range of checkpoints, from the live context."""

    if TYPE_CHECKING:
        bus: WireBus
        _agent: Agent | None
        _context: Context

        @property
        def turn_running(self) -> bool: ...

    def drop_plan(self, indexes: Iterable[int]) -> DropPlan:
        """What dropping the messages `indexes` (of `messages()`' history) would take out and
        save; ValueError when one is not there."""
        context = self._context
        return plan_drop(context.history, indexes, context.token_count_with_pending)

    def drop_range_plan(self, first: int, last: int) -> DropPlan:
        """The plan for the messages from checkpoint `first` to the end of checkpoint `last`."""
        return self.drop_plan(checkpoint_span(self._context, first, last))

    async def drop(self, plan: DropPlan) -> str | None:
        """Apply `plan`: one rotation with reason `edit`; the name of the rotated file that
        keeps the context as it was. ValueError while a turn runs or when the context changed
        since the plan (nothing dropped then)."""
        agent = self._agent
        if agent is None:
            raise ValueError("No agent is running: this session is read-only")
        if self.turn_running:
            raise ValueError("A turn is running: drop when it ends")
        if not plan.indexes:
            raise ValueError("Nothing to drop")
        rotated = await asyncio.shield(apply_drop(self._context, plan))
        agent.soul.sync_dmail_checkpoints()
        self.bus.send(ev.ContextReloaded())
        self.bus.send(agent.soul.status())
        return rotated.name if rotated is not None else None
