"""The conversation pane: the session as blocks, streamed live from the wire (DESIGN.md §10).

Each top-level child of `Conversation` is one block: the user's message, the assistant's text
(a `Markdown` appended to once a frame), a step's thinking, a tool call with its result, or a
marked line (compaction, revert, D-Mail, reminders, notes, warnings, errors). The blocks live in
`blocks.py` and `tool_block.py`; `history_blocks.py` builds those of a stored conversation.

A long session keeps few blocks in the DOM: at most `max_blocks` are mounted, a window onto
the whole session that moves both ways as the user scrolls (`block_window.py`); a restored
history is read a page of messages at a time as the window reaches it. Above a resumed
history, the contexts it was compacted from show as they did live (`load_earlier`): read-only
history, each read from its rotated file when the window reaches it.

A streamed answer is drawn at most once a frame (`FRAME_INTERVAL`, longer on a machine where
drawing is slow: `FramePacer`): text and thinking deltas
wait in a buffer that is written out when the frame is due, and before any other wire event is
handled, so what the blocks show and in which order is the same as if every delta were drawn.
Between frames the loop is free for keys. The pane has a fixed size (`height: 1fr`), so its
growing content is laid out inside it and the panes beside it keep their cached layout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

from textual import work
from textual.content import Content
from textual.timer import Timer
from textual.widget import Widget

from kode_tui.message import FunctionBody, Message, TextPart, ThinkPart
from kode_tui.safetext import visible_model
from kode_tui.soul.facade import EarlierContexts, PastResults, Subscription, WireBus
from kode_tui.ui import collector
from kode_tui.ui.pacing import FramePacer
from kode_tui.ui.terminal_writes import keys_waiting
from kode_tui.ui.widgets.activity import Activity
from kode_tui.ui.widgets.answer_split import split_answer
from kode_tui.ui.widgets.block_cursor import BlockCursor
from kode_tui.ui.widgets.block_window import INITIAL_BLOCKS, MAX_BLOCKS
from kode_tui.ui.widgets.blocks import (
    AnswerBlock,
    AssistantBlock,
    Block,
    BlockFactory,
    MarkerBlock,
    NoticeBlock,
    ReminderBlock,
    ThinkingBlock,
    UserBlock,
    command_label,
    compaction_text,
    divider,
    hook_block,
    revert_text,
)
from kode_tui.ui.widgets.history_blocks import pictures, user_text
from kode_tui.ui.widgets.tool_block import ToolBlock
from kode_tui.ui.widgets.tool_state import ToolState
from kode_tui.ui.wire_messages import WireListener, WireMessage
from kode_tui.wire import events as ev
from kode_tui.wire.readings import TODO_LISTS, retry_text

FRAME_INTERVAL = 1 / 30
"""The shortest time between two draws of a streamed answer: each draw lays out and repaints
the pane, so drawing every token of a fast model would leave no time for keys."""
FRAME_SLOWEST = 1 / 7
"""The longest: on a machine where drawing is slow, the interval grows up to this. (1/5 s
saved ~2% of a core at 300 tokens a second on the 2-core bench machine, but a token then
waited 90 ms on screen at the median instead of 60.)"""
DRAW_BUDGET = 0.1
"""The share of a core a streamed answer may use (see `FramePacer`)."""
QUIET = 0.06
"""A stream silent this long has paused (the model process writes at least every 50 ms while
it flows): what came is drawn then, not at the next frame of a slow machine (up to 1/7 s)."""
BURST = 8000
"""Characters waiting for a frame that make the stream a burst: drawn at once, and so is the
next delta after such a frame (most of a burst is never mounted: `BlockWindow._append_above`)."""
KEY_WAIT = 1 / 120
"""How often a frame held for a key's echo looks again whether the echo is painted."""
NEW_OUTPUT_HINT = "↓ new output · End"
"""On the pane's bottom edge while output arrives that the view, scrolled away, does not show."""

# Widgets have no CSS_PATH; loading the file as DEFAULT_CSS keeps the pane self-contained and
# lets an App's own CSS override it.
_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")


# --- text helpers --------------------------------------------------------------------------------


def _thought(event: ev.Event) -> bool:
    """Whether the event goes on with a step's thinking (else the thinking is over)."""
    if isinstance(event, ev.ContentPart):
        return isinstance(event.part, ThinkPart)
    return isinstance(event, ev.StatusUpdate)


# --- the pane ------------------------------------------------------------------------------------


class Conversation(WireListener, BlockCursor, can_focus=True, can_focus_children=False):
    """The conversation, streamed from the wire; `load_history` shows a stored one."""

    DEFAULT_CSS = _CSS
    HELP = """\
## Conversation

The session as blocks: your messages, the assistant's answers, its thinking (folded),
tool calls with their status and result, and marked lines where the context was compacted,
reverted, restored or cleared. It follows new output unless you scroll up; **End** follows
again.

- Click a tool call or a folded block to open it; **o** shows all of a tool call's output.
- **Alt+↑ / Alt+↓** move the block cursor, **Enter** opens or closes the block under it,
  **p** pins its text (sent with every request, whatever is compacted; `/pins` edits them),
  **x** marks it to drop from the context (`/drop` drops the marked ones).
- **Home** goes to the first message, **End** to the last; long sessions are read as you
  scroll, and a line at the top says how many earlier messages are not read yet.
"""

    def __init__(
        self,
        bus: WireBus,
        *,
        backlog: Subscription[ev.Event] | None = None,
        max_blocks: int = MAX_BLOCKS,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """`backlog`: a subscription to `bus` made before this pane, whose events it shows
        first (a turn that began before it mounted)."""
        super().__init__(max_blocks=max_blocks, id=id, classes=classes)
        self.border_title = "Conversation"
        self._bus = bus
        self._backlog = backlog
        # The step being streamed.
        self._assistant: AssistantBlock | None = None
        self._written = ""
        """What was streamed into the current assistant block."""
        self._thinking: ThinkingBlock | None = None
        # Deltas not drawn yet (see FRAME_INTERVAL), for `_assistant` and `_thinking`.
        self._pending_text: list[str] = []
        self._pending_think: list[str] = []
        self._pending_size = 0
        self._bursting = False  # the last frame drew a burst (`BURST`)
        self._frame: Timer | None = None
        self._delta_at = 0.0
        """When the last streamed delta came (`QUIET`)."""
        self._activity = Activity()
        self._ticker: Timer | None = None
        self._unseen = False
        """Output arrived that the view, scrolled away, does not show."""
        self._edge_at = 0.0
        self._pacer = FramePacer(fastest=FRAME_INTERVAL, slowest=FRAME_SLOWEST, budget=DRAW_BUDGET)
        self._streamed: list[Widget] = []
        self._streamed_away: list[BlockFactory] = []
        """Blocks of this step that `_trim` unmounted: a retry discards them too."""
        self._retry_note: NoticeBlock | None = None
        self._tools: dict[str, ToolBlock] = {}
        self._approvals: dict[str, str] = {}
        self._compaction: MarkerBlock | None = None
        self._compaction_strategy = ""
        self._reminders: list[tuple[str, str]] | None = None
        """The reminders of this turn, which one block shows."""
        self._command: ev.CommandSent | None = None  # the custom command of the next message
        self._history: Sequence[Message] | None = None
        """The stored history `load_history` showed (what earlier contexts go above)."""
        self._past: PastResults | None = None
        self._window.todos.on_fold = self._todo_folded
        self._handlers: dict[type[ev.Event], Callable[[Any], Awaitable[None]]] = {
            ev.TurnBegin: self._turn_begin,
            ev.TurnEnd: self._turn_end,
            ev.StepBegin: self._step_begin,
            ev.StepRetry: self._step_retry,
            ev.StepInterrupted: self._step_interrupted,
            ev.ContentPart: self._content_part,
            ev.ToolCall: self._tool_call,
            ev.ToolCallPart: self._tool_call_part,
            ev.ApprovalRequest: self._approval_request,
            ev.ApprovalResolved: self._approval_resolved,
            ev.ToolResult: self._tool_result,
            ev.SubagentEvent: self._subagent_event,
            ev.CompactionBegin: self._compaction_begin,
            ev.CompactionEnd: self._compaction_end,
            ev.ContextReverted: self._context_reverted,
            ev.ContextRestored: self._context_restored,
            ev.ContextCleared: self._context_cleared,
            ev.SystemReminders: self._system_reminders,
            ev.HookRan: lambda event: self._add(hook_block(event)()),
            ev.CommandSent: self._command_sent,
            ev.PlanDisplay: self._plan_display,
            ev.Warning: self._warning,
            ev.Error: self._error,
            ev.StatusUpdate: self._status_update,
            ev.BackgroundTaskUpdate: self._task_update,
        }

    # -- lifecycle

    def on_mount(self) -> None:
        self.listen(self._bus, *self._handlers, backlog=self._backlog)
        self.watch(self, "scroll_y", self._scrolled, init=False)
        self.anchor()

    async def on_unmount(self) -> None:
        collector.turn_ended()
        collector.after_turn()
        await self._close_text()

    def watch_has_focus(self, has_focus: bool) -> None:
        # Textual restyles every descendant when focus changes: with hundreds of blocks that is
        # a visible pause. Only the pane's own border and the cursor depend on focus here.
        self.app.stylesheet.update_nodes([self])
        self._show_cursor(has_focus)

    async def clear(self) -> None:
        """Remove every block (after /clear, /new or a revert, before `load_history`)."""
        await self.stop_workers("conversation-reveal", "conversation-earlier")
        self._history = self._past = None
        await self._close_text()
        self._reset_step()
        self._compaction = None
        self._reminders = None
        self._forget_cursor()
        self._marker = None
        self._tail = []
        self._window.clear()
        await self.remove_children()

    async def load_history(
        self,
        messages: Sequence[Message],
        results: PastResults | None = None,
        *,
        at: int | None = None,
    ) -> None:
        """Show a stored conversation in place of what the pane shows: the blocks of
        `messages`, with the briefs and diffs of `results` (read from the session's wire) when
        they are given.

        Returns once the newest blocks are mounted (or, `at` a message, that message's block
        and those after it, at the top of the view); the others are read and mounted as the
        user scrolls to them (`pending_count`), or goes to the first with Home.
        """
        await self.clear()
        self._history, self._past = messages, results
        self._window.load(messages, results, at)
        size = min(INITIAL_BLOCKS, self.max_blocks)
        shown = self._window.take_above(size) if at is None else self._window.take_below(size)
        with self.app.batch_update():
            await self._sync_marker()
            await self.mount_all(make() for make in shown)
        if at is None:
            self.anchor()
            self.call_after_refresh(self._maybe_reveal)
            return
        self.release_anchor()
        self.scroll_home(animate=False, immediate=True)
        self.call_after_refresh(self._maybe_reveal, False)

    @work(group="conversation-earlier", exit_on_error=False)
    async def load_earlier(self, earlier: Callable[[], Awaitable[EarlierContexts]]) -> None:
        """Put the contexts the history on show was compacted from above it, as they were
        live (`AgentSession.earlier`): read-only history, each context read from its file
        only when the user scrolls (or Home goes) to it, so a resume stays fast."""
        history = self._history
        if history is None:
            return
        contexts = await earlier()
        if history is not self._history or not contexts.shown:
            return  # the pane shows something else by now
        self._window.add_earlier(contexts, history, self._past)
        await self._sync_marker()
        self.call_after_refresh(self._maybe_reveal)

    # -- the window (see BlockWindow)

    async def _add(self, *blocks: Widget, streamed: bool = False) -> None:
        if not blocks:
            return
        if streamed:
            self._streamed += blocks
        await self._append(*blocks)
        self._note_output()

    def _note_output(self) -> None:
        """New output the view, scrolled away from the end, does not show: say so on the
        pane's edge until the view follows the end again."""
        if not self._unseen and not self._following():
            self._unseen = True
            self._show_edge()

    def _scrolled(self, old: float, new: float) -> None:
        super()._scrolled(old, new)
        if self._unseen and self._following():
            self._unseen = False
            self._show_edge()

    def _show_edge(self) -> None:
        """The pane's bottom edge: the sign of life of a running turn (redrawn every second
        while one runs), and the new-output hint."""
        running = self._activity.running
        if running and self._ticker is None:
            self._ticker = self.set_interval(1.0, self._tick)
        elif not running and self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        self._edge_at = time.monotonic()
        parts = (self._activity.text(), NEW_OUTPUT_HINT if self._unseen else "")
        # Plain text: a tool's name comes from the model, and a border title reads markup.
        self.border_subtitle = Content(" · ".join(part for part in parts if part))

    def _tick(self) -> None:
        # A drawn frame redraws the edge too (see _draw_frame): while an answer streams the
        # edge costs no repaint of its own.
        if time.monotonic() - self._edge_at >= 0.9:
            self._show_edge()

    async def _status_update(self, event: ev.StatusUpdate) -> None:
        """Only the sign of life reads it (the tokens sent)."""

    def _busy(self) -> set[object]:
        # What may still change stays; finished parts of a long answer may go.
        return {
            *(b for b in self._streamed if not isinstance(b, AssistantBlock | AnswerBlock)),
            self._assistant,
            self._compaction,
            self._retry_note,
        }

    def _leaving(self, block: Block, factory: BlockFactory) -> BlockFactory:
        if block in self._streamed:
            # Held here, the widget could not be freed (a long answer is many blocks).
            self._streamed.remove(block)
            self._streamed_away.append(factory)
        return super()._leaving(block, factory)

    # -- wire events

    async def on_wire_message(self, message: WireMessage) -> None:
        handler = self._handlers.get(type(message.event))
        # Every text of the event, shown as the user must see it: control characters
        # visible, none reaching the terminal (one regex search per string when clean).
        event = visible_model(message.event)
        if self._thinking is not None and not _thought(event):
            self._thinking.finish()
        self._activity.see(event)
        if not isinstance(event, ev.ContentPart | ev.StatusUpdate):
            self._show_edge()
        if handler is not None and self.is_attached:
            if not isinstance(event, ev.ContentPart):
                # Whatever comes next (a block, the end of the step, an interruption) comes
                # after every delta sent before it.
                await self._draw_frame()
            await handler(event)

    def _reset_step(self) -> None:
        # Tool calls, approvals and results all happen within their step.
        self._assistant = None
        self._thinking = None
        self._streamed = []
        self._streamed_away = []
        self._retry_note = None
        self._tools = {}
        self._approvals = {}

    async def _buffer(self, pending: list[str], delta: str) -> None:
        """Keep a delta for the next frame: draw now if the last frame is a frame ago, or the
        stream bursts (`BURST`)."""
        pending.append(delta)
        self._pending_size += len(delta)
        self._delta_at = time.monotonic()
        burst = self._bursting or self._pending_size >= BURST
        if self._frame is not None and not burst:
            return
        wait = 0.0 if burst else self._pacer.due_in()
        if wait > 0 or keys_waiting(self.app):
            if self._frame is None:
                self._frame = self.set_timer(max(min(wait, QUIET), KEY_WAIT), self._frame_due)
        else:
            await self._draw_frame()

    def _frame_due(self) -> None:
        # Drawn from the pane's own queue, in order with the wire events (not in the timer's
        # task, which `_draw_frame` may stop).
        if keys_waiting(self.app):
            # Keys first: the prompt's echo is painted before the next frame.
            self._frame = self.set_timer(KEY_WAIT, self._frame_due)
            return
        wait, quiet_in = self._pacer.due_in(), self._delta_at + QUIET - time.monotonic()
        if wait > 0 and quiet_in > 0:
            # Not a frame yet, and the stream still flows: whichever comes first.
            self._frame = self.set_timer(max(min(wait, quiet_in), KEY_WAIT), self._frame_due)
            return
        self._frame = None
        self.call_later(self._draw_frame)

    async def _draw_frame(self) -> None:
        """Show the buffered deltas of the streamed blocks (one layout for all of them)."""
        if self._frame is not None:
            self._frame.stop()
            self._frame = None
        if not (self._pending_text or self._pending_think):
            return
        self._pacer.drawn()
        self._bursting, self._pending_size = self._pending_size >= BURST, 0
        think, self._pending_think = "".join(self._pending_think), []
        text, self._pending_text = "".join(self._pending_text), []
        # One layout for the whole frame, not one per block mounted or appended to.
        with self.app.batch_update():
            if think and self._thinking is not None:
                self._thinking.append(think)
            if text and self._assistant is not None:
                await self._write_text(text)
            if self._assistant is not None:
                # The blocks the frame changed ask for a layout when they are next idle, after
                # the batch: a second layout pass and repaint. Asked now, within this one.
                for block in self._assistant.children:
                    if block._layout_required:
                        block._check_refresh()
        # The screen looked for work while the batch held it, and waits for its next idle to
        # look again (an ending batch wakes only the app): without this, frames stayed off
        # the screen until something else (a key, the cursor) asked for an update.
        self.screen.check_idle()
        self._note_output()
        if time.monotonic() - self._edge_at >= 1:
            self._show_edge()  # in the same repaint as the text

    async def _write_text(self, text: str) -> None:
        """Stream a frame's text into the answer, in new blocks where it is long
        (`split_answer`). A block the frame both opens and closes is mounted as one widget drawn
        once (`AnswerBlock`), not a widget per paragraph; one far above the view, not at all."""
        first, *rest = split_answer(self._written, text)
        current = self._assistant
        if not rest:
            if first and current is not None:
                self._written += first
                await current.append(first)
            return
        *closed, last = rest
        self._assistant = None  # finished: it may leave the DOM like any finished block
        if current is not None:
            current.undrawn = first  # drawn below unless the block leaves with it
        made = [partial(AnswerBlock, part) for part in closed]
        away = await self._append_above(made, [len(part) for part in closed])
        if current is not None and first and current.parent is self:
            current.undrawn = ""
            await current.append(first)
        self._streamed_away += made[:away]
        await self._add(*(make() for make in made[away:]), streamed=True)
        assistant = await self._start_text()
        self._written = last
        await assistant.append(last)

    async def _start_text(self) -> AssistantBlock:
        """A new assistant block to stream into, at the end of the pane."""
        self._assistant = AssistantBlock()
        self._written = ""
        await self._add(self._assistant, streamed=True)
        return self._assistant

    async def _close_text(self) -> None:
        """Finish the assistant block being streamed; text that follows starts a new one."""
        await self._draw_frame()
        self._assistant = None
        self._written = ""

    async def _end_step(self) -> None:
        await self._close_text()
        self._reset_step()
        self._schedule_trim()

    async def _turn_begin(self, event: ev.TurnBegin) -> None:
        collector.during_turn()
        await self._end_step()
        self._reminders = None
        if not self._following():
            # The user just sent it: their message and the answer come into view.
            await self.action_last()
        command, self._command = self._command, None
        await self._add(UserBlock(user_text(event.user_input), command_label(command)))
        if not isinstance(event.user_input, str):
            for picture in pictures(event.user_input):
                await self._add(picture())

    async def _command_sent(self, event: ev.CommandSent) -> None:
        self._command = event

    async def _turn_end(self, event: ev.TurnEnd) -> None:
        await self._end_step()
        # The full collection held back runs once the screen shows the turn's end.
        collector.turn_ended()
        self.call_after_refresh(collector.after_turn)

    async def _step_begin(self, event: ev.StepBegin) -> None:
        await self._end_step()

    async def _step_retry(self, event: ev.StepRetry) -> None:
        # The model answers again from the start: what it streamed so far is void.
        await self._close_text()
        for block in self._streamed:
            if isinstance(block, ToolBlock):
                self._tools.pop(block.state.id, None)
        discarded = [block for block in self._streamed if block.parent is self]
        self._window.discard(self._streamed_away)
        self._thinking = None
        self._streamed = []
        self._streamed_away = []
        if discarded:
            await self._remove(discarded)
            # Less is above the view now; what waits above the window may be needed.
            self.call_after_refresh(self._maybe_reveal)
        text = retry_text(event)
        if self._retry_note is not None and self._retry_note.parent is self:
            self._retry_note.set_text(text)
        else:
            self._retry_note = NoticeBlock(text, kind="note")
            await self._add(self._retry_note)

    async def _step_interrupted(self, event: ev.StepInterrupted) -> None:
        await self._close_text()
        for block in self._streamed:
            if isinstance(block, ToolBlock) and block.state.status in ("running", "waiting"):
                block.set_status("interrupted")
        # A step that failed is followed by an Error event saying why; one message is enough.
        if not event.reason or event.reason.startswith("interrupted"):
            await self._add(NoticeBlock("interrupted", kind="note"))

    async def _content_part(self, event: ev.ContentPart) -> None:
        part = event.part
        if isinstance(part, TextPart) and part.text:
            if self._assistant is None:
                await self._start_text()
            await self._buffer(self._pending_text, part.text)
        elif isinstance(part, ThinkPart) and part.think:
            if self._thinking is None:
                self._thinking = ThinkingBlock.streaming()
                await self._add(self._thinking, streamed=True)
            await self._buffer(self._pending_think, part.think)

    async def _tool_call(self, event: ev.ToolCall) -> None:
        await self._close_text()
        state = ToolState(event.id, event.function.name, event.function.arguments or "")
        block = ToolBlock(state)
        if state.name in TODO_LISTS:  # the newest todo list shows; the one shown before folds
            self._window.todos.add_live(state)
        self._tools[event.id] = block
        await self._add(block, streamed=True)

    async def _tool_call_part(self, event: ev.ToolCallPart) -> None:
        if block := self._tools.get(event.id):
            block.append_arguments(event.arguments_delta)

    async def _approval_request(self, event: ev.ApprovalRequest) -> None:
        self._approvals[event.id] = event.tool_call_id
        if block := self._tools.get(event.tool_call_id):
            block.wait_for_approval(event.display)

    async def _approval_resolved(self, event: ev.ApprovalResolved) -> None:
        block = self._tools.get(self._approvals.pop(event.id, ""))
        if block is not None and event.response in ("approve", "approve_for_session"):
            block.set_status("running")

    async def _tool_result(self, event: ev.ToolResult) -> None:
        block = self._tools.get(event.tool_call_id)
        if block is not None:
            block.set_result(event)
        below: Widget | None = block
        for make in pictures(event.parts):
            below = await self._add_below(below, make())

    async def _add_below(self, block: Widget | None, picture: Widget) -> Widget:
        """A result's picture goes right below its call while the call is mounted (calls made
        together end one by one, after all of them were shown); else at the end."""
        if block is None or block.parent is not self:
            await self._add(picture, streamed=True)
            return picture
        self._streamed.append(picture)
        if block in self._tail:  # hidden at the end while the view is elsewhere: so is it
            picture.display = False
            self._tail.insert(self._tail.index(block) + 1, picture)
        await self.mount(picture, after=block)
        self._note_output()
        return picture

    async def _subagent_event(self, event: ev.SubagentEvent) -> None:
        if block := self._tools.get(event.parent_tool_call_id):
            block.add_subagent_event(event)

    async def _compaction_begin(self, event: ev.CompactionBegin) -> None:
        self._compaction_strategy = event.strategy
        self._compaction = MarkerBlock(divider("compacting…"), kind="compaction")
        self._compaction.add_class("-running")
        await self._add(self._compaction)

    async def _compaction_end(self, event: ev.CompactionEnd) -> None:
        text = compaction_text(event, self._compaction_strategy)
        block, self._compaction = self._compaction, None
        if block is not None and block.parent is self:
            block.set_text(text)
            block.remove_class("-running")
        else:
            await self._add(MarkerBlock(text, kind="compaction"))

    async def _context_reverted(self, event: ev.ContextReverted) -> None:
        kind = "revert dmail" if event.reason == "dmail" else "revert"
        await self._add(MarkerBlock(revert_text(event), kind=kind))

    async def _context_restored(self, event: ev.ContextRestored) -> None:
        source, kept = Path(event.from_file).name, Path(event.rotated_file).name
        text = divider(f"restored {source} (the previous context kept as {kept})")
        await self._add(MarkerBlock(text, kind="restore"))

    async def _context_cleared(self, event: ev.ContextCleared) -> None:
        text = divider(f"context cleared (kept as {Path(event.rotated_file).name})")
        await self._add(MarkerBlock(text, kind="clear"))

    async def _system_reminders(self, event: ev.SystemReminders) -> None:
        if not event.reminders:
            return
        items = [(r.kind, r.text) for r in event.reminders]
        if self._reminders is None:  # the turn's first: later ones fold into its block
            self._reminders = items
            await self._add(ReminderBlock(self._reminders))
            return
        shown = [b for b in self.query_children(ReminderBlock) if b.items is self._reminders]
        if shown:
            shown[0].add(items)
        else:  # off screen: the block is made from the same list when it comes back
            self._reminders += items

    def _todo_folded(self, state: ToolState) -> None:
        for block in self.query_children(ToolBlock):
            if block.state is state:
                block.refresh_state()

    async def _plan_display(self, event: ev.PlanDisplay) -> None:
        # The plan ExitPlanMode asks to approve, as a document above the approval panel.
        await self._add(MarkerBlock(divider(f"plan · {event.file_path}"), kind="plan"))
        await self._add(AnswerBlock(event.content))

    async def _warning(self, event: ev.Warning) -> None:
        await self._add(NoticeBlock(f"⚠ {event.message}", kind="warning"))

    async def _error(self, event: ev.Error) -> None:
        await self._add(NoticeBlock(f"✘ {event.message}", kind="error"))

    async def _task_update(self, event: ev.BackgroundTaskUpdate) -> None:
        # A line when a task ends, between turns too (no turn starts: Kimi's way); the model is
        # told at its next step.
        if event.status not in ("completed", "failed", "killed", "lost"):
            return
        code = f", exit code {event.exit_code}" if event.exit_code is not None else ""
        line = f"● background task {event.task_id} {event.status}{code}: {event.description}"
        kind: Literal["note", "warning"] = "note" if event.status == "completed" else "warning"
        await self._add(NoticeBlock(f"{line} (/tasks shows its output)", kind=kind))


if __name__ == "__main__":
    from textual.app import App, ComposeResult

    class _Demo(App[None]):
        """`python -m kode_tui.ui.widgets.conversation`: a scripted turn, streamed."""

        def compose(self) -> ComposeResult:
            self.bus = WireBus()
            yield Conversation(self.bus)

        async def on_mount(self) -> None:
            self.run_worker(self._script())

        async def _script(self) -> None:
            send = self.bus.send
            diff = ev.DiffBlock(
                path="hello.py", old_text="print('hi')\n", new_text="print('hello')\n"
            )
            send(ev.TurnBegin(user_input="Make hello.py say hello"))
            send(ev.StepBegin(n=1))
            send(ev.ContentPart(part=ThinkPart(think="A one-line edit.")))
            for word in ("I'll ", "**edit** ", "`hello.py` ", "so it says ", "*hello*."):
                send(ev.ContentPart(part=TextPart(text=word)))
                await asyncio.sleep(0.05)
            send(ev.ToolCall(id="t1", function=FunctionBody(name="StrReplaceFile", arguments="")))
            send(ev.ToolCallPart(id="t1", arguments_delta='{"path": "hello.py"}'))
            await asyncio.sleep(0.3)
            brief = ev.BriefBlock(text="1 edit")
            send(ev.ToolResult(tool_call_id="t1", message="File edited.", display=[brief, diff]))
            send(ev.CompactionBegin(strategy="LLMSummaryCompaction"))
            await asyncio.sleep(0.5)
            send(ev.CompactionEnd(tokens_before=48_000, tokens_after=3_000, rotated_file="x"))
            send(ev.Error(message="demo/model: the model is not reachable"))
            send(ev.TurnEnd())

    _Demo().run()
