"""The app's reviewable compaction: `/compact` (the domain's command, with the app as its
Asker) and, with `[compaction] review = true`, the automatic one open the review screen before
anything changes (screens/compaction.py).

Mixed into `KodeApp` (app.py), which owns the session; here so the flow reads whole.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from textual.app import App

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession, CompactionPlan

__all__ = ["CompactionActions"]


class CompactionActions(App[None]):
    """The review: the TUI's side of `AgentSession.compaction`."""

    if TYPE_CHECKING:
        agent_session: AgentSession | None

    async def review_automatic_compaction(self, plan: CompactionPlan) -> CompactionPlan | None:
        """The facade's reviewer (`[compaction] review = true`): a turn's compaction, shown."""
        reviewed = await self.review_compaction(plan)
        if reviewed is None:
            self.notify(
                "Not compacted: the turn goes on with the whole context. If it is larger than "
                "the model takes, the model's provider refuses it; /compact shrinks it.",
                severity="warning",
                timeout=8,
            )
        return reviewed

    async def review_compaction(
        self, plan: CompactionPlan, instruction: str | None = None
    ) -> CompactionPlan | None:
        """Show `plan` on the review screen; the plan to apply, or None when cancelled. An
        automatic compaction's turn waits here (the facade's reviewer); when it is interrupted
        the screen closes and nothing is applied."""
        from kode_tui.ui.screens.compaction import CompactionReview

        opened = self.agent_session
        if opened is None:
            return None

        async def replan(strategy: str) -> CompactionPlan | None:
            return await opened.compaction.plan(instruction, strategy)

        decided: asyncio.Future[CompactionPlan | None] = asyncio.get_running_loop().create_future()

        def answer(result: CompactionPlan | None) -> None:
            if not decided.done():
                decided.set_result(result)

        screen = CompactionReview(plan, replan, pins=len(opened.pins.texts()))
        self.push_screen(screen, answer)
        try:
            return await decided
        except asyncio.CancelledError:
            if self.screen is screen:
                with contextlib.suppress(Exception):
                    screen.dismiss(None)
            raise
