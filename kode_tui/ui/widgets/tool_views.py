"""How a tool call's parts read in the conversation and in its full view: arguments as
`name: value` fields, a command's output as its first lines, a todo list as a checklist.

`TodoBoard` decides which todo-list call shows its checklist: only the newest (live, or the last
of a stored history), so the list updates in place instead of stacking copies.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from textual.content import Content

from kode_tui.safetext import visible
from kode_tui.ui.widgets.rows import Gutter, Row
from kode_tui.ui.widgets.tool_state import ToolState
from kode_tui.wire import events as ev
from kode_tui.wire import readings

# `$text-muted` in text (not in CSS) is drawn as plain white: these are the muted colours.
MUTED = "$foreground-muted"
MORE = "$foreground-muted italic"
_FIELD = "$foreground-muted"
_FIELD_CHARS = 1000
"""A field's value is cut to one row: no more of it than this is made visible first."""

CHECK_MARKS = {"done": "☑", "completed": "☑", "in_progress": "◐"}
"""A todo's mark by status; anything else is pending, `☐`."""
_CHECK_STYLES = {"done": f"{MUTED} strike", "completed": f"{MUTED} strike"}


def text_lines(text: str, style: str, limit: int | None, hint: str = "") -> list[Row]:
    """The first `limit` lines of `text` (all for None), then `… N more lines` and `hint`
    (never for a single line more)."""
    # Visible first: JSON arguments decode to any character, and splitlines() would break
    # lines at form feeds and separators that the text does not break at.
    lines = visible(text).expandtabs(4).splitlines()
    if limit is None or len(lines) <= limit + 1:
        return [Content.styled(line, style) for line in lines]
    more = f"… {len(lines) - limit} more lines" + (f" · {hint}" if hint else "")
    return [*(Content.styled(line, style) for line in lines[:limit]), Content.styled(more, MORE)]


def parse_arguments(arguments: str) -> Any:
    """The arguments decoded, or None when they are not (yet) JSON."""
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
        return None


def _value_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def field_rows(arguments: str, *, skip: Sequence[str] = ()) -> list[Row]:
    """The arguments as `name: value` rows, one each, cut to the width they are drawn at
    (line breaks shown as `↵`); arguments that are not a JSON object as their text."""
    parsed = parse_arguments(arguments)
    if not isinstance(parsed, dict):
        return text_lines(arguments, MUTED, 20) if arguments.strip() else []
    rows: list[Row] = []
    for key, value in parsed.items():
        if key in skip:
            continue
        name = Content.styled(f"{visible(str(key), multiline=False)}: ", _FIELD)
        shown = visible(_value_text(value)[:_FIELD_CHARS], multiline=False)
        rows.append(Gutter(name, Content(shown), clip=True))
    return rows


def full_field_rows(arguments: str, *, skip: Sequence[str] = ()) -> list[Row]:
    """The arguments in full: each name, then its whole value (nested ones as indented JSON)."""
    parsed = parse_arguments(arguments)
    if not isinstance(parsed, dict):
        return text_lines(arguments, "", None)
    rows: list[Row] = []
    for key, value in parsed.items():
        if key in skip:
            continue
        name = Content.styled(f"{visible(str(key), multiline=False)}:", _FIELD)
        text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
        lines = text_lines(text, "", None)
        if len(lines) == 1 and isinstance(lines[0], Content):
            rows.append(Gutter(name + " ", lines[0]))
        else:
            rows.append(name)
            rows += [Gutter(Content("  "), line) for line in lines if isinstance(line, Content)]
    return rows


# --- todo lists ----------------------------------------------------------------------------------


def todo_items(state: ToolState) -> list[ev.TodoItem] | None:
    """The list a todo-list call shows (`readings.todo_items`)."""
    failed = state.status in ("error", "rejected")
    return readings.todo_items(state.display, state.arguments, failed=failed)


def checklist_rows(items: Sequence[ev.TodoItem]) -> list[Row]:
    """A todo list as a checklist: ☐ pending, ◐ in progress, ☑ done (struck through)."""
    if not items:
        return [Content.styled("(empty todo list)", MUTED)]
    return [
        Gutter(
            Content(CHECK_MARKS.get(item.status, "☐") + " "),
            Content.styled(
                visible(item.title, multiline=False),
                _CHECK_STYLES.get(item.status, "bold" if item.status == "in_progress" else ""),
            ),
        )
        for item in items
    ]


class TodoBoard:
    """Which todo-list call shows its checklist: the newest one read, of a stored history or
    live; the others fold to their title line.

    A stored history is read a page at a time, newest first but not always (Home reads the
    oldest), so a call read later may be newer than the one shown: that one folds then, and
    `on_fold` is told (the pane redraws its block if it shows it).
    """

    def __init__(self) -> None:
        self.on_fold: Callable[[ToolState], None] | None = None
        self.clear()

    def clear(self) -> None:
        """Forget every call (a new history is shown)."""
        self._current: ToolState | None = None
        self._current_at: tuple[int, int] = (-1, -1)
        self._live = 0

    def add_stored(self, state: ToolState, index: int, position: int) -> None:
        """A call of a stored history: call `position` of message `index`."""
        self._add(state, (index, position))

    def add_live(self, state: ToolState) -> None:
        """A call made now: newer than any stored one."""
        self._live += 1
        self._add(state, (_LIVE, self._live))

    def _add(self, state: ToolState, at: tuple[int, int]) -> None:
        if at < self._current_at:
            state.superseded = True
            return
        old, self._current, self._current_at = self._current, state, at
        if old is not None and old is not state:
            old.superseded = True
            if self.on_fold is not None:
                self.on_fold(old)


_LIVE = 1 << 62
"""Where live calls come: after every message of a stored history."""
