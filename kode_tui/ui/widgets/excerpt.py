"""What the approval panel shows of a request in the rows it has: its diffs from their first
changed line, beside their line numbers, and of its commands, with their warnings and their
last lines; what does not fit is said (`d` shows it all). Rows, not lines, are counted: a long
line wraps.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import dropwhile, islice

from textual.content import Content

from kode_tui.safetext import visible
from kode_tui.ui.widgets.display_blocks import (
    command_line,
    command_warnings,
    diff_lines,
    diff_rows,
    shorten_line,
)
from kode_tui.ui.widgets.rows import Row, lay_out
from kode_tui.wire.events import ApprovalRequest, DiffBlock, ShellBlock

__all__ = ["EXCERPT_LINES", "excerpt", "rows_of"]

EXCERPT_LINES = 12
"""Lines of diff or command the panel shows; `d` shows the rest."""
TAIL_LINES = 3
"""Of a command longer than the excerpt, the last lines shown too: what runs last is where a
long command would hide its point."""
LINE_CHARS = 300
"""A command line longer than this shows its start and end, and how much lies between."""


def excerpt(request: ApprovalRequest, room: int = EXCERPT_LINES, width: int = 0) -> Content:
    """The start of the request's diffs and commands in about `room` rows (a command's
    warnings come on top), lines counted in the rows they wrap onto at `width` (0: unknown, a
    line is a row)."""
    diffs = [block for block in request.display if isinstance(block, DiffBlock)]
    parts: list[Content] = []
    # A diff cut short ends with a note saying so: its row is kept from the start, or the
    # panel's edge would clip the note and the cut would go unsaid.
    lines_left = room - 1 if diffs else room
    truncated = False
    for block in request.display:
        if isinstance(block, DiffBlock):
            if len(diffs) > 1:
                heading = Content.styled(visible(block.path, multiline=False), "bold")
                parts.append(heading)
                lines_left -= rows_of(heading, width)
            # From the first changed line: on a short screen the first hunk's header and the
            # context above its change would fill the rows and hide every `-`/`+` line (the
            # gutter's numbers still say where it is). One line more than fits tells whether
            # there is more; a new file may be huge.
            changes = dropwhile(
                lambda line: line.kind in ("hunk", "same"),
                diff_lines(block.old_text, block.new_text, context=1),
            )
            lines = list(islice(changes, max(lines_left, 0) + 1))
            numbered = diff_rows(lines)
            if width > 0 and numbered:
                # A long line wraps beside its numbers: at most two rows, its start and end.
                room_cells = width - _gutter_cells(numbered[0])
                lines = [
                    replace(line, text=shorten_line(line.text, 2 * room_cells - 4))
                    for line in lines
                ]
                numbered = diff_rows(lines)
            shown: list[Row] = []
            for row in numbered:
                rows = len(lay_out([row], width)) if width > 0 else 1
                if rows > lines_left:
                    break
                shown.append(row)
                lines_left -= rows
            truncated = truncated or len(shown) < len(lines)
            if shown:
                # (At an unknown width, 0, each row is one line.)
                parts.append(Content("\n").join(lay_out(shown, width)))
            elif not lines:
                parts.append(Content.styled("(no changes)", "$text-muted"))
        elif isinstance(block, ShellBlock):
            warnings = [
                Content.styled(warning, "bold $text-warning")
                for warning in command_warnings(block.command)
            ]
            parts += warnings
            lines_left -= sum(rows_of(warning, width) for warning in warnings)
            # A command cut short says so in its own words (and keeps its last lines).
            shown_command = command_excerpt(block.command, max(3, lines_left), width)
            parts += shown_command
            lines_left -= sum(rows_of(line, width) for line in shown_command)
        if lines_left <= 0:
            truncated = truncated or block is not request.display[-1]
            break
    if truncated:
        what = "diff" if diffs else "command"
        parts.append(Content.styled(f"… d for the full {what}", "$text-muted"))
    return Content("\n").join(parts)


def command_excerpt(command: str, room: int, width: int = 0) -> list[Content]:
    """The lines of a command the panel shows in `room` rows (at least 3) of `width` cells.

    Nothing goes unsaid: runs of empty lines become one line that counts them, a line that
    would wrap onto more than its share of rows shows its start, its end and how much lies
    between, and a command still too long shows its first lines, how many follow, and its last
    `TAIL_LINES` lines. Rows, not lines, are counted: a long line wraps, and a panel that
    counted it as one row would push the command's last lines out of sight.
    """
    raw = command.split("\n")
    # Each line at most a quarter of the rows, two when there is room for the first, the
    # marker and the last (both cut halves must say something on a narrow screen); the 32
    # cells are the margin, the `↵` and the note of how much was cut.
    line_rows = max(2 if room >= 5 else 1, room // 4)
    line_cells = LINE_CHARS if width <= 0 else min(LINE_CHARS, width * line_rows - 32)
    max_chars = max(line_cells, 16)
    # Lines are rendered only when shown or measured: a command of 100,000 lines shows at once.
    entries: list[int | Content] = [0]  # a line's index, or the note of a run of empty lines
    index = 1
    while index < len(raw):
        end = index
        while end < len(raw) - 1 and not raw[end].strip():
            end += 1
        if end - index >= 2:
            # `index` .. `end - 1` are empty and each ends with a line break.
            note = f"  ⋮ {end - index} empty lines ↵"
            entries.append(Content.styled(note, "italic $text-warning"))
            index = end
            continue
        entries.append(index)
        index += 1
    shown: dict[int, tuple[Content, int]] = {}

    def line(position: int) -> tuple[Content, int]:
        """The entry at `position` as shown, and the rows it takes."""
        if position not in shown:
            entry = entries[position]
            if isinstance(entry, int):
                entry = command_line(raw[entry], entry, len(raw), max_chars=max_chars)
            shown[position] = (entry, rows_of(entry, width))
        return shown[position]

    count = len(entries)
    if count <= room and sum(line(n)[1] for n in range(count)) <= room:
        return [line(n)[0] for n in range(count)]
    # The first line, then as many of the last `TAIL_LINES` as fit, then more first lines.
    budget = room - 1 - line(0)[1]  # a row for the marker
    tail = 0
    while tail < min(TAIL_LINES, count - 1) and line(count - 1 - tail)[1] <= budget:
        budget -= line(count - 1 - tail)[1]
        tail += 1
    tail = max(tail, 1)
    head = 1
    while head < count - tail and line(head)[1] <= budget:
        budget -= line(head)[1]
        head += 1
    left_out = count - head - tail
    marker = Content.styled(
        f"  ⋮ {left_out} more lines · d shows the whole command", "italic $text-warning"
    )
    return [
        *(line(n)[0] for n in range(head)),
        marker,
        *(line(n)[0] for n in range(count - tail, count)),
    ]


def _gutter_cells(row: Row) -> int:
    return 0 if isinstance(row, Content) else row.gutter.cell_length


def rows_of(line: Content, width: int) -> int:
    """The rows `line` takes when it wraps at `width` cells (one when the width is unknown):
    counted by wrapping it, since a line broken at spaces takes more rows than its length says."""
    if width <= 0:
        return 1
    if line.cell_length <= width:
        return 1
    return max(1, len(line.wrap(width)))  # wrapped at spaces, as the Static will
