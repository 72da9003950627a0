"""`/context`: what the model is given, in rows that add up to the gauge's number.

The gauge shows `context_tokens`: the count the model reported for the last request plus an
estimate (characters / 4) of the messages added since. Before the first request nothing was
reported, so the gauge shows the known prompt instead, estimated: the system prompt with its
project context and the tool definitions, plus the messages so far (`KodeSoul.status`).

The report splits that same number into rows. The fixed parts are estimated from their text
(the system prompt's blocks, the tools' JSON schemas, the reminders of the last request); the
messages are what is left of the reported count once those are taken out, so the rows always
add up to the gauge, however far the estimates are off. When the estimates exceed the reported
count, they are scaled down to fit it and say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from kode_tui.humanize import plural
from kode_tui.message import estimate_tool_tokens
from kode_tui.soul.pins import with_pins
from kode_tui.soul.reminders import Reminder

if TYPE_CHECKING:
    from kode_tui.soul.project import ProjectContextSource
    from kode_tui.tools.mcp_client import McpServerInfo
    from kode_tui.tools.toolset import Toolset
    from kode_tui.wire.events import StatusUpdate

__all__ = [
    "ContextReport",
    "ContextRow",
    "PromptParts",
    "context_rows",
    "measure",
    "report",
    "row_lines",
]


class ContextRow(msgspec.Struct, frozen=True):
    """One line of `/context`: a part of what the model is given and its tokens."""

    name: str
    tokens: int
    estimated: bool = True
    """Counted from its text (characters / 4) rather than from what the model reported."""
    note: str = ""
    """How the number came about when it is not an estimate (what is left of a report)."""


class ContextReport(msgspec.Struct, frozen=True):
    """What the model is given (`/context`)."""

    system_prompt: str
    """The whole system prompt of the next request, project context included."""
    blocks: list[tuple[str, int]]
    """Its parts with their estimated tokens: the base prompt, each project doc and block."""
    reminders: list[Reminder]
    """What went with the latest request."""
    context_tokens: int
    """The gauge's number; the `rows` add up to it."""
    max_context_tokens: int
    trigger_tokens: int
    rows: list[ContextRow] = msgspec.field(default_factory=list)
    """The system prompt's blocks, the tool definitions, the reminders and the messages."""
    reported_tokens: int = 0
    """What the model reported for the last request; 0 before the first one."""

    def lines(self) -> list[str]:
        """The rows as aligned text lines (`row_lines`)."""
        return row_lines(self)


class PromptParts(msgspec.Struct, frozen=True):
    """The fixed part of every request, measured: the system prompt and the tools."""

    system_prompt: str
    blocks: list[tuple[str, int]]
    tool_count: int
    tool_tokens: int
    mcp: list[tuple[str, int, int]] = msgspec.field(default_factory=list)
    """Each MCP server's part of the tools: (its row's name, tools offered, tokens)."""

    @property
    def tokens(self) -> int:
        """The estimated tokens of the system prompt (all its blocks) and the tools."""
        return sum(tokens for _, tokens in self.blocks) + self.tool_tokens


def reminder_tokens(reminders: Sequence[Reminder]) -> int:
    """The estimated tokens of reminders as they go into a request."""
    return sum(len(reminder.block()) // 4 for reminder in reminders)


async def measure(
    base: str,
    project: ProjectContextSource | None,
    pins: Sequence[str],
    toolset: Toolset,
) -> PromptParts:
    """The system prompt of the next request with its blocks, and the tool definitions: the
    `base` prompt, the `project` context (None: none is collected), the `pins`, the tools."""
    if project is not None:
        system_prompt, blocks = await project.describe(base)
    else:
        system_prompt, blocks = base, [("system prompt", len(base) // 4)]
    # Last, after the project context: a pin changed leaves the cached prefix as it was.
    system_prompt, blocks = with_pins(system_prompt, blocks, list(pins))
    schemas = toolset.schemas()
    mcp: list[tuple[str, int, int]] = []
    if toolset.sources:  # the MCP servers' (their client loads with them)
        from kode_tui.tools.mcp_client import McpServers

        mcp = [
            _mcp_part(server)
            for source in toolset.sources
            if isinstance(source, McpServers)
            for server in source.status()
        ]
    return PromptParts(system_prompt, blocks, len(schemas), estimate_tool_tokens(schemas), mcp)


def _mcp_part(server: McpServerInfo) -> tuple[str, int, int]:
    """A server's row of `/context`: its name and state, the tools it offers, their tokens."""
    name = f"MCP server {server.name}"
    if server.state != "connected":
        return f"{name} ({server.state})", 0, 0
    if not server.enabled:
        return f"{name} (switched off)", 0, 0
    count = sum(tool.enabled for tool in server.tools)
    return f"{name} ({plural(count, 'tool')})", count, server.tokens


def context_rows(
    parts: PromptParts,
    reminders: Sequence[Reminder],
    reported: int,
    pending: int,
    changed: int = 0,
) -> list[ContextRow]:
    """The rows of `/context`; they add up to the gauge's number (see the module's doc).

    `reported` is the model's count for the last request (0: none yet), `pending` the estimate
    of the messages added since (all the messages, before the first request), `changed` how
    much the fixed part grew since the last request (a pin added or edited): the gauge counts
    it before the model reports it, so the messages row must not lose it.
    """
    mcp_count = sum(count for _, count, _ in parts.mcp)
    mcp_tokens = sum(tokens for _, _, tokens in parts.mcp)
    tools_name = f"tool definitions ({parts.tool_count - mcp_count})"
    fixed = [ContextRow(name, tokens) for name, tokens in parts.blocks]
    # The MCP servers' rows are their own tools' estimates; the built-in tools' row is the rest
    # of the whole list's, so the rows still add up to what the gauge counts for the tools.
    fixed.append(ContextRow(tools_name, max(0, parts.tool_tokens - mcp_tokens)))
    fixed += [ContextRow(name, tokens) for name, _, tokens in parts.mcp]
    if not reported:
        # Nothing reported: the gauge shows the known prompt and the messages, estimated.
        return [*fixed, ContextRow("messages", pending)]
    if reminders:
        fixed.append(ContextRow("reminders of the last request", reminder_tokens(reminders)))
    estimated = sum(row.tokens for row in fixed)
    rows = fixed
    reported = max(0, reported + changed)
    messages = reported - estimated
    note = "the last request's reported count minus the rows above"
    if messages < 0:
        rows = _scaled(fixed, reported)
        messages = 0
        note = "the estimates above exceed the reported count: scaled down to it"
    rows.append(ContextRow("messages", messages, estimated=False, note=note))
    if pending:
        rows.append(ContextRow("messages since the last request", pending))
    return rows


def _scaled(rows: list[ContextRow], total: int) -> list[ContextRow]:
    """`rows` scaled to sum to exactly `total` (largest remainders get the rounding)."""
    whole = sum(row.tokens for row in rows)
    shares = [row.tokens * total / whole for row in rows]
    sizes = [int(share) for share in shares]
    order = sorted(range(len(rows)), key=lambda i: shares[i] - sizes[i], reverse=True)
    for index in order[: total - sum(sizes)]:
        sizes[index] += 1
    return [ContextRow(row.name, size) for row, size in zip(rows, sizes, strict=True)]


def report(
    parts: PromptParts,
    reminders: Sequence[Reminder],
    status: StatusUpdate,
    reported: int,
    pending: int,
    changed: int = 0,
) -> ContextReport:
    """`/context` for the next request: its prompt's `parts`, the `reminders` that go with it,
    and the gauge's `status`, which the rows add up to (`context_rows` says what `reported`,
    `pending` and `changed` are)."""
    return ContextReport(
        system_prompt=parts.system_prompt,
        blocks=parts.blocks,
        reminders=list(reminders),
        context_tokens=status.context_tokens,
        max_context_tokens=status.max_context_tokens,
        trigger_tokens=status.trigger_tokens,
        rows=context_rows(parts, reminders, reported, pending, changed),
        reported_tokens=reported,
    )


def row_lines(report: ContextReport) -> list[str]:
    """The rows as aligned text lines, then their total (the gauge's number) and what `est.`
    means; plain text for print mode and the `/context` screen alike."""
    rows = report.rows
    if not rows:
        return [f"  {name}  {tokens:>8,}  est." for name, tokens in report.blocks]
    total = ContextRow("total (the gauge)", sum(row.tokens for row in rows), estimated=False)
    width = max(len(row.name) for row in [*rows, total])
    lines = [
        f"  {row.name:<{width}}  {row.tokens:>8,}  {'est.' if row.estimated else row.note}".rstrip()
        for row in rows
    ]
    lines.append(f"  {total.name:<{width}}  {total.tokens:>8,}")
    if report.reported_tokens:
        lines.append("  est.: estimated from the text (characters / 4)")
    else:
        lines.append(
            "  est.: estimated from the text (characters / 4); the model reported no count"
            " since the context began or was compacted"
        )
    return lines
