"""What a session's files say about past tool calls, for a front end showing a stored conversation.

The context keeps a tool's output as the model saw it; the wire keeps what the user saw too (the
short report and the diffs). A front end never opens session files: it asks for `PastResults`
and rebuilds results from the context's messages with `stored_result`.
"""

from __future__ import annotations

import json
from pathlib import Path

from kode_tui.message import ContentPart, Message, TextPart, ThinkPart, split_tool_result
from kode_tui.wire import events as ev
from kode_tui.wire.events import read_wire


class PastResults:
    """The tool results recorded in a wire.jsonl.

    Kimi CLI numbers tool calls per step (`call_1_0` recurs), so a result is looked up by its
    call's id and arguments (a call whose arguments the wire lacks matches any).
    """

    def __init__(self) -> None:
        self._by_id: dict[str, list[tuple[str, ev.ToolResult]]] = {}

    @classmethod
    def read(cls, path: Path) -> PastResults:
        """The results of the wire file at `path` (none for a missing file); blocking, so a
        front end runs it in a thread."""
        results = cls()
        arguments: dict[str, str] = {}
        last_call = ""
        for record in read_wire(path):
            event = record.event
            if isinstance(event, ev.ToolCall):
                last_call = event.id
                arguments[event.id] = event.function.arguments or ""
            elif isinstance(event, ev.ToolCallPart):
                call_id = event.id or last_call  # Kimi's pieces extend the call before them
                arguments[call_id] = arguments.get(call_id, "") + event.arguments_delta
            elif isinstance(event, ev.ToolResult):
                entry = (arguments.get(event.tool_call_id, ""), event)
                results._by_id.setdefault(event.tool_call_id, []).append(entry)
        return results

    def find(self, call_id: str, arguments: str) -> ev.ToolResult | None:
        """The newest result of the call `call_id` made with `arguments`, as recorded."""
        for recorded, result in reversed(self._by_id.get(call_id, ())):
            if not recorded or _same_arguments(recorded, arguments):
                return result
        return None


def _same_arguments(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return bool(json.loads(a) == json.loads(b))
    except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
        return False


def stored_result(message: Message) -> ev.ToolResult:
    """A tool message read back as a result: `<system>ERROR: …</system>` marks an error."""
    is_error, status, text = split_tool_result(message.text)
    media: list[ContentPart] = [p for p in message.parts if not isinstance(p, TextPart | ThinkPart)]
    return ev.ToolResult(
        tool_call_id=message.tool_call_id or "",
        is_error=is_error,
        output=text,
        message=status,
        parts=media,
    )
