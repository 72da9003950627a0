"""`!cmd`: a shell command the user runs from the prompt, its output added to the context.

As Claude Code's `!` bash mode: the command runs in the work dir and no model turn starts; the
command and its output become a user message the model reads with the next one. The user typed
it, so nothing asks, in any mode: no approval, no protected-path question, no sandbox (it runs
as typed, as in their own terminal); only the model's Shell calls keep those rules. It runs by
the Shell tool, so its output is capped the same way and Esc stops its whole process group.

On the wire it is a turn without steps: TurnBegin (the `!` line the user typed), a Shell
ToolCall, ToolStarted, the ToolResult, a checkpoint, TurnEnd. An interrupted command adds
nothing to the context.

The record, one user message, reads (its first line is what the user typed, so the timeline,
the revert dialog and the prompt given back after a revert show `!cmd`):

    !cmd
    <system>The user ran the shell command above … </system>
    <bash-output>…</bash-output>
    <system>Command failed with exit code: 1.</system>      (when it failed, timed out, was cut)
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import msgspec

from kode_tui import masking
from kode_tui.humanize import one_line, plural
from kode_tui.message import ContentPart, FunctionBody, Message, TextPart, ToolCall, system
from kode_tui.pathnames import scrub_text
from kode_tui.tools import snapshots
from kode_tui.tools.base import ToolEnv, ToolOutput, count_lines
from kode_tui.tools.shell import MAX_TIMEOUT
from kode_tui.tools.toolset import Toolset
from kode_tui.wire import events as ev

if TYPE_CHECKING:
    from kode_tui.session import Context
    from kode_tui.wire.bus import WireBus

__all__ = [
    "SHELL_PREFIX",
    "ShellEscape",
    "ShellRecord",
    "read_record",
    "record",
    "shell_arguments",
    "typed_text",
]

SHELL_PREFIX = "!"
"""A prompt line starting with it is a shell command."""

TOOL_NAME = "Shell"

NOTE = (
    "The user ran the shell command above in the work dir themselves (kode-tui's `!` prefix); "
    "its output (stdout and stderr, merged) follows. It is context for what they ask next: "
    "do not act on it unless they ask you to."
)
_NOTE_TEXT = system(NOTE).text
_OUTPUT_OPEN = "<bash-output>"
_OUTPUT_CLOSE = "</bash-output>"
_SUCCESS = "Command executed successfully."


class ShellRecord(msgspec.Struct, frozen=True):
    """A `!` command as the context keeps it."""

    command: str
    output: str
    status: str
    """The Shell tool's message when it was not a plain success (exit code, timeout, cut)."""
    is_error: bool

    @property
    def arguments(self) -> str:
        """The Shell call's arguments, as the live call showed them."""
        return shell_arguments(self.command)

    def result(self) -> ev.ToolResult:
        """The result as the live call showed it, its brief made again from the record."""
        if not self.is_error:
            brief = f"{plural(count_lines(self.output), 'line')} of output" if self.output else ""
        elif code := re.search(r"exit code: (-?\d+)", self.status):
            brief = f"exit code {code.group(1)}"
        else:
            brief = one_line(self.status, 40)
        return ev.ToolResult(
            tool_call_id="",
            is_error=self.is_error,
            output=self.output,
            message=self.status or _SUCCESS,
            display=[ev.BriefBlock(text=brief or "no output")],
        )


def shell_arguments(command: str) -> str:
    """The Shell call a `!` command is: the command, with the longest timeout (the user is
    watching, and Esc stops it)."""
    return json.dumps({"command": command, "timeout": MAX_TIMEOUT}, ensure_ascii=False)


def record(command: str, result: ToolOutput) -> Message:
    """The user message that keeps `command` and its `result` in the context."""
    content: list[ContentPart] = [
        TextPart(text=f"{SHELL_PREFIX}{command}\n"),
        TextPart(text=_NOTE_TEXT),
        TextPart(text=f"{_OUTPUT_OPEN}{result.output}{_OUTPUT_CLOSE}"),
    ]
    if result.is_error or result.message != _SUCCESS:
        content.append(system(f"{'ERROR: ' if result.is_error else ''}{result.message}"))
    return Message(role="user", content=content)


def read_record(message: Message) -> ShellRecord | None:
    """The `!` command `message` keeps, if it is such a record (see `record`)."""
    content = message.content
    if message.role != "user" or not isinstance(content, list) or len(content) not in (3, 4):
        return None
    if not all(isinstance(part, TextPart) for part in content):
        return None
    texts = [part.text for part in content if isinstance(part, TextPart)]
    typed, note, output = texts[:3]
    if (
        note != _NOTE_TEXT
        or not typed.startswith(SHELL_PREFIX)
        or not typed.endswith("\n")
        or not output.startswith(_OUTPUT_OPEN)
        or not output.endswith(_OUTPUT_CLOSE)
    ):
        return None
    status = texts[3] if len(texts) == 4 else ""
    status = status.removeprefix("<system>").removesuffix("</system>")
    is_error = status.startswith("ERROR: ")
    return ShellRecord(
        command=typed[len(SHELL_PREFIX) : -1],
        output=output[len(_OUTPUT_OPEN) : -len(_OUTPUT_CLOSE)],
        status=status.removeprefix("ERROR: "),
        is_error=is_error,
    )


def typed_text(message: Message) -> str:
    """What the user typed for `message`: `!cmd` for a shell record, else its text."""
    found = read_record(message)
    return f"{SHELL_PREFIX}{found.command}" if found is not None else message.text


class ShellEscape:
    """Runs the user's `!` commands and keeps them in the context (see the module's doc).

    Its collaborators are the soul's: the `toolset` whose Shell tool runs the command in `env`
    (outside the sandbox), the `context` that keeps it, the `bus` that shows it.
    `system_prompt()` is what a fresh context starts with, `checkpoint()` marks a point the
    timeline can revert to (the command's own file changes come after it), `status()` the
    gauge's numbers to send once it is kept.
    """

    def __init__(
        self,
        *,
        bus: WireBus,
        context: Context,
        toolset: Toolset,
        env: ToolEnv,
        system_prompt: Callable[[], str | None],
        checkpoint: Callable[[], Awaitable[None]],
        status: Callable[[], ev.StatusUpdate],
    ) -> None:
        self._bus = bus
        self._context = context
        self._toolset = toolset
        self._env = env
        self._system_prompt = system_prompt
        self._checkpoint = checkpoint
        self._status = status

    async def run(self, command: str) -> bool:
        """Run `command` (without its `!`) as the user's shell command, without asking; whether
        it ran and was added to the context (False: no Shell tool, or a NUL byte). Cancelling
        it (Esc) stops the command's processes and adds nothing."""
        masking.refresh()  # as a turn does: a key set meanwhile is masked in the output
        command = scrub_text(command)
        self._bus.send(ev.TurnBegin(user_input=f"{SHELL_PREFIX}{command}"))
        try:
            return await self._run(command)
        finally:
            self._bus.send(ev.TurnEnd())

    async def _run(self, command: str) -> bool:
        bus, toolset, env = self._bus, self._toolset, self._env
        if TOOL_NAME not in toolset:
            bus.send(ev.Error(message="`!` runs commands with the Shell tool, which is off."))
            return False
        call = ToolCall(
            id=f"shell-escape-{secrets.token_hex(6)}",
            function=FunctionBody(name=TOOL_NAME, arguments=shell_arguments(command)),
        )
        bus.send(ev.ToolCall(id=call.id, function=call.function))
        prepared = toolset.prepare(call)
        try:
            if prepared.error is not None:  # a NUL byte: no command can hold one
                result, ran = prepared.error, False
            else:
                # The command's file changes are recorded after its checkpoint (`_keep`), so
                # that reverting to it undoes them; what changed before is someone else's.
                await snapshots.capture(env)
                bus.send(ev.ToolStarted(tool_call_id=call.id))
                result, ran = await toolset.run(prepared, env, snapshot=False), True
        except asyncio.CancelledError:
            bus.send(ev.StepInterrupted(reason="interrupted by the user"))
            await asyncio.shield(snapshots.capture(env, call.id))  # it may have changed some
            raise
        bus.send(result.event(call.id))
        if not ran:
            return False
        try:
            await asyncio.shield(self._keep(command, result, call.id))
        except OSError as error:
            bus.send(ev.Error(message=f"The command's output could not be saved: {error}"))
            return False
        bus.send(self._status())
        return True

    async def _keep(self, command: str, result: ToolOutput, call_id: str) -> None:
        """A checkpoint, so the timeline can take it back, then the command's file changes
        and its record; durable at once."""
        context = self._context
        system_prompt = self._system_prompt()
        if context.system_prompt is None and system_prompt:
            await context.write_system_prompt(system_prompt)
        await self._checkpoint()
        await snapshots.capture(self._env, call_id)
        await context.append_message(record(command, result))
        await context.sync()
