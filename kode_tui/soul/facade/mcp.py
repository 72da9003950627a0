"""The facade's MCP servers (`/mcp`, `AgentSession.mcp`): their state and tools, reconnecting,
switching off. The servers themselves are `kode_tui.tools.mcp_client.McpServers`, built with
the agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kode_tui.soul.facade.live import Live

if TYPE_CHECKING:
    from kode_tui.tools.mcp_client import McpServerInfo, McpServers

__all__ = ["Mcp"]


class Mcp:
    """What a front end may do with the session's MCP servers."""

    def __init__(self, live: Live) -> None:
        self._live = live

    def _servers(self) -> McpServers | None:
        agent = self._live.agent
        return agent.mcp if agent is not None else None

    def _configured(self) -> McpServers:
        servers = self._servers()
        if servers is None:
            raise KeyError("No MCP server is configured ([mcp.servers] in config.toml).")
        return servers

    def status(self) -> list[McpServerInfo]:
        """Each configured server: its state, why it failed, its tools and what they cost
        (empty before the agent is up or without servers)."""
        servers = self._servers()
        return servers.status() if servers is not None else []

    async def ready(self) -> None:
        """Wait for the servers still starting (each up to `[mcp] startup_timeout`)."""
        servers = self._servers()
        if servers is not None:
            await servers.ready()

    async def reconnect(self, name: str) -> McpServerInfo:
        """Start the server `name` again (stopped first if it runs) and wait until it is up or
        failed; a failure is also sent as a warning. KeyError when there is no such server."""
        return await self._configured().reconnect(name)

    async def set_enabled(self, server: str, enabled: bool, tool: str | None = None) -> None:
        """Offer or stop offering the tools of `server` (or only its `tool`, named as the model
        sees it) for the rest of the session; the gauge counts the change at once. KeyError when
        there is no such server or tool."""
        self._configured().set_enabled(server, enabled, tool)
        await self._live.remeasure()
