"""The facade's pins (`/pin`, `/pins`): notes the user pinned, sent with every request.

`AgentSession` (facade.py) is made of this and the rest; it lives here so each part reads whole.
The pins are kept in the session's state.json (`SessionState.pins`); `kode_tui.soul.pins` puts
them in the system prompt.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from kode_tui import masking
from kode_tui.session import Session
from kode_tui.session.state import Pin
from kode_tui.soul.pins import pinned_block

if TYPE_CHECKING:
    from kode_tui.soul.agent import Agent
    from kode_tui.wire.bus import WireBus

__all__ = ["Pins"]

PIN_MAX_CHARS = 4000
"""A pin is a note, not a file: it goes with every request."""


class Pins:
    """Pin, edit and unpin notes; each change is saved at once and the gauge shows its cost."""

    if TYPE_CHECKING:
        session: Session
        bus: WireBus
        _agent: Agent | None

    def pins(self) -> list[str]:
        """The pinned notes, oldest first."""
        return [pin.text for pin in self.session.state.pins]

    def pins_tokens(self) -> int:
        """What the pins add to every request (estimated, as `/context` counts them)."""
        return len(pinned_block(self.pins())) // 4

    async def pin(self, text: str) -> str:
        """Pin `text` (API keys in it masked, as in every session file); what was pinned.
        ValueError with one sentence when it is empty or too long."""
        text = _checked(text)
        self.session.state.pins = [*self.session.state.pins, Pin(text=text, pinned_at=time.time())]
        await self._pins_changed()
        return text

    async def edit_pin(self, index: int, text: str) -> str:
        """Replace the text of pin `index` (0-based); IndexError when there is none."""
        text = _checked(text)
        pins = list(self.session.state.pins)
        old = pins[_index(index, len(pins))]
        pins[index] = Pin(text=text, pinned_at=old.pinned_at)
        self.session.state.pins = pins
        await self._pins_changed()
        return text

    async def unpin(self, index: int) -> str:
        """Remove pin `index` (0-based); its text. IndexError when there is none."""
        pins = list(self.session.state.pins)
        removed = pins.pop(_index(index, len(pins)))
        self.session.state.pins = pins
        await self._pins_changed()
        return removed.text

    async def _pins_changed(self) -> None:
        await asyncio.to_thread(self.session.save_state)
        if self._agent is not None:
            # The next request carries them; the gauge counts them now.
            await self._agent.soul.measure_prompt()
            self.bus.send(self._agent.soul.status())


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
