"""Small modal screens of the app: what the model is given (`/context`) and the question asked
when the session is already open in another kode-tui."""

from __future__ import annotations

from typing import ClassVar, Literal

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from kode_tui.safetext import visible
from kode_tui.soul.facade import ContextReport


class ContextScreen(ModalScreen[None]):
    """`/context`: what the model is given in rows that add up to the gauge (each part of the
    system prompt, the tools, the reminders, the messages), the reminders, the whole prompt."""

    DEFAULT_CLASSES = "kode-dialog"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close", id="close"),
    ]

    def __init__(self, report: ContextReport) -> None:
        super().__init__()
        self._report = report

    def compose(self) -> ComposeResult:
        report = self._report
        with Vertical():
            yield Static("What the model is given", classes="dialog-title")
            share = report.context_tokens / max(report.max_context_tokens, 1)
            # Content, not markup: names, reminders and the prompt hold file text (and `[`).
            lines = [
                Content.assemble(
                    "Context ",
                    (f"{report.context_tokens:,}", "bold"),
                    f" of {report.max_context_tokens:,} tokens ({share:.0%}); "
                    f"compacts at {report.trigger_tokens:,}",
                ),
                Content(""),
            ]
            lines += [Content(visible(line, multiline=False)) for line in report.lines()]
            lines += [Content(""), Content.styled("Reminders of the last request", "bold")]
            lines += [
                Content(
                    visible(f"  [{r.kind}] {(r.text.splitlines() or [''])[0]}", multiline=False)
                )
                for r in report.reminders
            ] or [Content("  none")]
            yield Static(Content("\n").join(lines), id="context-summary")
            with VerticalScroll(id="context-prompt"):
                yield Static(Content(visible(report.system_prompt)))
            yield Static("Esc close · /context refresh collects the project again",
                         classes="dialog-keys")  # fmt: skip


LockedChoice = Literal["read-only", "new", "quit"]


class LockedScreen(ModalScreen[LockedChoice]):
    """The session is open in another kode-tui: look at it read-only, or start a new one."""

    DEFAULT_CLASSES = "kode-dialog"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "choose('read-only')", "Read-only", id="read_only"),
        Binding("n", "choose('new')", "New session", id="new"),
        Binding("escape,q", "choose('quit')", "Quit", id="quit_locked"),
    ]

    def __init__(self, title: str, pid: int | None) -> None:
        super().__init__()
        self._title = title
        self._pid = pid

    def compose(self) -> ComposeResult:
        owner = f"process {self._pid}" if self._pid else "another process"
        with Vertical():
            yield Static("This session is already open", classes="dialog-title")
            yield Static(
                Content(
                    f"“{visible(self._title, multiline=False)}” is open in kode-tui ({owner}). "
                    "Only one kode-tui can write to a session at a time."
                )
            )
            yield Static(
                "[b]r[/b] look at it read-only   [b]n[/b] start a new session   [b]q[/b] quit",
                classes="dialog-keys",
            )

    def action_choose(self, choice: LockedChoice) -> None:
        self.dismiss(choice)
