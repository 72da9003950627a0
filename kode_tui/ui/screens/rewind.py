"""The rewind picker (Esc Esc on an empty prompt, or `/revert` alone): your messages of the live
context, newest first; choosing one opens the revert dialog for the checkpoint before it.

It only asks: it is dismissed with that checkpoint (or None), and `/revert` does the rest.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kode_tui.humanize import format_age
from kode_tui.soul.facade import RewindPoint
from kode_tui.ui.widgets.message_lines import shorten
from kode_tui.ui.widgets.timeline import EDIT_MARK, USER_MARK

KEYS = "↑↓ choose · Enter revert to before it · Esc close"
TEXT_CHARS = 200
"""Of a message, what a row holds (the row's width cuts it again, with an ellipsis)."""
AGE_WIDTH = len("2026-11-01")
"""The widest age `format_age` gives."""


def point_row(point: RewindPoint, id_width: int, now: float) -> Content:
    """`  12  5m ago  ✎ › fix the failing test`: the checkpoint before the message, how long
    ago it was sent, ✎ when its turn changed files, and its first line."""  # noqa: RUF002
    age = format_age(point.sent_at, now) if point.sent_at is not None else ""
    return Content.assemble(
        (f"{point.checkpoint_id:>{id_width}}  ", "$text-muted"),
        (f"{age:<{AGE_WIDTH}}  ", "$text-muted"),
        (f"{EDIT_MARK} " if point.changed_files else "  ", "$text-warning"),
        (f"{USER_MARK} ", "$text-accent"),
        shorten(point.text, TEXT_CHARS),
    )


class RewindPicker(ModalScreen[int | None]):
    """Your messages, newest first: dismissed with the checkpoint before the one chosen, or
    None. `highlighted`: the checkpoint whose row is highlighted first (else the newest);
    `now` fixes the clock the ages are measured against (tests)."""

    HELP: ClassVar[str] = """\
## Rewind

Your messages of the live conversation, newest first. Each row shows the checkpoint just
before the message, how long ago you sent it, and `✎` when its turn changed files.

- **↑ ↓** choose; **Enter** opens the revert dialog for that point: the message and all that
  followed leave the live context (they are kept in a rotated file), the message comes back
  into the prompt, and `f` also puts back the files changed since. Esc there comes back here.
- **Esc** closes.
"""

    DEFAULT_CLASSES = "kode-dialog"
    DEFAULT_CSS: ClassVar[str] = """
    RewindPicker #rewind-list {
        height: auto;
        max-height: 16;
        border: none;
        background: $surface;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="rewind.close"),
    ]
    AUTO_FOCUS = "#rewind-list"

    def __init__(
        self,
        points: Sequence[RewindPoint],
        highlighted: int | None = None,
        *,
        now: float | None = None,
    ) -> None:
        super().__init__()
        self.points = list(points)
        self._highlighted = highlighted
        self._now = now

    def compose(self) -> ComposeResult:
        now = self._now if self._now is not None else time.time()
        id_width = len(str(max(point.checkpoint_id for point in self.points)))
        with Vertical():
            yield Static("Rewind: take back one of your messages", classes="dialog-title")
            yield OptionList(
                *(Option(point_row(point, id_width, now)) for point in self.points),
                id="rewind-list",
            )
            yield Static(KEYS, classes="dialog-keys", id="rewind-keys")

    def on_mount(self) -> None:
        ids = [point.checkpoint_id for point in self.points]
        listing = self.query_one(OptionList)
        listing.highlighted = ids.index(self._highlighted) if self._highlighted in ids else 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.points[event.option_index].checkpoint_id)

    def action_close(self) -> None:
        """Close without reverting."""
        self.dismiss(None)
