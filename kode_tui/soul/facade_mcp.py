"""The facade's MCP servers (`/mcp`): their state and tools, reconnecting, switching off.

`AgentSession` (facade.py) is made of this and the rest; it lives here so each part reads whole.
The servers themselves are `kode_tui.tools.mcp_client.McpServers`, built with the agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kode_tui.tools.mcp_client import McpServerInfo, McpServers, McpToolInfo

if TYPE_CHECKING:
    from kode_tui.soul.agent import Agent
    from kode_tui.wire.bus import WireBus

__all__ = ["Mcp", "McpServerInfo", "McpToolInfo"]


class Mcp:
    """What a front end may do with the session's MCP servers."""

    if TYPE_CHECKING:
        bus: WireBus
        _agent: Agent | None

    def _mcp(self) -> McpServers:
        servers = self._agent.mcp if self._agent is not None else None
        if servers is None:
            raise KeyError("No MCP server is configured ([mcp.servers] in config.toml).")
        return servers

    def mcp_status(self) -> list[McpServerInfo]:
        """Each configured server: its state, why it failed, its tools and what they cost
        (empty before the agent is up or without servers)."""
        servers = self._agent.mcp if self._agent is not None else None
        return servers.status() if servers is not None else []

    async def mcp_ready(self) -> None:
        """Wait for the servers still starting (each up to `[mcp] startup_timeout`)."""
        if self._agent is not None and self._agent.mcp is not None:
            await self._agent.mcp.ready()

    async def mcp_reconnect(self, name: str) -> McpServerInfo:
        """Start the server `name` again (stopped first if it runs) and wait until it is up or
        failed; a failure is also sent as a warning. KeyError when there is no such server."""
        return await self._mcp().reconnect(name)

    async def mcp_set_enabled(self, server: str, enabled: bool, tool: str | None = None) -> None:
        """Offer or stop offering the tools of `server` (or only its `tool`, named as the model
        sees it) for the rest of the session; the gauge counts the change at once. KeyError when
        there is no such server or tool."""
        self._mcp().set_enabled(server, enabled, tool)
        if self._agent is not None:
            await self._agent.soul.measure_prompt()
            self.bus.send(self._agent.soul.status())
