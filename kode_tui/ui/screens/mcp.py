"""`/mcp`: the MCP servers, their state, tools and what their definitions cost; a server or a tool
switched off (or on) for the session, a server reconnected."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kode_tui.humanize import plural
from kode_tui.safetext import visible

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession, McpServerInfo, McpToolInfo

EMPTY = "No MCP server is configured: add [mcp.servers.NAME] to config.toml."
KEYS = "↑↓ choose · Space switch off/on · r reconnect · Esc close"
DESCRIPTION_CHARS = 200

Row = tuple["McpServerInfo", "McpToolInfo | None"]


def server_line(server: McpServerInfo) -> Content:
    """A server's row: its name, state and what its tools cost each request."""
    name = visible(server.name, multiline=False)
    if server.state == "failed":
        why = visible(server.error, multiline=False)
        return Content.assemble(("✗ ", "$text-error"), (name, "bold"), (f"  failed: {why}", "dim"))
    if server.state == "starting":
        return Content.assemble("… ", (name, "bold"), ("  starting", "dim"))
    if server.state == "off":
        return Content.assemble("○ ", (name, "bold"), ("  not started (r starts it)", "dim"))
    if not server.enabled:
        return Content.assemble("○ ", (name, "bold"), ("  switched off for this session", "dim"))
    offered = sum(tool.enabled for tool in server.tools)
    return Content.assemble(
        ("● ", "$text-success"),
        (name, "bold"),
        f"  {plural(offered, 'tool')} · {server.tokens:,} tokens",
    )


def tool_line(tool: McpToolInfo, width: int) -> Content:
    """A tool's row: on or off, its name as the model sees it, its tokens."""
    mark = "✓" if tool.enabled else "·"
    name = visible(tool.name, multiline=False).ljust(width)
    style = "" if tool.enabled else "dim"
    state = "" if tool.enabled else "  off"
    return Content.assemble(f"  {mark} ", (name, style), (f"  {tool.tokens:>6,}{state}", style))


def detail(row: Row) -> str:
    """What the highlighted row is: the tool's description, or the server's command or URL."""
    server, tool = row
    text = server.target if tool is None else tool.description or "(no description)"
    return visible(" ".join(text.split())[:DESCRIPTION_CHARS], multiline=False)


class McpScreen(ModalScreen[None]):
    """The session's MCP servers, each followed by its tools."""

    DEFAULT_CLASSES = "kode-dialog"
    DEFAULT_CSS: ClassVar[str] = """
    McpScreen #mcp-list {
        height: auto;
        max-height: 12;
        border: none;
        background: $surface;
    }
    McpScreen #mcp-detail {
        height: 2;
        color: $text-muted;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "switch", "Switch off/on", id="mcp_switch"),
        Binding("r", "reconnect", "Reconnect", id="mcp_reconnect"),
        Binding("escape,q", "dismiss", "Close", id="close_mcp"),
    ]

    def __init__(self, opened: AgentSession) -> None:
        super().__init__()
        self._opened = opened
        self._rows: list[Row] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("MCP servers", classes="dialog-title")
            yield Static(id="mcp-summary")
            yield OptionList(id="mcp-list")
            yield Static(id="mcp-detail")
            yield Static(KEYS, classes="dialog-keys", id="mcp-keys")

    def on_mount(self) -> None:
        self.show()
        self.query_one(OptionList).focus()

    def show(self) -> None:
        """List the servers as they are now."""
        servers = self._opened.mcp.status()
        listing = self.query_one(OptionList)
        highlighted = listing.highlighted
        listing.clear_options()
        self._rows = []
        total = sum(server.tokens for server in servers)
        self.query_one("#mcp-summary", Static).update(
            f"Their tools go with every request: {total:,} tokens (estimated)."
        )
        if not servers:
            listing.add_option(Option(Content.styled(EMPTY, "$text-muted"), disabled=True))
            self.refresh_bindings()
            return
        width = max((len(tool.name) for s in servers for tool in s.tools), default=0)
        for server in servers:
            listing.add_option(Option(server_line(server)))
            self._rows.append((server, None))
            for tool in server.tools if server.state == "connected" else []:
                listing.add_option(Option(tool_line(tool, min(width, 48))))
                self._rows.append((server, tool))
        listing.highlighted = min(highlighted or 0, len(self._rows) - 1)
        self._show_detail()
        self.refresh_bindings()

    def on_option_list_option_highlighted(self) -> None:
        self._show_detail()

    def _show_detail(self) -> None:
        row = self._current()
        self.query_one("#mcp-detail", Static).update(detail(row) if row is not None else "")

    def _current(self) -> Row | None:
        index = self.query_one(OptionList).highlighted
        return self._rows[index] if index is not None and 0 <= index < len(self._rows) else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("switch", "reconnect"):
            return bool(self._rows)
        return True

    async def action_switch(self) -> None:
        row = self._current()
        if row is None:
            return
        server, tool = row
        if tool is None:
            await self._opened.mcp.set_enabled(server.name, not server.enabled)
        else:
            await self._opened.mcp.set_enabled(server.name, not tool.enabled, tool.name)
        self.show()

    def action_reconnect(self) -> None:
        row = self._current()
        if row is not None:
            self._reconnect(row[0].name)

    @work(group="mcp-reconnect", exclusive=True, exit_on_error=False)
    async def _reconnect(self, name: str) -> None:
        shown = visible(name, multiline=False)
        self.notify(f"Starting the MCP server {shown}…", timeout=2)
        info = await self._opened.mcp.reconnect(name)
        self.show()
        if info.state == "connected":
            self.notify(f"MCP server {shown} connected.", timeout=3)
        else:
            self.notify(f"MCP server {shown} failed.", severity="warning", timeout=4)
