"""kode-tui's wire events and stored history as ACP `session/update`s.

A turn's events arrive one at a time (`TurnUpdates`); a stored conversation is replayed whole
(`history_updates`) when a client loads a session or after a revert, restore or clear. Both
build the same updates for the same call, with the words every front end shows
(`kode_tui.wire.readings`):

- a `tool_call` when the model starts writing it (`pending`, its title the tool's name until
  its arguments are whole), a `tool_call_update` with its title and input once they are, one
  `in_progress` when it starts running, then the result: `completed` or `failed`, its text and
  a diff per edited file in `content`, and `rawOutput` an object (`{output, message, ...}`;
  clients' protocol types want one). A call that never gets a result (its step was
  interrupted, or its model call is tried again) ends `failed`, so nothing stays pending;
- ids are unique in a session (`CallIds`): a replay, or a model that uses an id again, gets
  fresh ones, since a client updates the call an id names;
- the agent's own lines (a command's reply, a retry, a warning, an error) are messages of their
  own (`Messages.notice`): a message id of their own, and blank lines around them for clients
  that join every chunk;
- a replay shows a compaction's summary and a D-Mail as thoughts, not as the user's words, and
  ends with the plan of the conversation it replayed (empty when it has no todo list).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from acp import plan_entry, text_block, tool_content, tool_diff_content, update_plan
from acp.helpers import SessionUpdate, ToolCallContentVariant, start_tool_call, update_tool_call
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    PlanEntryStatus,
    SessionInfoUpdate,
    ToolCallLocation,
    ToolCallStatus,
    ToolKind,
    UserMessageChunk,
)

from kode_tui.message import Message, TextPart, ThinkPart, is_checkpoint_note
from kode_tui.pathnames import scrub_text
from kode_tui.safetext import visible
from kode_tui.soul.facade import PastResults, read_record, stored_result
from kode_tui.wire import events as ev
from kode_tui.wire.readings import (
    SHELL,
    TODO_LISTS,
    StreamedCall,
    hook_note,
    read_result,
    read_system_note,
    result_brief,
    retry_text,
    todo_items,
)

_KINDS: dict[str, ToolKind] = {
    "ReadFile": "read",
    "ReadMediaFile": "read",
    "WriteFile": "edit",
    "StrReplaceFile": "edit",
    "Shell": "execute",
    "Glob": "search",
    "Grep": "search",
    "SearchWeb": "search",
    "FetchURL": "fetch",
    "TodoWrite": "think",
    "SetTodoList": "think",
}

_PLAN_STATUS: dict[str, PlanEntryStatus] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "in progress": "in_progress",
    "done": "completed",
    "completed": "completed",
}

INTERRUPTED = "Interrupted: the call did not finish."
VOID = "Not run: the model's answer was cut off, and it is asked again."


def tool_kind(name: str) -> ToolKind:
    """What an ACP client shows for one of our tools (an MCP tool is `other`)."""
    return _KINDS.get(name, "other")


def raw_input(arguments: str) -> dict[str, Any]:
    """The call's arguments as a JSON object; `{"arguments": text}` when the model wrote
    something else (clients' protocol types want an object), `{}` while nothing came yet."""
    if not arguments:
        return {}
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        parsed = None
    return parsed if isinstance(parsed, dict) else {"arguments": arguments}


def raw_output(result: ev.ToolResult) -> dict[str, Any]:
    """A result as a JSON object: what the model read (`output`, `message`), and the tool's
    own brief when it gave one."""
    value: dict[str, Any] = {"is_error": result.is_error, "output": result.output}
    if result.message:
        value["message"] = result.message
    if brief := result_brief(result):
        value["brief"] = brief
    return value


def absolute(path: str, work_dir: str) -> str:
    """ACP wants absolute paths; our tools and diffs name files relative to the work dir."""
    return path if not work_dir or path.startswith("/") else f"{work_dir}/{path}"


def _locations(arguments: str, work_dir: str) -> list[ToolCallLocation] | None:
    path = raw_input(arguments).get("path")
    if not isinstance(path, str) or not path:
        return None
    return [ToolCallLocation(path=absolute(path, work_dir))]


def display_content(
    blocks: Sequence[ev.DisplayBlock], work_dir: str
) -> list[ToolCallContentVariant]:
    """A result's diffs as ACP diff content (what the client shows as an edit)."""
    return [
        tool_diff_content(
            absolute(block.path, work_dir),
            scrub_text(block.new_text),
            scrub_text(block.old_text) or None,
        )
        for block in blocks
        if isinstance(block, ev.DiffBlock)
    ]


def plan_document(shown: ev.PlanDisplay) -> list[ToolCallContentVariant]:
    """The plan ExitPlanMode asks to approve, as its permission request's content: Markdown."""
    return [tool_content(text_block(scrub_text(shown.content)))]


def plan(items: Sequence[ev.TodoItem]) -> SessionUpdate:
    """A todo list as the client's plan (an empty one clears it)."""
    return update_plan(
        plan_entry(visible(item.title), status=_PLAN_STATUS.get(item.status.lower(), "pending"))
        for item in items
    )


def session_info(title: str, updated_at: str | None = None) -> SessionUpdate:
    """The session's title (and when it last changed), for the client's list of sessions."""
    return SessionInfoUpdate(
        session_update="session_info_update",
        title=visible(title, multiline=False),
        updated_at=updated_at,
    )


class CallIds:
    """The ids a session's tool calls have on the protocol: unique in the session. A call keeps
    the model's id the first time it is seen; a replay of it, or another call with the same
    id (a model may give one again after a revert), gets `id#2`, `id#3`..."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def fresh(self, call_id: str) -> str:
        minted, n = call_id, 1
        while minted in self._used:
            n += 1
            minted = f"{call_id}#{n}"
        self._used.add(minted)
        return minted


class Messages:
    """Chunks of text with a message id each: the same id while one message goes on, a new one
    when another update came between or the agent speaks up itself (`notice`)."""

    def __init__(self) -> None:
        self._kind: Literal["user", "agent", "thought"] | None = None
        self._id = ""

    def chunk(self, kind: Literal["user", "agent", "thought"], text: str) -> SessionUpdate:
        if kind != self._kind:
            self._kind, self._id = kind, uuid.uuid4().hex
        block = text_block(scrub_text(text))  # a stored file's text may hold any code point
        if kind == "user":
            return UserMessageChunk(
                session_update="user_message_chunk", content=block, message_id=self._id
            )
        if kind == "thought":
            return AgentThoughtChunk(
                session_update="agent_thought_chunk", content=block, message_id=self._id
            )
        return AgentMessageChunk(
            session_update="agent_message_chunk", content=block, message_id=self._id
        )

    def notice(self, text: str) -> SessionUpdate:
        """A line of the agent's own (a command's reply, a retry, a warning), as a message of
        its own whatever came before and comes after."""
        self._kind = None
        return AgentMessageChunk(
            session_update="agent_message_chunk",
            content=text_block(f"\n\n{visible(text).strip()}\n\n"),
            message_id=uuid.uuid4().hex,
        )

    def other(self) -> None:
        """Another kind of update went out (a tool call, a plan): the next text is a new
        message."""
        self._kind = None


@dataclass(slots=True)
class _Call:
    """A tool call on its way: its id on the protocol, what came of it, where it stands."""

    acp_id: str
    call: StreamedCall
    status: ToolCallStatus = "pending"


class Calls:
    """The tool calls a client was shown and not yet given a final status."""

    def __init__(self, work_dir: str, ids: CallIds, messages: Messages) -> None:
        self.work_dir = work_dir
        self._ids = ids
        self._messages = messages
        self._open: dict[str, _Call] = {}
        self._sub_calls: dict[str, tuple[str, StreamedCall]] = {}
        """A running subagent's calls: the id of the `Agent` call that runs it, and the call."""
        self._progress: dict[str, list[str]] = {}
        """Per `Agent` call, a line for each call its subagent finished."""

    def get(self, call_id: str) -> _Call | None:
        """The call shown for `call_id`; for a subagent's call, the `Agent` call running it."""
        shown = self._open.get(call_id)
        if shown is None and call_id in self._sub_calls:
            shown = self._open.get(self._sub_calls[call_id][0])
        return shown

    def subagent(self, event: ev.SubagentEvent) -> list[SessionUpdate]:
        """A subagent's event as progress of the `Agent` call that runs it: its content lists
        the calls the subagent made, one line each with how it ended."""
        shown = self._open.get(event.parent_tool_call_id)
        inner = event.event
        if shown is None:
            return []
        match inner:
            case ev.ToolCall():
                call = StreamedCall(inner.function.name, inner.function.arguments or "")
                self._sub_calls[inner.id] = (event.parent_tool_call_id, call)
            case ev.ToolCallPart() if inner.id in self._sub_calls:
                self._sub_calls[inner.id][1].extend(inner.arguments_delta)
            case ev.ToolResult() if inner.tool_call_id in self._sub_calls:
                _, call = self._sub_calls.pop(inner.tool_call_id)
                reading = read_result(inner)
                lines = self._progress.setdefault(event.parent_tool_call_id, [])
                lines.append(f"{reading.label} {call.reading.title}: {reading.summary}")
                text = scrub_text(visible("\n".join(lines)))
                return [update_tool_call(shown.acp_id, content=[tool_content(text_block(text))])]
        return []

    def start(self, call_id: str, name: str, arguments: str) -> SessionUpdate:
        """The `tool_call` for a call the model begins (or a replay shows)."""
        self._messages.other()
        shown = self._open[call_id] = _Call(self._ids.fresh(call_id), StreamedCall(name, arguments))
        return start_tool_call(
            shown.acp_id,
            shown.call.reading.title,
            kind=tool_kind(name),
            status="pending",
            locations=_locations(arguments, self.work_dir),
            raw_input=raw_input(arguments),
        )

    def extend(self, call_id: str, delta: str) -> list[SessionUpdate]:
        """A piece of a call's arguments: its title and input once they are whole."""
        shown = self._open.get(call_id)
        if shown is None or not shown.call.extend(delta):
            return []
        return [self._whole(shown)]

    def running(self, call_id: str) -> list[SessionUpdate]:
        """The call started running: `in_progress`, with its whole input."""
        shown = self._open.get(call_id)
        if shown is None or shown.status != "pending":
            return []
        shown.status = "in_progress"
        return [self._whole(shown, status="in_progress")]

    def _whole(self, shown: _Call, status: ToolCallStatus | None = None) -> SessionUpdate:
        call = shown.call
        self._messages.other()
        return update_tool_call(
            shown.acp_id,
            title=call.reading.title,
            status=status,
            locations=_locations(call.arguments, self.work_dir),
            raw_input=raw_input(call.arguments),
        )

    def result(self, result: ev.ToolResult, *, with_plan: bool = True) -> list[SessionUpdate]:
        """The call's final `tool_call_update`, and (`with_plan`) the plan when it shows a
        todo list."""
        shown = self._open.pop(result.tool_call_id, None)
        self._progress.pop(result.tool_call_id, None)
        if shown is None:
            return []
        self._messages.other()
        content = display_content(result.display, self.work_dir)
        text = result.output or result.message
        if text:
            content.append(tool_content(text_block(scrub_text(text))))
        status: ToolCallStatus = "failed" if result.is_error else "completed"
        updates: list[SessionUpdate] = [
            update_tool_call(
                shown.acp_id, status=status, content=content, raw_output=raw_output(result)
            )
        ]
        items = todo_items(result.display, "", failed=True) if with_plan else None
        if items is not None:
            updates.append(plan(items))
        return updates

    def end(self, why: str) -> list[SessionUpdate]:
        """Every call still open ends `failed`, saying `why`."""
        ended, self._open = list(self._open.values()), {}
        if ended:
            self._messages.other()
        return [
            update_tool_call(
                shown.acp_id,
                status="failed",
                content=[tool_content(text_block(why))],
                raw_output={"is_error": True, "output": "", "message": why},
            )
            for shown in ended
        ]


class TurnUpdates:
    """The updates of one session's turns, event by event."""

    def __init__(self, work_dir: str, ids: CallIds, messages: Messages) -> None:
        self.messages = messages
        self.calls = Calls(work_dir, ids, messages)

    def updates(self, event: ev.Event) -> list[SessionUpdate]:
        calls = self.calls
        match event:
            case ev.ContentPart(part=TextPart(text=text)) if text:
                return [self.messages.chunk("agent", text)]
            case ev.ContentPart(part=ThinkPart(think=think)) if think:
                return [self.messages.chunk("thought", think)]
            case ev.ToolCall():
                name, arguments = event.function.name, event.function.arguments or ""
                return [calls.start(event.id, name, arguments)]
            case ev.ToolCallPart():
                return calls.extend(event.id, event.arguments_delta)
            case ev.ToolStarted():
                return calls.running(event.tool_call_id)
            case ev.ToolResult():
                return calls.result(event)
            case ev.SubagentEvent():
                return calls.subagent(event)
            case ev.StepRetry():
                # What the failed attempt said is void: its calls never run.
                return [*calls.end(VOID), self.messages.notice(retry_text(event))]
            case ev.StepInterrupted():
                return calls.end(INTERRUPTED)
            case ev.ContextCleared():
                return [plan([])]  # the todo list went with the conversation
            case ev.ContextReverted(reason="dmail"):
                note = f"D-Mail: the context went back to checkpoint {event.checkpoint_id}."
                return [self.messages.notice(note)]
            case ev.HookRan(outcome="warning" | "blocked"):
                return [self.messages.notice(hook_note(event))]
            case ev.Warning() | ev.Error():
                return [self.messages.notice(event.message)]
            case _:
                return []


def history_updates(
    history: Sequence[Message],
    past: PastResults | None,
    work_dir: str,
    ids: CallIds,
    messages: Messages,
) -> Iterator[SessionUpdate]:
    """A stored conversation as the updates a client would have seen while it happened, every
    call with a fresh id, then the plan of its newest todo list."""
    calls = Calls(work_dir, ids, messages)
    todos: list[ev.TodoItem] = []
    arguments: dict[str, str] = {}
    names: dict[str, str] = {}
    for message in history:
        if message.role == "user":
            yield from _user_updates(message, calls, messages)
        elif message.role == "assistant":
            for part in message.parts:
                if isinstance(part, ThinkPart) and part.think:
                    yield messages.chunk("thought", part.think)
                elif isinstance(part, TextPart) and part.text:
                    yield messages.chunk("agent", part.text)
            for call in message.tool_calls or ():
                arguments[call.id] = call.function.arguments or ""
                names[call.id] = call.function.name
                yield calls.start(call.id, call.function.name, arguments[call.id])
        elif message.role == "tool" and message.tool_call_id:
            call_id = message.tool_call_id
            stored = arguments.get(call_id, "")
            recorded = past.find(call_id, stored) if past is not None else None
            result = recorded or stored_result(message)
            yield from calls.result(result, with_plan=False)  # the newest list goes at the end
            found = todo_items(result.display, stored, failed=result.is_error)
            if names.get(call_id) in TODO_LISTS and found is not None:
                todos = found
    yield from calls.end(INTERRUPTED)
    yield plan(todos)
    messages.other()


def _user_updates(message: Message, calls: Calls, messages: Messages) -> Iterator[SessionUpdate]:
    """A user message as what it is: the user's words, a `!` command and its output, or a
    note of the system's (a compaction's summary, a D-Mail) as a thought."""
    shell = read_record(message)
    if shell is not None:
        yield messages.chunk("user", f"!{shell.command}")
        call_id = f"shell-{uuid.uuid4().hex[:12]}"
        yield calls.start(call_id, SHELL, shell.arguments)
        result = shell.result()
        yield from calls.result(result.model_copy(update={"tool_call_id": call_id}))
        return
    # What the user typed, without the notes for the model (checkpoint ids, reminders).
    said = "".join(
        part.text
        for part in message.parts
        if isinstance(part, TextPart) and not part.text.startswith("<system-reminder>")
    )
    if not said or is_checkpoint_note(said):
        return
    note = read_system_note(said)
    if note is None:
        yield messages.chunk("user", said)
        return
    yield messages.chunk("thought", f"{note.title}\n\n{note.text}")
    messages.other()
