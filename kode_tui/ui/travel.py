"""The app's time travel: the side panes' intents (revert to a checkpoint, preview a rotated
context, diff) become the domain's commands (`/revert N`, `/restore NAME`, `/diff N`), whose
dialogs ask first (ui/commands.py); afterwards the conversation is read again.

Mixed into `KodeApp` (app.py), which owns the session; here so each part reads whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App

from kode_tui.ui.widgets.prompt import PromptInput

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession, Match
    from kode_tui.ui.widgets.history import HistoryPane
    from kode_tui.ui.widgets.timeline import CheckpointTimeline

__all__ = ["TimeTravelActions"]


class TimeTravelActions(App[None]):
    """Revert, restore and diff, as the user asks for them from the side panes."""

    if TYPE_CHECKING:
        agent_session: AgentSession | None

        def _attached(self) -> bool: ...

        def run_command(self, name: str, argument: str, *, match: Match | None = None) -> None: ...

    # --- intents of the side panes ---------------------------------------------------------

    def on_checkpoint_timeline_revert_requested(
        self, event: CheckpointTimeline.RevertRequested
    ) -> None:
        self.run_command("/revert", str(event.checkpoint_id))

    def on_history_pane_preview_requested(self, event: HistoryPane.PreviewRequested) -> None:
        self.preview(event.name)

    def on_checkpoint_timeline_diff_requested(
        self, event: CheckpointTimeline.DiffRequested
    ) -> None:
        self.run_command("/diff", str(event.checkpoint_id))

    def preview(self, name: str, match: Match | None = None) -> None:
        """Show a rotated context read-only (at a search `match` when given, else at its
        end); restore it when the user says so (`/restore`)."""
        self.run_command("/restore", name, match=match)

    # --- the conversation, read again ----------------------------------------------------------

    async def reload_conversation(self, prompt: str | None = None) -> None:
        """Show the conversation again (it is another one now), then focus the prompt,
        holding `prompt` when given: the user goes on from there by typing."""
        await self._reload_conversation()
        if not self._attached():
            return
        field = self.screen.query_one(PromptInput)
        if prompt is not None:
            field.text = prompt
        field.focus()

    async def _reload_conversation(self) -> None:
        from kode_tui.ui.widgets.conversation import Conversation

        opened = self.agent_session
        if opened is None or not self._attached():
            return
        conversation = self.screen.query_one(Conversation)
        await conversation.clear()
        await conversation.load_history(*await opened.messages())
        conversation.load_earlier(opened.earlier)
