"""The MCP servers of `[mcp.servers]`: started in the background, their tools offered while they
are connected (`McpServers` is a tool source of the `Toolset`).

Each server has one task that owns its connection (the MCP library's task groups must be entered
and left by the same task): it starts the server (a command over stdio, or a streamable HTTP
URL), lists its tools, then waits until the session closes or the server goes away. A server
that fails to start, takes longer than `[mcp] startup_timeout`, or dies is reported once through
`on_change` with the reason, and the agent goes on without its tools; `reconnect` tries again.
A stdio server's stderr goes to `mcp-NAME.log` in the session folder, masked, never to the
terminal; what a server sends is read with a cap on one message (`mcp_transport`).
The user can switch a server or one tool off for the session: it is no longer offered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kode_tui import __version__, masking
from kode_tui.config import Config, McpConfig, McpServerConfig
from kode_tui.humanize import format_size
from kode_tui.tools.base import Tool, ToolError
from kode_tui.tools.mcp_tools import (
    MAX_MESSAGE_BYTES,
    PREFIX,
    TOO_LARGE,
    McpTool,
    describe,
    tool_names,
)

if TYPE_CHECKING:
    # The mcp package (and anyio with it) takes most of a second to import: it is imported
    # where a configured server needs it, so a start-up without servers never pays for it.
    from mcp import Client, types

log = logging.getLogger(__name__)

ServerState = Literal["starting", "connected", "failed", "off"]
MAX_TOOL_PAGES = 50
"""A server whose listing never ends is read this far."""


@dataclass(frozen=True, slots=True)
class McpToolInfo:
    """One tool of a server as `/mcp` lists it."""

    name: str
    """As the model is offered it: `mcp__time__get_current_time`."""
    remote: str
    """As the server names it."""
    description: str
    tokens: int
    """What its definition adds to every request (estimated)."""
    enabled: bool


@dataclass(frozen=True, slots=True)
class McpServerInfo:
    """One server as `/mcp` and `/context` show it."""

    name: str
    target: str
    """The command line, or the URL."""
    state: ServerState
    """`off`: not started (`enabled = false` in the config, or switched off)."""
    error: str
    """Why it failed, when it did."""
    enabled: bool
    """Whether its tools are offered while it is connected (the session's switch)."""
    tools: list[McpToolInfo]

    @property
    def tokens(self) -> int:
        """What the tools it offers add to every request (estimated)."""
        if not self.enabled or self.state != "connected":
            return 0
        return sum(tool.tokens for tool in self.tools if tool.enabled)


def expand(values: dict[str, str], environ: dict[str, str] | None = None) -> dict[str, str]:
    """`values` with each `"$VAR"` read from the environment (empty when unset)."""
    env = os.environ if environ is None else environ
    return {
        key: env.get(value[1:], "") if value.startswith("$") and len(value) > 1 else value
        for key, value in values.items()
    }


def mcp_variables(config: Config) -> list[str]:
    """The environment variables the MCP servers' `env` and `headers` name (`"$VAR"`)."""
    return [
        value[1:]
        for server in config.mcp.servers.values()
        for value in [*server.env.values(), *server.headers.values()]
        if value.startswith("$") and len(value) > 1
    ]


def literal_secrets(config: McpConfig) -> dict[str, str]:
    """The values the config itself gives an MCP server under a credential's name (an env
    `GITHUB_TOKEN`, an `Authorization` header, not written `"$VAR"`), each under a name for
    its marker: masked as an API key is, in what the server says and what is written."""
    found: dict[str, str] = {}
    for server in config.servers.values():
        for key, value in [*server.env.items(), *server.headers.items()]:
            name = re.sub(r"[^A-Za-z0-9_]", "_", key).upper()
            if value.startswith("$") or not any(word in name for word in _CREDENTIAL_WORDS):
                continue
            # `Bearer TOKEN`: the token, wherever it shows up without its scheme.
            secret = value.split()[-1] if value.strip() else value
            found.setdefault(name if name[0].isalpha() else f"MCP_{name}", secret)
    return found


_CREDENTIAL_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH", "CREDENTIAL", "COOKIE")


class McpServer:
    """The connection to one server, owned by one task."""

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        settings: McpConfig,
        *,
        work_dir: Path,
        log_file: Path | None,
        on_change: Callable[[McpServer, str | None], None],
    ) -> None:
        self.name = name
        self.config = config
        self._settings = settings
        self._work_dir = work_dir
        self._log_file = log_file
        self._on_change = on_change
        self.state: ServerState = "off"
        self.error = ""
        self.enabled = True
        self.tools: list[McpTool] = []
        self.disabled_tools: set[str] = set()
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        self._stop = asyncio.Event()
        self._lost = asyncio.Event()
        self._deadline: asyncio.TimerHandle | None = None

    @property
    def target(self) -> str:
        if self.config.command is not None:
            return " ".join([self.config.command, *self.config.args])
        return self.config.url or ""

    def start(self) -> None:
        """Connect in the background; `ready()` returns once connected or failed."""
        if self._task is not None and not self._task.done():
            return
        self.state, self.error, self.tools = "starting", "", []
        self._settled = asyncio.Event()
        self._stop = asyncio.Event()
        self._lost = asyncio.Event()
        self._task = asyncio.create_task(self._serve(), name=f"mcp {self.name}")
        timeout = self._settings.startup_timeout
        self._deadline = asyncio.get_running_loop().call_later(timeout, self._timed_out)

    async def ready(self) -> None:
        if self.state == "starting":
            await self._settled.wait()

    async def stop(self) -> None:
        """Close the connection (and stop the server's process); waits until it is down."""
        task, self._task = self._task, None
        if self._deadline is not None:
            self._deadline.cancel()
        self._stop.set()
        if task is not None:
            if self.state == "starting":
                task.cancel()  # a server still starting is not waited for
            with contextlib.suppress(BaseException):
                await task
        self._client = None
        self.tools = []
        if self.state in ("starting", "connected"):
            self.state = "off"
        self._settled.set()

    @property
    def up(self) -> bool:
        """Whether calls can go to the server: connected, and the connection not lost (a lost
        one takes the tools away at once; the warning follows once it is torn down)."""
        return self.state == "connected" and not self._lost.is_set()

    def down(self) -> str:
        """Why calls cannot go to the server, as one sentence for the model."""
        if self.state == "off":
            why = "it is not started"
        elif self.state == "starting":
            why = "it is still starting"
        else:
            why = self.error or "the connection was lost"
        return f"The MCP server {self.name} is not connected: {why}."

    def offered(self) -> list[McpTool]:
        if not self.enabled or not self.up:
            return []
        return [tool for tool in self.tools if tool.name not in self.disabled_tools]

    def info(self) -> McpServerInfo:
        return McpServerInfo(
            name=self.name,
            target=self.target,
            state=self.state,
            error=self.error,
            enabled=self.enabled,
            tools=[
                McpToolInfo(
                    tool.name,
                    tool.remote,
                    tool.description,
                    tool.tokens,
                    tool.name not in self.disabled_tools,
                )
                for tool in self.tools
            ],
        )

    # --- the connection's task ---------------------------------------------------------------

    async def _serve(self) -> None:
        reason: str | None = None
        try:
            # Off the event loop: the screen stays live while it loads.
            await asyncio.to_thread(_import_mcp)
            from mcp import Client, types

            client = Client(
                self._transport(),
                client_info=types.Implementation(name="kode-tui", version=__version__),
                read_timeout_seconds=self._settings.tool_timeout,
            )
            async with client:
                tools = await self._list_tools(client)
                self._client, self.tools = client, tools
                self._settle("connected", "")
                self._on_change(self, None)
                await _first(self._stop.wait(), self._lost.wait())
                if not self._stop.is_set():
                    reason = "the server closed the connection"
        except asyncio.CancelledError:
            if not self._stop.is_set() and self.state == "starting":
                reason = self.error  # timed out: the deadline said why
            else:
                raise
        except Exception as error:
            reason = describe(error)
        finally:
            self._client = None
        if reason is not None:
            self.tools = []
            detail = self._stderr_tail()
            self._settle("failed", f"{reason} ({detail})" if detail else reason)
            self._on_change(self, self.error)

    def _settle(self, state: ServerState, error: str) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self.state, self.error = state, error
        self._settled.set()

    def _timed_out(self) -> None:
        if self.state == "starting" and self._task is not None:
            self.error = f"it did not start within {self._settings.startup_timeout:g} s"
            self._task.cancel()

    async def _list_tools(self, client: Client) -> list[McpTool]:
        listed: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            listed += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        # A tool listed twice is one tool (its name on the server is how it is called).
        unique = {entry.name: entry for entry in reversed(listed)}
        names = tool_names(self.name, unique)
        return [
            McpTool(self.name, entry, names[entry.name], self.call)
            for entry in listed
            if unique[entry.name] is entry
        ]

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        return _watched(self._streams(), self._lost)

    @contextlib.asynccontextmanager
    async def _streams(self) -> AsyncIterator[tuple[Any, Any]]:
        from mcp.client.streamable_http import streamable_http_client

        from kode_tui.tools.mcp_transport import (
            StderrLog,
            StdioServer,
            capped_http_client,
            stdio_transport,
        )

        config = self.config
        streams: tuple[Any, Any]
        async with contextlib.AsyncExitStack() as stack:
            if config.command is not None:
                server = StdioServer(
                    config.command, config.args, expand(config.env), self._work_dir
                )
                errlog = stack.enter_context(
                    contextlib.closing(StderrLog(self._log_file, self.target))
                )
                streams = await stack.enter_async_context(stdio_transport(server, errlog))
            else:
                assert config.url is not None
                http = await stack.enter_async_context(
                    capped_http_client(expand(config.headers) or None)
                )
                streams = await stack.enter_async_context(
                    # One event of a stream is one message: the client's cap on a line of the
                    # stream says so first, in the same words as for a JSON body.
                    streamable_http_client(
                        config.url, http_client=http, max_sse_event_size=2 * MAX_MESSAGE_BYTES
                    )
                )
            yield streams

    def _stderr_tail(self) -> str:
        """The last line the server wrote to stderr since it was started, if any."""
        if self._log_file is None or self.config.command is None:
            return ""
        try:
            with open(self._log_file, "rb") as file:
                file.seek(0, os.SEEK_END)
                file.seek(max(0, file.tell() - 4096))
                lines = file.read().decode("utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        for line in reversed(lines):
            if line.startswith("--- ") and "kode-tui starts" in line:
                return ""
            if line.strip():
                return line.strip()[:200]
        return ""

    # --- calls -----------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call `tool` (its name on the server); ToolError when the server is not connected or
        the call times out; a lost connection is reported once, as at start-up."""
        client = self._client
        if client is None or not self.up:
            raise ToolError(self.down())
        timeout = self._settings.tool_timeout
        try:
            return await client.call_tool(tool, arguments, read_timeout_seconds=timeout)
        except Exception as error:
            if TOO_LARGE in str(error):
                raise ToolError(
                    f"The result of {tool} was dropped: it was over "
                    f"{format_size(MAX_MESSAGE_BYTES)}, the limit of one MCP message, so none "
                    "of it was read. Ask the tool for less (a narrower query, a page of it)."
                ) from None
            if await self._alive(client):
                raise
            self._lost.set()
            raise ToolError(
                f"The MCP server {self.name} stopped answering ({describe(error)})."
            ) from None

    async def _alive(self, client: Client) -> bool:
        """Whether the server still answers (a failed call may be the call's fault only)."""
        import anyio

        if self._lost.is_set():
            return False
        try:
            # Listing is the one request every era of the protocol answers (ping is gone).
            with anyio.fail_after(min(5.0, self._settings.tool_timeout)):
                await client.list_tools(cache_mode="refresh")
        except Exception:
            return False
        return True


def _import_mcp() -> None:
    """Import what a connection needs of the mcp package (it takes most of a second)."""
    import mcp.client.client
    import mcp.client.streamable_http  # noqa: F401

    import kode_tui.tools.mcp_transport  # noqa: F401


class _WatchedStream:
    """A transport's read stream that sets `ended` when the server's side of it ends."""

    def __init__(self, inner: Any, ended: asyncio.Event) -> None:
        self._inner = inner
        self._ended = ended

    @property
    def last_context(self) -> object:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        import anyio

        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@contextlib.asynccontextmanager
async def _watched(
    streams: contextlib.AbstractAsyncContextManager[tuple[Any, Any]], ended: asyncio.Event
) -> AsyncIterator[tuple[Any, Any]]:
    async with streams as (read, write):
        yield _WatchedStream(read, ended), write


async def _first(*waits: Any) -> None:
    """Return when the first of `waits` (coroutines) returns; the others are cancelled."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()


class McpServers:
    """The session's MCP servers: a tool source of the agent's `Toolset`."""

    def __init__(
        self,
        config: McpConfig,
        *,
        work_dir: Path,
        log_dir: Path | None,
        on_change: Callable[[McpServer, str | None], None] | None = None,
    ) -> None:
        self.config = config
        self.on_change = on_change
        for name, value in literal_secrets(config).items():
            masking.register(name, value)
        self.servers = {
            name: McpServer(
                name,
                server,
                config,
                work_dir=work_dir,
                log_file=log_dir / f"mcp-{name}.log" if log_dir is not None else None,
                on_change=self._changed,
            )
            for name, server in config.servers.items()
        }

    def _changed(self, server: McpServer, error: str | None) -> None:
        if self.on_change is not None:
            self.on_change(server, error)

    def start(self) -> None:
        """Start every server the config enables, in the background."""
        for server in self.servers.values():
            if server.config.enabled:
                server.start()

    def tools(self) -> Sequence[Tool[Any]]:
        return [tool for server in self.servers.values() for tool in server.offered()]

    def missing(self, name: str) -> str | None:
        """Why the tool `name` is not offered, when it is one of a server's."""
        for server in self.servers.values():
            if not name.startswith(f"{PREFIX}{server.name}__"):
                continue
            if not server.up:
                return server.down()
            if not server.enabled or name in server.disabled_tools:
                return f"The user switched {name} off for this session."
        return None

    async def ready(self) -> None:
        """Wait for the servers still starting (each up to `startup_timeout`)."""
        await asyncio.gather(*(server.ready() for server in self.servers.values()))

    async def close(self) -> None:
        await asyncio.gather(*(server.stop() for server in self.servers.values()))

    def status(self) -> list[McpServerInfo]:
        return [server.info() for server in self.servers.values()]

    def server(self, name: str) -> McpServer:
        """The server `name`; KeyError (one sentence) when there is none."""
        found = self.servers.get(name)
        if found is None:
            raise KeyError(f"There is no MCP server {name}.")
        return found

    async def reconnect(self, name: str) -> McpServerInfo:
        """Stop the server `name` if it runs, start it again, and wait until it is up or failed."""
        server = self.server(name)
        await server.stop()
        server.start()
        await server.ready()
        return server.info()

    def set_enabled(self, name: str, enabled: bool, tool: str | None = None) -> None:
        """Offer (or stop offering) the server `name`'s tools, or only its `tool` (the name the
        model is offered), for the rest of the session; KeyError when there is no such one."""
        server = self.server(name)
        if tool is None:
            server.enabled = enabled
            return
        if tool not in {t.name for t in server.tools}:
            raise KeyError(f"The MCP server {name} has no tool {tool}.")
        if enabled:
            server.disabled_tools.discard(tool)
        else:
            server.disabled_tools.add(tool)
