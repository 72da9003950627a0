"""The confirm dialog of `/drop`: what goes, and what the gauge shows before and after."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

if TYPE_CHECKING:
    from kode_tui.soul.facade import DropPlan

KEYS = "Enter or y drop · Esc cancel"


def plan_text(plan: DropPlan, what: str) -> str:
    """The dialog's sentences for `plan`; `what` names the choice (the marked blocks, a range)."""
    messages = "1 message" if plan.messages == 1 else f"{plan.messages} messages"
    results = f", {plan.tool_results} of them tool results" if plan.tool_results else ""
    return (
        f"Drop {messages}{results} ({what}) from the context.\n"
        f"Saves ~{plan.tokens:,} tokens: the gauge goes from "
        f"{plan.token_count:,} to ~{plan.tokens_after:,}.\n"
        "A tool call and its result go together. History keeps the context as it is now: "
        "restore it there to undo."
    )


class DropDialog(ModalScreen[bool]):
    """Asks before dropping; dismissed with True to drop."""

    DEFAULT_CLASSES = "kode-dialog"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,y", "drop", "Drop", id="confirm_drop"),
        Binding("escape,n", "cancel", "Cancel", id="cancel_drop"),
    ]

    def __init__(self, plan: DropPlan, what: str) -> None:
        super().__init__()
        self._text = plan_text(plan, what)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Drop from the context", classes="dialog-title")
            yield Static(self._text, id="drop-plan", markup=False)
            yield Static(KEYS, classes="dialog-keys")

    def action_drop(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
