"""The app's drop from context: `x` marks blocks of the conversation, `/drop` drops the marked
ones (or `/drop N..M` the messages of checkpoints N to M) after a dialog shows the saving.

Mixed into `KodeApp` (app.py), which owns the session; here so each part reads whole.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from textual import work
from textual.app import App
from textual.widget import Widget

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession, DropPlan, Message
    from kode_tui.ui.widgets.conversation import Conversation
    from kode_tui.ui.widgets.timeline import CheckpointTimeline

__all__ = ["DropActions"]

_RANGE = re.compile(r"\s*(\d+)\s*(?:\.\.\s*(\d+))?\s*")
USAGE = "/drop N..M drops the messages of checkpoints N to M; /drop alone the blocks marked with x."


class DropActions(App[None]):
    """Mark blocks, plan the drop, confirm it, apply it."""

    if TYPE_CHECKING:
        agent_session: AgentSession | None

        def busy(self) -> bool: ...

        async def _reload_conversation(self) -> None: ...

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
        self.drop_command(f"{low}..{high}")

    def drop_command(self, argument: str) -> None:
        """`/drop [N..M]`."""
        opened = self.agent_session
        if opened is None or not opened.started:
            self.notify("No agent is running: nothing can be dropped.", severity="warning")
            return
        if argument.strip():
            found = _RANGE.fullmatch(argument)
            if found is None:
                self.notify(USAGE, severity="warning")
                return
            first = int(found[1])
            last = int(found[2]) if found[2] else first
            self._drop_range(first, last)
        else:
            self._drop_marked()

    @work(exclusive=True, group="time-travel", exit_on_error=False)
    async def _drop_range(self, first: int, last: int) -> None:
        opened = self.agent_session
        assert opened is not None
        try:
            plan = opened.drops.range_plan(first, last)
        except ValueError as error:
            self.notify(f"{error}.", severity="warning")
            return
        what = f"checkpoint {first}" if first == last else f"checkpoints {first} to {last}"
        await self._confirm_and_drop(opened, plan, what)

    @work(exclusive=True, group="time-travel", exit_on_error=False)
    async def _drop_marked(self) -> None:
        opened = self.agent_session
        assert opened is not None
        blocks = self._marked_blocks()
        if not blocks:
            self.notify(USAGE, severity="warning")
            return
        history, _past = await opened.messages()
        indexes = [index for index in _indexes(history, blocks) if index is not None]
        if not indexes:
            self.notify("The marked blocks are no longer in the context.", severity="warning")
            return
        what = "1 marked block" if len(blocks) == 1 else f"{len(blocks)} marked blocks"
        await self._confirm_and_drop(opened, opened.drops.plan(indexes), what)

    def _marked_blocks(self) -> list[Widget]:
        """The blocks marked for /drop: on screen, and those scrolled out of the pane's window."""
        from kode_tui.ui.widgets.block_cursor import MARKED
        from kode_tui.ui.widgets.conversation import Conversation

        away = [block for pane in self.screen.query(Conversation) for block in pane.marked_away()]
        return [*self.screen.query(f".{MARKED}"), *away]

    async def _confirm_and_drop(self, opened: AgentSession, plan: DropPlan, what: str) -> None:
        from kode_tui.ui.screens.drop import DropDialog

        if not plan.indexes:
            self.notify("Nothing to drop there (checkpoint notes stay).", severity="warning")
            return
        if self.busy() or not await self.push_screen_wait(DropDialog(plan, what)):
            return
        try:
            rotated = await opened.drops.apply(plan)
        except (ValueError, OSError) as error:
            self.notify(f"Nothing dropped: {error}.", severity="error")
            return
        await self._reload_conversation()
        kept = f"; History keeps the old context as {rotated}" if rotated else ""
        self.notify(f"Dropped {plan.messages} message(s){kept}.", timeout=8)


def _indexes(history: Sequence[Message], blocks: Sequence[Widget]) -> list[int | None]:
    """The message each block shows, searched from the end (each message once)."""
    from kode_tui.safetext import visible_model
    from kode_tui.ui.widgets.blocks import AnswerBlock, AssistantBlock, UserBlock
    from kode_tui.ui.widgets.history_blocks import user_text
    from kode_tui.ui.widgets.tool_block import ToolBlock

    taken: set[int] = set()
    found: list[int | None] = []
    for block in blocks:
        match: int | None = None
        for index in range(len(history) - 1, -1, -1):
            if index in taken:
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
                hit = message.role == "assistant" and visible_model(message).text == block.source
            else:
                hit = False
            if hit:
                match = index
                break
        if match is not None:
            taken.add(match)
        found.append(match)
    return found
