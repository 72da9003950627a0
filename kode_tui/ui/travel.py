"""The app's time travel: the side panes' intents (revert to a checkpoint, preview a rotated
context, diff) become dialogs, facade calls and a reloaded conversation.

Mixed into `KodeApp` (app.py), which owns the session; here so each part reads whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work
from textual.app import App
from textual.notifications import SeverityLevel

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

        def busy(self) -> bool: ...

        def _attached(self) -> bool: ...

    # --- intents of the side panes ---------------------------------------------------------

    def on_checkpoint_timeline_revert_requested(
        self, event: CheckpointTimeline.RevertRequested
    ) -> None:
        self.revert(event.checkpoint_id)

    def on_history_pane_preview_requested(self, event: HistoryPane.PreviewRequested) -> None:
        self.preview(event.name)

    def on_checkpoint_timeline_diff_requested(
        self, event: CheckpointTimeline.DiffRequested
    ) -> None:
        self.diff(event.checkpoint_id, None)

    # --- time travel ---------------------------------------------------------------------------

    @work(exclusive=True, group="time-travel", exit_on_error=False)
    async def diff(self, first: int, second: int | None) -> None:
        """What changed between two checkpoints (or from one to now): messages and files."""
        from kode_tui.ui.screens.compare import CompareScreen

        opened = self.agent_session
        if opened is None or not opened.started:
            return
        try:
            diff = await opened.travel.diff(first, second)
        except ValueError as error:
            self.notify(f"{error}.", severity="warning")
            return
        to = f"checkpoint {second}" if second is not None else "now"
        await self.push_screen(CompareScreen(f"From checkpoint {first} to {to}", diff))

    @work(exclusive=True, group="time-travel", exit_on_error=False)
    async def revert(self, checkpoint_id: int) -> None:
        """Ask what reverting to `checkpoint_id` should take back, then do it."""
        from kode_tui.ui.screens.timetravel import RevertDialog

        if self.busy():
            return
        opened = self.agent_session
        assert opened is not None
        try:
            plan = await opened.travel.revert_plan(checkpoint_id)
        except ValueError as error:
            self.notify(f"{error}.", severity="warning")
            return
        choice = await self.push_screen_wait(RevertDialog.from_plan(plan))
        if choice is None:
            return
        outcome = await opened.travel.revert(checkpoint_id, files=choice == "files")
        await self._reload_conversation()
        prompt = self.screen.query_one(PromptInput)
        prompt.text = outcome.next_user_text
        prompt.focus()
        parts = [
            f"Reverted to checkpoint {checkpoint_id}; {outcome.rotated_file.name} keeps the rest."
        ]
        if outcome.files_restored:
            parts.append(f"Restored {len(outcome.files_restored)} file(s).")
        if choice == "files" and outcome.conflicts:
            parts.append(f"Left alone (changed since): {', '.join(outcome.conflicts)}.")
        self.notify(
            " ".join(parts), timeout=8, severity="warning" if outcome.conflicts else "information"
        )

    @work(exclusive=True, group="time-travel", exit_on_error=False)
    async def preview(self, name: str, match: Match | None = None) -> None:
        """Show a rotated context read-only (at a search `match` when given, else at its
        end); restore it when the user says so."""
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
        restore = await self.push_screen_wait(PreviewScreen.from_preview(preview, at))
        if isinstance(restore, str) and restore not in ("conversation", "files"):
            prompt = self.screen.query_one(PromptInput)
            prompt.text = restore if not prompt.text else f"{prompt.text}\n\n{restore}"
            prompt.focus()
            return
        if restore not in (True, "conversation", "files") or self.busy():
            return
        with_files = restore == "files"
        outcome = await opened.travel.restore(name, files=with_files)
        await self._reload_conversation()
        # As after a revert: the user goes on from the restored context by typing.
        self.screen.query_one(PromptInput).focus()
        rotated = outcome.rotated_file
        parts = [f"Restored {name}"]
        if rotated is not None:
            parts[0] += f"; the previous one is kept as {rotated.name}"
        parts[0] += "."
        if outcome.files_restored:
            parts.append(f"Restored {len(outcome.files_restored)} file(s).")
        if with_files and outcome.conflicts:
            parts.append(f"Left alone (changed since): {', '.join(outcome.conflicts)}.")
        severity: SeverityLevel = "warning" if with_files and outcome.conflicts else "information"
        self.notify(" ".join(parts), timeout=8, severity=severity)

    async def _reload_conversation(self) -> None:
        from kode_tui.ui.widgets.conversation import Conversation

        opened = self.agent_session
        if opened is None or not self._attached():
            return
        conversation = self.screen.query_one(Conversation)
        await conversation.clear()
        await conversation.load_history(*await opened.messages())
