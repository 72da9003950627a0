"""The approval mode badge on the prompt's border: `ask`, `auto-edit`, `sandbox` or `yolo`, and
how many scopes are approved for the rest of the session (`ask · 2 allowed`).

It follows the soul's `PermissionsChanged` (the mode cycled with Ctrl+T or set with /mode,
an "allow for the session" answer, a revoke in /permissions), and stays hidden until the agent
is up: a read-only session has no mode to show.
"""

from __future__ import annotations

from typing import ClassVar

from textual.reactive import reactive
from textual.widgets import Static

from kode_tui.humanize import plural
from kode_tui.soul.facade import WireBus
from kode_tui.ui.wire_messages import WireListener, WireMessage
from kode_tui.wire import events as ev

_MEANING = {
    "ask": "every edit and command asks first",
    "auto-edit": "edits in the work dir go through; commands ask",
    "sandbox": "edits in the work dir and commands go through; commands run in the sandbox",
    "yolo": "everything runs without asking (writes that can run code still ask)",
    "plan": "read-only: the model plans; edits (but the plan file) and commands are refused",
}
_SANDBOXED = "Shell commands run in the sandbox (no writes outside the work dir, no network)"
_OPEN = "Shell commands run in the sandbox, which keeps protected files read-only"


def badge_text(mode: str, allowed: int) -> str:
    """`ask`, or `ask · 2 allowed` when scopes are approved for the session."""
    return f"{mode} · {allowed} allowed" if allowed else mode


class ModeBadge(WireListener, Static):
    """The approval mode and the number of session approvals; yolo in the warning colour."""

    DEFAULT_CSS: ClassVar[str] = """
    ModeBadge {
        width: auto;
        height: 1;
        padding: 0 1;
        text-style: bold;
        color: $text-muted;
        background: $panel;
        &.-auto-edit {
            color: $text;
            background: $accent;
        }
        &.-sandbox {
            color: $text;
            background: $success;
        }
        &.-yolo {
            color: $text;
            background: $warning;
        }
    }
    """

    mode: reactive[str | None] = reactive(None)
    """None until the agent is up."""
    allowed: reactive[int] = reactive(0)
    sandbox: reactive[bool] = reactive(False)
    """Whether the model's Shell commands run in the sandbox."""

    def __init__(self, bus: WireBus, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._bus = bus
        self.display = False

    def on_mount(self) -> None:
        self.listen(self._bus, ev.PermissionsChanged)

    def on_wire_message(self, message: WireMessage) -> None:
        event = message.event
        if isinstance(event, ev.PermissionsChanged):
            self.mode = event.mode
            self.allowed = event.session_approvals
            self.sandbox = event.sandbox

    def watch_mode(self) -> None:
        self._show()

    def watch_allowed(self) -> None:
        self._show()

    def _show(self) -> None:
        mode = self.mode
        self.display = mode is not None
        if mode is None:
            return
        for name in _MEANING:
            self.set_class(name == mode, f"-{name}")
        self.update(badge_text(mode, self.allowed))
        allowed = (
            f"\n{plural(self.allowed, 'scope')} allowed for this session" if self.allowed else ""
        )
        sandbox = f"\n{_OPEN if mode == 'yolo' else _SANDBOXED}." if self.sandbox else ""
        self.tooltip = (
            f"Approval mode {mode}: {_MEANING.get(mode, '')}.{sandbox}{allowed}\n"
            "Ctrl+T or /mode changes it; /permissions lists and revokes what is allowed."
        )
