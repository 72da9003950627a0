"""The events the soul sends on the wire, and their wire.jsonl records (DESIGN.md §2, §3).

A record is `{"timestamp": <float>, "message": {"type": "<EventClass>", "payload": {...}}}`, as in
Kimi CLI's wire.jsonl; a `ContentPart`'s payload is the part itself. Kimi CLI 1.52 reads every
line of a wire.jsonl with its own models (`kimi export`, its ACP replay) and stops at a type it
does not know, so the recorder splits the events in two:

- an event Kimi has a type for (`kimi = True`) goes to wire.jsonl in Kimi's shape: its record
  name (our `ApprovalResolved` is Kimi's `ApprovalResponse`), field names and types (`StepRetry`'s
  `next_attempt`, `StatusUpdate`'s `token_usage`, `ToolResult`'s `return_value`, ...). Fields of
  ours that Kimi lacks ride along under names Kimi does not use: its models ignore unknown keys
  (tests/test_kimi_wire.py checks with Kimi's reader, and with tests/fixtures/kimi_wire_fields.json
  without it);
- the others (checkpoints, reverts, restores, clears, reminders, hook runs, warnings, errors,
  and argument pieces not merged into their call) go to the sidecar `wire.kode.jsonl`
  (`records.sidecar_path()`), which Kimi never reads, stamped with `wire_offset`, the size
  wire.jsonl had then; `read_wire()` (in `kode_tui.wire.recorder`, beside the writer) merges
  both files back into one stream in that order.

Sessions recorded before the sidecar keep our records in wire.jsonl until a writer opens them
(`kode_tui.wire.migrate`); they read the same either way. Reading is lenient in one direction
only: unknown payload keys are ignored (the raw record keeps them), but an event whose required
fields are missing is not guessed at; such records, and types this version does not know (Kimi's
`SubagentEvent`, `Notification`, ...), come back with `event=None`. Kimi's `StepRetry`,
`StatusUpdate`, `CompactionEnd` (what they leave out reads as 0), `ApprovalResponse` and
`ToolCallPart` are mapped onto our events.
"""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

import asyncio
import functools
import logging
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    model_validator,
)

from kode_tui.config import ApprovalMode
from kode_tui.message import ContentPart as Part
from kode_tui.message import FunctionBody
from kode_tui.message import TokenUsage as TokenUsage
from kode_tui.wire.blocks import BriefBlock as BriefBlock
from kode_tui.wire.blocks import DiffBlock as DiffBlock
from kode_tui.wire.blocks import DisplayBlock as DisplayBlock
from kode_tui.wire.blocks import ShellBlock as ShellBlock
from kode_tui.wire.blocks import SubagentBlock as SubagentBlock
from kode_tui.wire.blocks import TodoBlock as TodoBlock
from kode_tui.wire.blocks import TodoItem as TodoItem
from kode_tui.wire.blocks import UnknownBlock as UnknownBlock
from kode_tui.wire.plans import PlanApproach as PlanApproach
from kode_tui.wire.plans import PlanAsk as PlanAsk
from kode_tui.wire.plans import PlanChoice as PlanChoice
from kode_tui.wire.plans import PlanVerdict as PlanVerdict

logger = logging.getLogger(__name__)

KIMI_NAMES: Mapping[str, str] = {"ApprovalResolved": "ApprovalResponse"}
"""Our events whose record is Kimi's type of another name."""


class Event(BaseModel):
    """Base of every wire event; the event's name on disk is its class name."""

    # Subscribers share one instance of each event, so none of them may change it for the others.
    model_config = ConfigDict(frozen=True, defer_build=True)

    recorded: ClassVar[bool] = True
    """Whether it is recorded at all; False for what state.json holds already."""

    kimi: ClassVar[bool] = True
    """Whether Kimi CLI 1.52 has a type for it: its record goes to wire.jsonl in Kimi's shape.
    False: to our sidecar file, which Kimi does not read."""

    def payload(self) -> dict[str, Any]:
        """The JSON object stored as this event's record payload."""
        return self.model_dump(mode="json")

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Self:
        """The event a record payload describes; pydantic.ValidationError when it does not fit."""
        return cls.model_validate(payload)


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
    """The LLM call of step `n` failed and is tried again after `wait_s` seconds.

    Recorded in Kimi's shape: `next_attempt` (our `attempt + 1`) and `error_type`, with our
    `error` (the message) alongside; Kimi's records, which have no message, read back with
    `error` set to the error type.
    """

    n: int
    attempt: int
    """The attempt that failed, from 1."""
    max_attempts: int
    wait_s: float
    error: str
    error_type: str = ""
    """The exception's class name, e.g. `APIConnectionError`."""
    status_code: int | None = None
    """The HTTP status the provider answered with, when there was one."""
    server_wait: bool = False
    """`wait_s` is the wait the server asked for (`Retry-After`), not a backoff of ours."""

    def payload(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "next_attempt": self.attempt + 1,
            "max_attempts": self.max_attempts,
            "wait_s": self.wait_s,
            "error_type": self.error_type,
            "status_code": self.status_code,
            "error": self.error,
            "server_wait": self.server_wait,
        }

    @model_validator(mode="before")
    @classmethod
    def _from_kimi_shape(cls, data: Any) -> Any:
        if isinstance(data, dict) and "attempt" not in data:
            next_attempt = data.get("next_attempt")
            if isinstance(next_attempt, int) and not isinstance(next_attempt, bool):
                data = {**data, "attempt": next_attempt - 1}
                data.setdefault("error", data.get("error_type") or "")
        return data


# --- streamed content and tools ------------------------------------------------------------------


@functools.cache
def _part_adapter() -> TypeAdapter[Part]:
    """Built at the first content part read back from a wire file (a few ms of schema)."""
    return TypeAdapter(Part)


class ContentPart(Event):
    """A streamed piece of assistant content: a text or think delta, or a whole image part."""

    part: Part

    def payload(self) -> dict[str, Any]:
        return self.part.model_dump(mode="json", exclude_unset=True)

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Self:
        return cls(part=_part_adapter().validate_python(payload))


class ToolCall(Event):
    """A complete tool call, with the fields of `kode_tui.message.ToolCall`."""

    type: Literal["function"] = "function"
    id: str
    function: FunctionBody
    extras: dict[str, Any] | None = None


class ToolCallPart(Event):
    """A streamed piece of a tool call's JSON arguments. The recorder merges the pieces into their
    `ToolCall`'s record, as Kimi CLI does; Kimi's own `ToolCallPart` has no `id` (it extends the
    call before it), so a piece that cannot be merged goes to the sidecar."""

    kimi: ClassVar[bool] = False

    id: str
    """Empty in Kimi's records: the piece extends the call before it."""
    arguments_delta: str

    @model_validator(mode="before")
    @classmethod
    def _from_kimi_shape(cls, data: Any) -> Any:
        if isinstance(data, dict) and "arguments_part" in data and "id" not in data:
            return {"id": "", "arguments_delta": data["arguments_part"] or ""}
        return data


class ToolStarted(Event):
    """A tool call starts running, its arguments whole and approved if it asked (Kode's own)."""

    kimi: ClassVar[bool] = False
    tool_call_id: str


class ToolResult(Event):
    tool_call_id: str
    is_error: bool = False
    output: str = ""
    """What the model reads."""
    message: str = ""
    """The status line the model reads in `<system>` tags, e.g. `Command executed successfully.`"""
    display: list[DisplayBlock] = Field(default_factory=list)
    parts: list[Part] = Field(default_factory=list)
    """The images, audio and video of a result whose output is a list of parts (as Kimi CLI's
    media tools give); its text parts are joined into `output`."""

    def payload(self) -> dict[str, Any]:
        # Kimi CLI's form, so that its replay of a session we wrote shows the results too.
        value = self.model_dump(mode="json", exclude={"tool_call_id", "parts"})
        if self.parts:
            text = [{"type": "text", "text": self.output}] if self.output else []
            media = [part.model_dump(mode="json", exclude_unset=True) for part in self.parts]
            value["output"] = text + media
        return {"tool_call_id": self.tool_call_id, "return_value": {**value, "extras": None}}

    @model_validator(mode="before")
    @classmethod
    def _flatten_kimi_return_value(cls, data: Any) -> Any:
        # Kimi CLI nests the result: {"tool_call_id": ..., "return_value": {"is_error": ...}}.
        if isinstance(data, dict) and isinstance(data.get("return_value"), dict):
            data = {"tool_call_id": data.get("tool_call_id"), **data["return_value"]}
        if isinstance(data, dict) and isinstance(data.get("output"), list):
            output: list[Any] = data["output"]
            texts = [p for p in output if isinstance(p, dict) and p.get("type") == "text"]
            media = [p for p in output if not (isinstance(p, dict) and p.get("type") == "text")]
            joined = "".join(str(p.get("text", "")) for p in texts)
            data = {**data, "output": joined, "parts": media}
        return data


# --- subagents -----------------------------------------------------------------------------------


class SubagentEvent(Event):
    """An event of a subagent, re-sent on its parent's wire (Kimi 1.52's `SubagentEvent`).

    `parent_tool_call_id` is the id of the parent's `Agent` call: print mode's stream-json marks
    the event with it, ACP can send it as progress of that call, the TUI can show it inside
    that call's block. The subagent's own wire.jsonl holds its events unwrapped; the parent's
    does not record them again (`recorded`), nor are they the parent's own state: a wrapped
    `StatusUpdate` is the subagent's context, not the parent's.
    """

    recorded: ClassVar[bool] = False

    parent_tool_call_id: str
    agent_id: str
    subagent_type: str
    event: Event

    def payload(self) -> dict[str, Any]:
        # Kimi's shape: the wrapped event as an envelope {"type", "payload"}.
        inner = self.event
        name = type(inner).__name__
        return {
            "parent_tool_call_id": self.parent_tool_call_id,
            "agent_id": self.agent_id,
            "subagent_type": self.subagent_type,
            "event": {"type": KIMI_NAMES.get(name, name), "payload": inner.payload()},
        }


# --- approvals -----------------------------------------------------------------------------------


class RejectWithFeedback(BaseModel):
    """A rejection whose feedback goes to the model; the turn goes on."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    feedback: str


ApprovalResponse = (
    Literal["approve", "approve_for_session", "reject"] | RejectWithFeedback | PlanVerdict
)
"""How the user answered an approval request: approve once, approve for the rest of the session,
reject (the turn ends), `RejectWithFeedback(feedback=...)`, or a plan's `PlanVerdict`. Stored
as the string, or as `{"feedback": "..."}` or the verdict's fields."""


_SOURCE_FIELDS = ("source_kind", "agent_id", "subagent_type", "source_description")


class ApprovalRequest(Event):
    """A tool call waiting for the user; the soul awaits `wait()`, the UI calls `resolve()`. The
    future behind them lives on the running event loop and is never serialised."""

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
    source_kind: Literal["foreground_turn", "background_agent"] | None = None
    """Who asks, in Kimi 1.52's fields: None for the session's own agent; a subagent's request
    says `foreground_turn` (or `background_agent`), its `agent_id`, `subagent_type` and the
    task's description (`source_description`), for the panel to tell whose call it is."""
    agent_id: str | None = None
    subagent_type: str | None = None
    source_description: str | None = None
    plan: PlanAsk | None = None
    """ExitPlanMode's request: the plan's choices, answered with a `PlanVerdict` (a plain
    approve or reject answers it too)."""

    _future: asyncio.Future[ApprovalResponse] | None = PrivateAttr(default=None)

    def payload(self) -> dict[str, Any]:
        # Kimi CLI requires `sender` (the tool asking) to read the record. The session's own
        # requests keep the shape they had before subagents (no null source fields), and only
        # ExitPlanMode's request has a `plan`.
        exclude = set(_SOURCE_FIELDS) if self.source_kind is None else set()
        if self.plan is None:
            exclude.add("plan")
        return {
            **self.model_dump(mode="json", exclude=exclude),
            "sender": self.tool_name or "kode-tui",
        }

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
    """Recorded as Kimi's `ApprovalResponse`: `{request_id, response, feedback}`, where a
    rejection with feedback is `response: "reject"` with the feedback. A `PlanVerdict` is Kimi's
    `approve` or `reject` (a revision: `reject` with its feedback), the verdict itself riding
    along under `plan_verdict`."""

    id: str
    response: ApprovalResponse

    def payload(self) -> dict[str, Any]:
        response = self.response
        if isinstance(response, PlanVerdict):
            kimi = "approve" if response.choice == "approve" else "reject"
            verdict = response.model_dump(mode="json", exclude_defaults=True)
            return {
                "request_id": self.id,
                "response": kimi,
                "feedback": response.feedback,
                "plan_verdict": verdict,
            }
        if isinstance(response, RejectWithFeedback):
            return {"request_id": self.id, "response": "reject", "feedback": response.feedback}
        return {"request_id": self.id, "response": response, "feedback": ""}

    @model_validator(mode="before")
    @classmethod
    def _from_kimi_shape(cls, data: Any) -> Any:
        if isinstance(data, dict) and "request_id" in data and "id" not in data:
            response = data.get("response")
            if isinstance(data.get("plan_verdict"), dict):
                response = PlanVerdict.model_validate(data["plan_verdict"])
            elif response == "reject" and data.get("feedback"):
                response = RejectWithFeedback(feedback=data["feedback"])
            return {"id": data["request_id"], "response": response}
        return data


class PermissionsChanged(Event):
    """The approval mode or the session's approvals changed, or the agent came up with them. Not
    recorded: state.json keeps both, and an opened session must stay empty until it is used."""

    recorded: ClassVar[bool] = False
    kimi: ClassVar[bool] = False

    mode: ApprovalMode
    session_approvals: int
    """How many scopes are approved for the rest of the session."""
    sandbox: bool = False
    """Whether the model's Shell commands run in the sandbox (`kode_tui.tools.sandbox`)."""


# --- context -------------------------------------------------------------------------------------


class CheckpointCreated(Event):
    kimi: ClassVar[bool] = False

    id: int


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
    """How full the context is. Recorded in Kimi's shape (`context_usage` as a fraction,
    `token_usage` with `input_other` = the prompt less its cached tokens) with our numbers
    alongside; Kimi's records read back with 0 for what they leave out."""

    context_tokens: int
    max_context_tokens: int
    reserved_tokens: int = 0
    trigger_tokens: int = 0
    """Compaction starts when the context reaches this size."""
    pending_tokens: int = 0
    """Estimated tokens of messages added since the last reported count (in context_tokens)."""
    usage: TokenUsage | None = None
    """What the last LLM call reported, if it did."""
    cost: CostStatus | None = None
    """None while the session has no counted calls (and for the demo)."""

    def payload(self) -> dict[str, Any]:
        ours = self.model_dump(mode="json", exclude={"usage"})
        usage = self.usage
        kimi: dict[str, Any] = {
            "context_usage": (
                self.context_tokens / self.max_context_tokens if self.max_context_tokens else None
            ),
            "token_usage": None,
        }
        if usage is not None:
            kimi["token_usage"] = {
                "input_other": max(usage.input - usage.cache_read - usage.cache_creation, 0),
                "output": usage.output,
                "input_cache_read": usage.cache_read,
                "input_cache_creation": usage.cache_creation,
            }
        return {**kimi, **ours}

    @model_validator(mode="before")
    @classmethod
    def _from_kimi_shape(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = {key: value for key, value in data.items() if value is not None}
        data.setdefault("context_tokens", 0)
        data.setdefault("max_context_tokens", 0)
        kimi_usage = data.pop("token_usage", None)
        if isinstance(kimi_usage, dict) and "usage" not in data:
            counts = {key: _count(value) for key, value in kimi_usage.items()}
            cache_read = counts.get("input_cache_read", 0)
            cache_creation = counts.get("input_cache_creation", 0)
            data["usage"] = {
                "input": counts.get("input_other", 0) + cache_read + cache_creation,
                "output": counts.get("output", 0),
                "cache_read": cache_read,
                "cache_creation": cache_creation,
            }
        return data


def _count(value: object) -> int:
    """A token count of Kimi's usage as it is, 0 when it is not a number."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class CompactionBegin(Event):
    strategy: str = ""


class CompactionEnd(Event):
    tokens_before: int = 0
    """0 when unknown: Kimi's records carry no counts."""
    tokens_after: int = 0
    rotated_file: str | None = None
    """None when the strategy changed nothing (or, in Kimi's records, unknown)."""


class ContextReverted(Event):
    kimi: ClassVar[bool] = False

    checkpoint_id: int
    rotated_file: str
    reason: Literal["user", "dmail"] = "user"
    files_restored: list[str] = Field(default_factory=list)
    conflicts: list[str] = Field(default_factory=list)
    """Files left alone because they changed since the tool wrote them."""


class ContextRestored(Event):
    kimi: ClassVar[bool] = False

    from_file: str
    rotated_file: str
    files_restored: list[str] = Field(default_factory=list)
    conflicts: list[str] = Field(default_factory=list)
    """Files left alone because they changed since the live conversation's edit."""


class ContextCleared(Event):
    kimi: ClassVar[bool] = False

    rotated_file: str


class ContextReloaded(Event):
    """A read-only view read its session's files again: the writer (another kode-tui) added
    turns, checkpoints or rotations. Views show the context afresh."""

    kimi: ClassVar[bool] = False


class ReminderItem(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)
    kind: str
    """`todo`, `context` or `mention`."""
    text: str


class SystemReminders(Event):
    """Reminders that went with the next LLM request (they are not part of the context)."""

    kimi: ClassVar[bool] = False

    reminders: list[ReminderItem]


class HookRan(Event):
    """A `[[hooks]]` command of the user's config ran (`kode_tui.soul.hooks`)."""

    kimi: ClassVar[bool] = False

    hook_event: str
    """`PreToolUse`, `UserPromptSubmit`, ... (the config's `event`)."""
    command: str
    exit_code: int | None = None
    """None when it did not start or was killed at its timeout."""
    duration_s: float = 0.0
    outcome: Literal["ok", "blocked", "warning"] = "ok"
    note: str = ""
    """Why it is a warning or blocked, one line (`timed out after 30 s`, `exit code 1`)."""
    stdout: str = ""
    stderr: str = ""
    tool_call_id: str = ""
    """The call a PreToolUse or PostToolUse hook ran for."""


class CommandSent(Event):
    """The next turn's message is the prompt of a custom slash command (so a view can show it
    under the name the user typed)."""

    kimi: ClassVar[bool] = False

    command: str
    """With its slash: `/review`."""
    arguments: str
    file: str
    """Where the prompt came from, for people: `.kode/commands/review.md`."""
    model: str | None = None
    """The model alias it runs on, when its `model:` switched model for this turn."""


class PlanDisplay(Event):
    """The plan `ExitPlanMode` asks the user to approve, as Kimi CLI 1.52 shows it inline (its
    `PlanDisplay`): sent just before the approval request."""

    content: str
    """The plan file's Markdown."""
    file_path: str


class Warning(Event):
    kimi: ClassVar[bool] = False

    message: str


class Error(Event):
    kimi: ClassVar[bool] = False

    message: str


# --- questions to the user and background tasks (issue 29) ---------------------------------------


class QuestionUnsupported(Exception):
    """The front end asks no one (print mode, ACP): the model is told to ask in its text."""


class QuestionOption(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    label: str
    description: str = ""


class QuestionItem(BaseModel):
    """One question in Kimi CLI 1.52's shape; the user may also type an answer of their own."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    question: str
    header: str = ""  # a short tag, e.g. `Auth`
    options: list[QuestionOption]
    multi_select: bool = False


class QuestionRequest(Event):
    """`AskUserQuestion` awaiting `wait()`; a front end calls `resolve()` or `unsupported()`."""

    id: str
    tool_call_id: str
    questions: list[QuestionItem]

    _future: asyncio.Future[dict[str, str]] | None = PrivateAttr(default=None)

    def resolve(self, answers: Mapping[str, str]) -> None:
        """Answer: each question's text mapped to its answer (labels joined by `, `); none at
        all: the user dismissed them. Later answers are ignored."""
        future = self._ensure_future()
        if not future.done():
            future.set_result(dict(answers))

    def unsupported(self) -> None:
        """Say that this front end asks no one: `wait()` raises `QuestionUnsupported`."""
        future = self._ensure_future()
        if not future.done():
            future.set_exception(QuestionUnsupported())

    async def wait(self) -> dict[str, str]:
        """The user's answers, once `resolve()` has been called."""
        return await self._ensure_future()

    def _ensure_future(self) -> asyncio.Future[dict[str, str]]:
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        return self._future


class BackgroundTaskUpdate(Event):
    """A background task started or changed status (a final one: it ended), between turns too."""

    kimi: ClassVar[bool] = False
    task_id: str
    kind: str
    status: str
    description: str
    exit_code: int | None = None
