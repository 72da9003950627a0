"""The conversation pane: the session as blocks, streamed live from the wire (DESIGN.md §10).

Each top-level child of `Conversation` is one block: the user's message, the assistant's text
(a `Markdown` fed by a `MarkdownStream`), a step's thinking, a tool call with its result, or a
marked line (compaction, revert, D-Mail, reminders, notes, warnings, errors).

Textual lays out every mounted widget whenever anything changes, and a Markdown answer is
dozens of widgets, so a long session keeps few of them in the DOM:

* at most `max_blocks` blocks exist; older ones are dropped and counted in a marker at the top
  (Toad's `prune_window` idea);
* only blocks near the view are mounted. The others wait above it as `BlockFactory`s: a
  restored session mounts just its newest blocks, and blocks far above a view that follows
  the bottom are unmounted again. Scrolling up mounts them back, a batch at a time.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, Literal

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from textual import events, on, work
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message as TextualMessage
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from kode_tui.message import (
    ContentPart,
    FunctionBody,
    ImageURLPart,
    Message,
    TextPart,
    ThinkPart,
    is_checkpoint_note,
)
from kode_tui.safetext import visible, visible_model
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from kode_tui.wire.bus import Subscription
from kode_tui.wire.events import read_wire

OUTPUT_LINES = 20
"""Lines of a tool's output (and of its arguments) shown before "… N more lines"."""
DIFF_LINES = 200
SUMMARY_CHARS = 60
USER_MARK = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"
INITIAL_BLOCKS = 30
"""Blocks `load_history` mounts at once; the rest are mounted as the user scrolls up."""
REVEAL_BATCH = 30
"""Blocks mounted per step while scrolling up: each step lays out every mounted block, so few
big steps cost far less than many small ones."""
TRIM_SCREENS = 3
"""How many screens of blocks stay mounted above the view when trimming."""
TRIM_DELAY = 0.2
"""Seconds from a new block (or the end of a step) to looking for blocks to unmount."""
SPLIT_CHARS = 2000
"""A streamed answer continues in a new block after this many characters (at a paragraph
break outside code), so that the start of a very long answer can leave the DOM too."""

# Kimi CLI's markers in stored user and tool messages (ours follow them).
_COMPACTED_PREFIX = "<system>Previous context has been compacted"
_DMAIL_PREFIX = "<system>You just got a D-Mail"
_DMAIL_CONTENT = "D-Mail content:"
_REJECTED_PREFIX = "The tool call is rejected"
_SYSTEM_STATUS = re.compile(r"\s*<system>(.*?)</system>\n?", re.DOTALL)

_MAIN_ARGUMENT = {
    "ReadFile": "path",
    "WriteFile": "path",
    "StrReplaceFile": "path",
    "Shell": "command",
    "Glob": "pattern",
    "Grep": "pattern",
}

ToolStatus = Literal["running", "waiting", "ok", "error", "rejected", "interrupted", "unknown"]

_STATUS_LABEL: dict[ToolStatus, str] = {
    "running": "running…",
    "waiting": "waiting for approval",
    "ok": "✔",
    "error": "✘",
    "rejected": "⊘",
    "interrupted": "interrupted",
    "unknown": "",
}

# Text styles inside a block, in theme variables. They are not component classes because
# Textual restyles every component class of every block whenever the pane's styles change,
# and a conversation holds hundreds of blocks.
_STATUS_STYLE: dict[ToolStatus, str] = {
    "running": "$text-muted italic",
    "waiting": "$warning bold",
    "ok": "$success",
    "error": "$error",
    "rejected": "$warning",
    "interrupted": "$text-muted italic",
    "unknown": "",
}
_NAME = "bold"
_SUMMARY = "$accent"
_MUTED = "$text-muted"
_MORE = "$text-muted italic"
_ERROR = "$error"
_DIFF_HEADER = "$text-muted bold"
_DIFF_HUNK = "$secondary"
_DIFF_ADDED = "$success on $success 10%"
_DIFF_REMOVED = "$error on $error 10%"

# Widgets have no CSS_PATH; loading the file as DEFAULT_CSS keeps the pane self-contained and
# lets an App's own CSS override it.
_CSS = Path(__file__).with_suffix(".tcss").read_text(encoding="utf-8")


# --- text helpers --------------------------------------------------------------------------------


def format_tokens(count: int) -> str:
    """`48k`, `3.2k`, `950`: a token count, short."""
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}".rstrip("0").rstrip(".") + "k"
    return f"{round(count / 1000)}k"


def _one_line(text: str, limit: int) -> str:
    stripped = visible(text).strip()
    first = stripped.splitlines()[0] if stripped else ""
    first = visible(first, multiline=False)
    if len(first) > limit:
        return first[: limit - 1] + "…"
    return first + (" …" if first != stripped else "")


def tool_summary(name: str, arguments: str) -> str | None:
    """The main argument of a call (path, command, pattern; else the first 60 characters of the
    arguments), or None while the arguments are not yet complete JSON (or still empty)."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
        return None
    key = _MAIN_ARGUMENT.get(name)
    if isinstance(parsed, dict) and key and isinstance(parsed.get(key), str):
        return _one_line(parsed[key], 80)
    if parsed == {}:
        return ""
    return _one_line(json.dumps(parsed, ensure_ascii=False), SUMMARY_CHARS)


def _user_text(content: str | Sequence[ContentPart]) -> str:
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for part in content:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ImageURLPart):
            pieces.append(" [image] ")
    return "".join(pieces)


BlockFactory = Callable[[], Widget]
"""Makes a block: blocks waiting to be mounted are kept as these, since Textual cannot mount a
widget again once it was removed."""

Segment = tuple[str, str]
"""A line of a block's body and its style ("" for none)."""


def _lines(text: str, style: str, limit: int) -> list[Segment]:
    """The first `limit` lines of `text`, then "… N more lines" (never for a single line)."""
    # Visible first: JSON arguments decode to any character, and splitlines() would break
    # lines at form feeds and separators that the text does not break at.
    lines = visible(text).expandtabs(4).splitlines()
    if len(lines) <= limit + 1:
        return [(line, style) for line in lines]
    shown = [(line, style) for line in lines[:limit]]
    return [*shown, (f"… {len(lines) - limit} more lines", _MORE)]


def _assemble(head: list[str | tuple[str, str]], body: list[Segment]) -> Content:
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
        return _assemble(head, [("  " + line, "") for line in self.text.splitlines()])


class ThinkingBlock(DetailBlock):
    """A step's thinking: dim and folded; streamed deltas are drawn at most every 50 ms."""

    FLUSH_INTERVAL = 0.05

    def __init__(self, text: str = "", *, expanded: bool = False) -> None:
        super().__init__("Thinking…", text, kind="thinking", expanded=expanded)
        self._flush_pending = False

    def factory(self) -> BlockFactory:
        return partial(ThinkingBlock, self.text, expanded=self.expanded)

    def append(self, text: str) -> None:
        self.text += text
        # Folded, the block looks the same whatever the text is.
        if self.expanded and self.is_mounted and not self._flush_pending:
            self._flush_pending = True
            self.set_timer(self.FLUSH_INTERVAL, self._flush)

    def _flush(self) -> None:
        self._flush_pending = False
        self.refresh(layout=True)


# --- tool blocks ---------------------------------------------------------------------------------


@dataclass(slots=True)
class ToolState:
    """Everything a tool block shows; live events and `load_history` fill it in."""

    id: str
    name: str
    arguments: str = ""
    summary: str = ""
    status: ToolStatus = "running"
    brief: str = ""
    message: str = ""
    output: str = ""
    display: list[ev.DisplayBlock] = field(default_factory=list)

    def apply_result(self, result: ev.ToolResult) -> None:
        """Take the status, brief, output and display blocks of a result."""
        rejected = result.is_error and result.message.startswith(_REJECTED_PREFIX)
        self.status = "rejected" if rejected else "error" if result.is_error else "ok"
        self.message = result.message
        self.output = result.output
        self.brief = ""
        display: list[ev.DisplayBlock] = []
        for block in result.display:
            if isinstance(block, ev.BriefBlock):
                self.brief = block.text
            else:
                display.append(block)
        # An approval may have shown the diff already; a result without blocks keeps it.
        if display or not self.display:
            self.display = display

    @property
    def has_diff(self) -> bool:
        return any(isinstance(block, ev.DiffBlock) for block in self.display)


def _body(state: ToolState) -> list[Segment]:
    segments: list[Segment] = []
    # An edit shows as its diff: its arguments (the old and new text as JSON) say it again.
    has_diff = any(isinstance(block, ev.DiffBlock) for block in state.display)
    if state.arguments.strip() and not has_diff:
        try:
            pretty = json.dumps(json.loads(state.arguments), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
            pretty = state.arguments
        segments += _lines(pretty, _MUTED, OUTPUT_LINES)
    if state.status in ("error", "rejected") and state.message:
        segments += _lines(state.message, _ERROR, OUTPUT_LINES)
    if state.output.strip():
        segments += _lines(state.output, "", OUTPUT_LINES)
    for block in state.display:
        if isinstance(block, ev.DiffBlock):
            segments += _diff(block)
        elif isinstance(block, ev.TodoBlock):
            marks = {"done": "☑", "completed": "☑", "in_progress": "◐"}
            segments += [
                (f"{marks.get(i.status, '☐')} {visible(i.title, multiline=False)}", "")
                for i in block.items
            ]
    return segments


def _diff(block: ev.DiffBlock) -> list[Segment]:
    path = visible(block.path, multiline=False)
    lines = difflib.unified_diff(
        visible(block.old_text).splitlines(),
        visible(block.new_text).splitlines(),
        fromfile=path,
        tofile=path,
        lineterm="",
    )
    segments: list[Segment] = []
    for line in lines:
        if line.startswith(("+++", "---")):
            style = _DIFF_HEADER
        elif line.startswith("@@"):
            style = _DIFF_HUNK
        elif line.startswith("+"):
            style = _DIFF_ADDED
        elif line.startswith("-"):
            style = _DIFF_REMOVED
        else:
            style = ""
        segments.append((line.expandtabs(4), style))
    if len(segments) > DIFF_LINES + 1:
        more = len(segments) - DIFF_LINES
        segments = [*segments[:DIFF_LINES], (f"… {more} more lines", _MORE)]
    return segments


class ToolBlock(FoldingBlock):
    """A tool call: `▸ Name summary  status brief`; open, its arguments and result."""

    HELP = """\
## Tool call

`▸ Name summary` and the call's status: *running…*, *waiting for approval*, **✔** done,
**✘** failed, **⊘** rejected, with the tool's short report. Click it (or **Enter** on the
block under the cursor) to see the arguments, the output (first 20 lines) and, for edits,
the diff.
"""

    def __init__(self, state: ToolState, *, expanded: bool | None = None) -> None:
        # An edit opens to show its diff.
        opened = state.has_diff if expanded is None else expanded
        super().__init__(expanded=opened, classes="block tool")
        self.state = state
        self._body: list[Segment] | None = None
        self._summary_pending = True
        self._update_summary()
        self._set_status_class()

    def factory(self) -> BlockFactory:
        return partial(ToolBlock, self.state, expanded=self.expanded)

    def append_arguments(self, delta: str) -> None:
        """Add a streamed piece of the arguments; the summary follows once the JSON is whole."""
        self.state.arguments += delta
        # Parsing after every delta would be quadratic; a complete object ends with "}".
        if self._summary_pending and "}" in delta:
            self._update_summary()
            self._changed()
        elif self.expanded:
            self._changed()

    def wait_for_approval(self, display: Sequence[ev.DisplayBlock]) -> None:
        self.state.status = "waiting"
        shown: list[ev.DisplayBlock] = [b for b in display if not isinstance(b, ev.BriefBlock)]
        if shown:
            self.state.display = shown
            if self.state.has_diff:
                self.expanded = True
        self._changed()

    def set_status(self, status: ToolStatus) -> None:
        self.state.status = status
        self._changed()

    def set_result(self, result: ev.ToolResult) -> None:
        had_diff = self.state.has_diff
        self.state.apply_result(result)
        if self._summary_pending:
            self._update_summary()
        if self.state.has_diff and not had_diff:
            self.expanded = True
        self._changed()

    def _update_summary(self) -> None:
        summary = tool_summary(self.state.name, self.state.arguments)
        if summary is not None:
            self.state.summary = summary
            self._summary_pending = False

    def _changed(self) -> None:
        self._body = None
        self._set_status_class()
        self.refresh(layout=True)

    def _set_status_class(self) -> None:
        for status in _STATUS_LABEL:
            self.set_class(status == self.state.status, f"-{status}")

    def render(self) -> Content:
        state = self.state
        head: list[str | tuple[str, str]] = [
            self._symbol(),
            (visible(state.name, multiline=False), _NAME),
        ]
        if state.summary:
            head += [" ", (state.summary, _SUMMARY)]
        if label := _STATUS_LABEL[state.status]:
            head += ["  ", (label, _STATUS_STYLE[state.status])]
        brief = _one_line(state.brief or state.message, SUMMARY_CHARS)
        if brief and state.status not in ("running", "waiting", "interrupted"):
            head += [" ", (brief, _MUTED)]
        if not self.expanded:
            return Content.assemble(*head)
        if self._body is None:
            self._body = _body(state)
        return _assemble(head, self._body)


# --- other blocks --------------------------------------------------------------------------------


class UserBlock(Static):
    """The user's message, marked as on the prompt."""

    HELP = "A message you sent."

    def __init__(self, text: str) -> None:
        super().__init__(Content(f"{USER_MARK} {text.strip()}"), classes="block user")
        self.text = text

    def factory(self) -> BlockFactory:
        """Makes a fresh block showing the same; it holds the data, not this widget."""
        return partial(UserBlock, self.text)


def _markdown_parser() -> MarkdownIt:
    parser = MarkdownIt("gfm-like")
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


class AssistantBlock(Markdown):
    """The assistant's text of one step, as Markdown (streamed while it arrives)."""

    HELP = "The assistant's answer, shown as Markdown while it streams in."

    def __init__(self, markdown: str | None = None) -> None:
        super().__init__(
            markdown, classes="block assistant", parser_factory=_markdown_parser, open_links=False
        )

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
        return partial(AssistantBlock, self.source)


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
        super().__init__(Content(text), classes=f"block notice {kind}")
        self.text = text
        self.kind: Literal["note", "warning", "error"] = kind

    def set_text(self, text: str) -> None:
        self.text = text
        self.update(Content(text))

    def factory(self) -> BlockFactory:
        """Makes a fresh block showing the same; it holds the data, not this widget."""
        return partial(NoticeBlock, self.text, kind=self.kind)


class PruneMarker(Static):
    """The top line once old blocks were removed: `… N earlier messages not shown`."""

    HELP = "Older messages are not shown here, to keep long sessions fast."

    def __init__(self) -> None:
        super().__init__(classes="prune-marker")
        self.count = 0

    def set_count(self, count: int) -> None:
        self.count = count
        self.update(Content(f"… {count} earlier messages not shown"))


Block = UserBlock | AssistantBlock | FoldingBlock | MarkerBlock | NoticeBlock
"""What the pane shows, one widget each; `factory()` makes a fresh one to mount again later."""


def _divider(text: str) -> str:
    return f"── {text} ──"


def _compaction_text(event: ev.CompactionEnd, strategy: str) -> str:
    by = f" ({strategy})" if strategy else ""
    if event.rotated_file is None:
        return _divider(f"nothing to compact{by}")
    before, after = format_tokens(event.tokens_before), format_tokens(event.tokens_after)
    return _divider(f"compacted: {before} → {after} tokens{by}")


def _revert_text(event: ev.ContextReverted) -> str:
    by = " (D-Mail)" if event.reason == "dmail" else ""
    lines = [_divider(f"reverted to checkpoint {event.checkpoint_id}{by}")]
    if event.files_restored:
        lines.append("   files restored: " + ", ".join(event.files_restored))
    if event.conflicts:
        lines.append("   changed since, left alone: " + ", ".join(event.conflicts))
    return "\n".join(lines)


# --- history -------------------------------------------------------------------------------------


class _WireResults:
    """The tool results of a wire.jsonl, to give restored tool blocks their brief and diffs.

    Kimi CLI numbers tool calls per step (`call_1_0` recurs), so a result is looked up by its
    call's id and arguments (a call whose arguments the wire lacks matches any).
    """

    def __init__(self) -> None:
        self._by_id: dict[str, list[tuple[str, ev.ToolResult]]] = {}

    @classmethod
    def read(cls, path: Path) -> _WireResults:
        results = cls()
        arguments: dict[str, str] = {}
        for record in read_wire(path):
            event = record.event
            if isinstance(event, ev.ToolCall):
                arguments[event.id] = event.function.arguments or ""
            elif isinstance(event, ev.ToolCallPart):
                arguments[event.id] = arguments.get(event.id, "") + event.arguments_delta
            elif isinstance(event, ev.ToolResult):
                entry = (arguments.get(event.tool_call_id, ""), event)
                results._by_id.setdefault(event.tool_call_id, []).append(entry)
        return results

    def find(self, call_id: str, arguments: str) -> ev.ToolResult | None:
        for recorded, result in reversed(self._by_id.get(call_id, ())):
            if not recorded or _same_arguments(recorded, arguments):
                return visible_model(result)
        return None


def _same_arguments(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return bool(json.loads(a) == json.loads(b))
    except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
        return False


def _stored_result(message: Message) -> ev.ToolResult:
    """A tool message read back as a result: `<system>ERROR: …</system>` marks an error."""
    text = message.text
    status = ""
    match = _SYSTEM_STATUS.match(text)
    if match:
        status, text = match.group(1).strip(), text[match.end() :]
    is_error = status.startswith("ERROR:")
    if is_error:
        status = status.removeprefix("ERROR:").strip()
    return ev.ToolResult(
        tool_call_id=message.tool_call_id or "", is_error=is_error, output=text, message=status
    )


def _history_blocks(
    messages: Sequence[Message], limit: int, wire: _WireResults | None = None
) -> tuple[list[BlockFactory], int]:
    """The blocks of the newest messages (at most `limit`), and how many messages are left out.

    Messages are read from the end, so only the shown ones are ever parsed.
    """
    wire = wire or _WireResults()
    groups: list[list[BlockFactory]] = []
    count = 0
    results: dict[str, Message] = {}
    index = len(messages)
    while index > 0 and count < limit:
        index -= 1
        # Visible here, where stored text enters the pane, as live events do in `_on_event`.
        message = visible_model(messages[index])
        if message.role == "tool":
            if message.tool_call_id is not None:
                results[message.tool_call_id] = message
            continue
        group = _message_blocks(message, results, wire)
        groups.append(group)
        count += len(group)
    blocks = [block for group in reversed(groups) for block in group]
    return blocks[-limit:] if limit > 0 else [], index


def _message_blocks(
    message: Message, results: dict[str, Message], wire: _WireResults
) -> list[BlockFactory]:
    if message.role == "user":
        return _user_blocks(message)
    if message.role != "assistant":
        return []
    blocks: list[BlockFactory] = []
    thinking = "\n\n".join(p.think for p in message.parts if isinstance(p, ThinkPart) and p.think)
    if thinking:
        blocks.append(partial(ThinkingBlock, thinking))
    if message.text.strip():
        blocks.append(partial(AssistantBlock, message.text))
    for call in message.tool_calls or ():
        state = ToolState(call.id, call.function.name, call.function.arguments or "")
        state.status = "unknown"
        stored = results.pop(call.id, None)
        if stored is not None:
            state.apply_result(_stored_result(stored))
            recorded = wire.find(call.id, state.arguments)
            if recorded is not None:
                # The wire has what the context lacks: the brief and the display blocks.
                state.brief = next(
                    (b.text for b in recorded.display if isinstance(b, ev.BriefBlock)), ""
                )
                state.display = [b for b in recorded.display if not isinstance(b, ev.BriefBlock)]
        blocks.append(partial(ToolBlock, state))
    return blocks


def _user_blocks(message: Message) -> list[BlockFactory]:
    text = _user_text(message.content or "")
    if is_checkpoint_note(text):
        return []
    if text.startswith(_COMPACTED_PREFIX):
        _, _, summary = text.partition("</system>")
        title = _divider("compacted: summary")
        return [partial(DetailBlock, title, summary.strip(), kind="compaction")]
    if text.startswith(_DMAIL_PREFIX):
        _, _, mail = text.partition(_DMAIL_CONTENT)
        mail = mail.removesuffix("</system>").strip()
        title = _divider("D-Mail from the future")
        return [partial(DetailBlock, title, mail, kind="dmail")]
    return [partial(UserBlock, text)]


# --- the pane ------------------------------------------------------------------------------------

_BLOCKS = Binding.Group("Conversation")


class Conversation(VerticalScroll, can_focus=True, can_focus_children=False):
    """The conversation, streamed from the wire; `load_history` shows a stored one."""

    DEFAULT_CSS = _CSS
    HELP = """\
## Conversation

The session as blocks: your messages, the assistant's answers, its thinking (folded),
tool calls with their status and result, and marked lines where the context was compacted,
reverted, restored or cleared. It follows new output unless you scroll up; **End** follows
again.

- Click a tool call or a folded block to open it.
- **Alt+↑ / Alt+↓** move the block cursor, **Enter** opens or closes the block under it.
- Long sessions keep the newest blocks; a line at the top says how many messages are hidden.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "alt+up", "cursor_previous", "Previous block", id="conversation.previous", group=_BLOCKS
        ),
        Binding("alt+down", "cursor_next", "Next block", id="conversation.next", group=_BLOCKS),
        Binding(
            "enter,space", "toggle_block", "Open/close", id="conversation.toggle", group=_BLOCKS
        ),
    ]

    def __init__(
        self,
        bus: WireBus,
        *,
        max_blocks: int = 300,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        if max_blocks < 1:
            raise ValueError("max_blocks must be at least 1")
        super().__init__(id=id, classes=classes)
        self.border_title = "Conversation"
        self.max_blocks = max_blocks
        self._bus = bus
        self._subscription: Subscription[ev.Event] | None = None
        self._marker: PruneMarker | None = None
        self._reserve: list[BlockFactory] = []
        """Blocks above the mounted ones, oldest first: mounted as the user scrolls up to them."""
        self._revealing = False
        self._trim_scheduled = False
        self._cursor: FoldingBlock | None = None
        # The step being streamed.
        self._assistant: AssistantBlock | None = None
        self._stream: MarkdownStream | None = None
        self._written: list[str] = []
        """What was streamed into the current assistant block, and its length."""
        self._written_chars = 0
        self._split_ready = False
        self._thinking: ThinkingBlock | None = None
        self._streamed: list[Widget] = []
        self._streamed_away: list[BlockFactory] = []
        """Blocks of this step that `_trim` unmounted: a retry discards them too."""
        self._retry_note: NoticeBlock | None = None
        self._tools: dict[str, ToolBlock] = {}
        self._approvals: dict[str, str] = {}
        self._compaction: MarkerBlock | None = None
        self._compaction_strategy = ""
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
            ev.CompactionBegin: self._compaction_begin,
            ev.CompactionEnd: self._compaction_end,
            ev.ContextReverted: self._context_reverted,
            ev.ContextRestored: self._context_restored,
            ev.ContextCleared: self._context_cleared,
            ev.SystemReminders: self._system_reminders,
            ev.Warning: self._warning,
            ev.Error: self._error,
        }

    # -- lifecycle

    def on_mount(self) -> None:
        self._subscription = self._bus.subscribe(*self._handlers, callback=self._on_event)
        self.watch(self, "scroll_y", self._scrolled, init=False)
        self.anchor()

    async def on_unmount(self) -> None:
        if self._subscription is not None:
            self._subscription.close()
            self._subscription = None
        await self._close_text()

    def watch_has_focus(self, has_focus: bool) -> None:
        # Textual restyles every descendant when focus changes: with hundreds of blocks that is
        # a visible pause. Only the pane's own border and the cursor depend on focus here.
        self.app.stylesheet.update_nodes([self])
        if self._cursor is not None:
            self._cursor.set_class(has_focus, "-cursor")

    @property
    def blocks(self) -> list[Widget]:
        """The mounted blocks, oldest first."""
        return [child for child in self.children if not isinstance(child, PruneMarker)]

    @property
    def hidden_count(self) -> int:
        """How many earlier messages are not shown at all (removed, or never built)."""
        return self._marker.count if self._marker is not None else 0

    @property
    def pending_count(self) -> int:
        """Blocks above the mounted ones, mounted as the user scrolls up to them."""
        return len(self._reserve)

    async def clear(self) -> None:
        """Remove every block (after /clear, /new or a revert, before `load_history`)."""
        self.workers.cancel_group(self, "conversation-reveal")
        await self._close_text()
        self._reset_step()
        self._compaction = None
        self._cursor = None
        self._marker = None
        self._reserve = []
        await self.remove_children()

    async def load_history(
        self, messages: Sequence[Message], wire_file: Path | None = None
    ) -> None:
        """Show a stored conversation in place of what the pane shows: the newest `max_blocks`
        blocks of `messages`, with briefs and diffs from `wire_file` when it is given.

        Returns once the newest blocks are mounted; older ones are mounted as the user
        scrolls up to them (`pending_count`).
        """
        wire = await asyncio.to_thread(_WireResults.read, wire_file) if wire_file else None
        factories, hidden = _history_blocks(messages, self.max_blocks, wire)
        await self.clear()
        self._reserve = factories[:-INITIAL_BLOCKS]
        with self.app.batch_update():
            if hidden:
                await self._set_hidden(hidden)
            await self.mount_all(make() for make in factories[-INITIAL_BLOCKS:])
        self.anchor()
        self.call_after_refresh(self._maybe_reveal)

    # -- mounting, pruning and revealing

    async def _add(self, block: Widget, *, streamed: bool = False) -> None:
        await self.mount(block)
        if streamed:
            self._streamed.append(block)
        await self._prune()
        self._schedule_trim()

    async def _prune(self) -> None:
        blocks = self.blocks
        excess = len(self._reserve) + len(blocks) - self.max_blocks
        if excess <= 0:
            return
        dropped = min(excess, len(self._reserve))
        del self._reserve[:dropped]
        victims = blocks[: excess - dropped]
        if self._assistant in victims:
            await self._close_text()
        if self._cursor in victims:
            self._cursor = None
        if victims:
            await self.remove_children(victims)
        await self._set_hidden(self.hidden_count + excess)

    async def _set_hidden(self, count: int) -> None:
        if self._marker is None:
            self._marker = PruneMarker()
            await self.mount(self._marker, before=0)
        self._marker.set_count(count)

    def _following(self) -> bool:
        """Whether the view sticks to the bottom (it keeps its place there by itself)."""
        return self.is_anchored and self.scroll_y >= self.max_scroll_y

    def _schedule_trim(self) -> None:
        # Later, not now: where blocks are is known only once the screen has laid out what
        # was streamed into them.
        if not self._trim_scheduled:
            self._trim_scheduled = True
            self.set_timer(TRIM_DELAY, self._trim)

    async def _trim(self) -> None:
        """Unmount blocks far above a view that follows the bottom; they wait in the reserve.

        Textual lays out every mounted widget on each change, so a long session streams as
        smoothly as a short one only if old answers leave the DOM.
        """
        self._trim_scheduled = False
        if self._revealing or not self._following():
            return
        cut = self.scroll_y - TRIM_SCREENS * self.scrollable_content_region.height
        # What may still change stays; finished parts of a long answer may go.
        busy = {
            *(b for b in self._streamed if not isinstance(b, AssistantBlock)),
            self._assistant,
            self._compaction,
            self._retry_note,
        }
        victims: list[Block] = []
        for block in self.blocks:
            if not isinstance(block, Block) or block in busy:
                break
            if not block.virtual_region or block.virtual_region.bottom >= cut:
                break
            victims.append(block)
        if not victims:
            return
        if self._cursor in victims:
            self._move_cursor(None)
        for block in victims:
            factory = block.factory()
            self._reserve.append(factory)
            if block in self._streamed:
                # Held here, the widget could not be freed (a long answer is many blocks).
                self._streamed.remove(block)
                self._streamed_away.append(factory)
        await self.remove_children(victims)

    def _scrolled(self, scroll_y: float) -> None:
        self._maybe_reveal()

    def _maybe_reveal(self) -> None:
        if self._reserve and not self._revealing and self.scroll_y <= self._reveal_margin:
            self._reveal()

    @property
    def _reveal_margin(self) -> int:
        """Reveal more blocks while less than a screen of them is above the view."""
        return max(1, self.scrollable_content_region.height)

    @work(group="conversation-reveal", exit_on_error=False)
    async def _reveal(self) -> None:
        """Mount reserved blocks above the others while the view is near the top."""
        if self._revealing:
            return
        self._revealing = True
        try:
            while self._reserve and self.scroll_y <= self._reveal_margin:
                batch = [make() for make in self._reserve[-REVEAL_BATCH:]]
                del self._reserve[-REVEAL_BATCH:]
                blocks = self.blocks
                first = blocks[0] if blocks else None
                # A view that follows the bottom stays there by itself; one the user scrolled
                # up must keep its place while content grows above it.
                following = self._following()
                top = first.virtual_region.y if first is not None else 0
                if first is not None:
                    await self.mount_all(batch, before=first)
                else:
                    await self.mount_all(batch)
                # A busy screen may draw a frame before it lays out what was just mounted.
                for _ in range(10):
                    await self._refreshed()
                    if all(block.virtual_region for block in batch):
                        break
                if first is not None and not following and first.parent is self:
                    grown = first.virtual_region.y - top
                    self.scroll_to(y=self.scroll_y + grown, animate=False, immediate=True)
        finally:
            self._revealing = False

    async def _refreshed(self) -> None:
        """Wait until the screen has laid out what was just mounted."""
        done = asyncio.Event()
        self.call_after_refresh(done.set)
        await done.wait()

    # -- wire events

    async def _on_event(self, event: ev.Event) -> None:
        handler = self._handlers.get(type(event))
        if handler is not None and self.is_attached:
            # Every text of the event, shown as the user must see it: control characters
            # visible, none reaching the terminal (one regex search per string when clean).
            await handler(visible_model(event))

    def _reset_step(self) -> None:
        # Tool calls, approvals and results all happen within their step.
        self._assistant = None
        self._stream = None
        self._thinking = None
        self._streamed = []
        self._streamed_away = []
        self._retry_note = None
        self._tools = {}
        self._approvals = {}

    async def _close_text(self) -> None:
        """Finish the assistant block being streamed; text that follows starts a new one."""
        stream, self._stream, self._assistant = self._stream, None, None
        self._written = []
        self._written_chars = 0
        self._split_ready = False
        if stream is not None:
            await stream.stop()

    def _at_split_point(self, fragment: str) -> bool:
        """Whether the streamed block is long and just ended a paragraph outside code: text
        that follows at the start of a line may then go on in a new block."""
        self._written.append(fragment)
        self._written_chars += len(fragment)
        if not fragment.endswith("\n") or self._written_chars < SPLIT_CHARS:
            return False
        written = "".join(self._written)
        self._written = [written]
        fences = len(re.findall(r"^ {0,3}(?:```|~~~)", written, re.MULTILINE))
        return written.endswith("\n\n") and fences % 2 == 0

    async def _end_step(self) -> None:
        await self._close_text()
        self._reset_step()
        self._schedule_trim()

    async def _turn_begin(self, event: ev.TurnBegin) -> None:
        await self._end_step()
        await self._add(UserBlock(_user_text(event.user_input)))

    async def _turn_end(self, event: ev.TurnEnd) -> None:
        await self._end_step()

    async def _step_begin(self, event: ev.StepBegin) -> None:
        await self._end_step()

    async def _step_retry(self, event: ev.StepRetry) -> None:
        # The model answers again from the start: what it streamed so far is void.
        await self._close_text()
        for block in self._streamed:
            if isinstance(block, ToolBlock):
                self._tools.pop(block.state.id, None)
        discarded = [block for block in self._streamed if block.parent is self]
        away = {id(factory) for factory in self._streamed_away}
        self._reserve = [factory for factory in self._reserve if id(factory) not in away]
        self._thinking = None
        self._streamed = []
        self._streamed_away = []
        if discarded:
            await self.remove_children(discarded)
            # Less is above the view now; what waits in the reserve may be needed.
            self.call_after_refresh(self._maybe_reveal)
        text = (
            f"retrying in {event.wait_s:.1f} s "
            f"(attempt {event.attempt} of {event.max_attempts}): {event.error}"
        )
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
            if self._split_ready and part.text.strip():
                # Indented text after the blank line continues the paragraph or list above.
                if not part.text[0].isspace():
                    await self._close_text()
                self._split_ready = False
            if self._stream is None:
                self._assistant = AssistantBlock()
                await self._add(self._assistant, streamed=True)
                self._stream = Markdown.get_stream(self._assistant)
            # No batching of our own: MarkdownStream joins whatever arrives while the Markdown
            # is busy updating, so a fast model costs one update at a time. (Writing every
            # 30 ms instead saved a fifth of the CPU but doubled the p95 lag in
            # bench/bench_stream.py.)
            await self._stream.write(part.text)
            self._split_ready = self._at_split_point(part.text)
        elif isinstance(part, ThinkPart) and part.think:
            if self._thinking is None:
                self._thinking = ThinkingBlock()
                await self._add(self._thinking, streamed=True)
            self._thinking.append(part.think)

    async def _tool_call(self, event: ev.ToolCall) -> None:
        await self._close_text()
        block = ToolBlock(ToolState(event.id, event.function.name, event.function.arguments or ""))
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
        if block := self._tools.get(event.tool_call_id):
            block.set_result(event)

    async def _compaction_begin(self, event: ev.CompactionBegin) -> None:
        self._compaction_strategy = event.strategy
        self._compaction = MarkerBlock(_divider("compacting…"), kind="compaction")
        self._compaction.add_class("-running")
        await self._add(self._compaction)

    async def _compaction_end(self, event: ev.CompactionEnd) -> None:
        text = _compaction_text(event, self._compaction_strategy)
        block, self._compaction = self._compaction, None
        if block is not None and block.parent is self:
            block.set_text(text)
            block.remove_class("-running")
        else:
            await self._add(MarkerBlock(text, kind="compaction"))

    async def _context_reverted(self, event: ev.ContextReverted) -> None:
        kind = "revert dmail" if event.reason == "dmail" else "revert"
        await self._add(MarkerBlock(_revert_text(event), kind=kind))

    async def _context_restored(self, event: ev.ContextRestored) -> None:
        source, kept = Path(event.from_file).name, Path(event.rotated_file).name
        text = _divider(f"restored {source} (the previous context kept as {kept})")
        await self._add(MarkerBlock(text, kind="restore"))

    async def _context_cleared(self, event: ev.ContextCleared) -> None:
        text = _divider(f"context cleared (kept as {Path(event.rotated_file).name})")
        await self._add(MarkerBlock(text, kind="clear"))

    async def _system_reminders(self, event: ev.SystemReminders) -> None:
        if event.reminders:
            title = "reminders: " + ", ".join(dict.fromkeys(r.kind for r in event.reminders))
            text = "\n\n".join(r.text for r in event.reminders)
            await self._add(DetailBlock(title, text, kind="reminders"))

    async def _warning(self, event: ev.Warning) -> None:
        await self._add(NoticeBlock(f"⚠ {event.message}", kind="warning"))

    async def _error(self, event: ev.Error) -> None:
        await self._add(NoticeBlock(f"✘ {event.message}", kind="error"))

    # -- the block cursor

    def _folding(self) -> list[FoldingBlock]:
        return [child for child in self.children if isinstance(child, FoldingBlock)]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_block":
            return self._cursor is not None and self._cursor.parent is self
        if action in ("cursor_previous", "cursor_next"):
            return any(isinstance(child, FoldingBlock) for child in self.children)
        return True

    def _move_cursor(self, block: FoldingBlock | None) -> None:
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
        if self._cursor is not None:
            self._cursor.toggle()

    @on(FoldingBlock.Clicked)
    def _block_clicked(self, event: FoldingBlock.Clicked) -> None:
        event.stop()
        self._move_cursor(event.block)


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
