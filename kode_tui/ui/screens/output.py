"""The full view of a tool call: its command or arguments, all of its output, its diffs."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from kode_tui.ui.screens.diff import ScrollDialog
from kode_tui.ui.widgets.rows import Row, Rows

PIECE_ROWS = 1000
"""Rows per widget: Textual renders (and wraps, to lay out) a widget whole, and only the
pieces in view are drawn, so 50,000 lines of output open at once."""

Section = tuple[str, Sequence[Row]]
"""A heading (none when "") and its rows."""


class OutputScreen(ScrollDialog):
    """Every line of a tool call's command or arguments, output and diffs, wrapped to the
    screen's width and scrolled; Esc or q closes it."""

    HELP: ClassVar[str] = """\
### Full output
All of a tool call: the command or the arguments, every line of the output the tool
returned, the diffs. Scroll with the arrows, PgUp/PgDn or the mouse; **Esc** or **q** closes it.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="output.close", group=Binding.Group("Full view")),
    ]
    NAME = "output"
    DEFAULT_CSS = """
    OutputScreen .output-text {
        width: 100%;
    }
    """

    def __init__(self, title: str, sections: Sequence[Section]) -> None:
        super().__init__(title)
        self.sections = [(heading, list(rows)) for heading, rows in sections if rows]

    def body(self) -> Iterator[Widget]:
        for heading, rows in self.sections:
            if heading:
                yield Static(Content(heading), classes="dialog-heading")
            for start in range(0, len(rows), PIECE_ROWS):
                piece = Rows(rows[start : start + PIECE_ROWS])
                yield Static(piece, classes="output-text")
        if not self.sections:
            yield Static(Content.styled("Nothing to show.", "$text-muted"))
