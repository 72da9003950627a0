"""The checkpoint timeline: one row per checkpoint of the live context, and the details of one.

Rows are labelled from what follows each checkpoint, and only when drawn: building the rows of
a long session reads no message. A row is also cached under everything its label depends on
(checkpoint id and offset, the span of messages up to the next checkpoint, whether files were
edited in it, the id column's width), so a rebuild after a step makes new rows only for the
spans that changed: the newest one or two. 2,000 checkpoints rebuild in about 5 ms.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from textual import on
from textual.binding import Binding, BindingType
from textual.content import Content, Span
from textual.css.styles import RulesMap
from textual.message import Message
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kode_tui.safetext import visible
from kode_tui.ui.widgets.session_pane import SessionPane
from kode_tui.ui.wire_messages import WireMessage

if TYPE_CHECKING:
    # Names only: the timeline is drawn in the first frame, before the domain loads; what its
    # rows are read with is imported where they are (`_label`, `_messages_before`, `bind`).
    from kode_tui.message import Message as ChatMessage
    from kode_tui.soul.facade import AgentSession, Checkpoint, ContextSize, WireBus

_LOOKAHEAD = 8
"""Messages read to label a row: past a CHECKPOINT note, think-only replies and tool results."""
_MAX_LABEL = 80
_MAX_DETAILS_TEXT = 2000

USER_MARK = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"
EDIT_MARK = "\N{LOWER RIGHT PENCIL}"

_NO_DETAILS = Content.styled("Highlight a checkpoint to see it here.", "dim")

_GROUP = Binding.Group("Checkpoints")


class _Label(NamedTuple):
    kind: str
    """user, tool, text (assistant words), marker (compaction summary, D-Mail, task note) or
    none."""
    text: str
    user_text: str | None = None
    """The whole user message, for the details."""


class _Row(Visual):
    """One row, drawn as its `content`; the label is read from the history when first needed.

    Only the rows on screen (and the highlighted one) are ever labelled, so building the rows
    of a long session costs a few microseconds each, whatever the messages hold.
    """

    def __init__(
        self,
        checkpoint: Checkpoint,
        history: Sequence[ChatMessage],
        end: int,
        has_edits: bool,
        id_width: int,
        jump_from: int | None = None,
    ) -> None:
        self.checkpoint = checkpoint
        self._jump_from = jump_from
        self.has_edits = has_edits
        self._history = history
        self._end = end
        self._id_width = id_width
        self._label: _Label | None = None
        self._content: Content | None = None
        self.option = Option(self)

    @property
    def label(self) -> _Label:
        if self._label is None:
            label = _label(self._history, self.checkpoint.message_index, self._end)
            if self._jump_from is not None and label.text == "D-Mail":
                # The model sent itself back here from a later checkpoint: show where from.
                label = label._replace(
                    text=f"D-Mail \N{LEFTWARDS ARROW WITH HOOK} from {self._jump_from}"
                )
            self._label = label
            self._history = ()  # a replaced history (restore, clear) must not stay open for us
        return self._label

    @property
    def content(self) -> Content:
        if self._content is None:
            self._content = _row_content(
                self.checkpoint.id, self._id_width, self.label, self.has_edits
            )
        return self._content

    def render_strips(
        self, width: int, height: int | None, style: Style, options: RenderOptions
    ) -> list[Strip]:
        return self.content.render_strips(width, height, style, options)

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return self.content.get_optimal_width(rules, container_width)

    def get_height(self, rules: RulesMap, width: int) -> int:
        return 1  # labels are one line (`_first_line`), drawn without wrapping


_LABEL_STYLES = {
    "user": ".checkpoint-timeline--user",
    "tool": ".checkpoint-timeline--tool",
    "text": ".checkpoint-timeline--text",
    "marker": ".checkpoint-timeline--marker",
    "none": ".checkpoint-timeline--muted",
}


class CheckpointTimeline(SessionPane, OptionList):
    """The checkpoints of the live context, oldest first; Enter asks to revert to one."""

    HELP: ClassVar[str] = """\
## Checkpoints

One row per checkpoint of the live context, oldest first, labelled with what follows it:
`›` your message, tool calls, or the start of the reply. `✎` marks checkpoints after which
a tool changed files.

- **↑ ↓** move; the details of the highlighted checkpoint show below.
- **Enter** or a click: revert the conversation (and optionally the files) to that point.
- **End** jumps back to the newest checkpoint, which the highlight then follows.
- **x** on two checkpoints drops the messages from the first to the end of the second from
  the context (twice on one: only its own), after a dialog shows the saving.
"""  # noqa: RUF001 - the marks are the ones on screen

    BORDER_TITLE: ClassVar[str] = "Checkpoints"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select", "Revert here", id="checkpoints.revert", group=_GROUP),
        Binding("end", "last", "Newest", id="checkpoints.newest", group=_GROUP),
        Binding("d", "diff", "Diff to now", id="checkpoints.diff", group=_GROUP),
        Binding("x", "drop", "Drop range", id="checkpoints.drop", group=_GROUP),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = OptionList.COMPONENT_CLASSES | {
        "checkpoint-timeline--id",
        "checkpoint-timeline--user",
        "checkpoint-timeline--tool",
        "checkpoint-timeline--text",
        "checkpoint-timeline--marker",
        "checkpoint-timeline--edit",
        "checkpoint-timeline--muted",
    }

    @dataclass
    class CheckpointMessage(Message):
        """The user asked for something about one checkpoint (as `OptionList.OptionMessage`)."""

        checkpoint_id: int
        timeline: CheckpointTimeline

        @property
        def control(self) -> CheckpointTimeline:
            return self.timeline

    class RevertRequested(CheckpointMessage):
        """The user chose a checkpoint to revert to (the App asks how, then does it)."""

    class DiffRequested(CheckpointMessage):
        """The user asked what changed from a checkpoint to now (messages and files)."""

    class DropRequested(CheckpointMessage):
        """The user chose an end of a range of checkpoints to drop from the context."""

    @dataclass
    class Highlighted(Message):
        """A checkpoint was highlighted; `details_text` is what `CheckpointDetails` shows.

        `checkpoint_id` is None when the context has no checkpoint left (after a clear).
        """

        checkpoint_id: int | None
        details_text: Content
        timeline: CheckpointTimeline

        @property
        def control(self) -> CheckpointTimeline:
            return self.timeline

    def init_state(self) -> None:
        self._jumps: dict[int, int] = {}
        """D-Mail jumps: the checkpoint gone back to -> the newest checkpoint it came from."""
        self._rows: list[_Row] = []
        self._cache: dict[tuple[int, ...], _Row] = {}
        self._shown_before: dict[int, int] = {}
        """Messages before a history index as the conversation counts them, per index."""
        self._history: Sequence[ChatMessage] | None = None
        self._follow = True
        """Whether the highlight stays on the newest checkpoint (until the user moves it)."""
        self._rebuild_scheduled = False

    def show_new(self) -> None:
        self._show([])

    def bind(self, bus: WireBus, session: AgentSession) -> None:
        """Show `session`'s checkpoints and follow its events on `bus` from now on."""
        from kode_tui.wire import events as ev

        self._bus, self._session = bus, session
        self.listen(
            bus,
            ev.CheckpointCreated,
            ev.TurnEnd,
            ev.ToolResult,
            ev.StatusUpdate,
            ev.ContextReverted,
            ev.ContextRestored,
            ev.ContextCleared,
            ev.ContextReloaded,
            ev.CompactionEnd,
        )
        self.rebuild()

    @property
    def checkpoint_ids(self) -> list[int]:
        """The checkpoint ids of the rows, top to bottom."""
        return [row.checkpoint.id for row in self._rows]

    @property
    def highlighted_checkpoint(self) -> int | None:
        """The id of the highlighted checkpoint, if any."""
        index = self.highlighted
        if index is None or not 0 <= index < len(self._rows):
            return None
        return self._rows[index].checkpoint.id

    def action_diff(self) -> None:
        checkpoint_id = self.highlighted_checkpoint
        if checkpoint_id is not None:
            self.post_message(self.DiffRequested(checkpoint_id, self))

    def action_drop(self) -> None:
        checkpoint_id = self.highlighted_checkpoint
        if checkpoint_id is not None:
            self.post_message(self.DropRequested(checkpoint_id, self))

    def on_wire_message(self, message: WireMessage) -> None:
        from kode_tui.wire import events as ev

        event = message.event
        if isinstance(
            event, ev.ContextRestored | ev.ContextCleared | ev.ContextReloaded | ev.CompactionEnd
        ):
            # A different file is live: equal offsets and ids no longer mean equal rows.
            self._cache.clear()
            self._jumps.clear()
        elif isinstance(event, ev.ContextReverted):
            target = event.checkpoint_id
            self._jumps = {k: v for k, v in self._jumps.items() if k < target}
            if event.reason == "dmail" and self._rows:
                # The rows still show the context before the jump.
                self._jumps[target] = self._rows[-1].checkpoint.id
        if not self._rebuild_scheduled:
            # Steps send events in bursts (tool results, a checkpoint, a status): one rebuild.
            self._rebuild_scheduled = True
            self.call_later(self.rebuild)

    def rebuild(self) -> None:
        """Build the rows again from the context (cached rows are reused)."""
        self._rebuild_scheduled = False
        if self._session is None:
            return
        context = self._session.travel.timeline()
        history = context.history
        if history is not self._history:
            self._cache.clear()  # restore() or a rewrite replaced the history
            self._shown_before.clear()
            self._history = history
        checkpoints = list(context.checkpoints)
        edited = {edit.checkpoint_count - 1 for edit in context.file_edits}
        id_width = len(str(max((checkpoint.id for checkpoint in checkpoints), default=0)))
        history_length = len(history)
        cache = self._cache
        fresh: dict[tuple[int, ...], _Row] = {}
        rows: list[_Row] = []
        for position, checkpoint in enumerate(checkpoints):
            end = (
                checkpoints[position + 1].message_index
                if position + 1 < len(checkpoints)
                else history_length
            )
            has_edits = position in edited
            jump_from = self._jumps.get(checkpoint.id)
            key = (
                checkpoint.id,
                checkpoint.offset,
                checkpoint.message_index,
                end,
                has_edits,
                id_width,
                -1 if jump_from is None else jump_from,
            )
            row = cache.get(key)
            if row is None:
                row = _Row(checkpoint, history, end, has_edits, id_width, jump_from)
            fresh[key] = row
            rows.append(row)
        self._cache = fresh
        self._show(rows)

    def _show(self, rows: list[_Row]) -> None:
        previous = self.highlighted_checkpoint
        follow = self._follow
        scroll_y = self.scroll_y
        self._rows = rows
        if not rows:
            empty = Content.styled("no checkpoints yet", ".checkpoint-timeline--muted")
            self.set_options([Option(empty, disabled=True)])
            self._follow = True
            if previous is not None:
                self.post_message(self.Highlighted(None, _NO_DETAILS, self))
            return
        self.set_options([row.option for row in rows])
        self.scroll_y = scroll_y
        index = len(rows) - 1
        if not follow and previous is not None:
            index = self._index_of(previous, default=index)
        self.highlighted = index

    def _index_of(self, checkpoint_id: int, default: int) -> int:
        rows = self._rows
        # Ids count 0, 1, 2... in any file we or Kimi wrote, so the id is nearly always the index.
        if 0 <= checkpoint_id < len(rows) and rows[checkpoint_id].checkpoint.id == checkpoint_id:
            return checkpoint_id
        for index, row in enumerate(rows):
            if row.checkpoint.id == checkpoint_id:
                return index
        return default

    def action_cursor_down(self) -> None:
        # A timeline has ends: Down on the newest row stays there, and the highlight goes on
        # following new checkpoints (OptionList would wrap it to the oldest and stop following).
        if self.highlighted is None or self.highlighted < len(self._rows) - 1:
            super().action_cursor_down()

    def action_cursor_up(self) -> None:
        if self.highlighted is None or self.highlighted > 0:
            super().action_cursor_up()

    def watch_highlighted(self, highlighted: int | None) -> None:
        # Runs synchronously for the user's moves and ours alike, so the newest row is known.
        if highlighted is not None and self._rows:
            self._follow = highlighted == len(self._rows) - 1
        super().watch_highlighted(highlighted)

    def on_resize(self) -> None:
        # The details below grow and shrink with the highlighted row; the newest row stays seen.
        if self._follow:
            self.call_after_refresh(self.scroll_to_highlight)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("select", "last"):
            return bool(self._rows)
        return True

    @on(OptionList.OptionHighlighted)
    def _post_details(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if not 0 <= event.option_index < len(self._rows):
            return
        row = self._rows[event.option_index]
        self.post_message(self.Highlighted(row.checkpoint.id, self._details(row), self))

    @on(OptionList.OptionSelected)
    def _request_revert(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if 0 <= event.option_index < len(self._rows):
            checkpoint_id = self._rows[event.option_index].checkpoint.id
            self.post_message(self.RevertRequested(checkpoint_id, self))

    def _messages_before(self, index: int) -> int:
        """The messages before `index` as the conversation counts them (no checkpoint notes)."""
        # Counted once per index: a long history's details follow the arrow keys.
        from kode_tui.message import shown_count

        count = self._shown_before.get(index)
        if count is None:
            count = shown_count(self._history or (), index)
            self._shown_before[index] = count
        return count

    def _details(self, row: _Row) -> Content:
        assert self._session is not None, "rows come from a bound session"
        checkpoint = row.checkpoint
        edits = self._session.travel.timeline().file_edits[checkpoint.file_edit_index :]
        paths = list(dict.fromkeys(visible(edit.record.path, multiline=False) for edit in edits))
        messages = self._messages_before(checkpoint.message_index)
        noun = "message" if messages == 1 else "messages"
        lines = [
            Content.assemble(
                (f"Checkpoint {checkpoint.id}", "bold"),
                (f" · {_size_text(self._session.travel.checkpoint_size(checkpoint))}", "dim"),
            ),
            Content.styled(f"{messages:,} {noun} before it", "dim"),
            Content.assemble(("Files edited after it: ", "dim"), ", ".join(paths))
            if paths
            else Content.styled("No files edited after it", "dim"),
        ]
        label = row.label
        if label.user_text is not None:
            text = label.user_text
            if len(text) > _MAX_DETAILS_TEXT:
                text = text[:_MAX_DETAILS_TEXT] + "…"
            lines.append(Content.assemble((f"{USER_MARK} ", "bold"), visible(text)))
        else:
            lines.append(Content(label.text))
        return Content("\n").join(lines)


class CheckpointDetails(Static):
    """What the highlighted checkpoint holds; the App feeds it `CheckpointTimeline.Highlighted`."""

    HELP: ClassVar[str] = """\
## Checkpoint details

The checkpoint highlighted in the timeline: how many messages and tokens came before it,
the files a revert to it would restore, and the message that followed it.
"""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(_NO_DETAILS, id=id)

    def show(self, details_text: Content) -> None:
        """Show a checkpoint's details (`CheckpointTimeline.Highlighted.details_text`)."""
        self.update(details_text)


# --- labels ---------------------------------------------------------------------------------------


def _label(history: Sequence[ChatMessage], start: int, end: int) -> _Label:
    from kode_tui.message import (
        ImageURLPart,
        is_checkpoint_note,
        is_dmail_note,
        is_system_note,
        media_chips,
    )
    from kode_tui.soul.facade import COMPACTION_OUTPUT_PREFIX, typed_text
    from kode_tui.wire.readings import calls_summary, read_system_note

    for index in range(start, min(end, start + _LOOKAHEAD)):
        message = history[index]
        if message.role == "user":
            text = typed_text(message)  # a `!` command: the line typed
            # An attached image's `<image path=…></image>` wrapper is no words of the user's.
            images = [part for part in message.parts if isinstance(part, ImageURLPart)]
            text = media_chips(text, images)[0].strip()
            if is_checkpoint_note(text):
                continue
            if is_system_note(text, COMPACTION_OUTPUT_PREFIX):
                return _Label("marker", "compacted summary")
            if is_dmail_note(text):
                return _Label("marker", "D-Mail")
            note = read_system_note(text)
            if note is not None and note.kind == "task":  # Kimi's `<notification>`: not typed
                return _Label("marker", _first_line(note.title))
            return _Label("user", _first_line(text) or "(image)", text)
        if message.role == "assistant":
            if message.tool_calls:
                calls = [(c.function.name, c.function.arguments) for c in message.tool_calls]
                return _Label("tool", _first_line(calls_summary(calls)))
            words = _first_line(_plain(message.text))
            if words:
                return _Label("text", words)
    return _Label("none", "—")


_MARKDOWN_MARKS = re.compile(r"(`+)(.+?)\1|\*\*(?=\S)(.+?)(?<=\S)\*\*|^#+[ \t]+", re.MULTILINE)
"""A code span (kept verbatim), a bold pair, a heading mark. `__` is left alone: in a coding
agent's answer it is far more often a dunder name (`__init__.py`) than emphasis."""


def _size_text(size: ContextSize) -> str:
    """`4,146 tokens`; `4,190 tokens (44 estimated)`; `~3,850 tokens (estimated)` before the
    model reported any count."""
    if not size.estimated:
        return f"{size.tokens:,} tokens"
    if size.estimated == size.tokens:
        return f"~{size.tokens:,} tokens (estimated)"
    return f"{size.tokens:,} tokens ({size.estimated:,} estimated)"


def _plain(markdown: str) -> str:
    """An answer's words without the marks that are noise in a one-line label (bold, headings,
    a code span's backticks); what is inside a code span is kept exactly."""

    def unmark(match: re.Match[str]) -> str:
        if match.group(2) is not None:
            return match.group(2)
        if match.group(3) is not None:
            return _MARKDOWN_MARKS.sub(unmark, match.group(3))
        return ""

    return _MARKDOWN_MARKS.sub(unmark, markdown)


def _first_line(text: str, limit: int = _MAX_LABEL) -> str:
    # Visible before splitting: only a line feed breaks a line; other controls show.
    for line in visible(text).splitlines():
        line = " ".join(line.split())
        if line:
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


def _row_content(checkpoint_id: int, id_width: int, label: _Label, has_edits: bool) -> Content:
    if label.kind == "user":
        mark = (USER_MARK, ".checkpoint-timeline--user")
    elif has_edits:
        mark = (EDIT_MARK, ".checkpoint-timeline--edit")
    else:
        mark = (" ", "")
    pieces = [
        (f"{checkpoint_id:>{id_width}}", ".checkpoint-timeline--id"),
        (" ", ""),
        mark,
        (" ", ""),
        (label.text, _LABEL_STYLES[label.kind]),
    ]
    if has_edits and label.kind == "user":
        pieces += [(" ", ""), (EDIT_MARK, ".checkpoint-timeline--edit")]
    # Spans by hand: Content.assemble costs a third of a cold rebuild of 2,000 rows.
    spans = []
    position = 0
    for text, style in pieces:
        if style:
            spans.append(Span(position, position + len(text), style))
        position += len(text)
    return Content("".join(text for text, _ in pieces), spans, strip_control_codes=False)


if __name__ == "__main__":
    import asyncio
    import sys

    from textual.app import App, ComposeResult

    class TimelineDemo(App[None]):
        """Shows a session's timeline: python -m kode_tui.ui.widgets.timeline SESSION_DIR."""

        def __init__(self, session: AgentSession) -> None:
            super().__init__()
            self.session = session

        def compose(self) -> ComposeResult:
            yield CheckpointTimeline(self.session.bus, self.session)
            yield CheckpointDetails()

        @on(CheckpointTimeline.Highlighted)
        def _details(self, event: CheckpointTimeline.Highlighted) -> None:
            self.query_one(CheckpointDetails).show(event.details_text)

        @on(CheckpointTimeline.RevertRequested)
        def _revert(self, event: CheckpointTimeline.RevertRequested) -> None:
            self.notify(f"revert to {event.checkpoint_id} requested")

    from pathlib import Path

    from kode_tui.soul.facade import AgentSession, Session

    async def _open() -> AgentSession:
        session = await Session.from_dir(Path(sys.argv[1]))
        return await AgentSession.view(session)

    TimelineDemo(asyncio.run(_open())).run()
