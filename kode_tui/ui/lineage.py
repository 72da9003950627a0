"""The app's search and fork: `F` on a History row forks from that rotated context (`/fork`),
and a search match (`/search`) opens where it is.

Mixed into `KodeApp` (app.py), which owns the session; here so each part reads whole. The
commands themselves are the domain's (ui/commands.py renders them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession, Match, Session
    from kode_tui.ui.widgets.history import HistoryPane

__all__ = ["LineageActions"]


class LineageActions(App[None]):
    """Fork from a rotated context, and open what a search found."""

    if TYPE_CHECKING:
        agent_session: AgentSession | None

        async def new_session(self, session: Session | None = None) -> None: ...

        def preview(self, name: str, match: Match | None = None) -> None: ...

        def run_command(self, name: str, argument: str, *, match: Match | None = None) -> None: ...

    def on_history_pane_fork_requested(self, event: HistoryPane.ForkRequested) -> None:
        self.run_command("/fork", event.name)

    async def open_match(self, match: Match) -> None:
        """Show where a search match is: a rotated context in its preview, the live context's
        checkpoint on the timeline; another session's match opens that session first."""
        from kode_tui.ui.widgets.timeline import CheckpointTimeline

        opened = self.agent_session
        if opened is None or match.session.dir != opened.session.dir:
            await self.new_session(match.session)
        if match.path != match.session.context_file:  # a rotation's, or a subagent's
            self.preview(match.file, match)
            return
        where = f" at checkpoint {match.checkpoint}" if match.checkpoint is not None else ""
        self.notify(f"In the live conversation{where}.", timeout=5)
        timelines = self.screen.query(CheckpointTimeline)
        if match.checkpoint is not None and timelines:
            timeline = timelines.first()
            if match.checkpoint in timeline.checkpoint_ids:
                timeline.highlighted = timeline.checkpoint_ids.index(match.checkpoint)
                timeline.focus()
