"""The app's drop from context: `x` marks blocks of the conversation, `/drop` drops the marked
ones (or `/drop N..M` the messages of checkpoints N to M) after a dialog shows the saving; `x`
on two checkpoints of the timeline drops that range. The command is the domain's
(ui/commands.py asks with the dialog and renders it); the marks are the app's.

Mixed into `KodeApp` (app.py), which owns the session; here so each part reads whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from textual.app import App
from textual.widget import Widget

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession, Match, Message
    from kode_tui.ui.widgets.conversation import Conversation
    from kode_tui.ui.widgets.timeline import CheckpointTimeline

__all__ = ["DropActions"]


class DropActions(App[None]):
    """Mark blocks, and say which messages they are; the drop is `/drop`'s."""

    if TYPE_CHECKING:
        agent_session: AgentSession | None

        def run_command(self, name: str, argument: str, *, match: Match | None = None) -> None: ...

    def on_conversation_mark_requested(self, event: Conversation.MarkRequested) -> None:
        event.stop()
        from kode_tui.ui.widgets.block_cursor import MARKED

        event.block.toggle_class(MARKED)
        marked = len(self._marked_blocks())
        self.notify(f"{marked} marked: /drop drops them (x unmarks).", timeout=3)

    _drop_from: int | None = None
    """The first checkpoint `x` chose in the Checkpoints pane, until the second."""

    def on_checkpoint_timeline_drop_requested(
        self, event: CheckpointTimeline.DropRequested
    ) -> None:
        event.stop()
        first, self._drop_from = self._drop_from, None
        if first is None:
            self._drop_from = event.checkpoint_id
            self.notify(
                f"Drop from checkpoint {event.checkpoint_id}: x on the last checkpoint of the "
                "range (x here again: only this one).",
                timeout=6,
            )
            return
        low, high = sorted((first, event.checkpoint_id))
        self.run_command("/drop", f"{low}..{high}")

    async def marked_messages(self) -> list[int]:
        """The messages of the blocks marked with x, as indexes of the history (a block whose
        message is no longer in the context is left out)."""
        opened = self.agent_session
        blocks = self._marked_blocks()
        if opened is None or not blocks:
            return []
        history, _past = await opened.messages()
        found = _indexes(history, blocks)
        return list(dict.fromkeys(index for index in found if index is not None))

    def _marked_blocks(self) -> list[Widget]:
        """The blocks marked for /drop: on screen, and those scrolled out of the pane's window."""
        from kode_tui.ui.widgets.block_cursor import MARKED
        from kode_tui.ui.widgets.conversation import Conversation

        away = [block for pane in self.screen.query(Conversation) for block in pane.marked_away()]
        return [*self.screen.query(f".{MARKED}"), *away]


def _indexes(history: Sequence[Message], blocks: Sequence[Widget]) -> list[int | None]:
    """The message each block shows, searched from the end (each message once, but for the
    parts of a long answer: it shows as several blocks, each a part of the message's text)."""
    from kode_tui.safetext import visible_model
    from kode_tui.ui.widgets.blocks import AnswerBlock, AssistantBlock, UserBlock
    from kode_tui.ui.widgets.history_blocks import user_text
    from kode_tui.ui.widgets.tool_block import ToolBlock

    taken: set[int] = set()
    found: list[int | None] = []
    for block in blocks:
        match: int | None = None
        part = isinstance(block, AssistantBlock | AnswerBlock)
        for index in range(len(history) - 1, -1, -1):
            if index in taken and not part:
                continue
            message = history[index]
            if isinstance(block, ToolBlock):
                ids = [call.id for call in message.tool_calls or ()]
                hit = message.role == "assistant" and block.state.id in ids
            elif isinstance(block, UserBlock):
                hit = message.role == "user" and (
                    user_text(visible_model(message).content or "") == block.text
                )
            elif isinstance(block, AssistantBlock | AnswerBlock):
                text = visible_model(message).text
                whole = text == block.source and index not in taken
                hit = message.role == "assistant" and (whole or _part_of(block.source, text))
            else:
                hit = False
            if hit:
                match = index
                break
        if match is not None:
            taken.add(match)
        found.append(match)
    return found


def _part_of(piece: str, text: str) -> bool:
    """Whether `piece` is one of the blocks a long answer `text` was cut into (not all of it)."""
    return bool(piece.strip()) and len(piece) < len(text) and piece in text
