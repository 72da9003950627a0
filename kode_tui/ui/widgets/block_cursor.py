"""The conversation's block cursor (Alt+↑/↓) and what it does to the block under it: open or
close it, show its whole output, pin it (`p`), mark it to drop from the context (`x`).

A mark is a class on the mounted block. The pane mounts a bounded window of blocks
(`block_window.py`), so a marked block that leaves the window is kept as a factory that makes
it again marked, and is listed in `marked_away` until it is back: `/drop` finds it either way.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.binding import Binding, BindingType
from textual.message import Message as TextualMessage
from textual.widget import Widget

from kode_tui.ui.widgets.block_window import BlockWindow
from kode_tui.ui.widgets.blocks import (
    AnswerBlock,
    AssistantBlock,
    Block,
    BlockFactory,
    FoldingBlock,
    UserBlock,
)
from kode_tui.ui.widgets.tool_block import ToolBlock

MARKED = "-marked"
"""The class of a conversation block marked for `/drop`."""

_BLOCKS = Binding.Group("Conversation")
_CURSOR_BLOCKS = (FoldingBlock, UserBlock, AssistantBlock, AnswerBlock)


class _MarkedFactory:
    """Makes a block that was marked for /drop again, marked; while it is off screen it is
    in `away` (the pane's list of them)."""

    def __init__(self, factory: BlockFactory, away: list[_MarkedFactory]) -> None:
        self.factory = factory
        self._away = away

    def __call__(self) -> Widget:
        block = self.factory()
        block.add_class(MARKED)
        if self in self._away:
            self._away.remove(self)  # on screen again: found with the others there
        return block


class BlockCursor(BlockWindow):
    """A block window with a cursor on its blocks (the conversation pane's)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "alt+up", "cursor_previous", "Previous block", id="conversation.previous", group=_BLOCKS
        ),
        Binding("alt+down", "cursor_next", "Next block", id="conversation.next", group=_BLOCKS),
        Binding(
            "enter,space", "toggle_block", "Open/close", id="conversation.toggle", group=_BLOCKS
        ),
        Binding("o", "full_view", "Full output", id="conversation.full", group=_BLOCKS, show=False),
        Binding("p", "pin_block", "Pin", id="conversation.pin", group=_BLOCKS),
        Binding("x", "mark_block", "Mark to drop", id="conversation.mark", group=_BLOCKS),
    ]

    class MarkRequested(TextualMessage, namespace="conversation"):
        """`x` on a block: mark it for `/drop` (or unmark it)."""

        def __init__(self, block: Widget) -> None:
            super().__init__()
            self.block = block

    class PinRequested(TextualMessage, namespace="conversation"):
        """`p` on a block: pin its text."""

        def __init__(self, block: Widget) -> None:
            super().__init__()
            self.block = block

    def __init__(
        self, *, max_blocks: int, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(max_blocks=max_blocks, id=id, classes=classes)
        self._cursor: Widget | None = None
        self._marked_away: list[_MarkedFactory] = []
        """Blocks marked for /drop while they are off screen (see `_leaving`)."""

    def marked_away(self) -> list[Widget]:
        """The blocks marked for /drop that are off screen now, made again to be read (not
        mounted): /drop drops them with the marked blocks on screen."""
        return [marked.factory() for marked in self._marked_away]

    def _show_cursor(self, focused: bool) -> None:
        if self._cursor is not None:
            self._cursor.set_class(focused, "-cursor")

    def _forget_cursor(self) -> None:
        """The pane is emptied: no cursor, no marks."""
        self._cursor = None
        self._marked_away.clear()

    def _leaving(self, block: Block, factory: BlockFactory) -> BlockFactory:
        if block is self._cursor:
            self._move_cursor(None)
        if block.has_class(MARKED):
            # Marked for /drop: it stays marked off screen and when it comes back.
            marked = _MarkedFactory(factory, self._marked_away)
            self._marked_away.append(marked)
            return marked
        return factory

    def _folding(self) -> list[Widget]:
        # Not the hidden ones at the end (see BlockWindow); messages too, so `p` can pin them.
        return [c for c in self.children if isinstance(c, _CURSOR_BLOCKS) and c.display]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "full_view":
            return isinstance(self._cursor, ToolBlock) and self._cursor.parent is self
        if action == "toggle_block":
            return isinstance(self._cursor, FoldingBlock) and self._cursor.parent is self
        if action in ("pin_block", "mark_block"):
            return self._cursor is not None and self._cursor.parent is self
        if action in ("cursor_previous", "cursor_next"):
            return any(isinstance(child, _CURSOR_BLOCKS) for child in self.children)
        return True

    def _move_cursor(self, block: Widget | None) -> None:
        if self._cursor is not None:
            self._cursor.remove_class("-cursor")
        self._cursor = block
        if block is not None:
            block.set_class(self.has_focus, "-cursor")
        self.refresh_bindings()

    def action_cursor_previous(self) -> None:
        self._step_cursor(-1)

    def action_cursor_next(self) -> None:
        self._step_cursor(+1)

    def _step_cursor(self, direction: int) -> None:
        blocks = self._folding()
        if not blocks:
            return
        if self._cursor in blocks:
            index = blocks.index(self._cursor) + direction
            index = max(0, min(len(blocks) - 1, index))
        else:
            index = len(blocks) - 1
        self._move_cursor(blocks[index])
        if index < len(blocks) - 1:
            self.release_anchor()
        self.scroll_to_widget(blocks[index], animate=False)

    def action_toggle_block(self) -> None:
        if isinstance(self._cursor, FoldingBlock):
            self._cursor.toggle()

    def action_pin_block(self) -> None:
        if self._cursor is not None:
            self.post_message(self.PinRequested(self._cursor))

    def action_mark_block(self) -> None:
        if self._cursor is not None:
            self.post_message(self.MarkRequested(self._cursor))

    def action_full_view(self) -> None:
        if isinstance(self._cursor, ToolBlock):
            self._cursor.open_full_view()

    @on(FoldingBlock.Clicked)
    def _block_clicked(self, event: FoldingBlock.Clicked) -> None:
        event.stop()
        self._move_cursor(event.block)
