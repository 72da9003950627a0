"""The app's search and fork: `/search TEXT`, `/fork [N]` and `F` on a History row.

Mixed into `KodeApp` (app.py), which owns the session; the slash commands are registered here
too, so each part reads whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work
from textual.app import App

from kode_tui.ui.commands import command

if TYPE_CHECKING:
    from textual.worker import Worker

    from kode_tui.soul.facade import AgentSession, Match, Session
    from kode_tui.ui.app import KodeApp
    from kode_tui.ui.widgets.history import HistoryPane

__all__ = ["LineageActions"]


class LineageActions(App[None]):
    """Fork the session, and open what a search found."""

    if TYPE_CHECKING:
        agent_session: AgentSession | None
        _turn: Worker[None] | None

        async def new_session(self, session: Session | None = None) -> None: ...

        def preview(self, name: str, match: Match | None = None) -> Worker[None]: ...

    def on_history_pane_fork_requested(self, event: HistoryPane.ForkRequested) -> None:
        self.fork(None, event.name)

    @work(exclusive=True, group="lineage", exit_on_error=False)
    async def fork(self, checkpoint: int | None, from_file: str | None = None) -> None:
        """Make a new session of the live context up to `checkpoint` (of the rotated context
        `from_file` when given) and switch to it."""
        from kode_tui.soul.facade import LineageNote

        opened = self.agent_session
        if opened is None:
            return
        if self._turn is not None and self._turn.is_running:
            self.notify("Wait for the turn to end, or press Esc.", severity="warning")
            return
        try:
            forked = await opened.lineage.fork(checkpoint, from_file)
        except (OSError, ValueError) as error:
            self.notify(f"Cannot fork: {error}.", severity="warning", timeout=6)
            return
        await self.new_session(forked)
        note = LineageNote.of(forked)
        where = f" ({note.text})" if note is not None else ""
        self.notify(f"Forked into a new session{where}; /sessions opens the other.", timeout=6)

    async def open_match(self, match: Match) -> None:
        """Show where a search match is: a rotated context in its preview, the live context's
        checkpoint on the timeline; another session's match opens that session first."""
        from kode_tui.ui.widgets.timeline import CheckpointTimeline

        opened = self.agent_session
        if opened is None or match.session.dir != opened.session.dir:
            await self.new_session(match.session)
        if match.path.name != "context.jsonl":
            self.preview(match.path.name, match)
            return
        where = f" at checkpoint {match.checkpoint}" if match.checkpoint is not None else ""
        self.notify(f"In the live conversation{where}.", timeout=5)
        timelines = self.screen.query(CheckpointTimeline)
        if match.checkpoint is not None and timelines:
            timeline = timelines.first()
            if match.checkpoint in timeline.checkpoint_ids:
                timeline.highlighted = timeline.checkpoint_ids.index(match.checkpoint)
                timeline.focus()


@command("/search", "[--all] TEXT", "Find words in this work dir's sessions (--all: every one's)")
async def _search(app: KodeApp, argument: str) -> None:
    from kode_tui.ui.screens.search import SearchScreen

    opened = app.agent_session
    if opened is None:
        return
    text = argument.strip()
    everywhere = text == "--all" or text.startswith("--all ")
    if everywhere:
        text = text.removeprefix("--all").strip()
    if not text:
        app.notify("/search [--all] TEXT: the words to look for.", severity="warning")
        return
    matches = await opened.lineage.search(text, everywhere=everywhere)
    if not matches:
        where = "any session" if everywhere else "this work dir's sessions"
        app.notify(f"No message in {where} holds {text}.", timeout=5)
        return
    chosen = await app.push_screen_wait(SearchScreen(text, matches, opened.id))
    if chosen is not None:
        await app.open_match(chosen)


@command("/fork", "[N]", "A new session from this one up to now (or up to checkpoint N)")
async def _fork(app: KodeApp, argument: str) -> None:
    argument = argument.strip()
    if argument and not argument.isdigit():
        app.notify("/fork N: N is a checkpoint of the timeline.", severity="warning")
        return
    app.fork(int(argument) if argument else None)
