"""Telling the user, who looked away, that a long turn ended or an approval waits.

A desktop notification through the terminal (OSC 9, which iTerm2, WezTerm, Windows Terminal,
Ghostty and kitty show; OSC 777 for foot and urxvt) or the terminal's bell, as
`[notifications]` in config.toml says. By default only while the terminal window does not have
the focus: terminals report it (Textual turns focus reporting on), and one that never does
gets no notification unless `when = "always"`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kode_tui.safetext import visible

if TYPE_CHECKING:  # the app imports this module before its first frame: no pydantic yet
    from kode_tui.config import NotificationsConfig
    from kode_tui.soul.facade import WireBus
    from kode_tui.wire.events import ApprovalRequest

__all__ = ["Notifier", "Turn", "sequence"]

_MAX_CHARS = 200


@dataclass(slots=True)
class Turn:
    """What the app tells the notifier of the turn it watches."""

    failed: bool = False


class Notifier:
    """Decides when to notify and writes the sequence with `write` (the terminal's);
    `focused` says whether the terminal window has the focus."""

    def __init__(
        self,
        settings: NotificationsConfig,
        write: Callable[[str], None],
        focused: Callable[[], bool],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._write, self._focused, self._clock = write, focused, clock

    def _wanted(self) -> bool:
        when = self.settings.when
        return when == "always" or (when == "unfocused" and not self._focused())

    @contextmanager
    def turn(self, bus: WireBus) -> Iterator[Turn]:
        """Watch one turn: each approval it asks for, and its end when it ran at least
        `turn_seconds`. A turn that raises (interrupted by the user) is not reported."""
        from kode_tui.wire.events import ApprovalRequest

        start = self._clock()
        approvals = bus.subscribe(ApprovalRequest, callback=self._approval)
        turn = Turn()
        try:
            yield turn
        finally:
            approvals.close()
        seconds = self._clock() - start
        if seconds >= self.settings.turn_seconds and self._wanted():
            how = "failed" if turn.failed else "finished"
            self._write(sequence(self.settings.method, f"turn {how} after {seconds:.0f} s"))

    def _approval(self, request: ApprovalRequest) -> None:
        if self._wanted():
            what = f"{request.action}: {request.description}"
            self._write(sequence(self.settings.method, f"approval needed, {what}"))


def sequence(method: str, message: str) -> str:
    """What to write to the terminal for `message`: no character of it can end the sequence
    or start another (the message may quote a command the model wrote)."""
    text = "".join(
        ch for ch in visible(f"kode-tui: {message}", multiline=False) if ch.isprintable()
    )
    text = text[:_MAX_CHARS]
    if method == "osc9":
        return f"\x1b]9;{text}\x07"
    if method == "osc777":
        return f"\x1b]777;notify;kode-tui;{text.replace(';', ',')}\x07"
    return "\x07"
