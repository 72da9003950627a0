"""`/tasks`: the session's background tasks, live, with the output of the highlighted one;
`s` stops it.

The list follows the wire's `BackgroundTaskUpdate`s; the output of a running task is read
again twice a second while the screen is up (a command's output comes with no event). The
output is masked (the facade's) and shown as text, never markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kode_tui.safetext import visible
from kode_tui.ui.wire_messages import WireListener, WireMessage
from kode_tui.wire.events import BackgroundTaskUpdate

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession, TaskView

EMPTY = "No background tasks in this session: the model starts one with Shell run_in_background."
KEYS = "↑↓ choose · s stop · Esc close"
REFRESH_SECONDS = 0.5

_MARKS = {"running": ("●", "$text-accent"), "completed": ("✓", "$text-success")}


def task_row(view: TaskView) -> Content:
    """A task's row: a mark, its id, status and description."""
    mark, style = _MARKS.get(view.status, ("✗", "$text-warning"))
    status = view.status if view.exit_code is None else f"{view.status} ({view.exit_code})"
    return Content.assemble(
        (f"{mark} ", style),
        (view.id, "bold"),
        f"  {status}  ",
        visible(view.description, multiline=False),
    )


class TasksScreen(WireListener, ModalScreen[None]):
    """The background tasks, newest first, and the highlighted one's command and output."""

    DEFAULT_CLASSES = "kode-dialog"
    DEFAULT_CSS: ClassVar[str] = """
    /* Heights in screen parts, so that at 80x24 too the frame holds them and the keys. */
    TasksScreen #tasks-list {
        height: auto;
        max-height: 20vh;
        border: none;
        background: $surface;
    }
    TasksScreen #tasks-command {
        color: $text-muted;
        text-wrap: nowrap;  /* one line: a long command would push the keys out */
        text-overflow: ellipsis;
    }
    TasksScreen #tasks-output-box {
        height: auto;
        max-height: 30vh;
        background: $surface;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "stop", "Stop", id="stop_task"),
        Binding("escape,q", "dismiss", "Close", id="close_tasks"),
    ]

    def __init__(self, opened: AgentSession) -> None:
        super().__init__()
        self._opened = opened
        self._rows: list[TaskView] = []
        self._shown = ""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Background tasks", classes="dialog-title")
            yield OptionList(id="tasks-list")
            yield Static(id="tasks-command")
            with VerticalScroll(id="tasks-output-box"):
                yield Static(id="tasks-output")
            yield Static(KEYS, classes="dialog-keys")

    def on_mount(self) -> None:
        self.listen(self._opened.bus, BackgroundTaskUpdate)
        self._show()
        self.query_one(OptionList).focus()
        self.set_interval(REFRESH_SECONDS, self._follow)

    def on_wire_message(self, message: WireMessage) -> None:
        self._show()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._show_output()

    def _show(self) -> None:
        listing = self.query_one(OptionList)
        highlighted = listing.highlighted
        self._rows = self._opened.tasks.views()
        listing.clear_options()
        if not self._rows:
            listing.add_option(Option(Content.styled(EMPTY, "$text-muted"), disabled=True))
        else:
            listing.add_options(task_row(view) for view in self._rows)
            listing.highlighted = min(highlighted or 0, len(self._rows) - 1)
        self._show_output()
        self.refresh_bindings()

    @property
    def _highlighted(self) -> TaskView | None:
        index = self.query_one(OptionList).highlighted
        return self._rows[index] if index is not None and 0 <= index < len(self._rows) else None

    def _show_output(self) -> None:
        view = self._highlighted
        command = self.query_one("#tasks-command", Static)
        output = self.query_one("#tasks-output", Static)
        if view is None:
            command.update("")
            output.update("")
            self._shown = ""
            return
        said = f"$ {view.command}" if view.command else view.description
        command.update(Content(visible(" ".join(said.split()), multiline=False)))
        text = self._opened.tasks.output(view.id) or "(no output yet)"
        if text != self._shown:
            self._shown = text
            output.update(Content(visible(text)))
            self.query_one("#tasks-output-box", VerticalScroll).scroll_end(animate=False)

    def _follow(self) -> None:
        view = self._highlighted
        if view is not None and not view.ended:
            self._show_output()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stop":
            view = self._highlighted
            return view is not None and not view.ended
        return True

    async def action_stop(self) -> None:
        view = self._highlighted
        if view is None or view.ended:
            return
        stopped = await self._opened.tasks.stop(view.id)
        if stopped is not None:
            self.notify(f"Stopped {stopped.id}.", timeout=3)
        self._show()
