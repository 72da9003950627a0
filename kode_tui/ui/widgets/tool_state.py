"""What a tool block shows of one call: its reading (`kode_tui.wire.readings`), status,
result and display blocks. Live events and `load_history` fill it in; `tool_block` draws it and
`tool_views` reads its parts."""

from __future__ import annotations

from kode_tui.message import media_chips
from kode_tui.wire import events as ev
from kode_tui.wire.readings import CallReading, StreamedCall, ToolStatus, result_status


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

    @property
    def has_diff(self) -> bool:
        return any(isinstance(block, ev.DiffBlock) for block in self.display)
