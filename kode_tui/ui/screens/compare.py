"""What changed between two checkpoints, or between the live context and a rotated one: the
messages added and removed, and a unified diff of every file the agent edited in between."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Static

from kode_tui.message import Message, shown_messages
from kode_tui.safetext import visible
from kode_tui.soul.facade import CheckpointDiff, FileChange
from kode_tui.ui.screens.diff import ScrollDialog, wrapped_pieces
from kode_tui.ui.widgets.display_blocks import diff_lines, diff_rows
from kode_tui.ui.widgets.message_lines import message_line


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
    return Content.assemble(visible(change.path, multiline=False), (note, "$text-muted"))


def file_body(change: FileChange) -> Iterator[Static]:
    """The unified diff of one file, numbered, long lines wrapped beside the numbers; or why
    there is none."""
    if change.missing:
        text = Content.styled("An earlier or later content is not in the blob store.", "dim")
        yield Static(text, classes="dialog-text")
        return
    lines = list(diff_lines(change.old_text or "", change.new_text or ""))
    if not lines:
        yield Static(Content.styled("(no net change)", "$text-muted"), classes="dialog-text")
        return
    yield from wrapped_pieces(diff_rows(lines))


def messages_body(messages: Sequence[Message]) -> Content:
    """One line per message, marked with its role (checkpoint notes for the model left out)."""
    messages = shown_messages(messages)
    if not messages:
        return Content.styled("(none)", "$text-muted")
    return Content("\n").join(message_line(message) for message in messages)


class CompareScreen(ScrollDialog):
    """The difference between two points of a session; Esc or q closes it."""

    HELP: ClassVar[str] = """\
### Compare
The messages added and removed between two points of the session, and a diff of each file
the agent changed in between. Scroll with the arrows, PgUp/PgDn or the mouse; **Esc** or **q**
closes it.
"""

    DEFAULT_CSS = """
    CompareScreen {
        background: $background 60%;
        .compare-file {
            text-style: bold;
            color: $primary;
            margin: 1 0 0 0;
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "Close", id="compare.close", group=Binding.Group("Compare")),
    ]
    NAME = "compare"

    def __init__(self, title: str, diff: CheckpointDiff) -> None:
        super().__init__(title)
        self.diff = diff

    def body(self) -> Iterator[Widget]:
        diff = self.diff
        yield _section(f"Messages added ({len(shown_messages(diff.added))})")
        yield Static(messages_body(diff.added), classes="dialog-text", id="compare-added")
        yield _section(f"Messages removed ({len(shown_messages(diff.removed))})")
        yield Static(messages_body(diff.removed), classes="dialog-text", id="compare-removed")
        yield _section(f"Files changed ({len(diff.files)})" if diff.files else "No file changes")
        for change in diff.files:
            yield Static(file_heading(change), classes="compare-file")
            yield from file_body(change)


def _section(title: str) -> Static:
    return Static(title, classes="dialog-heading", markup=False)


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
