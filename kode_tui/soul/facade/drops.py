"""The facade's drop from context (`/drop`, `AgentSession.drops`): plan which messages go (tool
calls with their results), show the saving, then drop them in one rotation with reason `edit`
that History can restore like any other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kode_tui.soul.facade.live import Live
from kode_tui.wire import events as ev

if TYPE_CHECKING:
    from kode_tui.session.drop import DropPlan

__all__ = ["Drops"]

# kode_tui.session.drop loads at the first `/drop`, not with every session.


class Drops:
    """Drop chosen messages, or the messages of a range of checkpoints, from the live context."""

    def __init__(self, live: Live) -> None:
        self._live = live

    def plan(self, indexes: Iterable[int]) -> DropPlan:
        """What dropping the messages `indexes` (of `messages()`' history) would take out and
        save; ValueError when one is not there."""
        from kode_tui.session.drop import plan_drop

        context = self._live.context
        return plan_drop(context.history, indexes, context.token_count_with_pending)

    def range_plan(self, first: int, last: int) -> DropPlan:
        """The plan for the messages from checkpoint `first` to the end of checkpoint `last`."""
        from kode_tui.session.drop import checkpoint_span

        return self.plan(checkpoint_span(self._live.context, first, last))

    async def apply(self, plan: DropPlan) -> str | None:
        """Apply `plan`: one rotation with reason `edit`; the name of the rotated file that
        keeps the context as it was. ValueError while a turn runs or when the context changed
        since the plan (nothing dropped then)."""
        from kode_tui.session.drop import apply_drop

        live = self._live
        soul = live.running
        if soul is None:
            raise ValueError("No agent is running: this session is read-only")
        if live.turn_running:
            raise ValueError("A turn is running: drop when it ends")
        if not plan.indexes:
            raise ValueError("Nothing to drop")
        rotated = await asyncio.shield(apply_drop(live.context, plan))
        await soul.context_swapped()
        live.bus.send(ev.ContextReloaded())
        live.bus.send(soul.status())
        return rotated.name if rotated is not None else None
