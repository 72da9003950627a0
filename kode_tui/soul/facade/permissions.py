"""The facade's session approvals (`/permissions`, `AgentSession.permissions`): what is allowed
for the rest of the session, revoking it, and how the model's commands run."""

from __future__ import annotations

from kode_tui.soul.approval import SessionPermission
from kode_tui.soul.facade.live import Live

__all__ = ["Permissions"]


class Permissions:
    """The session's approvals and its sandbox, as `/permissions` shows them."""

    def __init__(self, live: Live) -> None:
        self._live = live

    def grants(self) -> list[SessionPermission]:
        """What is approved for the rest of the session, oldest first (none without agent)."""
        soul = self._live.running
        return soul.approval.grants() if soul is not None else []

    async def revoke(self, scope: str) -> bool:
        """Forget a session approval, saved at once; whether it was there."""
        return await self._live.soul().approval.revoke(scope)

    @property
    def sandbox(self) -> str:
        """How the model's Shell commands run, in a line: in the sandbox (and how), or why
        there is none."""
        soul = self._live.running
        if soul is None:
            return ""
        if soul.sandbox is None:
            return soul.sandbox_off
        return soul.sandbox.describe(soul.approval.profile)
