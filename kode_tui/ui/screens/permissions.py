"""`/permissions`: what is allowed for the rest of the session, and revoking any of it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kode_tui.humanize import format_age
from kode_tui.safetext import visible

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession, SessionPermission

EMPTY = "Nothing is allowed for the rest of this session: what the mode does not let through asks."
KEYS = "↑↓ choose · d or Delete revoke · Esc close"


def granted_text(granted_at: float | None, now: float | None = None) -> str:
    """When a grant was made: `granted 14:05 (3m ago)`, with the date when not today, and
    without the age from a week on (`granted 2026-11-01 09:30`)."""
    if granted_at is None:
        return "time not recorded"
    now = time.time() if now is None else now
    same_day = time.localtime(granted_at)[:3] == time.localtime(now)[:3]
    clock = time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", time.localtime(granted_at))
    age = format_age(granted_at, now)
    # From a week on the age is the date, which the clock shows already.
    return f"granted {clock}" if age in clock else f"granted {clock} ({age})"


class PermissionsScreen(ModalScreen[None]):
    """The session's approvals, oldest first; `d` revokes the highlighted one at once."""

    DEFAULT_CLASSES = "kode-dialog"
    DEFAULT_CSS: ClassVar[str] = """
    PermissionsScreen #permissions-mode {
        margin-bottom: 1;
    }
    PermissionsScreen #permissions-list {
        height: auto;
        max-height: 16;
        border: none;
        background: $surface;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d,delete", "revoke", "Revoke", id="revoke_permission"),
        Binding("escape,q", "dismiss", "Close", id="close_permissions"),
    ]

    def __init__(self, opened: AgentSession) -> None:
        super().__init__()
        self._opened = opened
        self._rows: list[SessionPermission] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Allowed for this session", classes="dialog-title")
            yield Static(id="permissions-mode")
            yield OptionList(id="permissions-list")
            yield Static(KEYS, classes="dialog-keys", id="permissions-keys")

    def on_mount(self) -> None:
        self._show()
        self.query_one(OptionList).focus()

    def _show(self) -> None:
        mode = self._opened.mode or "unknown"
        sandbox = self._opened.permissions.sandbox
        self.query_one("#permissions-mode", Static).update(
            Content.assemble(
                f"Approval mode: {mode} (Ctrl+T or /mode changes it)",
                ("\n" + sandbox[0].upper() + sandbox[1:] + "." if sandbox else "", "$text-muted"),
            )
        )
        listing = self.query_one(OptionList)
        highlighted = listing.highlighted
        self._rows = self._opened.permissions.grants()
        listing.clear_options()
        if not self._rows:
            listing.add_option(Option(Content.styled(EMPTY, "$text-muted"), disabled=True))
            self.refresh_bindings()
            return
        width = max(len(visible(row.label, multiline=False)) for row in self._rows)
        listing.add_options(
            Content.assemble(
                (visible(row.label, multiline=False).ljust(width), "bold"),
                "  ",
                (granted_text(row.granted_at), "dim"),
            )
            for row in self._rows
        )
        listing.highlighted = min(highlighted or 0, len(self._rows) - 1)
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return bool(self._rows) if action == "revoke" else True

    async def action_revoke(self) -> None:
        index = self.query_one(OptionList).highlighted
        if index is None or not 0 <= index < len(self._rows):
            return
        row = self._rows[index]
        if await self._opened.permissions.revoke(row.scope):
            self.notify(f"Revoked: {row.label}. Its calls ask again.", timeout=4)
        self._show()
