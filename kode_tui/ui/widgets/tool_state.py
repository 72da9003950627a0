"""What a tool block shows of one call: its reading (`kode_tui.wire.readings`), status,
result and display blocks. Live events and `load_history` fill it in; `tool_block` draws it and
`tool_views` reads its parts."""

from __future__ import annotations

from kode_tui.message import media_chips
from kode_tui.wire import events as ev
from kode_tui.wire.readings import (
    CallReading,
    ResultReading,
    StreamedCall,
    ToolStatus,
    read_result,
    result_status,
)


class ToolState:
    """Everything a tool block shows of one call."""

    __slots__ = (
        "brief",
        "call",
        "display",
        "id",
        "media",
        "message",
        "output",
        "status",
        "subagent",
        "superseded",
    )

    def __init__(self, call_id: str, name: str, arguments: str = "") -> None:
        self.id = call_id
        self.call = StreamedCall(name, arguments)
        self.status: ToolStatus = "running"
        self.brief = ""
        self.message = ""
        self.output = ""
        self.display: list[ev.DisplayBlock] = []
        self.media: list[str] = []
        """A chip for each image, audio or video part of the result: `image cat.png · 12 KiB`."""
        self.superseded = False
        """A todo-list call a newer one replaced: it folds to its title (see `TodoBoard`)."""
        self.subagent: SubagentSteps | None = None
        """The steps of the subagent an `Agent` call runs, as they come."""

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def arguments(self) -> str:
        return self.call.arguments

    @property
    def reading(self) -> CallReading:
        return self.call.reading

    def apply_result(self, result: ev.ToolResult) -> None:
        """Take the status, brief, output and display blocks of a result."""
        self.status = result_status(result)
        self.message = result.message
        self.output, self.media = media_chips(result.output, result.parts)
        self.brief = ""
        display: list[ev.DisplayBlock] = []
        for block in result.display:
            if isinstance(block, ev.BriefBlock):
                self.brief = block.text
            else:
                display.append(block)
        # An approval may have shown the diff already; a result without blocks keeps it.
        if display or not self.display:
            self.display = display

    def apply_subagent(self, event: ev.SubagentEvent) -> bool:
        """Take an event of the subagent this call runs; whether its steps' lines changed
        (a `SubagentBlock` in `display` holds them, as a stored call's does)."""
        if self.subagent is None:
            self.subagent = SubagentSteps(event.agent_id, event.subagent_type)
        if not self.subagent.add(event.event):
            return False
        kept = [b for b in self.display if not isinstance(b, ev.SubagentBlock)]
        self.display = [*kept, self.subagent.block()]
        return True

    @property
    def has_diff(self) -> bool:
        return any(isinstance(block, ev.DiffBlock) for block in self.display)


class SubagentSteps:
    """A running subagent's calls, one line each: `→ ReadFile README.md` while it runs, then
    how it ended, `✔ ReadFile README.md: 1 line read` (its readings, as ACP reports them)."""

    __slots__ = ("_calls", "_results", "agent_id", "subagent_type")

    def __init__(self, agent_id: str, subagent_type: str) -> None:
        self.agent_id = agent_id
        self.subagent_type = subagent_type
        self._calls: dict[str, StreamedCall] = {}
        self._results: dict[str, ResultReading] = {}

    def add(self, event: ev.Event) -> bool:
        """Take one of its events; whether a line changed."""
        if isinstance(event, ev.ToolCall):
            self._calls[event.id] = StreamedCall(
                event.function.name, event.function.arguments or ""
            )
            return True
        if isinstance(event, ev.ToolCallPart) and (call := self._calls.get(event.id)):
            return call.extend(event.arguments_delta)
        if isinstance(event, ev.ToolResult) and event.tool_call_id in self._calls:
            self._results[event.tool_call_id] = read_result(event)
            return True
        return False

    def lines(self) -> list[str]:
        lines = []
        for call_id, call in self._calls.items():
            result = self._results.get(call_id)
            title = call.reading.title
            lines.append(
                f"→ {title}" if result is None else f"{result.label} {title}: {result.summary}"
            )
        return lines

    def block(self) -> ev.SubagentBlock:
        return ev.SubagentBlock(
            agent_id=self.agent_id, subagent_type=self.subagent_type, steps=self.lines()
        )
