"""A sign of life while the agent works: what it is doing, for how long, and how fast.

The conversation shows `Activity.text()` on its bottom edge while a turn runs, redrawn every
second: a spinner, the state of the step (waiting for the model, streaming, running a tool,
waiting for an approval, retrying in n s counting down the real wait, compacting), the seconds
since the turn began, the
tokens sent (the context of the last request) and received (estimated from the text while it
streams), and the speed of the stream.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kode_tui.humanize import format_tokens
from kode_tui.message import TextPart, ThinkPart
from kode_tui.wire import events as ev
from kode_tui.wire.readings import next_attempt, retry_status

__all__ = ["Activity"]


def _now() -> float:
    return time.monotonic()  # looked up at each call: a test can stop the clock


SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
CHARS_PER_TOKEN = 4
"""How the received tokens are estimated while they stream (the provider counts them after)."""


class Activity:
    """Follows the wire events of turns; `text()` says what the agent is doing."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or _now
        self.running = False
        self._started = 0.0
        self._state = ""
        self._sent: int | None = None
        self._chars = 0
        self._first_at: float | None = None
        self._tools: dict[str, str] = {}
        self._retry: ev.StepRetry | None = None
        self._retry_at = 0.0
        """When the retry's wait ends (on `clock`'s time)."""

    def see(self, event: ev.Event) -> None:
        """Take in one wire event."""
        if isinstance(event, ev.TurnBegin | ev.StepBegin | ev.ContentPart | ev.CompactionBegin):
            self._retry = None  # the retry's next attempt (or another step) has begun
        if isinstance(event, ev.TurnBegin):
            self.running, self._started, self._tools = True, self._clock(), {}
            self._state = "waiting for the model"
        elif isinstance(event, ev.TurnEnd):
            self.running = False
        elif isinstance(event, ev.StepBegin | ev.CompactionEnd):
            self._state, self._chars, self._first_at = "waiting for the model", 0, None
        elif isinstance(event, ev.ContentPart):
            part = event.part
            if isinstance(part, TextPart | ThinkPart):
                self._chars += len(part.text if isinstance(part, TextPart) else part.think)
                self._first_at = self._first_at or self._clock()
                self._state = "streaming" if isinstance(part, TextPart) else "thinking"
        elif isinstance(event, ev.ToolCall):
            self._tools[event.id] = event.function.name
            self._state = f"running {event.function.name}"
        elif isinstance(event, ev.ToolResult):
            self._tools.pop(event.tool_call_id, None)
            following = next(iter(self._tools.values()), None)
            self._state = f"running {following}" if following else "waiting for the model"
        elif isinstance(event, ev.ApprovalRequest):
            self._state = "waiting for your approval"
        elif isinstance(event, ev.ApprovalResolved):
            following = next(iter(self._tools.values()), None)
            self._state = f"running {following}" if following else "waiting for the model"
        elif isinstance(event, ev.StepRetry):
            self._retry, self._retry_at = event, self._clock() + event.wait_s
            self._chars, self._first_at = 0, None  # the failed attempt's text is void
            self._state = f"waiting for the model ({next_attempt(event)})"
        elif isinstance(event, ev.CompactionBegin):
            self._state = "compacting the context"
        elif isinstance(event, ev.StatusUpdate):
            self._sent = event.context_tokens

    def text(self) -> str:
        """The line to show while a turn runs ("" when none does); the spinner moves on
        with every second."""
        if not self.running:
            return ""
        now = self._clock()
        elapsed = now - self._started
        state = self._state
        if self._retry is not None and now < self._retry_at:
            state = retry_status(self._retry, self._retry_at - now)
        parts = [f"{SPINNER[int(elapsed) % len(SPINNER)]} {state}", f"{elapsed:.0f} s"]
        received = self._chars // CHARS_PER_TOKEN
        parts.append(f"↑{format_tokens(self._sent)} ↓~{format_tokens(received)}")
        if self._first_at is not None and now - self._first_at >= 1:
            parts.append(f"{received / (now - self._first_at):.0f} tok/s")
        return " · ".join(parts)
