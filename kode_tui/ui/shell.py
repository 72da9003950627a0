"""The app's `!cmd`: a prompt line starting with `!` runs as a shell command.

The facade runs it (unasked: the user typed it; its output added to the context) as the app's
turn, so Esc stops it as it stops a turn, and a message typed meanwhile waits for it. It does
not run while a turn does, nor in a read-only session: the line stays in the prompt.

Mixed into `KodeApp` (app.py), which owns the session; here so each part reads whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App
from textual.worker import Worker

from kode_tui.ui.widgets.prompt import PromptInput

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession
    from kode_tui.ui.notify import Notifier

__all__ = ["ShellActions"]


class ShellActions(App[None]):
    """`!cmd` from the prompt."""

    if TYPE_CHECKING:
        agent_session: AgentSession | None
        _turn: Worker[None] | None

        @property
        def read_only(self) -> bool: ...

        @property
        def agent_up(self) -> bool: ...

        def _attached(self) -> bool: ...

        def _update_header(self) -> None: ...

        def _notifier(self) -> Notifier: ...

    def run_shell(self, command: str, prompt: PromptInput) -> None:
        """Run `command` (what followed the `!`); when it cannot run now, `!command` goes back
        into `prompt` and one line says why."""
        opened = self.agent_session
        why = None
        if not command.strip():
            why = "Type a command after `!`, e.g. !git status."
        elif self.read_only or (opened is not None and opened.read_only is not None):
            why = "This session is read-only: `!` commands need one you can write (/new)."
        elif opened is None or not self.agent_up:
            why = "The agent is starting: run the command again in a moment."
        elif self._turn is not None and self._turn.is_running:
            why = "A turn is running: `!` commands run between turns (Esc interrupts it)."
        if why is not None or opened is None:
            prompt.text = f"!{command}"
            prompt.move_cursor(prompt.document.end)
            self.notify(why or "No session.", severity="warning", timeout=4)
            return
        self._turn = self.run_worker(
            self._run_shell(opened, command), group="turn", exit_on_error=False
        )
        self.refresh_bindings()

    async def _run_shell(self, opened: AgentSession, command: str) -> None:
        prompt = self.screen.query_one(PromptInput) if self._attached() else None
        if prompt is not None:
            prompt.busy = True
        try:
            # A long command rings when it ends, and an approval it waits for is announced,
            # as for a turn (the terminal unfocused).
            with self._notifier().turn(opened.bus):
                await opened.run_shell(command)
        finally:
            if prompt is not None:
                prompt.busy = False
            self._update_header()
