"""How the events of a turn read, once for every front end: the conversation, print mode,
stream-JSON and ACP show the same words.

- a tool call (`read_call`): its name and what it is about, `Shell: make test`,
  `WriteFile hello.py`, `ReadFile src/a.py:10-40`, `Grep "TODO" in src`, an MCP tool as
  `server: tool https://x.org`; while its arguments stream (not yet whole JSON) only its name.
  `StreamedCall` follows a call piece by piece and reads it again once its arguments are whole;
- a result (`read_result`): its status (`ok`, `error`, `rejected`) and summary, the tool's brief
  (`3 lines read`) or the first line of its message; a rejected call reads as what the user
  did (`result_message`: `Rejected`, `Rejected: <their feedback>`), not as the words the model
  is told; `STATUS_LABELS` are the marks shown for a call's status (`✔`, `✘`, `⊘`,
  `running…`);
- a retry (`retry_text`): `HTTP 503; retrying in 0.4 s (attempt 2 of 10)`, and while it waits
  (`retry_status`): `retrying in 6 s (attempt 2 of 10): 429 rate limited`;
- a hook's run that warned or blocked (`hook_note`);
- a stored user message that is the system's note, not the user's words (`read_system_note`):
  a compaction's summary, a D-Mail.

Every reading is one line of plain text: what the model wrote (names, paths, commands, error
messages) is made visible first (`safetext.visible`: controls and escapes as printable
stand-ins, lone surrogates as the bytes they stand for), so the TUI draws it as it is and ACP and
stream-JSON send it without a control character.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from kode_tui.humanize import cut, one_line
from kode_tui.message import (
    COMPACTION_OUTPUT_PREFIX,
    is_dmail_note,
    is_system_note,
    split_system_note,
    unwrap_system,
)
from kode_tui.safetext import visible
from kode_tui.wire import events as ev

SHELL = "Shell"
ASK = "AskUserQuestion"
TODO = "SetTodoList"
"""The todo tool, by Kimi CLI's name (the one offered to the model)."""
TODO_LISTS = frozenset({TODO, "TodoWrite"})
"""Every name a todo-list call has: Kimi's and kode-tui's older `TodoWrite`, which stored
sessions call and which the tool still answers to."""
MCP_PREFIX = "mcp__"
"""An MCP server's tool is offered as `mcp__SERVER__TOOL` (`kode_tui.tools.mcp_tools`)."""

ABOUT_CHARS = 80
"""The longest `about` of a call (a path, a command's first line)."""
ARGUMENTS_CHARS = 60
"""The longest compact JSON an `about` shows, when no argument stands out."""
SUMMARY_CHARS = 60
"""The longest summary of a result."""

_PATHS = {"ReadFile", "WriteFile", "StrReplaceFile", "ReadMediaFile"}
"""Tools about one file: the path is what they are about."""
KEY_ARGUMENTS = (
    "path",
    "file_path",
    "command",
    "pattern",
    "url",
    "query",
    "description",
    "task_id",
)
"""What another tool's call is most likely about (MCP tools, Kimi's other tools), in order."""

_TIMES = "\N{MULTIPLICATION SIGN}"


# --- tool calls ----------------------------------------------------------------------------------


class CallReading(msgspec.Struct, frozen=True):
    """How a tool call reads: `name`, then what it is `about`."""

    name: str
    """The tool: `Shell`, `WriteFile`, `web: fetch` for the MCP server `web`'s `fetch`."""
    about: str = ""
    """What the call is about: `make test`, `hello.py`, `"TODO" in src`; "" when nothing
    stands out (no arguments) or while they stream."""
    joiner: str = " "
    """What goes between: `: ` after a command's tool (`Shell: make test`), else a space."""
    whole: bool = True
    """False while the arguments stream (they are not JSON yet): `about` waits for them."""

    @property
    def title(self) -> str:
        """The call on one line: `Shell: make test`, `WriteFile hello.py`, `Glob`."""
        return f"{self.name}{self.joiner}{self.about}" if self.about else self.name


def read_call(name: str, arguments: str) -> CallReading:
    """How the call of the tool `name` with `arguments` (its JSON, maybe partial) reads."""
    shown = _tool_name(name)
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):  # streaming, not JSON, or nested too deep to parse
        return CallReading(shown, whole=False)
    if not isinstance(parsed, dict):
        return CallReading(shown, _compact(arguments))
    about = _about(name, parsed)
    if about is None:
        about = _compact(arguments) if parsed else ""
    return CallReading(shown, about, ": " if name in (SHELL, ASK) else " ")


def _tool_name(name: str) -> str:
    if name.startswith(MCP_PREFIX):
        # A server's name holds no `__` and does not end with `_`: the first `__` ends it.
        server, separator, tool = name.removeprefix(MCP_PREFIX).partition("__")
        if separator and server and tool:
            name = f"{server}: {tool}"
    return visible(name, multiline=False) or "?"


def _about(name: str, arguments: dict[str, Any]) -> str | None:
    """What a call of `name` is about, by its arguments; None when no argument says it."""
    if name in TODO_LISTS:  # a todo list is no title, what the call did to it is
        return "read todo list" if arguments.get("todos") is None else "updated todo list"
    if name == SHELL:
        command = _text(arguments.get("command"))
        background = arguments.get("run_in_background") is True and command is not None
        return f"{command} (background)" if background else command
    if name in _PATHS:
        path = _text(arguments.get("path"))
        if path is None:
            return None
        if name == "ReadFile":
            return path + _lines(arguments.get("line_offset"), arguments.get("n_lines"))
        return path + (" (append)" if arguments.get("mode") == "append" else "")
    if name in ("Grep", "Glob"):
        pattern = _text(arguments.get("pattern"))
        if pattern is None:
            return None
        where = _text(arguments.get("path" if name == "Grep" else "directory"))
        return f'"{pattern}"' + (f" in {where}" if where and where != "." else "")
    if name == ASK:  # the first question, and how many follow
        questions = arguments.get("questions")
        questions = questions if isinstance(questions, list) else []
        first = questions[0] if questions else None
        asked = _text(first.get("question")) if isinstance(first, dict) else None
        more = f" (+{len(questions) - 1} more)" if len(questions) > 1 else ""
        return asked + more if asked else None
    if name == "SendDMail" and isinstance(arguments.get("checkpoint_id"), int):
        return f"to checkpoint {arguments['checkpoint_id']}"
    for key in KEY_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return one_line(value, ABOUT_CHARS)
    return None


def _text(value: object) -> str | None:
    return one_line(value, ABOUT_CHARS) if isinstance(value, str) and value.strip() else None


def _lines(offset: object, count: object) -> str:
    """`:10-40` for the lines ReadFile reads of a file, "" for all of it from the start."""
    start = offset if isinstance(offset, int) and not isinstance(offset, bool) else 1
    many = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else None
    if start < 0:  # counted from the end
        return f":{start}"
    if many is not None:
        return f":{start}-{start + many - 1}"
    return f":{start}-" if start > 1 else ""


def _compact(arguments: str) -> str:
    """The arguments as compact JSON on one line (as given when they are not JSON)."""
    try:
        compact = json.dumps(json.loads(arguments), ensure_ascii=False)
    except (ValueError, RecursionError):
        compact = arguments
    # Visible before cutting, so that a cut never splits a stand-in from what it stands for.
    return cut(visible(compact, multiline=False), ARGUMENTS_CHARS)


class StreamedCall:
    """A tool call as its pieces arrive: its arguments so far and how it reads (read when
    first asked: a stored history makes many calls that are never shown)."""

    __slots__ = ("_reading", "arguments", "name")

    def __init__(self, name: str, arguments: str = "") -> None:
        self.name = name
        self.arguments = arguments
        self._reading: CallReading | None = None

    @property
    def reading(self) -> CallReading:
        if self._reading is None:
            self._reading = read_call(self.name, self.arguments)
        return self._reading

    def extend(self, delta: str) -> bool:
        """Add a piece of the arguments; whether the reading shown changed (they became
        whole)."""
        self.arguments += delta
        # Parsing after every piece would be quadratic: a whole object ends with "}".
        if self._reading is None or self._reading.whole or "}" not in delta:
            return False
        self._reading = read_call(self.name, self.arguments)
        return self._reading.whole


def calls_summary(calls: Sequence[tuple[str, str | None]]) -> str:
    """One line for the calls of one step, given as (name, arguments): the title of one,
    `ReadFile ×2, Grep` for several."""  # noqa: RUF002
    if len(calls) == 1:
        name, arguments = calls[0]
        return read_call(name, arguments or "").title
    counts: dict[str, int] = {}
    for name, _ in calls:
        shown = _tool_name(name)
        counts[shown] = counts.get(shown, 0) + 1
    return ", ".join(name if n == 1 else f"{name} {_TIMES}{n}" for name, n in counts.items())


# --- results -------------------------------------------------------------------------------------

ToolStatus = Literal["running", "waiting", "ok", "error", "rejected", "interrupted", "unknown"]
"""Where a call stands: running (or its arguments streaming), waiting for approval, done (ok),
failed (error), rejected by the user, interrupted, or unknown (a stored call with no result)."""

STATUS_LABELS: dict[ToolStatus, str] = {
    "running": "running…",
    "waiting": "waiting for approval",
    "ok": "✔",
    "error": "✘",
    "rejected": "⊘",
    "interrupted": "interrupted",
    "unknown": "",
}

REJECTED_PREFIX = "The tool call is rejected"
"""How the message of a call the user rejected begins (`kode_tui.tools.toolset.rejected`)."""
FEEDBACK_MARK = "User feedback:"
"""Where the user's words begin in that message, when they gave some."""


class ResultReading(msgspec.Struct, frozen=True):
    """How a tool's result reads: its status and a one-line summary."""

    status: Literal["ok", "error", "rejected"]
    summary: str

    @property
    def label(self) -> str:
        """`✔`, `✘` or `⊘`."""
        return STATUS_LABELS[self.status]


def result_status(result: ev.ToolResult) -> Literal["ok", "error", "rejected"]:
    if not result.is_error:
        return "ok"
    return "rejected" if result.message.startswith(REJECTED_PREFIX) else "error"


def result_message(status: ToolStatus, message: str) -> str:
    """A result's message as the user reads it: a rejection says what the user did,
    `Rejected` or `Rejected: <their feedback>` (the model is told Kimi's words, "The tool call
    is rejected by the user. Stop what you are doing…", which are the message kept); any other
    message as the tool wrote it."""
    if status != "rejected":
        return message
    feedback = message.partition(FEEDBACK_MARK)[2].strip()
    return f"Rejected: {feedback}" if feedback else "Rejected"


def result_summary(status: ToolStatus, brief: str, message: str) -> str:
    """A result on one line: a rejection as `result_message` reads it (a brief of Kimi's,
    `Rejected by user`, would drop the feedback), else the tool's brief, else the first line
    of its message."""
    if status == "rejected":
        return one_line(result_message(status, message), SUMMARY_CHARS)
    return summary(brief, message)


def result_brief(result: ev.ToolResult) -> str:
    """The tool's own short report of its result (`3 lines read`), "" when it gave none."""
    return next((b.text for b in result.display if isinstance(b, ev.BriefBlock)), "")


def summary(brief: str, message: str) -> str:
    """A result on one line: the tool's brief, else the first line of its message."""
    return one_line(brief or message, SUMMARY_CHARS)


def read_result(result: ev.ToolResult) -> ResultReading:
    status = result_status(result)
    return ResultReading(status, result_summary(status, result_brief(result), result.message))


# --- notes ---------------------------------------------------------------------------------------


def seconds(wait_s: float) -> str:
    """A short wait: `0.4 s`, `2 s`."""
    return f"{wait_s:.1f}".removesuffix(".0") + " s"


def next_attempt(event: ev.StepRetry) -> str:
    """`attempt 2 of 10`: the attempt to come."""
    return f"attempt {event.attempt + 1} of {event.max_attempts}"


_STATUS_WORDS = {429: "rate limited", 529: "overloaded"}

_ERROR_WORDS = {"LLMTimeoutError": "timed out", "LLMConnectionError": "connection lost"}


def retry_reason(event: ev.StepRetry) -> str:
    """Why a call is retried, in a few words: `429 rate limited`, `HTTP 503`, `timed out`."""
    if event.status_code is not None:
        words = _STATUS_WORDS.get(event.status_code)
        return f"{event.status_code} {words}" if words else f"HTTP {event.status_code}"
    return _ERROR_WORDS.get(event.error_type, "the model call failed")


def retry_status(event: ev.StepRetry, left: float | None = None) -> str:
    """`retrying in 6 s (attempt 2 of 10): 429 rate limited`, `left` seconds from now (the whole
    wait when None: a countdown gives what is left, rounded up to whole seconds)."""
    wait = seconds(event.wait_s) if left is None else f"{math.ceil(max(left, 0))} s"
    return f"retrying in {wait} ({next_attempt(event)}): {retry_reason(event)}"


def retry_text(event: ev.StepRetry) -> str:
    """`HTTP 503; retrying in 2 s (attempt 2 of 10)`; a wait the server asked for (a
    `Retry-After`) says so: `retrying in 6 s, as the server asked (attempt 2 of 10)`."""
    error = one_line(event.error, 200) or event.error_type or "the model call failed"
    asked = ", as the server asked" if event.server_wait else ""
    return f"{error}; retrying in {seconds(event.wait_s)}{asked} ({next_attempt(event)})"


def hook_note(run: ev.HookRan) -> str:
    """A hook's run that warned or blocked, on one line: `PreToolUse hook ./check: no rm`."""
    command = visible(" ".join(run.command.split()), multiline=False)
    note = one_line(run.note, 200) or f"exit {run.exit_code}"
    return f"{visible(run.hook_event, multiline=False)} hook `{command}`: {note}"


# --- todo lists ----------------------------------------------------------------------------------


def todo_items(
    display: Sequence[ev.DisplayBlock], arguments: str, *, failed: bool = False
) -> list[ev.TodoItem] | None:
    """The list a TodoWrite call shows: its result's (`display`), else (running, or a stored
    call the wire has no record of) the one in its `arguments`; None when there is none yet,
    or the call `failed` or was rejected (its arguments may not even be a list of todos)."""
    for block in display:
        if isinstance(block, ev.TodoBlock):
            return block.items
    if failed:
        return None
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return None
    todos = parsed.get("todos") if isinstance(parsed, dict) else None
    if not isinstance(todos, list):
        return None
    return [
        ev.TodoItem(title=str(todo.get("title", "")), status=str(todo.get("status", "")))
        for todo in todos
        if isinstance(todo, dict)
    ]


# --- notes of the system in stored user messages -------------------------------------------------

_DMAIL_CONTENT = "D-Mail content:"
"""Where the mail begins in a D-Mail's note (Kimi CLI's wording, `prompts/dmail.md`)."""


class SystemNote(msgspec.Struct, frozen=True):
    """A user message that is the system speaking: a compaction's summary, a D-Mail, or the
    note that a background task ended (Kimi's `<notification>`)."""

    kind: Literal["compaction", "dmail", "task"]
    title: str
    """`compacted: summary`, `D-Mail from the future`, `Background task completed: tests`."""
    text: str
    """The summary, the mail, or the task's note."""


def is_task_notification(text: str) -> bool:
    """Whether a user message's text tells the model that a background task ended."""
    return text.startswith("<notification ") and 'source_kind="background_task"' in text


def read_system_note(text: str) -> SystemNote | None:
    """The compaction summary, D-Mail or task notification a stored user message's `text` is,
    if it is one."""
    if is_system_note(text, COMPACTION_OUTPUT_PREFIX):
        return SystemNote("compaction", "compacted: summary", split_system_note(text)[1].strip())
    if is_dmail_note(text):
        mail = unwrap_system(text).partition(_DMAIL_CONTENT)[2].strip()
        return SystemNote("dmail", "D-Mail from the future", mail)
    if is_task_notification(text):
        lines = text.strip().splitlines()[1:-1]  # inside <notification ...> ... </notification>
        title = next((line[7:] for line in lines if line.startswith("Title: ")), "background task")
        return SystemNote("task", title, "\n".join(lines))
    return None
