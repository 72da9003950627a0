"""What changed between two checkpoints, or between the live context and a rotated one: the
messages added and removed, and a unified diff of every file the agent edited in between."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Static

from kode_tui.message import Message
from kode_tui.session.compare import CheckpointDiff, FileChange
from kode_tui.ui.screens.diff import diff_lines, render_diff_lines
from kode_tui.ui.screens.timetravel import message_line, shown_messages


def file_heading(change: FileChange) -> Content:
    """The path of a changed file, with what happened to it when it is more than an edit."""
    if change.missing:
        note = " (content not kept)"
    elif change.old_text is None and change.new_text is not None:
        note = " (created)"
    elif change.new_text is None and change.old_text is not None:
        note = " (deleted)"
    else:
        note = ""
    return Content.assemble(change.path, (note, "$text-muted"))


def file_body(change: FileChange) -> Content:
    """The unified diff of one file, or why there is none."""
    if change.missing:
        return Content.styled("An earlier or later content is not in the blob store.", "dim")
    lines = list(diff_lines(change.old_text or "", change.new_text or ""))
    if not lines:
        return Content.styled("(no net change)", "$text-muted")
    return render_diff_lines(lines)


def messages_body(messages: Sequence[Message]) -> Content:
    """One line per message, marked with its role (checkpoint notes for the model left out)."""
    messages = shown_messages(messages)
    if not messages:
        return Content.styled("(none)", "$text-muted")
    return Content("\n").join(message_line(message) for message in messages)


class CompareScreen(ModalScreen[None]):
    """The difference between two points of a session; Esc or q closes it."""

    HELP: ClassVar[str] = """\
### Compare
The messages added and removed between two points of the session, and a diff of each file
the agent changed in between. Scroll with the arrows, PgUp/PgDn or the mouse; **Esc** or **q**
closes it.
"""

    DEFAULT_CSS = """
    CompareScreen {
        align: center middle;
        background: $background 60%;
        #compare-dialog {
            width: 1fr;
            height: 1fr;
            margin: 1 2;
            border: round $primary;
            border-title-color: $primary;
            border-title-style: bold;
            border-subtitle-color: $text-muted;
            background: $surface;
        }
        #compare-body {
            overflow-x: auto;
            padding: 0 1;
        }
        .compare-section {
            text-style: bold;
            color: $accent;
            margin: 1 0 0 0;
            &:first-child { margin: 0; }
        }
        .compare-file {
            text-style: bold;
            color: $primary;
            margin: 1 0 0 0;
        }
        .compare-text {
            width: auto;
            min-width: 100%;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="compare.close", group=Binding.Group("Compare")),
    ]

    def __init__(self, title: str, diff: CheckpointDiff) -> None:
        super().__init__()
        self.title_text = title
        self.diff = diff

    def compose(self) -> ComposeResult:
        with Vertical(id="compare-dialog") as dialog:
            dialog.border_title = self.title_text
            dialog.border_subtitle = "Esc / q close"
            with VerticalScroll(id="compare-body"):
                yield from self._sections()

    def _sections(self) -> Iterator[Widget]:
        diff = self.diff
        yield _section(f"Messages added ({len(shown_messages(diff.added))})")
        yield Static(messages_body(diff.added), classes="compare-text", id="compare-added")
        yield _section(f"Messages removed ({len(shown_messages(diff.removed))})")
        yield Static(messages_body(diff.removed), classes="compare-text", id="compare-removed")
        yield _section(f"Files changed ({len(diff.files)})" if diff.files else "No file changes")
        for change in diff.files:
            yield Static(file_heading(change), classes="compare-file")
            yield Static(file_body(change), classes="compare-text compare-diff")

    def on_mount(self) -> None:
        self.query_one("#compare-body").focus()

    def action_close(self) -> None:
        """Back to where the screen was opened from."""
        self.dismiss(None)


def _section(title: str) -> Static:
    return Static(title, classes="compare-section", markup=False)


if __name__ == "__main__":
    from textual.app import App

    class _Demo(App[None]):
        def on_mount(self) -> None:
            diff = CheckpointDiff(
                added=[
                    Message(role="user", content="Add a greet() function"),
                    Message(role="assistant", content="Done: greet() says hello."),
                ],
                removed=[],
                files=[
                    FileChange(
                        "greet.py", "def greet():\n    pass\n", "def greet():\n    print('hi')\n"
                    )
                ],
            )
            self.push_screen(CompareScreen("Checkpoint 1 → 3", diff), lambda _: self.exit())

    _Demo().run()
