"""A full-screen look at what a tool call would change: its diffs, or the command it would run."""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static

from kode_tui.wire.events import BriefBlock, DiffBlock, DisplayBlock, ShellBlock, TodoBlock

LineKind = Literal["hunk", "add", "delete", "same"]

_STYLES: dict[LineKind, str] = {
    "hunk": "$text-muted",
    "add": "$text-success on $success 15%",
    "delete": "$text-error on $error 15%",
    "same": "",
}
_SIGNS: dict[LineKind, str] = {"hunk": "", "add": "+", "delete": "-", "same": " "}


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a unified diff, with its numbers in the old and the new text."""

    kind: LineKind
    text: str
    old_number: int | None = None
    new_number: int | None = None


def diff_lines(old_text: str, new_text: str, *, context: int = 3) -> Iterator[DiffLine]:
    """The unified diff of two texts, line by line (without the `---`/`+++` header)."""
    old, new = old_text.splitlines(), new_text.splitlines()
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


def render_diff_lines(lines: Sequence[DiffLine], *, line_numbers: bool = False) -> Content:
    """Diff lines as styled content: additions and deletions in the theme's success/error."""
    width = max(
        (len(str(n)) for line in lines for n in (line.old_number, line.new_number) if n),
        default=1,
    )
    rendered: list[Content] = []
    for line in lines:
        body = Content.styled(f"{_SIGNS[line.kind]}{line.text}", _STYLES[line.kind])
        if line_numbers:
            numbers = " ".join(
                f"{number:>{width}}" if number else " " * width
                for number in (line.old_number, line.new_number)
            )
            body = Content.assemble((f"{numbers} │", "$text-muted"), body)
        rendered.append(body)
    return Content("\n").join(rendered)


def render_block(block: DisplayBlock, *, line_numbers: bool = True) -> Content:
    """The whole of a display block, as the full view shows it."""
    if isinstance(block, DiffBlock):
        lines = list(diff_lines(block.old_text, block.new_text))
        if not lines:
            return Content.styled("(no changes)", "$text-muted")
        return render_diff_lines(lines, line_numbers=line_numbers)
    if isinstance(block, ShellBlock):
        return Content.assemble(("$ ", "$text-muted"), (block.command, "bold"))
    if isinstance(block, BriefBlock):
        return Content(block.text)
    if isinstance(block, TodoBlock):
        return Content("\n").join(Content(f"[{item.status}] {item.title}") for item in block.items)
    return Content("")


def block_title(block: DisplayBlock) -> str:
    """What a block is about, as a heading."""
    if isinstance(block, DiffBlock):
        return block.path
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
    }
    """

    NAME: ClassVar[str] = "dialog"
    """Prefix of the frame's and the body's ids (`#diff-dialog`, `#diff-body`)."""

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(id=f"{self.NAME}-dialog", classes="dialog-frame") as dialog:
            dialog.border_title = self.title_text
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
        shown = [(block, content) for block in self.blocks if (content := render_block(block))]
        for block, content in shown:
            heading = block_title(block)
            if heading and (len(shown) > 1 or isinstance(block, DiffBlock)):
                yield Static(heading, classes="dialog-heading", markup=False)
            yield Static(content, classes="dialog-text diff-text")
        if not shown:
            yield Static(Content.styled("Nothing to show.", "$text-muted"))
