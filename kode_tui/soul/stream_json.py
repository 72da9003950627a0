"""The wire events of a turn as JSON objects, for `--output-format stream-json` (and `json`).

`StreamJson.feed()` takes the events in the order the bus delivers them and gives back the
objects to write, each with a snake_case `type`:

- `text` `{text}` and `thinking` `{thinking}`: one object per contiguous part of the answer, its
  deltas merged; `content_part` `{part}` for any other part (an image);
- `tool_call` `{id, name, arguments, input, title}`: the call with its streamed argument pieces
  merged; `arguments` is the JSON string the model wrote, `input` the object it parses to (null
  when it does not parse), `title` how it reads (`Shell: make test`, `kode_tui.wire.readings`);
- every other event is its class name in snake_case with the event's own fields:
  `turn_begin` `{user_input}`, `turn_end`, `step_begin` `{n}`, `step_retry`
  `{n, attempt, max_attempts, wait_s, error, error_type, status_code, text}` (`text`: the
  retry as the other front ends say it), `step_interrupted`, `tool_started` `{tool_call_id}`,
  `tool_result` `{tool_call_id, is_error, output, message, display, parts, status, summary}`
  (`status`: `ok`, `error` or `rejected`; `summary`: the result on one line), `approval_request`
  `{id, tool_call_id, action, description, tool_name, display, ...}`, `approval_resolved`
  `{id, response}`, `permissions_changed`, `checkpoint_created` `{id}`, `status_update`
  `{context_tokens, max_context_tokens, usage, cost, ...}`, `compaction_begin`,
  `compaction_end` `{tokens_before, tokens_after, rotated_file}`, `context_reverted` (a D-Mail),
  `system_reminders`, `hook_ran`, `command_sent`, `plan_display` `{content, file_path}` (the
  plan `ExitPlanMode` asks to approve), `warning` `{message}`, `error` `{message}`.

A subagent's events (`SubagentEvent`) come out as the same objects, merged the same way by a
`StreamJson` of their own, each marked with `parent_tool_call_id` (the id of the `Agent` call
that runs it, as Claude Code marks its subagents' messages), `agent_id` and `subagent_type`;
their text is not the turn's result, but their model calls count in the turn's `usage`, as
their cost does in `cost_usd`.

What a model call says comes out once the call has ended (at the next event of another kind):
when the call fails and is tried again, what the failed attempt said is dropped, and only the
`step_retry` object says it happened. So the objects hold exactly what the final attempts said,
as the context does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from kode_tui.wire import events as ev
from kode_tui.wire.readings import read_call, read_result, retry_text

__all__ = ["StreamJson", "TurnTally"]


@dataclass(slots=True)
class TurnTally:
    """What a result line sums up of the events since `StreamJson.begin_turn()`."""

    calls: int = 0
    """Model calls that reported their usage."""
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_creation: int = 0
    step_texts: list[str] = field(default_factory=list)
    """The text parts of the latest step: the turn's final answer once it is over."""
    rotated: bool = False
    """The context was compacted, reverted or cleared during the turn."""

    def usage(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_creation": self.cache_creation,
        }

    @property
    def final_text(self) -> str:
        return "".join(self.step_texts)


class StreamJson:
    """Turns wire events into the JSON objects of `stream-json`, keeping a tally per turn."""

    def __init__(self) -> None:
        self._attempt: list[dict[str, Any]] = []
        """What the running model call said so far: merged parts and tool calls, in order."""
        self._calls: dict[str, dict[str, Any]] = {}
        self._last_call: dict[str, Any] | None = None
        self._subagents: dict[str, StreamJson] = {}
        """A stream per running subagent, by the id of its `Agent` call."""
        self.tally = TurnTally()

    def begin_turn(self) -> None:
        """Start a new tally (for the next result line)."""
        self.tally = TurnTally()

    def feed(self, event: ev.Event) -> list[dict[str, Any]]:
        """The objects to write now that `event` arrived (often none: a delta waits for the end
        of its part)."""
        match event:
            case ev.ContentPart():
                self._part(event)
                return []
            case ev.ToolCall():
                call: dict[str, Any] = {
                    "type": "tool_call",
                    "id": event.id,
                    "name": event.function.name,
                    "arguments": event.function.arguments or "",
                }
                self._attempt.append(call)
                self._calls[event.id] = self._last_call = call
                return []
            case ev.ToolCallPart():
                # An empty id (Kimi's pieces) extends the call before it.
                extended = self._calls.get(event.id) if event.id else self._last_call
                if extended is not None:
                    extended["arguments"] += event.arguments_delta
                return []
            case ev.StepRetry():
                self._attempt, self._calls, self._last_call = [], {}, None
                return [{**_object(event), "text": retry_text(event)}]
            case ev.SubagentEvent():
                stream = self._subagents.setdefault(event.parent_tool_call_id, StreamJson())
                if isinstance(event.event, ev.StatusUpdate):
                    self._count_usage(event.event)  # its spending is the turn's (as `/cost`)
                return _marked(event, stream.feed(event.event))
        out = self.end()
        self._count(event)
        if isinstance(event, ev.ToolResult):
            # What the subagent said last comes before the result of the call that ran it.
            sub = self._subagents.pop(event.tool_call_id, None)
            if sub is not None:
                out += [{**o, "parent_tool_call_id": event.tool_call_id} for o in sub.end()]
            reading = read_result(event)
            return [*out, {**_object(event), "status": reading.status, "summary": reading.summary}]
        return [*out, _object(event)]

    def end(self) -> list[dict[str, Any]]:
        """What the running model call said, merged: written at the next event of another kind,
        or when the stream ends."""
        said, self._attempt = self._attempt, []
        self._calls, self._last_call = {}, None
        for item in said:
            if item["type"] == "tool_call":
                item["input"] = _parsed(item["arguments"])
                item["title"] = read_call(item["name"], item["arguments"]).title
            elif item["type"] == "text":
                self.tally.step_texts.append(item["text"])
        return said

    def _part(self, event: ev.ContentPart) -> None:
        part = event.part
        kind = getattr(part, "type", None)
        key = {"text": "text", "think": "thinking"}.get(kind or "")
        if key is None:
            self._attempt.append({"type": "content_part", "part": event.payload()})
            return
        delta = str(getattr(part, "text" if kind == "text" else "think", ""))
        last = self._attempt[-1] if self._attempt else None
        if last is not None and last["type"] == key:
            last[key] += delta
        else:
            self._attempt.append({"type": key, key: delta})

    def _count(self, event: ev.Event) -> None:
        tally = self.tally
        match event:
            case ev.StepBegin():
                tally.step_texts = []
            case ev.StatusUpdate():
                self._count_usage(event)
            case ev.CompactionEnd(rotated_file=str()) | ev.ContextReverted() | ev.ContextCleared():
                tally.rotated = True
            case _:
                pass

    def _count_usage(self, event: ev.StatusUpdate) -> None:
        usage, tally = event.usage, self.tally
        if usage is not None:
            tally.calls += 1
            tally.input += usage.input
            tally.output += usage.output
            tally.cache_read += usage.cache_read
            tally.cache_creation += usage.cache_creation


_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _object(event: ev.Event) -> dict[str, Any]:
    name = _CAMEL.sub("_", type(event).__name__).lower()
    return {"type": name, **event.model_dump(mode="json")}


def _marked(event: ev.SubagentEvent, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    mark = {
        "parent_tool_call_id": event.parent_tool_call_id,
        "agent_id": event.agent_id,
        "subagent_type": event.subagent_type,
    }
    return [{**o, **mark} for o in objects]


def _parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments else {}
    except (ValueError, RecursionError):  # not JSON, or nested too deep
        return None
