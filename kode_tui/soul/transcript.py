"""What a session's files say about past tool calls, for a front end showing a stored conversation.

The context keeps a tool's output as the model saw it (images, audio and video parts too: they go
to `ToolResult.parts`); the wire keeps what the user saw too (the short report, the diffs, and
the steps of a Kimi CLI subagent the call ran, from its `SubagentEvent` records, as a
`SubagentBlock`; a subagent whose steps the parent's wire lacks, a background one, is read from
Kimi's `subagents/<agent_id>/wire.jsonl`, its n-th turn for the n-th `Agent` call naming it).
All of it is read once, with the rest of the wire, as are the runs of the user's hooks (a tool
call's, and those before and within each turn). A front end never opens session files: it
asks for `PastResults` and rebuilds results from the context's messages with `stored_result`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from kode_tui.humanize import one_line
from kode_tui.message import ContentPart, Message, TextPart, ThinkPart, split_tool_result
from kode_tui.wire import events as ev
from kode_tui.wire import records
from kode_tui.wire.readings import read_call, read_result
from kode_tui.wire.recorder import read_wire


class PastResults:
    """The tool results recorded in a wire.jsonl.

    Kimi CLI numbers tool calls per step (`call_1_0` recurs), so a result is looked up by its
    call's id and arguments (a call whose arguments the wire lacks matches any).
    """

    def __init__(self) -> None:
        self._by_id: dict[str, list[tuple[str, ev.ToolResult]]] = {}
        self._call_hooks: dict[str, list[ev.HookRan]] = {}
        self._hooks_before: dict[str, list[ev.HookRan]] = {}
        self._hooks_within: dict[str, list[ev.HookRan]] = {}
        self.last_hooks: list[ev.HookRan] = []
        """Hook runs after the last turn (a SessionStart, a `/compact`'s)."""

    @classmethod
    def read(cls, path: Path) -> PastResults:
        """The results of the wire file at `path` (none for a missing file); blocking, so a
        front end runs it in a thread."""
        results = cls()
        arguments: dict[str, str] = {}
        subagents: dict[str, _Subagent] = {}
        names: dict[str, str] = {}
        agent_results: list[ev.ToolResult] = []
        last_call = ""
        turn: str | None = None
        for record in read_wire(path):
            event = record.event
            if record.type == "SubagentEvent":
                _add_subagent_event(subagents, record)
            if isinstance(event, ev.HookRan | ev.TurnBegin | ev.TurnEnd):
                turn = results._add_hook_event(event, turn)
            elif isinstance(event, ev.ToolCall):
                results._call_hooks[event.id] = []  # ids recur: the newest call's runs
                last_call = event.id
                arguments[event.id] = event.function.arguments or ""
                names[event.id] = event.function.name
            elif isinstance(event, ev.ToolCallPart):
                call_id = event.id or last_call  # Kimi's pieces extend the call before them
                arguments[call_id] = arguments.get(call_id, "") + event.arguments_delta
            elif isinstance(event, ev.ToolResult):
                entry = (arguments.get(event.tool_call_id, ""), event)
                results._by_id.setdefault(event.tool_call_id, []).append(entry)
                if names.get(event.tool_call_id) == _AGENT_TOOL:
                    agent_results.append(event)
        _add_subagent_folders(path.parent / _SUBAGENTS_DIR, agent_results, subagents)
        for call_id, subagent in subagents.items():
            entries = results._by_id.get(call_id)
            if entries:  # the steps go with the result of the call that ran the subagent
                recorded, result = entries[-1]
                display = [*result.display, subagent.block()]
                entries[-1] = (recorded, result.model_copy(update={"display": display}))
        return results

    def _add_hook_event(self, event: ev.Event, turn: str | None) -> str | None:
        """Note a hook run where it belongs; the text of the turn running after `event`. A turn
        whose text recurs (`go on`) shows the newest's runs."""
        if isinstance(event, ev.TurnBegin):
            text = turn_text(event.user_input)
            self._hooks_before[text], self.last_hooks = self.last_hooks, []
            self._hooks_within[text] = []
            return text
        if isinstance(event, ev.HookRan):
            if event.tool_call_id:
                self._call_hooks.setdefault(event.tool_call_id, []).append(event)
            elif turn is None:
                self.last_hooks.append(event)
            else:
                self._hooks_within[turn].append(event)
            return turn
        return None  # TurnEnd

    def hooks_of_call(self, call_id: str) -> list[ev.HookRan]:
        """The runs of the PreToolUse and PostToolUse hooks of the call `call_id`."""
        return self._call_hooks.get(call_id, [])

    def hooks_before(self, text: str) -> list[ev.HookRan]:
        """The hook runs before the turn of the user's message `text` (its UserPromptSubmit
        hooks, a SessionStart, a blocked prompt's)."""
        return self._hooks_before.get(text, [])

    def hooks_within(self, text: str) -> list[ev.HookRan]:
        """The hook runs of the turn of `text` that belong to no call (Stop, compaction)."""
        return self._hooks_within.get(text, [])

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


def turn_text(user_input: str | list[ContentPart]) -> str:
    """The text of a turn's message, as its TurnBegin and its context message both give it."""
    if isinstance(user_input, str):
        return user_input
    return "".join(p.text for p in user_input if isinstance(p, TextPart))


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


_STEP_TEXT_CHARS = 100


class _Subagent:
    """The steps of one subagent, from its `SubagentEvent` records in the parent's wire."""

    def __init__(self, agent_id: str, subagent_type: str) -> None:
        self.agent_id = agent_id
        self.subagent_type = subagent_type
        self.steps: list[str] = []
        self._text = ""
        self._names: dict[str, str] = {}

    def add(self, event: ev.Event) -> None:
        if isinstance(event, ev.ContentPart) and isinstance(event.part, TextPart):
            self._text += event.part.text  # deltas of one answer, merged into one line
            return
        self._end_text()
        if isinstance(event, ev.StepBegin):
            self.steps.append(f"step {event.n}")
        elif isinstance(event, ev.ToolCall):
            reading = read_call(event.function.name, event.function.arguments or "")
            self._names[event.id] = reading.name
            self.steps.append(f"  → {reading.title}")
        elif isinstance(event, ev.ToolResult):
            mark = read_result(event).label
            name = self._names.get(event.tool_call_id, "")
            self.steps.append(f"  {mark} {name} {one_line(event.message, 80)}".rstrip())

    def block(self) -> ev.SubagentBlock:
        self._end_text()
        return ev.SubagentBlock(
            agent_id=self.agent_id, subagent_type=self.subagent_type, steps=self.steps
        )

    def _end_text(self) -> None:
        if self._text.strip():
            self.steps.append("  " + one_line(self._text.strip(), _STEP_TEXT_CHARS))
        self._text = ""


_AGENT_TOOL = "Agent"
_SUBAGENTS_DIR = "subagents"
_AGENT_ID_LINE = re.compile(r"^agent_id: ([A-Za-z0-9_-]+)$", re.MULTILINE)
"""How Kimi's Agent tool names the subagent it ran or started, in its result."""


def _add_subagent_folders(
    folder: Path, agent_results: list[ev.ToolResult], subagents: dict[str, _Subagent]
) -> None:
    """The steps of the Agent calls whose subagent the parent's wire has no events of, from the
    subagent's own wire: its n-th turn for the n-th call naming it."""
    if not agent_results or not folder.is_dir():
        return
    turns: dict[str, list[list[ev.Event]]] = {}
    used: dict[str, int] = {}
    for result in agent_results:
        found = _AGENT_ID_LINE.search(result.output)
        if found is None:
            continue
        agent_id = found.group(1)
        if agent_id not in turns:
            turns[agent_id] = _subagent_turns(folder / agent_id / "wire.jsonl")
        turn = used.get(agent_id, 0)
        used[agent_id] = turn + 1
        if result.tool_call_id in subagents or turn >= len(turns[agent_id]):
            continue  # its steps came as SubagentEvent records (they are that turn too)
        subagent = _Subagent(agent_id, _subagent_type(folder / agent_id / "meta.json"))
        for event in turns[agent_id][turn]:
            subagent.add(event)
        subagents[result.tool_call_id] = subagent


def _subagent_turns(wire: Path) -> list[list[ev.Event]]:
    turns: list[list[ev.Event]] = []
    for record in read_wire(wire):
        if isinstance(record.event, ev.TurnBegin) or not turns:
            turns.append([])
        if record.event is not None:
            turns[-1].append(record.event)
    return turns


def _subagent_type(meta: Path) -> str:
    try:
        kind = json.loads(meta.read_bytes()).get("subagent_type")
    except (OSError, ValueError, AttributeError, RecursionError):
        return ""
    return kind if isinstance(kind, str) else ""


def _add_subagent_event(subagents: dict[str, _Subagent], record: records.WireRecord) -> None:
    payload: Any = record.raw["message"].get("payload")
    if not isinstance(payload, dict):
        return
    parent = payload.get("parent_tool_call_id") or payload.get("task_tool_call_id")
    nested = payload.get("event")
    if not isinstance(parent, str) or not isinstance(nested, dict):
        return
    try:
        event = records.from_record({"timestamp": record.timestamp, "message": nested}).event
    except ValueError:
        return
    subagent = subagents.get(parent)
    if subagent is None:
        agent_id = payload.get("agent_id")
        kind = payload.get("subagent_type")
        subagent = subagents[parent] = _Subagent(
            agent_id if isinstance(agent_id, str) else "", kind if isinstance(kind, str) else ""
        )
    if event is not None:
        subagent.add(event)
