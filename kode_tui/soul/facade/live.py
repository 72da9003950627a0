"""What the parts of an `AgentSession` share: the session, its bus, the live context, the agent
once it runs, and the turn running now.

Each part (time travel, lineage, pins, drops, MCP, compaction, commands...) is given this
holder, not the session: it reads what it needs here and asks for the soul with `soul()`,
which says in one sentence why there is none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from kode_tui.config import Config, ModelChoice
from kode_tui.session import Context, Session
from kode_tui.wire.bus import WireBus

if TYPE_CHECKING:
    from kode_tui.soul.agent import Agent
    from kode_tui.soul.soul import KodeSoul

T = TypeVar("T")

ReadOnly = Literal["locked", "unwritable"]
"""Why nothing can be sent: another kode-tui writes the session, or its folder is read-only."""


class Live:
    """One opened session's live state, shared by the facade's parts."""

    def __init__(
        self,
        session: Session,
        context: Context,
        bus: WireBus,
        work_dir: Path,
        read_only: ReadOnly | None,
    ) -> None:
        self.session = session
        """The session's handle: id, folder, title, state.json."""
        self.context = context
        """The live context (a read-only view's copy is replaced when the writer changes it)."""
        self.bus = bus
        self.work_dir = work_dir
        """Where the tools run."""
        self.read_only = read_only
        self.agent: Agent | None = None
        """The running agent, once `AgentSession.start()` built it."""
        self.config: Config | None = None
        self.choice: ModelChoice | None = None
        """The model, once `start()` was given it."""
        self.turn: asyncio.Task[object] | None = None
        """The turn (or `!` command) running now."""

    def soul(self) -> KodeSoul:
        """The running agent's soul; RuntimeError, saying why, when there is none."""
        agent = self.agent
        if agent is None:
            reason = "this session is read-only" if self.read_only else "the agent is not running"
            raise RuntimeError(reason)
        return agent.soul

    @property
    def running(self) -> KodeSoul | None:
        """The soul when the agent runs, else None."""
        return self.agent.soul if self.agent is not None else None

    @property
    def turn_running(self) -> bool:
        return self.turn is not None and not self.turn.done()

    async def as_turn(self, work: Awaitable[T]) -> T:
        """Await `work` as the session's turn (`interrupt()` cancels it); the session's title
        and times are read again afterwards."""
        self.turn = asyncio.current_task()
        try:
            return await work
        finally:
            self.turn = None
            await self.session.refresh()

    async def remeasure(self) -> None:
        """The system prompt or the tools changed (a pin, an MCP server): measure them again
        and send the status, so the gauge counts it before the next request."""
        soul = self.running
        if soul is not None:
            await soul.measure_prompt()
            self.bus.send(soul.status())
