"""A side pane that may be drawn before its session exists, and bound to it later.

A new session's Checkpoints and History are in the first frame, before the domain loads (see
`ui/screens/main.py`): made without a session, such a pane shows what a new session has, and
`bind()` gives it the session when the agent is up. Made with one, it binds when mounted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kode_tui.ui.wire_messages import WireListener

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession, WireBus


class SessionPane(WireListener):
    """Mixed in before the pane's widget class; the pane defines `init_state`, `bind` and
    `show_new`."""

    def __init__(
        self,
        bus: WireBus | None = None,
        session: AgentSession | None = None,
        *,
        id: str | None = None,
    ) -> None:
        """Without `bus` and `session`: a new session's, until `bind()`."""
        super().__init__(id=id)  # type: ignore[call-arg]  # the widget class after the mixin
        self._bus = bus
        self._session = session
        self.init_state()

    def on_mount(self) -> None:
        if self._bus is not None and self._session is not None:
            self.bind(self._bus, self._session)
        else:
            self.show_new()

    def init_state(self) -> None:
        """Set the pane's own state, as a pane just made has it."""
        raise NotImplementedError

    def bind(self, bus: WireBus, session: AgentSession) -> None:
        """Show `session` and follow its events on `bus` from now on."""
        raise NotImplementedError

    def show_new(self) -> None:
        """Show what a new session has, before `bind`."""
        raise NotImplementedError
