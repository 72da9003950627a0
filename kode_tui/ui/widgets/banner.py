"""The notice above the conversation (the demo model's)."""

from __future__ import annotations

from textual.widgets import Static

from kode_tui.soul.facade import WireBus
from kode_tui.ui.wire_messages import WireListener, WireMessage
from kode_tui.wire.events import TurnBegin


class Banner(WireListener, Static):
    """A notice above the conversation; a click puts it away.

    Once the first turn begins it folds to its first line: it has been read, and on a short
    terminal the conversation needs the rows.
    """

    def __init__(self, text: str, bus: WireBus, *, id: str | None = None) -> None:
        super().__init__(text, id=id)
        self._bus = bus

    def on_mount(self) -> None:
        self.listen(self._bus, TurnBegin)

    def on_wire_message(self, _message: WireMessage) -> None:
        self.add_class("-collapsed")

    def on_click(self) -> None:
        self.display = False
