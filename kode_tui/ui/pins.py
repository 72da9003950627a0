"""The app's pins: `/pin TEXT`, `p` on a conversation block, and the `/pins` screen.

Mixed into `KodeApp` (app.py), which owns the session; here so each part reads whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App
from textual.widget import Widget

if TYPE_CHECKING:  # not at import: the app's module loads the domain after its first frame
    from kode_tui.soul.facade import AgentSession
    from kode_tui.ui.widgets.conversation import Conversation

__all__ = ["PinActions"]

_PREVIEW_CHARS = 60


class PinActions(App[None]):
    """Pin a note or a message, and open the pins screen."""

    if TYPE_CHECKING:
        agent_session: AgentSession | None

    def on_conversation_pin_requested(self, event: Conversation.PinRequested) -> None:
        event.stop()
        text = block_text(event.block)
        if not text.strip():
            self.notify("This block has no text to pin.", severity="warning")
            return
        self.run_worker(self.pin_note(text), group="pins", exit_on_error=False)

    def _pinnable(self) -> AgentSession | None:
        opened = self.agent_session
        if opened is None or opened.read_only is not None:
            self.notify("This session is read-only: nothing can be pinned.", severity="warning")
            return None
        return opened

    async def pin_note(self, text: str) -> None:
        """Pin `text`; say what was pinned, or why not."""
        opened = self._pinnable()
        if opened is None:
            return
        try:
            pinned = await opened.pins.add(text)
        except ValueError as error:
            self.notify(str(error), severity="warning")
            return
        except OSError as error:
            self.notify(f"Could not save the pin: {error}", severity="error")
            return
        first = " ".join(pinned.split())
        if len(first) > _PREVIEW_CHARS:
            first = first[: _PREVIEW_CHARS - 1] + "…"
        count = len(opened.pins.texts())
        self.notify(f"Pinned ({count} in all, /pins): {first}", timeout=4, markup=False)

    async def show_pins(self) -> None:
        """The `/pins` screen: list, edit and unpin."""
        from kode_tui.ui.screens.pins import PinsScreen

        opened = self._pinnable()
        if opened is not None:
            await self.push_screen(PinsScreen(opened))


def block_text(block: Widget) -> str:
    """What `p` pins of a block: a message's text, a tool call's output, a folded block's."""
    from kode_tui.ui.widgets.blocks import AnswerBlock, AssistantBlock, UserBlock
    from kode_tui.ui.widgets.tool_block import ToolBlock

    if isinstance(block, UserBlock):
        return block.text
    if isinstance(block, AssistantBlock | AnswerBlock):
        return block.source
    if isinstance(block, ToolBlock):
        return block.state.output or block.state.message
    return str(getattr(block, "text", ""))
