"""A tool call in the conversation: `▸ Name summary  status brief`, and open, its arguments,
output and diffs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

from textual.content import Content

from kode_tui.humanize import one_line, tool_summary
from kode_tui.safetext import visible
from kode_tui.ui.screens.diff import diff_segments
from kode_tui.ui.widgets.blocks import BlockFactory, FoldingBlock, Segment, assemble
from kode_tui.wire import events as ev

OUTPUT_LINES = 20
"""Lines of a tool's output (and of its arguments) shown before "… N more lines"."""
DIFF_LINES = 200
BRIEF_CHARS = 60
"""A result's one-line brief after the call's status."""
_REJECTED_PREFIX = "The tool call is rejected"

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


def _lines(text: str, style: str, limit: int) -> list[Segment]:
    """The first `limit` lines of `text`, then "… N more lines" (never for a single line)."""
    # Visible first: JSON arguments decode to any character, and splitlines() would break
    # lines at form feeds and separators that the text does not break at.
    lines = visible(text).expandtabs(4).splitlines()
    if len(lines) <= limit + 1:
        return [(line, style) for line in lines]
    shown = [(line, style) for line in lines[:limit]]
    return [*shown, (f"… {len(lines) - limit} more lines", _MORE)]


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
    """The diff as `diff -u` lines (the approval panel's styles), cut after DIFF_LINES."""
    segments: list[Segment] = list(diff_segments(block))
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
        # The diff is kept but stays folded: the approval panel shows it, where the user
        # decides, and once is enough on a short screen. It opens here with the answer.
        self.state.status = "waiting"
        shown: list[ev.DisplayBlock] = [b for b in display if not isinstance(b, ev.BriefBlock)]
        if shown:
            self.state.display = shown
        self._changed()

    def set_status(self, status: ToolStatus) -> None:
        if self.state.status == "waiting" and self.state.has_diff:
            self.expanded = True  # answered: the panel's diff is gone, this one opens
        self.state.status = status
        self._changed()

    def set_result(self, result: ev.ToolResult) -> None:
        had_diff = self.state.has_diff and self.state.status != "waiting"
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
        brief = one_line(state.brief or state.message, BRIEF_CHARS)
        if brief and state.status not in ("running", "waiting", "interrupted"):
            head += [" ", (brief, _MUTED)]
        if not self.expanded:
            return Content.assemble(*head)
        if self._body is None:
            self._body = _body(state)
        return assemble(head, self._body)
