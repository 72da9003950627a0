"""The app's pins: `p` on a conversation block pins its text (`/pin`, the domain's command,
which ui/commands.py renders, as it renders `/pins` with its screen).

Mixed into `KodeApp` (app.py), which owns the session; here so each part reads whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import App
from textual.widget import Widget

if TYPE_CHECKING:  # not at import: the app's module loads the domain after its first frame
    from kode_tui.soul.facade import Match
    from kode_tui.ui.widgets.conversation import Conversation

__all__ = ["PinActions"]


class PinActions(App[None]):
    """Pin a block's text."""

    if TYPE_CHECKING:

        def run_command(self, name: str, argument: str, *, match: Match | None = None) -> None: ...

    def on_conversation_pin_requested(self, event: Conversation.PinRequested) -> None:
        event.stop()
        text = block_text(event.block)
        if not text.strip():
            self.notify("This block has no text to pin.", severity="warning")
            return
        self.run_command("/pin", text)


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
