"""Hooks: commands of the user's config run at points of a session (`[[hooks]]`, issue 18).

Each entry names an event, and for tool events a `matcher` (a regular expression the whole tool
name must match). Its `command` is the user's own command line from the user's own config
(kode-tui reads no project config), run as Claude Code runs it: by bash (else /bin/sh) `-c`, in
the work dir, in a process group of its own that is killed whole at `timeout`. What the model, a
tool or the user typed never goes into that command line: it reaches the hook only as JSON on
stdin, with these fields (Claude Code's names):

- every event: `hook_event_name`, `session_id`, `cwd`, `transcript_path` (the context.jsonl);
- `PreToolUse`: `tool_name`, `tool_input` (the arguments as an object), `tool_use_id`;
- `PostToolUse`: the same and `tool_response`: `{output, message, is_error}`;
- `UserPromptSubmit`: `prompt`;  `Stop`: `stop_reason` (`done`, `rejected`, `max_steps`, `error`);
- `PreCompact`: `trigger` (`auto`, `manual`), `strategy`, `custom_instructions`, `tokens_before`;
- `PostCompact`: `trigger`, `strategy`, `tokens_before`, `tokens_after`, `rotated_file`, `edited`;
- `SessionStart`: `source` (`startup`, `resume`, `clear`);
- `SubagentStart`: `agent_name` (its type, what a matcher matches), `prompt` (500 characters);
  `SubagentStop`: `agent_name`, `response` (its summary, 500 characters) (Kimi 1.52's).

A subagent runs the tool hooks for its calls; the turn and session hooks are the parent's.

Its environment is kode-tui's, with `KODE_TUI_PROJECT_DIR` set to the work dir. A command the
user runs with `!` is the user's own, not a tool call of the model's: no hook runs for it.

Exit 0 goes on; for UserPromptSubmit and SessionStart the hook's stdout goes to the model with
every request of the next turn, as a `<system-reminder>` (never written to context.jsonl).
Exit 2 blocks where something can be blocked: PreToolUse rejects the call (the model reads the
hook's stderr as the reason, and the turn goes on), UserPromptSubmit keeps the prompt from being
sent, PreCompact keeps the context as it is. Any other exit, exit 2 of an event that cannot
block, a timeout or a command that does not start is a warning: the work goes on. The hooks of
one event run one after the other, in the config's order; the first that blocks stops the rest.
Every run is sent as a `HookRan` event: the conversation shows it folded, wire.kode.jsonl keeps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from kode_tui.config import MATCHED_HOOK_EVENTS, TOOL_HOOK_EVENTS, HookConfig, HookEvent
from kode_tui.humanize import one_line
from kode_tui.message import ToolCall
from kode_tui.soul.reminders import Reminder
from kode_tui.tools.base import ToolOutput
from kode_tui.tools.shell import PIPE_GRACE, OutputBuffer, shell_program, terminate_group
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev

log = logging.getLogger(__name__)

BLOCK_EXIT = 2
"""The exit status with which a hook blocks what it was run for."""

OUTPUT_CHARS = 10_000
"""What is kept of each of a hook's stdout and stderr (its beginning and end)."""

CAN_BLOCK: frozenset[str] = frozenset({"PreToolUse", "UserPromptSubmit", "PreCompact"})
ADDS_CONTEXT: frozenset[str] = frozenset({"UserPromptSubmit", "SessionStart"})

SessionSource = Literal["startup", "resume", "clear"]
SUBAGENT_TEXT_CHARS = 500
"""How much of a subagent's prompt and answer its hooks get (Kimi's cut)."""


class HookOutcome(msgspec.Struct, frozen=True):
    """What the hooks of one event decided."""

    blocked: bool = False
    reason: str = ""
    """The blocking hook's stderr (or, when it wrote none, what it was)."""
    context: tuple[str, ...] = ()
    """The stdout of the hooks that added context (UserPromptSubmit, SessionStart)."""


class CompactionBlocked(Exception):
    """A PreCompact hook blocked the compaction: nothing changed."""


def blocked_call(reason: str) -> ToolOutput:
    """The result the model reads for a call a PreToolUse hook blocked."""
    return ToolOutput(
        message=f"The tool call was blocked by a PreToolUse hook. Reason: {reason}",
        brief="Blocked by a hook",
        is_error=True,
    )


class Hooks:
    """The configured hooks of one session's agent; with none configured it does nothing."""

    def __init__(
        self,
        hooks: Sequence[HookConfig] = (),
        *,
        bus: WireBus | None = None,
        work_dir: Path | None = None,
        session_id: str = "",
        transcript: Path | None = None,
    ) -> None:
        self._hooks = tuple(hooks)
        self._bus = bus
        self._work_dir = work_dir or Path.cwd()
        self._base = {
            "session_id": session_id,
            "cwd": str(self._work_dir),
            "transcript_path": str(transcript) if transcript is not None else "",
        }
        self._pending: list[str] = []
        """SessionStart output waiting for the next turn."""
        self.turn_reminders: list[Reminder] = []
        """The hooks' context of the running turn: it goes with each of its requests."""
        self._starting: asyncio.Task[None] | None = None

    def for_subagent(self, bus: WireBus, transcript: Path) -> Hooks:
        """The hooks of a subagent's calls: the tool hooks only (its turns are the parent's
        `Agent` call, whose turn hooks ran), their runs sent on the subagent's `bus`."""
        tool_hooks = [hook for hook in self._hooks if hook.event in TOOL_HOOK_EVENTS]
        return Hooks(
            tool_hooks,
            bus=bus,
            work_dir=self._work_dir,
            session_id=self._base["session_id"],
            transcript=transcript,
        )

    def matching(self, event: HookEvent, tool_name: str = "") -> list[HookConfig]:
        """The hooks to run for `event` (of the tool or subagent type `tool_name`), in the
        config's order."""
        return [
            hook
            for hook in self._hooks
            if hook.event == event
            and (
                event not in MATCHED_HOOK_EVENTS
                or hook.matcher in (None, "*")
                or re.fullmatch(hook.matcher, tool_name) is not None
            )
        ]

    async def run(
        self,
        event: HookEvent,
        fields: Mapping[str, Any],
        *,
        tool_name: str = "",
        tool_call_id: str = "",
    ) -> HookOutcome:
        """Run the hooks of `event` with `fields` added to their stdin JSON."""
        hooks = self.matching(event, tool_name)
        if not hooks:
            return HookOutcome()
        data = json.dumps({**self._base, "hook_event_name": event, **fields}, ensure_ascii=False)
        context: list[str] = []
        for hook in hooks:
            ran = await self._run_one(hook, data.encode("utf-8", "replace"), tool_call_id)
            if self._bus is not None:
                self._bus.send(ran)
            if ran.outcome == "blocked":
                reason = ran.stderr.strip() or f"the hook `{hook.command}` exited with code 2"
                return HookOutcome(True, reason, tuple(context))
            if ran.outcome == "ok" and event in ADDS_CONTEXT and ran.stdout.strip():
                context.append(ran.stdout.strip())
        return HookOutcome(context=tuple(context))

    async def _run_one(self, hook: HookConfig, data: bytes, tool_call_id: str) -> ev.HookRan:
        started = time.monotonic()
        stdout, stderr = OutputBuffer(OUTPUT_CHARS), OutputBuffer(OUTPUT_CHARS)
        code: int | None = None
        note = ""
        try:
            code = await _execute(hook, self._work_dir, data, stdout, stderr)
            if code is None:
                note = f"timed out after {hook.timeout:g} s and was killed"
        except OSError as error:
            note = f"could not start: {error.strerror or error}"
        outcome: Literal["ok", "blocked", "warning"] = "ok"
        if code == BLOCK_EXIT and hook.event in CAN_BLOCK:
            outcome = "blocked"
            note = "blocked: " + one_line(stderr.text().strip() or "(no reason given)", 200)
        elif code != 0:
            outcome = "warning"
            note = note or f"exit code {code}"
        if outcome == "warning":
            log.warning("the %s hook `%s`: %s", hook.event, hook.command, note)
        return ev.HookRan(
            hook_event=hook.event,
            command=hook.command,
            exit_code=code,
            duration_s=round(time.monotonic() - started, 3),
            outcome=outcome,
            note=note,
            stdout=stdout.text(),
            stderr=stderr.text(),
            tool_call_id=tool_call_id,
        )

    # --- the points of a session the soul and the facade call -----------------------------------

    def start_session(self, source: SessionSource) -> None:
        """Run the SessionStart hooks in the background; the next turn waits for them."""
        if not self.matching("SessionStart"):
            return
        previous = self._starting  # a `/clear` soon after the start: one after the other

        async def start() -> None:
            if previous is not None:
                await previous
            outcome = await self.run("SessionStart", {"source": source})
            self._pending.extend(outcome.context)

        self._starting = asyncio.ensure_future(start())

    async def begin_turn(self, prompt: str) -> HookOutcome:
        """Before a turn: the SessionStart hooks still running, then the UserPromptSubmit ones.
        Unless they block, what they added to the context goes with the turn's requests."""
        starting, self._starting = self._starting, None
        if starting is not None:
            await starting
        outcome = await self.run("UserPromptSubmit", {"prompt": prompt})
        if outcome.blocked:
            self.turn_reminders = []
            return outcome
        texts, self._pending = [*self._pending, *outcome.context], []
        self.turn_reminders = [
            Reminder("hook", f"hook:{index}", text) for index, text in enumerate(texts)
        ]
        return outcome

    async def before_tool(self, call: ToolCall) -> ToolOutput | None:
        """The PreToolUse hooks of `call`: the result the model reads when one blocks it."""
        fields = {
            "tool_name": call.function.name,
            "tool_input": _input(call),
            "tool_use_id": call.id,
        }
        outcome = await self.run(
            "PreToolUse", fields, tool_name=call.function.name, tool_call_id=call.id
        )
        return blocked_call(outcome.reason) if outcome.blocked else None

    async def after_tool(self, call: ToolCall, result: ToolOutput) -> None:
        """The PostToolUse hooks of `call`, given its result."""
        response = {"output": result.output, "message": result.message, "is_error": result.is_error}
        fields = {
            "tool_name": call.function.name,
            "tool_input": _input(call),
            "tool_use_id": call.id,
            "tool_response": response,
        }
        await self.run("PostToolUse", fields, tool_name=call.function.name, tool_call_id=call.id)

    async def subagent_start(self, agent_type: str, prompt: str) -> None:
        """The SubagentStart hooks of a subagent of `agent_type` about to work on `prompt`."""
        fields = {"agent_name": agent_type, "prompt": prompt[:SUBAGENT_TEXT_CHARS]}
        await self.run("SubagentStart", fields, tool_name=agent_type)

    async def subagent_stop(self, agent_type: str, response: str) -> None:
        """The SubagentStop hooks of a subagent of `agent_type` that answered `response`."""
        fields = {"agent_name": agent_type, "response": response[:SUBAGENT_TEXT_CHARS]}
        await self.run("SubagentStop", fields, tool_name=agent_type)

    async def close(self) -> None:
        """Stop SessionStart hooks still running (their process groups are killed)."""
        starting, self._starting = self._starting, None
        if starting is not None:
            starting.cancel()
            with contextlib.suppress(BaseException):
                await starting


def _input(call: ToolCall) -> Any:
    """The call's arguments as an object; as the string the model wrote when not JSON."""
    arguments = call.function.arguments or "{}"
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _environment(work_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["KODE_TUI_PROJECT_DIR"] = str(work_dir)
    return env


async def _execute(
    hook: HookConfig, work_dir: Path, data: bytes, stdout: OutputBuffer, stderr: OutputBuffer
) -> int | None:
    """Run `hook` with `data` on its stdin; its exit status, None when it timed out (its
    process group is killed then, and on cancellation). OSError when it cannot start."""
    process = await asyncio.create_subprocess_exec(
        shell_program(),
        "-c",
        hook.command,
        cwd=work_dir,
        env=_environment(work_dir),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None

    async def feed(writer: asyncio.StreamWriter) -> None:
        # A hook that does not read its stdin may exit before it is written: that is fine.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            writer.write(data)
            await writer.drain()
            writer.close()

    async def collect(reader: asyncio.StreamReader, buffer: OutputBuffer) -> None:
        while chunk := await reader.read(65536):
            buffer.add(chunk)

    tasks = [
        asyncio.ensure_future(feed(process.stdin)),
        asyncio.ensure_future(collect(process.stdout, stdout)),
        asyncio.ensure_future(collect(process.stderr, stderr)),
    ]
    try:
        async with asyncio.timeout(hook.timeout):
            code = await process.wait()
        try:
            await asyncio.wait_for(asyncio.gather(*tasks[1:]), PIPE_GRACE)
        except TimeoutError:  # what it left in the background holds its output open
            await terminate_group(process, grace=0)
        return code
    except TimeoutError:
        await terminate_group(process)
        return None
    except asyncio.CancelledError:
        await terminate_group(process)
        raise
    finally:
        for task in tasks:
            task.cancel()
