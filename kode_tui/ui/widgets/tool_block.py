"""A tool call in the conversation: `▸ Shell: make test  ✔ brief` (its reading and status, as
`kode_tui.wire.readings` gives them to every front end), and open, its arguments
(as fields), output and diffs. A command shows the first lines of its output and opens a full
view of all of it; the newest todo list shows as a checklist (see `tool_views`)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from textual.content import Content

from kode_tui.safetext import visible
from kode_tui.ui.screens.output import OutputScreen, Section
from kode_tui.ui.widgets.blocks import BlockFactory, FoldingBlock
from kode_tui.ui.widgets.display_blocks import command_lines, diff_block_rows, diff_lines, diff_rows
from kode_tui.ui.widgets.rows import Row, Rows
from kode_tui.ui.widgets.tool_state import ToolState
from kode_tui.ui.widgets.tool_views import (
    MORE,
    MUTED,
    checklist_rows,
    field_rows,
    full_field_rows,
    parse_arguments,
    text_lines,
    todo_items,
)
from kode_tui.wire import events as ev
from kode_tui.wire.readings import (
    SHELL,
    STATUS_LABELS,
    TODO_LISTS,
    ToolStatus,
    result_message,
    result_summary,
)

OUTPUT_LINES = 20
"""Lines of a tool's output shown in the open block before "… N more lines"."""
SHELL_LINES = 5
"""Lines of a command's output its block shows; the full view has all of them."""
SHELL_HINT = "Enter/click for full output"
FULL_HINT = "o for full output"
DIFF_LINES = 200
LIVE_STEPS = 6
"""A subagent's latest steps its block shows while it works (the one it is at, last)."""

# Text styles inside a block, in theme variables. They are not component classes because
# Textual restyles every component class of every block whenever the pane's styles change,
# and a conversation holds hundreds of blocks.
_STATUS_STYLE: dict[ToolStatus, str] = {
    "running": MORE,
    "waiting": "$warning bold",
    "ok": "$success",
    "error": "$error",
    "rejected": "$warning",
    "interrupted": MORE,
    "unknown": "",
}
_NAME = "bold"
_SUMMARY = "$accent"
_ERROR = "$error"
_CHIP = "$accent"


def _failure(state: ToolState) -> str:
    """What went wrong, below the title: an error's message; a rejection's only when the
    title cut it short (long feedback), as it says the rest."""
    if state.status == "error":
        return state.message
    if state.status == "rejected":
        # As the user reads it: what they did, not what the model is told.
        rejection = result_message(state.status, state.message)
        return "" if result_summary(state.status, "", state.message) == rejection else rejection
    return ""


def _live(state: ToolState) -> bool:
    """Whether the block is an `Agent` call whose subagent is at work: it shows its steps."""
    return state.subagent is not None and state.status in ("running", "waiting")


def _live_rows(state: ToolState) -> list[Row]:
    """A working subagent's latest steps, the earlier ones folded into a line: the step it
    is at (a call waiting for approval, say) stays in sight however long it has been at it."""
    rows: list[Row] = []
    for subagent in state.display:
        if isinstance(subagent, ev.SubagentBlock):
            rows.append(Content.styled(_subagent_title(subagent), _NAME))
            steps, earlier = subagent.steps, len(subagent.steps) - LIVE_STEPS
            if earlier > 1:
                rows.append(Content.styled(f"… {earlier} earlier steps · {FULL_HINT}", MORE))
                steps = steps[earlier:]
            rows += text_lines("\n".join(steps), MUTED, None)
    return rows


def _subagent_rows(state: ToolState, limit: int | None = OUTPUT_LINES) -> list[Row]:
    rows: list[Row] = []
    for subagent in state.display:
        if isinstance(subagent, ev.SubagentBlock):
            rows.append(Content.styled(_subagent_title(subagent), _NAME))
            rows += text_lines("\n".join(subagent.steps), MUTED, limit, FULL_HINT)
    return rows


def _body(state: ToolState) -> list[Row]:
    """What the open block shows below its title."""
    rows: list[Row] = []
    # A todo list shows as its checklist, which says what its arguments and output say.
    items = todo_items(state) if state.name in TODO_LISTS else None
    # An edit shows as its diff: its arguments (the old and new text) say it again.
    if not state.has_diff and items is None:
        rows += field_rows(state.arguments)
    if failure := _failure(state):
        rows += text_lines(failure, _ERROR, OUTPUT_LINES)
    if state.output.strip() and items is None:
        rows += text_lines(state.output, "", OUTPUT_LINES, FULL_HINT)
    rows += [Content.styled(f"[{visible(chip)}]", _CHIP) for chip in state.media]
    diffs = [block for block in state.display if isinstance(block, ev.DiffBlock)]
    for block in diffs:
        rows += _diff(block, heading=len(diffs) > 1)
    if items is not None:
        rows += checklist_rows(items)
    return rows + _subagent_rows(state)


def _subagent_title(block: ev.SubagentBlock) -> str:
    agent = f"({block.agent_id})" if block.agent_id else ""
    title = " ".join(part for part in ("subagent", block.subagent_type, agent) if part)
    return visible(title, multiline=False)


def _shell_body(state: ToolState) -> list[Row]:
    """A command's block, always shown: what went wrong, and its output's first lines."""
    rows: list[Row] = []
    if failure := _failure(state):
        rows += text_lines(failure, _ERROR, SHELL_LINES)
    if state.output.strip():
        rows += text_lines(state.output, MUTED, SHELL_LINES, SHELL_HINT)
    return rows


def _diff(block: ev.DiffBlock, *, heading: bool) -> list[Row]:
    """The diff as the full view numbers it, cut after DIFF_LINES."""
    rows = diff_block_rows(block, heading=heading)
    if len(rows) > DIFF_LINES + 1:
        more = len(rows) - DIFF_LINES
        rows = [*rows[:DIFF_LINES], Content.styled(f"… {more} more lines · {FULL_HINT}", MORE)]
    return rows


def full_sections(state: ToolState) -> list[Section]:
    """Everything of a call, for its full view: the command or the arguments in full, what
    went wrong, every line of the output, the diffs and the todo list."""
    sections: list[Section] = []
    if state.name == SHELL and isinstance(command := _argument(state, "command"), str):
        sections.append(("command", command_lines(command)))
        sections.append(("", full_field_rows(state.arguments, skip=("command",))))
    elif not state.has_diff:
        sections.append(("arguments", full_field_rows(state.arguments)))
    if state.status in ("error", "rejected") and state.message:
        sections.append(("", text_lines(result_message(state.status, state.message), _ERROR, None)))
    sections.append(("output", text_lines(state.output, "", None)))
    for block in state.display:
        if isinstance(block, ev.DiffBlock):
            lines = list(diff_lines(block.old_text, block.new_text))
            sections.append((visible(block.path, multiline=False), diff_rows(lines)))
    if (items := todo_items(state)) is not None:
        sections.append(("todo list", checklist_rows(items)))
    for block in state.display:
        if isinstance(block, ev.SubagentBlock):
            sections.append((_subagent_title(block), text_lines("\n".join(block.steps), "", None)))
    return sections


def _argument(state: ToolState, name: str) -> object:
    parsed = parse_arguments(state.arguments)
    return parsed.get(name) if isinstance(parsed, dict) else None


class ToolBlock(FoldingBlock):
    """A tool call: `▸ Name about  status brief`; open, its arguments and result. A command
    always shows its output's first lines; the newest todo list always shows."""

    HELP = """\
## Tool call

`▸ Name about` and the call's status: *running…*, *waiting for approval*, **✔** done,
**✘** failed, **⊘** rejected, with the tool's short report. Click it (or **Enter** on the
block under the cursor) to see the arguments, the output (first 20 lines) and, for edits,
the diff; **o** opens the full view: every line of the output.

A command shows the first lines of its output; a click or **Enter** opens all of it. The
newest todo list shows as a checklist (☐ to do, ◐ in progress, ☑ done); older ones fold to
"updated todo list".
"""

    def __init__(self, state: ToolState, *, expanded: bool | None = None) -> None:
        # An edit opens to show its diff.
        opened = state.has_diff if expanded is None else expanded
        super().__init__(expanded=opened, classes="block tool")
        self.state = state
        self._body: Rows | None = None
        self._set_status_class()

    def factory(self) -> BlockFactory:
        return partial(ToolBlock, self.state, expanded=self.expanded)

    def toggle(self) -> None:
        # A command's block shows its output's start already: what more there is, is all of it.
        if self.state.name == SHELL:
            self.open_full_view()
        else:
            super().toggle()

    def open_full_view(self) -> None:
        """Show every line of the call in a screen of its own."""
        self.app.push_screen(OutputScreen(self.state.reading.title, full_sections(self.state)))

    def watch_expanded(self, expanded: bool) -> None:
        super().watch_expanded(expanded)
        self._body = None  # its title's ▸ turns

    def refresh_state(self) -> None:
        """Show what changed in `state` (a newer todo list superseded this one)."""
        self._changed()

    def append_arguments(self, delta: str) -> None:
        """Add a streamed piece of the arguments; the title follows once the JSON is whole."""
        if self.state.call.extend(delta) or self.expanded:
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

    def add_subagent_event(self, event: ev.SubagentEvent) -> None:
        """Show a step of the subagent this `Agent` call runs (its block shows them while it
        runs, then folds to its title: the result's tokens, time and cost)."""
        if self.state.apply_subagent(event):
            self._changed()

    def set_result(self, result: ev.ToolResult) -> None:
        had_diff = self.state.has_diff and self.state.status != "waiting"
        self.state.apply_result(result)
        if self.state.has_diff and not had_diff:
            self.expanded = True
        self._changed()

    def _changed(self) -> None:
        self._body = None
        self._set_status_class()
        self.refresh(layout=True)

    def _set_status_class(self) -> None:
        for status in STATUS_LABELS:
            self.set_class(status == self.state.status, f"-{status}")

    def _open(self) -> bool:
        """Whether the block shows more than its title: a command with output and the newest
        todo list always do (a call that only read the list, as Kimi CLI's may, has none to
        show: it folds like any call)."""
        state = self.state
        if state.name == SHELL:
            failed = bool(_failure(state))
            # Not strip(): it would copy 50,000 characters on every draw.
            return failed or (bool(state.output) and not state.output.isspace())
        if state.name in TODO_LISTS and not state.superseded and todo_items(state) is not None:
            return True
        return self.expanded or _live(state)

    def render(self) -> Content | Rows:
        state = self.state
        reading = state.reading
        head: list[str | tuple[str, str]] = [
            # A command's ▸ points at its full view; it never folds.
            "▾ " if self._open() and state.name != SHELL else "▸ ",
            (reading.name, _NAME),
        ]
        if reading.about:
            head += [reading.joiner, (reading.about, _SUMMARY)]
        if label := STATUS_LABELS[state.status]:
            head += ["  ", (label, _STATUS_STYLE[state.status])]
        brief = result_summary(state.status, state.brief, state.message)
        if brief and state.status not in ("running", "waiting", "interrupted"):
            head += [" ", (brief, MUTED)]
        if not self._open():
            return Content.assemble(*head)
        if self._body is None:
            if state.name == SHELL:
                body = _shell_body(state)
            elif _live(state) and not self.expanded:
                body = _live_rows(state)  # its steps, not the prompt it was given
            else:
                body = _body(state)
            self._body = Rows([Content.assemble(*head), *body])
        return self._body
