"""The app's time travel: the side panes' intents (revert to a checkpoint, preview a rotated
context, diff) and Esc Esc on the empty prompt (rewind) become the domain's commands
(`/revert N`, `/restore NAME`, `/diff N`, `/revert`), whose dialogs ask first
(ui/commands.py); afterwards the conversation is read again.

Mixed into `KodeApp` (app.py), which owns the session; here so each part reads whole.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from textual.app import App

from kode_tui.ui.widgets.prompt import PromptInput

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession, Match
    from kode_tui.ui.widgets.history import HistoryPane
    from kode_tui.ui.widgets.timeline import CheckpointTimeline

__all__ = ["TimeTravelActions"]


ESC_AGAIN_S = 1.0
"""A second Esc on the empty prompt within this time opens the rewind picker."""
REWIND_HINT = "Esc again to rewind"


def _hide_hint(prompt: PromptInput) -> None:
    if prompt.border_subtitle == REWIND_HINT:  # a turn's hint may have taken its place
        prompt.border_subtitle = ""


class TimeTravelActions(App[None]):
    """Revert, restore and diff, as the user asks for them from the side panes; rewind, as
    they ask for it with Esc Esc."""

    _escaped_at = -ESC_AGAIN_S
    """When Esc was last pressed on the empty prompt (time.monotonic())."""

    if TYPE_CHECKING:
        agent_session: AgentSession | None

        def _attached(self) -> bool: ...

        def run_command(self, name: str, argument: str, *, match: Match | None = None) -> None: ...

    # --- intents of the side panes ---------------------------------------------------------

    def on_checkpoint_timeline_revert_requested(
        self, event: CheckpointTimeline.RevertRequested
    ) -> None:
        self.run_command("/revert", str(event.checkpoint_id))

    def on_prompt_input_escaped(self, event: PromptInput.Escaped) -> None:
        """Esc on the empty prompt between turns: a second one within `ESC_AGAIN_S` opens the
        rewind picker (`/revert` alone); meanwhile the prompt's border says so."""
        prompt = event.prompt
        now = time.monotonic()
        if now - self._escaped_at <= ESC_AGAIN_S:
            self._escaped_at = -ESC_AGAIN_S
            _hide_hint(prompt)
            self.run_command("/revert", "")
            return
        self._escaped_at = now
        prompt.border_subtitle = REWIND_HINT
        self.set_timer(ESC_AGAIN_S, lambda: _hide_hint(prompt))

    def on_history_pane_preview_requested(self, event: HistoryPane.PreviewRequested) -> None:
        self.preview(event.name)

    def on_checkpoint_timeline_diff_requested(
        self, event: CheckpointTimeline.DiffRequested
    ) -> None:
        self.run_command("/diff", str(event.checkpoint_id))

    def preview(self, name: str, match: Match | None = None) -> None:
        """Show a rotated context read-only (at a search `match` when given, else at its
        end); restore it when the user says so (`/restore`). A subagent's context
        (`subagents/<agent_id>`) shows read-only only: it never takes the parent's place."""
        if name.startswith("subagents/"):
            self.run_worker(self._preview_subagent(name, match), exit_on_error=False)
            return
        self.run_command("/restore", name, match=match)

    async def _preview_subagent(self, name: str, match: Match | None) -> None:
        from kode_tui.ui.screens.timetravel import PreviewScreen

        opened = self.agent_session
        if opened is None:
            return
        try:
            preview = await opened.travel.preview(name)
        except (OSError, ValueError) as error:
            reason = error.strerror if isinstance(error, OSError) else None
            self.notify(f"Cannot read {name}: {reason or error}", severity="error")
            return
        at = None if match is None else opened.travel.match_index(preview.snapshot.messages, match)
        await self.push_screen(PreviewScreen.from_preview(preview, at))

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
