"""The facade's pins (`/pin`, `/pins`, `AgentSession.pins`): notes the user pinned, sent with
every request.

The pins are kept in the session's state.json (`SessionState.pins`); `kode_tui.soul.pins` puts
them in the system prompt.
"""

from __future__ import annotations

import asyncio
import time

from kode_tui import masking
from kode_tui.session.state import Pin
from kode_tui.soul.facade.live import Live
from kode_tui.soul.pins import pinned_block

__all__ = ["Pins"]

PIN_MAX_CHARS = 4000
"""A pin is a note, not a file: it goes with every request."""


class Pins:
    """Pin, edit and unpin notes; each change is saved at once and the gauge shows its cost."""

    def __init__(self, live: Live) -> None:
        self._live = live

    def texts(self) -> list[str]:
        """The pinned notes, oldest first."""
        return [pin.text for pin in self._live.session.state.pins]

    def tokens(self) -> int:
        """What the pins add to every request (estimated, as `/context` counts them)."""
        return len(pinned_block(self.texts())) // 4

    async def add(self, text: str) -> str:
        """Pin `text` (API keys in it masked, as in every session file); what was pinned.
        ValueError with one sentence when it is empty or too long."""
        text = _checked(text)
        state = self._live.session.state
        state.pins = [*state.pins, Pin(text=text, pinned_at=time.time())]
        await self._changed()
        return text

    async def edit(self, index: int, text: str) -> str:
        """Replace the text of pin `index` (0-based); IndexError when there is none."""
        text = _checked(text)
        state = self._live.session.state
        pins = list(state.pins)
        old = pins[_index(index, len(pins))]
        pins[index] = Pin(text=text, pinned_at=old.pinned_at)
        state.pins = pins
        await self._changed()
        return text

    async def remove(self, index: int) -> str:
        """Remove pin `index` (0-based); its text. IndexError when there is none."""
        state = self._live.session.state
        pins = list(state.pins)
        removed = pins.pop(_index(index, len(pins)))
        state.pins = pins
        await self._changed()
        return removed.text

    async def _changed(self) -> None:
        await asyncio.to_thread(self._live.session.save_state)
        await self._live.remeasure()  # the next request carries them; the gauge counts them now


def _checked(text: str) -> str:
    text = masking.mask(text.strip())
    if not text:
        raise ValueError("A pin needs some text: /pin TEXT.")
    if len(text) > PIN_MAX_CHARS:
        raise ValueError(f"A pin holds at most {PIN_MAX_CHARS:,} characters.")
    return text


def _index(index: int, count: int) -> int:
    if not 0 <= index < count:
        raise IndexError(f"There is no pin {index + 1}.")
    return index
