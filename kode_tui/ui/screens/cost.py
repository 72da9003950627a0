"""`/cost`: what the session's model calls cost, per model and per turn."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from kode_tui.safetext import visible
from kode_tui.soul.facade import CostReport


class CostScreen(ModalScreen[None]):
    """The cost of the session: per model (tokens by kind, dollars), the latest turns, the
    total; a model whose price litellm's map lacks says so."""

    DEFAULT_CLASSES = "kode-dialog"
    DEFAULT_CSS = """
    CostScreen #cost-lines { height: auto; max-height: 30; }
    CostScreen #cost-lines > Static { text-wrap: nowrap; width: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", id="close"),
    ]

    def __init__(self, report: CostReport) -> None:
        super().__init__()
        self._report = report

    def compose(self) -> ComposeResult:
        with Vertical() as dialog:
            # The table needs the room: at 80 columns the dialogs' usual 80% cuts its rows.
            dialog.styles.width = "100%"
            yield Static("What the model calls cost", classes="dialog-title")
            # Content, not markup: a model name is the user's text.
            text = "\n".join(self._report.lines())
            with VerticalScroll(id="cost-lines"):
                yield Static(Content(visible(text)))
            yield Static("Esc close · prices from litellm's map", classes="dialog-keys")
