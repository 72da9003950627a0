"""kode-tui's wire events and stored history as ACP `session/update`s.

A turn's events arrive one at a time (`TurnUpdates`); a stored conversation is replayed whole
(`history_updates`) when a client loads a session or after a revert or restore. Both build the
same updates for the same call: a `tool_call` with its kind, title and raw input, then a
`tool_call_update` with the result (text, and a diff per edited file).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)
from acp.helpers import SessionUpdate, ToolCallContentVariant
from acp.schema import PlanEntryStatus, ToolCallLocation, ToolCallStatus, ToolKind

from kode_tui.message import Message, TextPart, ThinkPart, is_checkpoint_note
from kode_tui.soul.facade import PastResults, stored_result
from kode_tui.wire import events as ev
from kode_tui.wire.readings import read_call, retry_text

_KINDS: dict[str, ToolKind] = {
    "ReadFile": "read",
    "WriteFile": "edit",
    "StrReplaceFile": "edit",
    "Shell": "execute",
    "Glob": "search",
    "Grep": "search",
    "SearchWeb": "search",
    "FetchURL": "fetch",
    "TodoWrite": "think",
}

_PLAN_STATUS: dict[str, PlanEntryStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "done": "completed",
}


def tool_kind(name: str) -> ToolKind:
    """What an ACP client shows for one of our tools (an MCP tool is `other`)."""
    return _KINDS.get(name, "other")


def tool_title(name: str, arguments: str) -> str:
    """How the call reads in every front end (`kode_tui.wire.readings`)."""
    return read_call(name, arguments).title


def raw_input(arguments: str) -> Any:
    """The call's arguments as JSON, or the text the model wrote when it is not JSON."""
    try:
        return json.loads(arguments) if arguments else {}
    except ValueError:
        return arguments


def absolute(path: str, work_dir: str) -> str:
    """ACP wants absolute paths; our tools and diffs name files relative to the work dir."""
    return path if not work_dir or path.startswith("/") else f"{work_dir}/{path}"


def _locations(arguments: str, work_dir: str) -> list[ToolCallLocation] | None:
    parsed = raw_input(arguments)
    path = parsed.get("path") if isinstance(parsed, dict) else None
    if not isinstance(path, str) or not path:
        return None
    return [ToolCallLocation(path=absolute(path, work_dir))]


def call_start(call_id: str, name: str, arguments: str, work_dir: str) -> SessionUpdate:
    return start_tool_call(
        call_id,
        tool_title(name, arguments),
        kind=tool_kind(name),
        status="pending",
        locations=_locations(arguments, work_dir),
        raw_input=raw_input(arguments),
    )


def display_content(
    blocks: Sequence[ev.DisplayBlock], work_dir: str
) -> list[ToolCallContentVariant]:
    """A result's diffs as ACP diff content (what the client shows as an edit)."""
    return [
        tool_diff_content(absolute(block.path, work_dir), block.new_text, block.old_text or None)
        for block in blocks
        if isinstance(block, ev.DiffBlock)
    ]


def result_updates(result: ev.ToolResult, work_dir: str) -> Iterator[SessionUpdate]:
    """The call's final `tool_call_update`, and the plan when it is TodoWrite's list."""
    content = display_content(result.display, work_dir)
    text = result.output or result.message
    if text:
        content.append(tool_content(text_block(text)))
    status: ToolCallStatus = "failed" if result.is_error else "completed"
    yield update_tool_call(
        result.tool_call_id, status=status, content=content, raw_output=result.output or None
    )
    for block in result.display:
        if isinstance(block, ev.TodoBlock):
            yield update_plan(
                plan_entry(item.title, status=_PLAN_STATUS.get(item.status, "pending"))
                for item in block.items
            )


class TurnUpdates:
    """The updates of one session's running turns, event by event (calls are remembered
    from their start to their result)."""

    def __init__(self, work_dir: str) -> None:
        self._work_dir = work_dir
        self._names: dict[str, str] = {}
        self._arguments: dict[str, str] = {}

    def arguments(self, call_id: str) -> str:
        return self._arguments.get(call_id, "")

    def name(self, call_id: str) -> str:
        return self._names.get(call_id, "")

    def updates(self, event: ev.Event) -> list[SessionUpdate]:
        match event:
            case ev.ContentPart(part=TextPart(text=text)) if text:
                return [update_agent_message_text(text)]
            case ev.ContentPart(part=ThinkPart(think=think)) if think:
                return [update_agent_thought_text(think)]
            case ev.ToolCall():
                self._names[event.id] = event.function.name
                self._arguments[event.id] = event.function.arguments or ""
                name, arguments = event.function.name, self.arguments(event.id)
                return [call_start(event.id, name, arguments, self._work_dir)]
            case ev.ToolCallPart():
                self._arguments[event.id] = self.arguments(event.id) + event.arguments_delta
                return []
            case ev.ToolResult():
                call_id = event.tool_call_id
                # The title and input are whole only now (they streamed in pieces).
                arguments = self.arguments(call_id)
                whole = update_tool_call(
                    call_id,
                    title=tool_title(self.name(call_id), arguments),
                    status="in_progress",
                    locations=_locations(arguments, self._work_dir),
                    raw_input=raw_input(arguments),
                )
                return [whole, *result_updates(event, self._work_dir)]
            case ev.StepRetry():
                note = f"\n\n_{retry_text(event)}._\n\n"
                return [update_agent_message_text(note)]
            case ev.HookRan(outcome="warning" | "blocked"):
                note = f"{event.hook_event} hook `{event.command}`: {event.note}"
                return [update_agent_message_text(f"\n\n_{note}_\n\n")]
            case ev.Warning() | ev.Error():
                return [update_agent_message_text(f"\n\n_{event.message}_\n\n")]
            case _:
                return []


def history_updates(
    history: Sequence[Message], past: PastResults | None, work_dir: str
) -> Iterator[SessionUpdate]:
    """A stored conversation as the updates a client would have seen while it happened."""
    calls: dict[str, str] = {}
    for message in history:
        if message.role == "user":
            # What the user typed, without the notes for the model (checkpoint ids, reminders).
            said = "".join(
                part.text
                for part in message.parts
                if isinstance(part, TextPart) and not part.text.startswith("<system-reminder>")
            )
            if said and not is_checkpoint_note(said):
                yield update_user_message_text(said)
        elif message.role == "assistant":
            for part in message.parts:
                if isinstance(part, ThinkPart) and part.think:
                    yield update_agent_thought_text(part.think)
                elif isinstance(part, TextPart) and part.text:
                    yield update_agent_message_text(part.text)
            for call in message.tool_calls or ():
                arguments = call.function.arguments or ""
                calls[call.id] = arguments
                yield call_start(call.id, call.function.name, arguments, work_dir)
        elif message.role == "tool" and message.tool_call_id:
            arguments = calls.get(message.tool_call_id, "")
            recorded = past.find(message.tool_call_id, arguments) if past is not None else None
            yield from result_updates(recorded or stored_result(message), work_dir)
