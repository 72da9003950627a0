"""The main screen: the conversation, the context panes beside it, approvals and the prompt.

Below 100 columns the side panes move behind a tab bar (`Conversation | Context`), so the
conversation keeps the whole width.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import Footer, Header, Static, Tab, Tabs

from kode_tui.session import Context
from kode_tui.ui.widgets.approval import ApprovalPanel
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.ui.widgets.gauge import TokenGauge
from kode_tui.ui.widgets.history import HistoryPane
from kode_tui.ui.widgets.prompt import PromptInput
from kode_tui.ui.widgets.timeline import CheckpointDetails, CheckpointTimeline
from kode_tui.wire import WireBus

NARROW_WIDTH = 100


class Banner(Static):
    """A notice above the conversation (the demo model's); a click puts it away."""

    def on_click(self) -> None:
        self.display = False


class MainScreen(Screen[None]):
    """One session's screen; the App owns the session and answers the intents posted here."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+l", "focus_prompt", "Focus the prompt", id="focus_prompt", show=False),
    ]

    def __init__(
        self,
        bus: WireBus,
        context: Context,
        work_dir: Path,
        commands: list[tuple[str, str]],
        history: list[str],
        banner: str | None = None,
        read_only: bool = False,
    ) -> None:
        super().__init__()
        self._bus = bus
        self._live_context = context
        self._work_dir = work_dir
        self._commands = commands
        self._history = history
        self._banner = banner
        self._read_only = read_only

    def compose(self) -> ComposeResult:
        yield Header()
        yield Tabs(
            Tab("Conversation", id="tab-conversation"),
            Tab("Context", id="tab-context"),
            id="narrow-tabs",
        )
        with Horizontal(id="body"):
            with Vertical(id="main-column"):
                if self._banner:
                    yield Banner(self._banner, id="banner")
                yield Conversation(self._bus, id="conversation")
            with Vertical(id="side"):
                yield TokenGauge(self._bus, id="gauge")
                yield CheckpointTimeline(self._bus, self._live_context, id="timeline")
                yield CheckpointDetails(id="checkpoint-details")
                yield HistoryPane(self._bus, self._live_context, id="history")
        yield ApprovalPanel(self._bus, id="approval")
        prompt = PromptInput(
            self._work_dir, commands=self._commands, history=self._history, id="prompt"
        )
        prompt.disabled = self._read_only
        yield prompt
        yield Footer()

    def on_mount(self) -> None:
        self._apply_width(self.app.size.width)
        self.query_one(PromptInput).focus()

    def on_resize(self, event: Resize) -> None:
        self._apply_width(event.size.width)

    def _apply_width(self, width: int) -> None:
        self.set_class(width < NARROW_WIDTH, "-narrow")

    @on(Tabs.TabActivated, "#narrow-tabs")
    def _switch_tab(self, event: Tabs.TabActivated) -> None:
        self.set_class(event.tab.id == "tab-context", "-show-context")

    @on(CheckpointTimeline.Highlighted)
    def _show_checkpoint(self, event: CheckpointTimeline.Highlighted) -> None:
        self.query_one(CheckpointDetails).show(event.details_text)

    def action_focus_prompt(self) -> None:
        self.query_one(PromptInput).focus()
