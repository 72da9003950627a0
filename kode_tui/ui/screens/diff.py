"""A full-screen look at what a tool call would change: its diffs, or the command it would run
(`ApprovalView` when the call waits for an answer, which its keys give from there); and
`ScrollDialog`, the frame it shares with the compare and output screens. What it draws comes
from `kode_tui.ui.widgets.display_blocks`, the UI's one diff and command renderer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static

from kode_tui.safetext import visible
from kode_tui.ui.widgets.display_blocks import block_title, diff_lines, diff_rows, render_block
from kode_tui.ui.widgets.rows import Row, Rows
from kode_tui.wire.events import DiffBlock, DisplayBlock


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


_ANSWER_GROUP = Binding.Group("Approval")


class ApprovalView(DiffScreen):
    """The full view of a call that waits for approval: `y` `a` `n` `f` answer it from here as
    the panel's keys do (the footer behind lists them), `d`, Esc or q go back to the panel.

    `answer` gets the choice (`approve`, `approve_for_session`, `reject` or `feedback`) once
    the view has closed; `for_session` says whether `a` is offered (the call has a scope).
    """

    HELP: ClassVar[str] = """\
### Full view of a call waiting for approval
Scroll with the arrows, PgUp/PgDn or the mouse. **y** run it once · **a** allow it for the
session · **n** reject · **f** reject and say why · **d**, **Esc** or **q** back to the panel.
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer('approve')", "Approve once", id="view.approve", group=_ANSWER_GROUP),
        Binding(
            "a",
            "answer('approve_for_session')",
            "Approve for session",
            id="view.approve_for_session",
            group=_ANSWER_GROUP,
        ),
        Binding("n", "answer('reject')", "Reject", id="view.reject", group=_ANSWER_GROUP),
        Binding(
            "f",
            "answer('feedback')",
            "Reject with feedback",
            id="view.feedback",
            group=_ANSWER_GROUP,
        ),
        Binding("d", "close", "Back to the panel", id="view.close", group=_ANSWER_GROUP),
    ]

    def __init__(
        self,
        title: str,
        blocks: Sequence[DisplayBlock],
        *,
        answer: Callable[[str], None],
        for_session: bool,
    ) -> None:
        super().__init__(title, blocks)
        self._answer = answer
        self.for_session = for_session

    def on_mount(self) -> None:
        super().on_mount()
        keys = "y once · a session · n reject" if self.for_session else "y once · n reject"
        self.query_one(".dialog-frame").border_subtitle = f"{keys} · f feedback · Esc back"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "answer" and parameters == ("approve_for_session",):
            return self.for_session
        return True

    def action_answer(self, choice: str) -> None:
        """Close the view and answer the call with `choice`."""
        self.dismiss(None)
        # After the view is gone: `f` focuses the panel's feedback input on the screen below.
        self.app.call_later(self._answer, choice)


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
