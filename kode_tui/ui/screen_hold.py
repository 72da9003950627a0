"""The screen held while a message typed during the start goes (`ScreenHold`).

A message typed before the agent was up goes as soon as its panes are mounted. The first
paint of those panes (layout, styles, every line of the conversation and the footer) took
~40 ms of the interpreter; painted first, it went before the request. Held, the request goes
first and the panes paint right after it: the user sees the same screen, ~40 ms sooner
answered.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from textual.app import App

HOLD_S = 0.3
"""The longest the screen is held: a hook, an MCP server still starting or a slow disk may
keep the request back, and the keys typed meanwhile must show."""


class ScreenHold:
    """`app`'s screen updates held (Textual's batch) from now until `release()`, or `HOLD_S`
    at most; the footer's keys too (`defer_bindings`): their recompose went before the request."""

    def __init__(self, app: App[Any]) -> None:
        self._app = app
        self._held = contextlib.ExitStack()
        self._held.enter_context(app.batch_update())
        self._until = asyncio.get_running_loop().time() + HOLD_S
        self._cap = app.set_timer(HOLD_S, self.release, name="screen hold")
        self._released = False
        self._bindings = False
        """`refresh_bindings` was asked for while held: it is done at `release`."""

    async def release_after(self, requested: asyncio.Future[None] | None) -> None:
        """Release once `requested` is done (the request is out), or the hold's time is up."""
        if requested is not None:
            left = self._until - asyncio.get_running_loop().time()
            await asyncio.wait((requested,), timeout=max(0.0, left))
        self.release()

    def defer_bindings(self) -> bool:
        """Whether the app's `refresh_bindings` waits for the release (it does while held)."""
        if self._released:
            return False
        self._bindings = True
        return True

    def release(self) -> None:
        """Let the screen update again (once: later calls do nothing)."""
        if self._released:
            return
        self._released = True
        self._cap.stop()
        self._held.close()
        if self._bindings:
            self._app.refresh_bindings()
