"""The facade's compaction (`/compact`, `AgentSession.compaction`): at once, or planned first so
the user can review (and edit) what the model will read instead (`soul/compacting.py`).
"""

from __future__ import annotations

from kode_tui.soul.compacting import CompactionPlan, Reviewer
from kode_tui.soul.facade.live import Live
from kode_tui.soul.soul import KodeSoul

__all__ = ["Compaction"]


class Compaction:
    """Compact the live context, or plan a compaction and apply it once reviewed."""

    def __init__(self, live: Live) -> None:
        self._live = live
        self._reviewer: Reviewer | None = None

    def token_count(self) -> int:
        """The context's size now, as the gauge shows it: what the next request carries."""
        return self._live.soul().status().context_tokens

    async def compact(self, instruction: str | None = None) -> bool:
        """Shrink the context with the configured strategy; whether anything changed. Raises
        what failed (the model's error, the disk's); CompactionBlocked (its hook's run was
        sent) when a PreCompact hook blocked it."""
        return await self._live.soul().compact(instruction or None)

    async def plan(
        self, instruction: str | None = None, strategy: str | None = None
    ) -> CompactionPlan | None:
        """Work out a compaction (the configured strategy, or the built-in one `strategy`
        names) without changing anything; None when there is nothing to compact. Raises what
        failed (the model's error); ValueError for an unknown strategy; CompactionBlocked (its
        hook's run was sent) when a PreCompact hook blocked it."""
        soul = self._live.soul()
        if not self._live.turn_running:
            soul.cost.begin_turn()  # the summary's call is a line of its own in `/cost`
        return await soul.compactor.plan(instruction or None, strategy)

    async def apply(self, plan: CompactionPlan, summary: str | None = None) -> None:
        """Make `plan` the live context (rotation as `compact` does), with `summary` (edited in
        a review) as what the model reads. ValueError, nothing changed, when the context moved
        on since it was planned or the summary is empty."""
        soul = self._live.soul()
        await soul.compactor.apply(plan if summary is None else plan.with_summary(summary))

    def set_reviewer(self, reviewer: Reviewer | None) -> None:
        """A front end that can ask the user (the TUI) shows automatic compactions through
        `reviewer` when `[compaction] review = true`; without one (print mode) they apply
        unreviewed, as nobody could answer. Takes effect at `start()` or at once if started."""
        self._reviewer = reviewer
        soul = self._live.running
        if soul is not None:
            self.install(soul)

    def install(self, soul: KodeSoul) -> None:
        """Give a soul just built the reviewer (`AgentSession.start`)."""
        config = self._live.config
        review = config is not None and config.compaction.review
        soul.compactor.reviewer = self._reviewer if review else None
