"""`/pins`: the pinned notes, to read, edit and unpin."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static, TextArea
from textual.widgets.option_list import Option

from kode_tui.safetext import visible

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession

EMPTY = "Nothing is pinned: /pin TEXT, or p on a block of the conversation."
KEYS = "↑↓ choose · e or Enter edit · d or Delete unpin · Esc close"
EDIT_KEYS = "Ctrl+S save · Esc cancel the edit"
NOTE = "Sent with every request, after the project context; compaction never touches them."


def note_text(count: int, tokens: int) -> str:
    """The line above the list: what the pins cost each request."""
    if not count:
        return NOTE
    pins = "1 pin" if count == 1 else f"{count} pins"
    return f"{pins}, ~{tokens:,} tokens in every request. {NOTE}"


class PinsScreen(ModalScreen[None]):
    """The session's pins, oldest first: `e` edits the highlighted one, `d` unpins it."""

    DEFAULT_CLASSES = "kode-dialog"
    DEFAULT_CSS: ClassVar[str] = """
    PinsScreen #pins-note {
        margin-bottom: 1;
        color: $text-muted;
    }
    PinsScreen #pins-list {
        height: auto;
        max-height: 16;
        border: none;
        background: $surface;
    }
    PinsScreen #pins-editor {
        height: 8;
        display: none;
    }
    PinsScreen.-editing #pins-editor {
        display: block;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "edit", "Edit", id="edit_pin"),
        Binding("d,delete", "unpin", "Unpin", id="unpin"),
        Binding("ctrl+s", "save", "Save", id="save_pin", priority=True),
        Binding("escape", "back", "Close", id="close_pins"),
    ]

    def __init__(self, opened: AgentSession) -> None:
        super().__init__()
        self._opened = opened
        self._editing: int | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Pinned notes", classes="dialog-title")
            yield Static(NOTE, id="pins-note")
            yield OptionList(id="pins-list")
            yield TextArea(id="pins-editor", soft_wrap=True, show_line_numbers=False)
            yield Static(KEYS, classes="dialog-keys", id="pins-keys")

    def on_mount(self) -> None:
        self._show()
        self.query_one(OptionList).focus()

    def _show(self) -> None:
        listing = self.query_one(OptionList)
        highlighted = listing.highlighted
        pins = self._opened.pins.texts()
        self.query_one("#pins-note", Static).update(
            note_text(len(pins), self._opened.pins.tokens())
        )
        listing.clear_options()
        if not pins:
            listing.add_option(Option(Content.styled(EMPTY, "$text-muted"), disabled=True))
        else:
            listing.add_options(
                Content.assemble((f"{number:>2}. ", "dim"), visible(text))
                for number, text in enumerate(pins, start=1)
            )
            listing.highlighted = min(highlighted or 0, len(pins) - 1)
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "save":
            return self._editing is not None
        if action in ("edit", "unpin"):
            return self._editing is None and bool(self._opened.pins.texts())
        return True

    def _highlighted(self) -> int | None:
        index = self.query_one(OptionList).highlighted
        return index if index is not None and 0 <= index < len(self._opened.pins.texts()) else None

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_edit()

    def action_edit(self) -> None:
        index = self._highlighted()
        if index is None:
            return
        self._editing = index
        editor = self.query_one(TextArea)
        editor.load_text(self._opened.pins.texts()[index])
        editor.move_cursor(editor.document.end)  # to add to the note, the usual edit
        self.add_class("-editing")
        self.query_one("#pins-keys", Static).update(EDIT_KEYS)
        editor.focus()
        self.refresh_bindings()

    async def action_save(self) -> None:
        index = self._editing
        if index is None:
            return
        try:
            await self._opened.pins.edit(index, self.query_one(TextArea).text)
        except (ValueError, IndexError, OSError) as error:
            self.notify(str(error), severity="warning")
            return
        self.notify(f"Pin {index + 1} saved.", timeout=3)
        self._stop_editing()

    async def action_unpin(self) -> None:
        index = self._highlighted()
        if index is None:
            return
        try:
            await self._opened.pins.remove(index)
        except (IndexError, OSError) as error:
            self.notify(str(error), severity="warning")
            return
        self.notify(f"Unpinned pin {index + 1}.", timeout=3)
        self._show()

    def action_back(self) -> None:
        if self._editing is not None:
            self._stop_editing()
        else:
            self.dismiss(None)

    def _stop_editing(self) -> None:
        self._editing = None
        self.remove_class("-editing")
        self.query_one("#pins-keys", Static).update(KEYS)
        self._show()
        self.query_one(OptionList).focus()
