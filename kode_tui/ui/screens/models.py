"""`/model` without a name: pick one of the configured aliases, `demo`, or a known model of a
provider whose key is set, each with its context size and price."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kode_tui.humanize import format_tokens
from kode_tui.safetext import visible

if TYPE_CHECKING:
    from kode_tui.soul.facade import ModelOption

KEYS = "↑↓ choose · Enter switch · Esc cancel"


def option_detail(option: ModelOption) -> str:
    """What the row says beside the name: the key it lacks, the model an alias names, its
    context size and its price (dollars per million input/output tokens)."""
    if option.model == "demo":
        return "offline, scripted answers (not an LLM)"
    # The missing key first: it is what the user must act on, and a narrow dialog cuts the end.
    parts = [f"set {option.missing_key}"] if option.missing_key else []
    if option.model != option.name:
        parts.append(option.model)
    if option.context_size:
        parts.append(f"{format_tokens(option.context_size)} context")
    if option.input_price is not None and option.output_price is not None:
        parts.append(f"${option.input_price:g}/${option.output_price:g} per M")
    return " · ".join(parts)


class ModelPicker(ModalScreen[str | None]):
    """The models `/model` can switch to; dismisses with the chosen name, or None."""

    DEFAULT_CLASSES = "kode-dialog"
    DEFAULT_CSS: ClassVar[str] = """
    ModelPicker #model-list {
        height: auto;
        max-height: 16;
        border: none;
        background: $surface;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="cancel_model"),
    ]

    def __init__(self, options: list[ModelOption], current: str) -> None:
        super().__init__()
        self._options = options
        self._current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(
                f"Model (now {visible(self._current, multiline=False)})", classes="dialog-title"
            )
            yield OptionList(id="model-list")
            yield Static(KEYS, classes="dialog-keys", id="model-keys")

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        width = max(len(visible(o.name, multiline=False)) for o in self._options)
        listing.add_options(
            Option(
                Content.assemble(
                    (visible(o.name, multiline=False).ljust(width), "bold"),
                    "  ",
                    (visible(option_detail(o), multiline=False), "dim"),
                ),
                id=o.name,
            )
            for o in self._options
        )
        names = [o.name for o in self._options]
        listing.highlighted = names.index(self._current) if self._current in names else 0
        listing.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
