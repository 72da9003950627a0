"""How the UI draws display blocks: the one diff and command renderer, used by the conversation's
tool blocks, the approval panel, the full view and the compare screen.

`diff_lines` computes a unified diff (hunks as `diff -u` numbers them), `diff_rows` numbers its
lines, wrapping a long line beside numbers that stay put (`diff_block_rows` is the conversation's
form); `command_lines` shows a shell command with its control characters visible and a long run of
spaces counted, and `command_warnings` says what a glance at it would not tell.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.cells import cell_len
from textual.content import Content

from kode_tui.safetext import has_hidden, visible
from kode_tui.ui.widgets.rows import Gutter, Row, lay_out
from kode_tui.wire.events import BriefBlock, DiffBlock, DisplayBlock, ShellBlock, TodoBlock

LineKind = Literal["hunk", "add", "delete", "same"]

_STYLES: dict[LineKind, str] = {
    "hunk": "$text-muted",
    "add": "$text-success on $success 15%",
    "delete": "$text-error on $error 15%",
    "same": "",
}
_SIGNS: dict[LineKind, str] = {"hunk": "", "add": "+", "delete": "-", "same": " "}
_HEADER_STYLE = "$foreground-muted bold"


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a unified diff, with its numbers in the old and the new text."""

    kind: LineKind
    text: str
    old_number: int | None = None
    new_number: int | None = None


def diff_lines(old_text: str, new_text: str, *, context: int = 3) -> Iterator[DiffLine]:
    """The unified diff of two texts, line by line (without the `---`/`+++` header); control
    characters are shown as `visible()` shows them (and break no line: only a line feed does)."""
    old, new = visible(old_text).splitlines(), visible(new_text).splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        first, last = group[0], group[-1]
        old_range = _unified_range(first[1], last[2])
        new_range = _unified_range(first[3], last[4])
        yield DiffLine("hunk", f"@@ -{old_range} +{new_range} @@")
        for tag, old_start, old_end, new_start, new_end in group:
            if tag == "equal":
                for offset in range(old_end - old_start):
                    yield DiffLine(
                        "same",
                        old[old_start + offset],
                        old_start + offset + 1,
                        new_start + offset + 1,
                    )
                continue
            for index in range(old_start, old_end):
                yield DiffLine("delete", old[index], old_number=index + 1)
            for index in range(new_start, new_end):
                yield DiffLine("add", new[index], new_number=index + 1)


def _unified_range(start: int, stop: int) -> str:
    """A hunk's range as `diff -u` writes it: `3,4`, `3` for one line, `2,0` for none (the line
    before the gap), so hunks read the same here as in the conversation's diffs."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def diff_rows(lines: Sequence[DiffLine], *, line_numbers: bool = True) -> list[Row]:
    """Diff lines as rows whose gutter (the line numbers, `│` and the sign, or the sign alone)
    stays in its column while a long line wraps beside it."""
    width = max(
        (len(str(n)) for line in lines for n in (line.old_number, line.new_number) if n),
        default=1,
    )
    blank = f"{' ' * (2 * width + 1)} │"
    rows: list[Row] = []
    for line in lines:
        style = _STYLES[line.kind]
        text = Content.styled(visible(line.text, multiline=False), style)
        sign = _SIGNS[line.kind]
        if not line_numbers:
            rows.append(Gutter(Content.styled(sign, style), text) if sign else text)
            continue
        numbers = " ".join(
            f"{number:>{width}}" if number else " " * width
            for number in (line.old_number, line.new_number)
        )
        gutter = Content.assemble((f"{numbers} │", "$foreground-muted"), (sign, style))
        rest = Content.assemble((blank, "$foreground-muted"), " " * len(sign))
        rows.append(Gutter(gutter, text, rest=rest))
    return rows


def diff_block_rows(block: DiffBlock, *, heading: bool = False) -> list[Row]:
    """The conversation's form of a diff block: the full view's numbered lines (a long line
    wraps beside its gutter), under the file's path when `heading` (a call with several
    diffs); no rows when nothing changed."""
    lines = list(diff_lines(block.old_text, block.new_text))
    if not lines:
        return []
    rows = diff_rows(lines)
    if heading:
        rows.insert(0, Content.styled(visible(block.path, multiline=False), _HEADER_STYLE))
    return rows


def render_block(block: DisplayBlock) -> Content:
    """The whole of a display block, as the full view shows it."""
    if isinstance(block, DiffBlock):
        return Content("\n").join(lay_out(diff_block_rows(block), 0))
    if isinstance(block, ShellBlock):
        warnings = [
            Content.styled(text, "bold $text-warning") for text in command_warnings(block.command)
        ]
        return Content("\n").join([*warnings, *command_lines(block.command)])
    if isinstance(block, BriefBlock):
        return Content(visible(block.text))
    if isinstance(block, TodoBlock):
        return Content("\n").join(
            Content(visible(f"[{item.status}] {item.title}", multiline=False))
            for item in block.items
        )
    return Content("")


_SPACE_RUN = re.compile("[ \u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]{8,}")
"""A run of spaces, no-break and wide ones too (any of them pushes the rest of a line out of
sight as well as a plain space does)."""


def command_lines(command: str, *, max_chars: int | None = None) -> list[Content]:
    """Every line of a shell command as it is shown: `$ ` before the first, `↵` where a line
    breaks, control characters visible, a long run of spaces counted instead of drawn (it could
    push the rest of the line out of sight); a line longer than `max_chars` shows its start and
    its end and how many characters lie between (`max_chars` counts terminal cells: a wide
    character takes two, and the panel that cuts a line counts the rows it wraps onto)."""
    lines = command.split("\n")
    return [
        command_line(line, number, len(lines), max_chars=max_chars)
        for number, line in enumerate(lines)
    ]


def command_line(line: str, number: int, count: int, *, max_chars: int | None = None) -> Content:
    """Line `number` (from 0) of a command of `count` lines, as `command_lines` shows it."""
    text = command_text(line)
    parts: list[tuple[str, str]] = [("$ " if number == 0 else "  ", "$text-muted")]
    if max_chars is not None and cell_len(text) > max_chars:
        # Half and half: the end of a line is where a long command would hide its point.
        head, between, tail = _ends(text, max_chars)
        parts += [(head, "bold"), (between, "italic $text-warning"), (tail, "bold")]
    else:
        parts.append((text, "bold"))
    if number < count - 1:
        parts.append((" ↵", "$text-warning"))
    return Content.assemble(*parts)


def shorten_line(text: str, max_cells: int) -> str:
    """`text` when it takes at most `max_cells` terminal cells, else its start and its end and
    how many characters lie between (so that a long line says what it leaves out)."""
    if cell_len(text) <= max_cells:
        return text
    return "".join(_ends(text, max_cells))


def _ends(text: str, max_cells: int) -> tuple[str, str, str]:
    """The start and the end of `text` in `max_cells` cells, half each, and the note of how
    many characters lie between them."""
    head = _cells(text, max_cells // 2)
    tail = _cells(text[::-1], max_cells // 2)[::-1]
    return head, f" ⋯ {len(text) - len(head) - len(tail)} more characters ⋯ ", tail


def _cells(text: str, cells: int) -> str:
    """The start of `text` that takes at most `cells` terminal cells (and at most `4 * cells`
    characters: a run of zero-width marks counts as cut, not as shown)."""
    taken = 0
    for index, character in enumerate(text[: cells * 4]):
        taken += cell_len(character)
        if taken > cells:
            return text[:index]
    return text[: cells * 4]


def command_text(line: str) -> str:
    """A line of a command as it is shown: control characters visible, a run of 8 spaces or
    more counted instead of drawn."""
    return _SPACE_RUN.sub(_counted_spaces, visible(line, multiline=False))


def _counted_spaces(match: re.Match[str]) -> str:
    run = match.group()
    plain = "" if run.strip(" ") == "" else " (not all plain)"
    return f" ⟨{len(run)} spaces{plain}⟩ "


def command_warnings(command: str) -> list[str]:
    """What a user should know before running `command` that a glance at it would not tell:
    that it spans several lines, that it holds control characters (and how they are shown)."""
    warnings = []
    if "\n" in command:
        warnings.append(f"⚠ {command.count(chr(10)) + 1} lines, each marked ↵ where it ends")
    if has_hidden(command):
        found = dict.fromkeys(
            visible(character, multiline=False) for character in command if has_hidden(character)
        )
        shown = ", ".join(list(found)[:6]) + (", …" if len(found) > 6 else "")
        warnings.append(f"⚠ contains control characters (shown as {shown})")
    return warnings


def block_title(block: DisplayBlock) -> str:
    """What a block is about, as a heading."""
    if isinstance(block, DiffBlock):
        return visible(block.path, multiline=False)
    if isinstance(block, ShellBlock):
        return "command"
    return ""
