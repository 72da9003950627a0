"""The messages sent during a turn and waiting for it to end, shown under the prompt until they go
(and those sent while the agent starts, which wait for it).

The App owns the queue; this only shows it: one row a message, oldest first, its first line cut
to the width. The newest is the one the keys act on (on an empty prompt ↑ takes it back to
edit, Ctrl+X drops it: MainScreen binds them), and its row ends with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from textual.content import Content
from textual.geometry import Size
from textual.reactive import reactive
from textual.widget import Widget

from kode_tui.humanize import one_line

MAX_ROWS = 3
"""Rows shown at most; the oldest beyond them are counted on the first row."""
KEYS_HINT = "queued · ↑ edit · ^X drop"
STARTING_HINT = "waits for the agent · ↑ edit · ^X drop"
"""The keys' hint while the agent starts: the message goes as soon as it is up."""
LINE_CHARS = 500
"""Of a message's first line, at most this much is considered (the row cuts it to the width)."""


def queue_rows(messages: Sequence[str], width: int, *, starting: bool = False) -> list[Content]:
    """The rows that show `messages` (oldest first) in `width` cells: the newest `MAX_ROWS`
    (the oldest beyond them counted on the first row), each cut with `…`, the newest ending
    with the keys that act on it (and that they wait for the agent, while it is `starting`)."""
    if not messages:
        return []
    hint = STARTING_HINT if starting else KEYS_HINT
    shown = list(messages[-MAX_ROWS:])
    rows: list[Content] = []
    if len(messages) > MAX_ROWS:
        shown = shown[1:]
        earlier = len(messages) - len(shown)
        rows.append(Content.styled(f"⧗ and {earlier} queued before", "$text-muted"))
    for index, message in enumerate(shown, start=1):
        last = index == len(shown)
        room = width - 2 - (cell_len(hint) + 2 if last else 0)
        text = one_line(message, LINE_CHARS)
        if cell_len(text) > room:
            text = set_cell_size(text, max(room - 1, 0)) + "…"
        row = Content.assemble(("⧗ ", "$text-muted"), text)
        if last:
            gap = max(width - row.cell_length - cell_len(hint), 2)
            row = Content.assemble(row, " " * gap, (hint, "$text-muted"))
        rows.append(row)
    return rows


class QueuedMessages(Widget):
    """The queued messages under the prompt; hidden while none waits."""

    DEFAULT_CSS: ClassVar[str] = """
    QueuedMessages {
        display: none;
        height: auto;
        padding: 0 1;
        &.-shown { display: block; }
    }
    """

    messages: reactive[tuple[str, ...]] = reactive((), layout=True)
    """The queued messages, oldest first."""
    starting: reactive[bool] = reactive(False)
    """Whether they wait for the agent to start (else for the turn to end)."""

    def watch_messages(self, messages: tuple[str, ...]) -> None:
        self.set_class(bool(messages), "-shown")

    @property
    def rows(self) -> int:
        """How many rows it takes on screen (0 when hidden)."""
        return min(len(self.messages), MAX_ROWS)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self.rows

    def render(self) -> Content:
        rows = queue_rows(self.messages, self.content_region.width, starting=self.starting)
        return Content("\n").join(rows)
