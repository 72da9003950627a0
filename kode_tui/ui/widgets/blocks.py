"""The blocks of the conversation pane, one widget each: the user's message, the assistant's
Markdown, folded details (thinking, reminders, a summary, a D-Mail, a hook's run) and marked
lines.

Tool calls have a module of their own (`tool_block.py`); `Conversation` stacks the blocks.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Callable, Sequence
from functools import cache, partial
from typing import TYPE_CHECKING, Literal

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from rich.markdown import Markdown as RichMarkdown
from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.content import Content
from textual.geometry import Size
from textual.message import Message as TextualMessage
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownBlock

from kode_tui.humanize import format_tokens
from kode_tui.safetext import visible
from kode_tui.ui.pictures import (
    PICTURE_COLUMNS,
    Drawing,
    PictureError,
    PictureHost,
    Thumbnail,
    cached_thumbnail,
    cell_size,
    choose_protocol,
    picture_cells,
    picture_widget,
    thumbnail,
)
from kode_tui.wire.events import CompactionEnd, ContextReverted, HookRan

if TYPE_CHECKING:
    from kode_tui.wire.events import CommandSent

USER_MARK = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"

BlockFactory = Callable[[], Widget]
"""Makes a block: blocks waiting to be mounted are kept as these, since Textual cannot mount a
widget again once it was removed."""

Segment = tuple[str, str]
"""A line of a block's body and its style ("" for none)."""


def assemble(head: list[str | tuple[str, str]], body: list[Segment]) -> Content:
    """A block's title line, then its body a line each."""
    parts: list[str | tuple[str, str]] = list(head)
    for text, style in body:
        parts.append("\n")
        parts.append((text, style) if style else text)
    return Content.assemble(*parts)


# --- blocks that fold ----------------------------------------------------------------------------


class FoldingBlock(Widget):
    """A block of one widget whose title line opens to show more; a click toggles it."""

    expanded: reactive[bool] = reactive(False, layout=True)

    class Clicked(TextualMessage):
        """The user clicked the block (the conversation moves its cursor there)."""

        def __init__(self, block: FoldingBlock) -> None:
            super().__init__()
            self.block = block

    def __init__(self, *, expanded: bool, classes: str) -> None:
        super().__init__(classes=classes)
        self.set_reactive(FoldingBlock.expanded, expanded)
        self.set_class(expanded, "-expanded")

    def toggle(self) -> None:
        self.expanded = not self.expanded

    def factory(self) -> BlockFactory:
        """Makes a fresh block showing the same; it holds the data, not this widget."""
        raise NotImplementedError

    def watch_expanded(self, expanded: bool) -> None:
        self.set_class(expanded, "-expanded")

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.toggle()
        self.post_message(self.Clicked(self))

    def _symbol(self) -> str:
        return "▾ " if self.expanded else "▸ "


class DetailBlock(FoldingBlock):
    """A folded block with a one-line title: reminders, a compaction summary, a D-Mail."""

    HELP = "A folded block (thinking, reminders, a summary, a D-Mail): click it to open it."

    def __init__(self, title: str, text: str, *, kind: str, expanded: bool = False) -> None:
        super().__init__(expanded=expanded, classes=f"block detail {kind}")
        self.title = visible(title, multiline=False)
        self.text = text
        self.kind = kind

    def factory(self) -> BlockFactory:
        return partial(DetailBlock, self.title, self.text, kind=self.kind, expanded=self.expanded)

    def render(self) -> Content:
        head: list[str | tuple[str, str]] = [self._symbol(), self.title]
        if not self.expanded:
            return Content.assemble(*head)
        return assemble(head, [("  " + line, "") for line in self.text.splitlines()])


class ThinkingBlock(DetailBlock):
    """A step's thinking: dim and folded. The conversation appends streamed deltas once a
    frame (see `conversation.FRAME_INTERVAL`).

    Titled `Thinking…` while it streams (from `started`, a `time.monotonic()`), `Thought for
    4 s` once `finish()` is called, and `Thought` when the time is not known (a stored one)."""

    def __init__(
        self,
        text: str = "",
        *,
        expanded: bool = False,
        started: float | None = None,
        seconds: float | None = None,
    ) -> None:
        super().__init__(thought_title(started, seconds), text, kind="thinking", expanded=expanded)
        self.started = started
        self.seconds = seconds

    @classmethod
    def streaming(cls) -> ThinkingBlock:
        """A block for thinking that starts streaming now."""
        return cls(started=_now())

    def factory(self) -> BlockFactory:
        return partial(
            ThinkingBlock,
            self.text,
            expanded=self.expanded,
            started=self.started,
            seconds=self.seconds,
        )

    def append(self, text: str) -> None:
        self.text += text
        # Folded, the block looks the same whatever the text is.
        if self.expanded and self.is_mounted:
            self.refresh(layout=True)

    def finish(self) -> None:
        """The thinking is over (the answer or a tool call began): say how long it took."""
        if self.started is None or self.seconds is not None:
            return
        self.seconds = _now() - self.started
        self.title = thought_title(self.started, self.seconds)
        if self.is_mounted:
            self.refresh()


def _now() -> float:
    # One clock for the thinking time (a snapshot test stops it).
    return time.monotonic()


def thought_title(started: float | None, seconds: float | None) -> str:
    """`Thinking…` (still streaming), `Thought for 4 s`, or `Thought` (time unknown)."""
    if seconds is not None:
        return f"Thought for {seconds:.0f} s" if seconds >= 1 else "Thought for <1 s"
    return "Thinking…" if started is not None else "Thought"


class ReminderBlock(DetailBlock):
    """The system reminders of a turn, folded into one line (`3 reminders: todo, context`):
    each request may carry some, and a block each would bury the answer."""

    def __init__(self, items: list[tuple[str, str]], *, expanded: bool = False) -> None:
        super().__init__(reminders_title(items), "", kind="reminders", expanded=expanded)
        self.items = items
        """(kind, text) of each reminder, shared with the factory: the turn adds to it."""
        self.text = "\n\n".join(text for _, text in items)

    def factory(self) -> BlockFactory:
        return partial(ReminderBlock, self.items, expanded=self.expanded)

    def add(self, reminders: Sequence[tuple[str, str]]) -> None:
        """More reminders of the same turn."""
        self.items += reminders
        self.title = visible(reminders_title(self.items), multiline=False)
        self.text = "\n\n".join(text for _, text in self.items)
        if self.is_mounted:
            self.refresh(layout=True)


HOOK_COMMAND_CHARS = 40
"""Of a hook's command, what its folded line shows."""


def hook_block(run: HookRan) -> BlockFactory:
    """A hook's run, folded to one line (`hook PreToolUse · blocked: … · 0.1 s · ./check`);
    open, its whole command and what it wrote. Live and read back from the wire alike."""
    mark = {"ok": "", "warning": "⚠ ", "blocked": "⛔ "}[run.outcome]
    status = visible(run.note or f"exit {run.exit_code}", multiline=False)
    # One line: what happened first, then as much of the command as fits (all of it inside).
    command = visible(" ".join(run.command.split()), multiline=False)
    if len(command) > HOOK_COMMAND_CHARS:
        command = command[: HOOK_COMMAND_CHARS - 1] + "…"
    title = f"{mark}hook {run.hook_event} · {status} · {run.duration_s:.1f} s · {command}"
    parts = [f"command: {run.command}"] + [
        f"{name}:\n{text.rstrip()}"
        for name, text in (("stdout", run.stdout), ("stderr", run.stderr))
        if text.strip()
    ]
    text = visible("\n".join(parts))
    return partial(DetailBlock, title, text, kind=f"hook -{run.outcome}")


def reminders_title(log: Sequence[tuple[str, str]]) -> str:
    """`reminder: todo`, `3 reminders: todo, context`."""
    kinds = ", ".join(dict.fromkeys(kind for kind, _ in log))
    return f"reminder: {kinds}" if len(log) == 1 else f"{len(log)} reminders: {kinds}"


# --- blocks that do not fold --------------------------------------------------------------------


class UserBlock(Static):
    """The user's message, marked as on the prompt; `label` above it says where it came from
    (the custom command that made it: `/review src/ · .kode/commands/review.md`)."""

    HELP = "A message you sent."

    def __init__(self, text: str, label: str = "") -> None:
        message = Content(f"{USER_MARK} {text.strip()}")
        if label:
            message = Content.assemble((label, "$text-muted"), "\n", message)
        super().__init__(message, classes="block user")
        self.text = text
        self.label = label

    def factory(self) -> BlockFactory:
        """Makes a fresh block showing the same; it holds the data, not this widget."""
        return partial(UserBlock, self.text, self.label)


def command_label(command: CommandSent | None) -> str:
    """What a `UserBlock` shows above a custom command's prompt; empty for a typed message."""
    if command is None:
        return ""
    model = f" · model {command.model}" if command.model else ""
    return f"{command.command} {command.arguments}".strip() + f" · {command.file}{model}"


@cache
def _markdown_parser() -> MarkdownIt:
    """One parser for every Markdown block (it keeps no state between parses): Textual asks
    for one per streamed append, and making one costs more than parsing a frame's text."""
    parser = MarkdownIt("gfm-like")
    parser.core.ruler.push("visible", _visible_tokens)
    return parser


@cache
def _answer_parser() -> MarkdownIt:
    """`_markdown_parser` without linkify (four fifths of a parse's time): an `AnswerBlock`
    shows a link as its text, and the text of a bare address is the address itself."""
    parser = MarkdownIt("gfm-like", {"linkify": False})
    parser.core.ruler.push("visible", _visible_tokens)
    return parser


def _visible_tokens(state: StateCore) -> None:
    """Make what the parser made of the text visible: it decodes entities (`&#x202e;`), so a
    character that was not in the source can be in a token."""
    stack = list(state.tokens)
    while stack:
        token = stack.pop()
        token.content = visible(token.content)
        token.info = visible(token.info, multiline=False)
        for name, value in token.attrs.items():
            if isinstance(value, str):
                token.attrs[name] = visible(value, multiline=False)
        stack += token.children or ()


_WEB_LINK = re.compile(r"https?://", re.IGNORECASE)


class PlacedOnce(Widget):
    """Mixed into the widgets of a streamed answer (and the pane they scroll in): a layout
    pass that resizes one does not ask for another.

    Textual's layout pass hands each widget its new size (`_size_updated`), which sets the
    `virtual_size` reactive, a layout reactive: every widget that grew asks for a second
    layout pass of the screen, and a repaint of its region, a frame later. A streamed
    answer grows every frame, so each frame was laid out and painted twice. These widgets
    are not laid out by their virtual size (their region is what the pass that just ran gave
    them), so the size is taken without the reactive's refresh (`layout=False`, as Textual
    does for widgets a scroll exposes)."""

    def _size_updated(
        self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True
    ) -> bool:
        return super()._size_updated(size, virtual_size, container_size, layout=False)


@cache
def _placed_once(block: type[MarkdownBlock]) -> type[MarkdownBlock]:
    """`block` as a `PlacedOnce` (same name: the same CSS rules apply)."""
    return type(block.__name__, (block, PlacedOnce), {})


class AssistantBlock(Markdown, PlacedOnce):
    """The assistant's text of one step, as Markdown (streamed while it arrives)."""

    HELP = "The assistant's answer, shown as Markdown while it streams in."

    def get_block_class(self, block_name: str) -> type[MarkdownBlock]:
        return _placed_once(super().get_block_class(block_name))

    def __init__(self, markdown: str | None = None) -> None:
        super().__init__(
            markdown, classes="block assistant", parser_factory=_markdown_parser, open_links=False
        )
        self.undrawn = ""
        """The end of its text, not drawn: it leaves the DOM in the frame that brought it (a
        burst's), as a block made by `factory`, which has it."""

    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        # The model wrote both the link and the text it shows: only a web address is opened
        # (in the browser). A file, or a scheme that starts an application, is only named.
        event.stop()
        if _WEB_LINK.match(event.href):
            self.app.open_url(event.href)
        else:
            self.notify(
                f"Not opened (only web links open): {event.href}", severity="warning", markup=False
            )

    def factory(self) -> BlockFactory:
        """Makes a fresh block showing the same; it holds the data, not this widget."""
        return partial(AnswerBlock, self.source + self.undrawn)


_LINK_TOKENS = ("link_open", "link_close")


class AnswerBlock(Static, PlacedOnce):
    """A finished answer of the assistant (read from history, scrolled back into view, or
    finished before it was ever drawn): its Markdown drawn by Rich as one widget. Textual's
    `Markdown` mounts a widget per paragraph, list item and code block, and the pane lays out
    every mounted widget on each move of its window, so finished answers take this cheaper
    form."""

    HELP = "An answer of the assistant."

    def __init__(self, markdown: str) -> None:
        # No hyperlinks: an image's address would otherwise become a link the terminal opens.
        # Rich's Markdown parses what it is given, with a parser it makes each time: given
        # nothing, it is handed the tokens of the one parse here.
        text = RichMarkdown("", hyperlinks=False)
        text.markup = markdown
        text.parsed = _answer_parser().parse(markdown)
        # A link shows as its text, and no click opens it: the model wrote both the link and
        # the text it shows (see AssistantBlock), and a link in the terminal opens anything.
        for token in text.parsed:
            if token.children:
                token.children = [
                    child for child in token.children if child.type not in _LINK_TOKENS
                ]
        super().__init__(classes="block answer")
        self.source = markdown
        self._markdown = text
        self._drawn: tuple[int, Content, int] | None = None

    def _drawn_at(self, width: int) -> tuple[Content, int]:
        """The answer drawn `width` cells wide, and its height. Drawn once per width: Textual
        measures a widget and paints it apart (and measures it again after each layout), and
        drawing Markdown costs far more than showing what was drawn. Rich's lines are kept as
        `Content`, so that their text can be selected and copied."""
        if self._drawn is None or self._drawn[0] != width:
            console = self.app.console
            options = self.app.console_options.update_width(width).update(highlight=False)
            lines = console.render_lines(self._markdown, options, pad=False)
            text = Text("\n").join(
                Text.assemble(*((s.text, s.style or "") for s in line if not s.control))
                for line in lines
            )
            self._drawn = (width, Content.from_rich_text(text, console), len(lines))
        return self._drawn[1], self._drawn[2]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self._drawn_at(width)[1] if width else 0

    def render(self) -> Content:
        return self._drawn_at(self.content_size.width)[0]

    def factory(self) -> BlockFactory:
        """Makes a fresh block showing the same; it holds the data, not this widget."""
        return partial(AnswerBlock, self.source)


class MarkerBlock(Static):
    """A marked line: compaction, a revert, a restored or cleared context."""

    HELP = "Where the context changed: compacted, reverted, restored or cleared."

    def __init__(self, text: str, *, kind: str) -> None:
        super().__init__(Content(text), classes=f"block marker {kind}")
        self.text = text
        self.kind = kind

    def set_text(self, text: str) -> None:
        self.text = text
        self.update(Content(text))

    def factory(self) -> BlockFactory:
        """Makes a fresh block showing the same; it holds the data, not this widget."""
        return partial(MarkerBlock, self.text, kind=self.kind)


class NoticeBlock(Static):
    """A one-line note (a retry, an interruption), a warning or an error."""

    HELP = "A note from the agent loop: a retry, an interruption, a warning or an error."

    def __init__(self, text: str, *, kind: Literal["note", "warning", "error"]) -> None:
        # Escaped: a warning may quote a server (an MCP server's stderr, a provider's error).
        super().__init__(Content(visible(text)), classes=f"block notice {kind}")
        self.text = text
        self.kind: Literal["note", "warning", "error"] = kind

    def set_text(self, text: str) -> None:
        self.text = text
        self.update(Content(visible(text)))

    def factory(self) -> BlockFactory:
        """Makes a fresh block showing the same; it holds the data, not this widget."""
        return partial(NoticeBlock, self.text, kind=self.kind)


class PictureBlock(Widget):
    """The picture of an image in the message or tool result above it (which shows its chip),
    drawn as the terminal can (`kode_tui.ui.pictures`); an image that cannot be drawn is one
    line saying why. Nothing when pictures are off.

    An image decoded before (the block scrolled out and back) is drawn at once, so the pane's
    layout does not move under the reader; a new one is decoded in a thread and appears then.
    """

    HELP = 'A picture of the image above (`pictures = "off"` in the config hides them).'

    def __init__(self, url: str) -> None:
        super().__init__(classes="block picture")
        self.url = url

    def factory(self) -> BlockFactory:
        """Makes a fresh block showing the same; it holds the data, not this widget."""
        return partial(PictureBlock, self.url)

    def compose(self) -> ComposeResult:
        setting = self.app.pictures if isinstance(self.app, PictureHost) else "auto"
        drawing = choose_protocol(setting, os.environ)
        if drawing is None:
            self.add_class("-off")
            return
        if self.app.is_headless:  # its graphics escapes would land in the output: cells only
            drawing = "halfblocks"
        made = cached_thumbnail(self.url)
        if made is None:
            self._draw(drawing)
        else:
            yield self._picture(drawing, made)

    @work(group="picture", exit_on_error=False)
    async def _draw(self, drawing: Drawing) -> None:
        try:
            made: Thumbnail | PictureError = await asyncio.to_thread(thumbnail, self.url)
        except PictureError as error:
            made = error
        await self.mount(self._picture(drawing, made))

    def _picture(self, drawing: Drawing, made: Thumbnail | PictureError) -> Widget:
        if isinstance(made, PictureError):
            return _picture_note(made)
        try:
            pane = self.parent.content_size.width if isinstance(self.parent, Widget) else 0
            columns = min(PICTURE_COLUMNS, pane - 2) if pane > 2 else PICTURE_COLUMNS
            columns, rows = picture_cells(made.width, made.height, columns, cell_size())
            return picture_widget(drawing, made, columns, rows)
        except ImportError as error:
            return _picture_note(error)


def _picture_note(error: Exception) -> Static:
    note = f"picture not shown: {error}"
    return Static(Content.styled(note, "$text-muted"), classes="picture-note")


class PruneMarker(Static):
    """The top line once old blocks were removed: `… N earlier messages not shown`."""

    HELP = "Older messages are not shown here, to keep long sessions fast."

    def __init__(self) -> None:
        super().__init__(classes="prune-marker")
        self.count = 0

    def set_count(self, count: int) -> None:
        self.count = count
        self.update(Content(f"… {count} earlier messages not shown"))


Block = (
    UserBlock
    | AssistantBlock
    | AnswerBlock
    | FoldingBlock
    | MarkerBlock
    | NoticeBlock
    | PictureBlock
)
"""What the pane shows, one widget each; `factory()` makes a fresh one to mount again later."""


def divider(text: str) -> str:
    """The text of a marked line: `── text ──`."""
    return f"── {text} ──"


def compaction_text(event: CompactionEnd, strategy: str) -> str:
    """The marked line of a compaction that ended (`strategy`: how it compacted)."""
    by = f" ({strategy})" if strategy else ""
    if event.rotated_file is None:
        return divider(f"nothing to compact{by}")
    before, after = format_tokens(event.tokens_before), format_tokens(event.tokens_after)
    return divider(f"compacted: {before} → {after} tokens{by}")


def revert_text(event: ContextReverted) -> str:
    """The marked lines of a revert: the checkpoint, and the files it touched or left."""
    by = " (D-Mail)" if event.reason == "dmail" else ""
    lines = [divider(f"reverted to checkpoint {event.checkpoint_id}{by}")]
    if event.files_restored:
        lines.append("   files restored: " + ", ".join(event.files_restored))
    if event.conflicts:
        lines.append("   changed since, left alone: " + ", ".join(event.conflicts))
    return "\n".join(lines)
