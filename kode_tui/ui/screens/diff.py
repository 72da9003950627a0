"""A full-screen look at what a tool call would change: its diffs, or the command it would run.

It is also the one diff renderer of the UI: `diff_lines` computes a unified diff (hunks as
`diff -u` numbers them), `diff_rows` numbers its lines for this screen, the approval panel, the
compare screen and the conversation (`diff_block_rows`), wrapping a long line beside numbers that
stay put.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static

from kode_tui.safetext import has_hidden, visible
from kode_tui.ui.widgets.rows import Gutter, Row, Rows, lay_out
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


def _line_text(line: DiffLine) -> str:
    return _SIGNS[line.kind] + visible(line.text, multiline=False)


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


class ScrollDialog(ModalScreen[None]):
    """A full-size dialog: a titled frame around a scrolling body of headings and texts (which
    `body()` yields); Esc or q closes it. The diff and compare screens are two."""

    DEFAULT_CSS = """
    ScrollDialog {
        align: center middle;
        .dialog-frame {
            width: 1fr;
            height: 1fr;
            margin: 1 2;
            border: round $primary;
            border-title-color: $primary;
            border-title-style: bold;
            border-subtitle-color: $text-muted;
            background: $surface;
        }
        .dialog-body {
            overflow-x: auto;
            padding: 0 1;
        }
        .dialog-heading {
            text-style: bold;
            color: $accent;
            margin: 1 0 0 0;
            &:first-child { margin: 0; }
        }
        .dialog-text {
            width: auto;
            min-width: 100%;
        }
        .-wrapped {
            width: 100%;
        }
    }
    """

    NAME: ClassVar[str] = "dialog"
    """Prefix of the frame's and the body's ids (`#diff-dialog`, `#diff-body`)."""

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(id=f"{self.NAME}-dialog", classes="dialog-frame") as dialog:
            # Content, not str: a border title in a str is read as markup.
            dialog.border_title = Content(visible(self.title_text, multiline=False))
            dialog.border_subtitle = "Esc / q close"
            with VerticalScroll(id=f"{self.NAME}-body", classes="dialog-body"):
                yield from self.body()

    def body(self) -> Iterator[Widget]:
        """The headings and texts the dialog scrolls through."""
        raise NotImplementedError

    def on_mount(self) -> None:
        self.query_one(".dialog-body").focus()

    def action_close(self) -> None:
        """Back to where the screen was opened from."""
        self.dismiss(None)


_PIECE_LINES = 1000


class DiffScreen(ScrollDialog):
    """The full diffs (with line numbers) or commands of a tool call; Esc or q closes it."""

    HELP: ClassVar[str] = """\
### Full view
The complete change a tool call would make. Scroll with the arrows, PgUp/PgDn or the mouse;
**Esc** or **q** closes it.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="diff.close", group=Binding.Group("Full view")),
    ]
    NAME = "diff"

    def __init__(self, title: str, blocks: Sequence[DisplayBlock]) -> None:
        super().__init__(title)
        self.blocks = list(blocks)

    def body(self) -> Iterator[Widget]:
        shown = [(block, rows) for block in self.blocks if (rows := _full_rows(block))]
        for block, rows in shown:
            heading = block_title(block)
            if heading and (len(shown) > 1 or isinstance(block, DiffBlock)):
                yield Static(Content(heading), classes="dialog-heading")
            # In pieces: Textual renders a widget whole, and only the pieces in view are
            # rendered, so a command or a file of 50,000 lines opens at once, not in seconds.
            if isinstance(block, DiffBlock):
                yield from wrapped_pieces(rows)
                continue
            for start in range(0, len(rows), _PIECE_LINES):
                piece = rows[start : start + _PIECE_LINES]
                text = Content("\n").join(row for row in piece if isinstance(row, Content))
                yield Static(text, classes="dialog-text diff-text")
        if not shown:
            yield Static(Content.styled("Nothing to show.", "$text-muted"))


def wrapped_pieces(rows: Sequence[Row]) -> Iterator[Static]:
    """A diff's rows, wrapped beside the line numbers, which stay put (no sideways scrolling),
    in pieces: Textual renders a widget whole and only the pieces in view are rendered."""
    for start in range(0, len(rows), _PIECE_LINES):
        yield Static(Rows(rows[start : start + _PIECE_LINES]), classes="diff-text -wrapped")


def _full_rows(block: DisplayBlock) -> list[Row]:
    """The rows of a block in the full view (none when it shows nothing)."""
    if isinstance(block, DiffBlock):
        lines = list(diff_lines(block.old_text, block.new_text))
        return diff_rows(lines) if lines else [Content.styled("(no changes)", "$text-muted")]
    content = render_block(block)
    return list(content.split("\n")) if content else []
