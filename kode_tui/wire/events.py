"""The events the soul sends on the wire, and their wire.jsonl records (DESIGN.md §2, §3).

A record is `{"timestamp": <float>, "message": {"type": "<EventClass>", "payload": {...}}}`, as in
Kimi CLI's wire.jsonl. The payload is the event's fields, except for `ContentPart`, whose payload is
the part itself (`{"type": "text", "text": "..."}`); a `ToolCall`'s fields are those of a tool call,
so both look exactly like Kimi's. A `ToolResult` is written in Kimi's nested form
(`{"tool_call_id": ..., "return_value": {...}}`) and an `ApprovalRequest` with Kimi's `sender`, so
Kimi CLI's wire reader takes them; it has no types for some of ours (CheckpointCreated,
SystemReminders, ...), and its shell then replays a resumed session from context.jsonl instead.

Reading is lenient in one direction only: unknown payload keys are ignored (the raw record keeps
them), but an event whose required fields are missing is not guessed at. Such records, and records
of event types this version does not know, come back with `event=None`. Of Kimi CLI's files this
reads TurnBegin, TurnEnd, StepBegin, ContentPart, ToolCall, CompactionBegin and ToolResult (whose
nested `return_value` is flattened); Kimi's StatusUpdate and CompactionEnd carry other fields and
come back as raw records only.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from kode_tui.config import ApprovalMode
from kode_tui.message import ContentPart as Part
from kode_tui.message import FunctionBody, type_tag

logger = logging.getLogger(__name__)


class Event(BaseModel):
    """Base of every wire event; the event's name on disk is its class name."""

    # Subscribers share one instance of each event, so none of them may change it for the others.
    model_config = ConfigDict(frozen=True, defer_build=True)

    recorded: ClassVar[bool] = True
    """Whether wire.jsonl keeps it; False for what state.json holds already."""

    def payload(self) -> dict[str, Any]:
        """The JSON object stored as this event's record payload."""
        return self.model_dump(mode="json")

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Self:
        """The event a record payload describes; pydantic.ValidationError when it does not fit."""
        return cls.model_validate(payload)


# --- display blocks ------------------------------------------------------------------------------


class _Block(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)


class DiffBlock(_Block):
    type: Literal["diff"] = "diff"
    path: str
    old_text: str
    new_text: str


class ShellBlock(_Block):
    type: Literal["shell"] = "shell"
    language: str = "bash"
    """Kimi CLI's field; it needs it to read the block."""
    command: str


class TodoItem(_Block):
    title: str
    status: str
    """As the TodoWrite tool reports it, e.g. `pending`, `in_progress`, `done`."""


class TodoBlock(_Block):
    type: Literal["todo"] = "todo"
    items: list[TodoItem]


class BriefBlock(_Block):
    type: Literal["brief"] = "brief"
    text: str


class UnknownBlock(_Block):
    """A display block of a kind this version does not know: kept, shown as nothing."""

    model_config = ConfigDict(extra="allow")
    type: str


DisplayBlock = Annotated[
    Annotated[DiffBlock, Tag("diff")]
    | Annotated[ShellBlock, Tag("shell")]
    | Annotated[TodoBlock, Tag("todo")]
    | Annotated[BriefBlock, Tag("brief")]
    | Annotated[UnknownBlock, Tag("unknown")],
    Discriminator(type_tag(("diff", "shell", "todo", "brief"))),
]


# --- turns and steps -----------------------------------------------------------------------------


class TurnBegin(Event):
    user_input: str | list[Part]


class TurnEnd(Event):
    pass


class StepBegin(Event):
    n: int


class StepInterrupted(Event):
    reason: str = ""


class StepRetry(Event):
    """The LLM call of step `n` failed and is tried again after `wait_s` seconds."""

    n: int
    attempt: int
    max_attempts: int
    wait_s: float
    error: str


# --- streamed content and tools ------------------------------------------------------------------

_part_adapter: TypeAdapter[Part] = TypeAdapter(Part)


class ContentPart(Event):
    """A streamed piece of assistant content: a text or think delta, or a whole image part."""

    part: Part

    def payload(self) -> dict[str, Any]:
        return self.part.model_dump(mode="json", exclude_unset=True)

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Self:
        return cls(part=_part_adapter.validate_python(payload))


class ToolCall(Event):
    """A complete tool call, with the fields of `kode_tui.message.ToolCall`."""

    type: Literal["function"] = "function"
    id: str
    function: FunctionBody
    extras: dict[str, Any] | None = None


class ToolCallPart(Event):
    """A streamed piece of a tool call's JSON arguments."""

    id: str
    arguments_delta: str


class ToolResult(Event):
    tool_call_id: str
    is_error: bool = False
    output: str = ""
    """What the model reads."""
    message: str = ""
    """The status line the model reads in `<system>` tags, e.g. `Command executed successfully.`"""
    display: list[DisplayBlock] = Field(default_factory=list)

    def payload(self) -> dict[str, Any]:
        # Kimi CLI's form, so that its replay of a session we wrote shows the results too.
        value = self.model_dump(mode="json", exclude={"tool_call_id"})
        return {"tool_call_id": self.tool_call_id, "return_value": {**value, "extras": None}}

    @model_validator(mode="before")
    @classmethod
    def _flatten_kimi_return_value(cls, data: Any) -> Any:
        # Kimi CLI nests the result: {"tool_call_id": ..., "return_value": {"is_error": ...}}.
        if isinstance(data, dict) and isinstance(data.get("return_value"), dict):
            return {"tool_call_id": data.get("tool_call_id"), **data["return_value"]}
        return data


# --- approvals -----------------------------------------------------------------------------------


class RejectWithFeedback(BaseModel):
    """A rejection whose feedback goes to the model; the turn goes on."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    feedback: str


ApprovalResponse = Literal["approve", "approve_for_session", "reject"] | RejectWithFeedback
"""How the user answered an approval request: approve once, approve for the rest of the session,
reject (the turn ends), or `RejectWithFeedback(feedback=...)`. Stored as the string, or as
`{"feedback": "..."}`."""


class ApprovalRequest(Event):
    """A tool call waiting for the user; the soul awaits `wait()`, the UI calls `resolve()`.

    The future behind them lives on the running event loop and is never serialised.
    """

    id: str
    tool_call_id: str
    action: str
    """What approving allows, e.g. `edit file` or `run command`."""
    description: str
    display: list[DisplayBlock] = Field(default_factory=list)
    tool_name: str = ""
    scope_label: str = ""
    """What `approve_for_session` would cover, e.g. `all edits in the work dir`; empty when it is
    not offered (a call outside the work dir asks every time)."""
    outside_work_dir: bool = False
    always_ask: str = ""
    """Why this call asks every time, whatever the mode (e.g. `writes here can make tools run
    code`); empty for an ordinary call."""

    _future: asyncio.Future[ApprovalResponse] | None = PrivateAttr(default=None)

    def payload(self) -> dict[str, Any]:
        # Kimi CLI requires `sender` (the tool asking) to read the record.
        return {**super().payload(), "sender": self.tool_name or "kode-tui"}

    def resolve(self, response: ApprovalResponse) -> None:
        """Answer the request; later answers, and any after the wait was cancelled, are ignored."""
        future = self._ensure_future()
        if not future.done():
            future.set_result(response)

    async def wait(self) -> ApprovalResponse:
        """The user's answer, once `resolve()` has been called."""
        return await self._ensure_future()

    def _ensure_future(self) -> asyncio.Future[ApprovalResponse]:
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        return self._future


class ApprovalResolved(Event):
    id: str
    response: ApprovalResponse


class PermissionsChanged(Event):
    """The approval mode or the session's approvals changed, or the agent came up with them.

    Not recorded: state.json keeps both, and an opened session must stay empty until it is used.
    """

    recorded: ClassVar[bool] = False

    mode: ApprovalMode
    session_approvals: int
    """How many scopes are approved for the rest of the session."""


# --- context -------------------------------------------------------------------------------------


class CheckpointCreated(Event):
    id: int


class TokenUsage(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)
    input: int
    output: int
    cache_read: int = 0
    cache_creation: int = 0


class CostStatus(BaseModel):
    """What the session's model calls cost so far (litellm's prices times the usage)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    session_usd: float
    """Of the calls whose price is known."""
    turn_usd: float | None = None
    """The latest turn with calls; None before any."""
    exact: bool = True
    """False when some call is left out: its price is unknown, or it predates the count."""
    priced: bool = True
    """False when no call so far had a known price (a local model, say)."""


class StatusUpdate(Event):
    context_tokens: int
    max_context_tokens: int
    reserved_tokens: int
    trigger_tokens: int
    """Compaction starts when the context reaches this size."""
    pending_tokens: int = 0
    """Estimated tokens of messages added since the last reported count (in context_tokens)."""
    usage: TokenUsage | None = None
    """What the last LLM call reported, if it did."""
    cost: CostStatus | None = None
    """None while the session has no counted calls (and for the demo)."""


class CompactionBegin(Event):
    strategy: str = ""


class CompactionEnd(Event):
    tokens_before: int
    tokens_after: int
    rotated_file: str | None = None
    """None when the strategy changed nothing."""


class ContextReverted(Event):
    checkpoint_id: int
    rotated_file: str
    reason: Literal["user", "dmail"] = "user"
    files_restored: list[str] = Field(default_factory=list)
    conflicts: list[str] = Field(default_factory=list)
    """Files left alone because they changed since the tool wrote them."""


class ContextRestored(Event):
    from_file: str
    rotated_file: str
    files_restored: list[str] = Field(default_factory=list)
    conflicts: list[str] = Field(default_factory=list)
    """Files left alone because they changed since the live conversation's edit."""


class ContextCleared(Event):
    rotated_file: str


class ContextReloaded(Event):
    """A read-only view read its session's files again: the writer (another kode-tui) added
    turns, checkpoints or rotations. Views show the context afresh."""


class ReminderItem(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)
    kind: str
    """`todo`, `context` or `mention`."""
    text: str


class SystemReminders(Event):
    """Reminders that went with the next LLM request (they are not part of the context)."""

    reminders: list[ReminderItem]


class Warning(Event):
    message: str


class Error(Event):
    message: str


EVENT_TYPES: Mapping[str, type[Event]] = {
    cls.__name__: cls
    for cls in (
        TurnBegin,
        TurnEnd,
        StepBegin,
        StepInterrupted,
        StepRetry,
        ContentPart,
        ToolCall,
        ToolCallPart,
        ToolResult,
        ApprovalRequest,
        ApprovalResolved,
        PermissionsChanged,
        CheckpointCreated,
        StatusUpdate,
        CompactionBegin,
        CompactionEnd,
        ContextReverted,
        ContextRestored,
        ContextCleared,
        ContextReloaded,
        SystemReminders,
        Warning,
        Error,
    )
}
"""Every event class by its name on disk."""


# --- wire.jsonl records --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WireRecord:
    """A wire.jsonl line; `event` is None when its type is unknown or its payload does not fit."""

    timestamp: float
    type: str
    event: Event | None
    raw: dict[str, Any]
    """The decoded line as it was, unknown keys included."""


METADATA: dict[str, str] = {"type": "metadata", "protocol_version": "1"}
"""The first line of a wire.jsonl file."""


def to_record(event: Event, timestamp: float) -> dict[str, Any]:
    """The JSON object of the wire.jsonl line for `event`."""
    return {
        "timestamp": timestamp,
        "message": {"type": type(event).__name__, "payload": event.payload()},
    }


def from_record(raw: dict[str, Any]) -> WireRecord:
    """A decoded wire.jsonl line as a record; ValueError when it is not shaped like one."""
    timestamp = raw.get("timestamp")
    message = raw.get("message")
    if isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
        raise ValueError("a wire record needs a numeric timestamp")
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ValueError("a wire record needs a message with a type")
    kind: str = message["type"]
    payload = message.get("payload", {})
    event_type = EVENT_TYPES.get(kind)
    event: Event | None = None
    if event_type is not None and isinstance(payload, dict):
        try:
            event = event_type.from_payload(payload)
        except ValidationError as error:
            # Expected for Kimi's richer events, so not worth a warning per line.
            logger.debug("%s payload does not fit our model: %s", kind, error)
    return WireRecord(timestamp=float(timestamp), type=kind, event=event, raw=raw)


def read_wire(path: Path | str) -> Iterator[WireRecord]:
    """The records of a wire.jsonl file, read line by line; a missing file has none.

    The metadata line is skipped, and so, with a warning, is any line that is not a record
    (a torn last line after a crash, for one).
    """
    try:
        file = open(path, "rb")  # noqa: SIM115 - the generator holds it open while streaming
    except FileNotFoundError:
        return
    with file:
        for number, line in enumerate(file, start=1):
            try:
                record = _parse_line(line)
            except (ValueError, RecursionError) as error:  # RecursionError: nested too deeply
                logger.warning(
                    "%s:%d: skipped a line that is not a wire record: %s", path, number, error
                )
                continue
            if record is not None:
                yield record


def _parse_line(line: bytes) -> WireRecord | None:
    if not line.strip():
        return None
    raw = json.loads(line)
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    if raw.get("type") == "metadata" and "message" not in raw:
        return None
    return from_record(raw)
