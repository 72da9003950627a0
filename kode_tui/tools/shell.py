"""Shell: runs one command in bash, in its own process group (DESIGN.md §6).

The whole group is killed on timeout and on cancellation (the user pressed Esc), so nothing the
command started keeps running behind the user's back; processes that left the group with `setsid`
are found and stopped too (`Escapees`). `kode_tui.tools.command_scope` names what
"approve for session" covers for a command.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import msgspec.structs
from pydantic import BaseModel, Field, model_validator

from kode_tui.gitcmd import find_program
from kode_tui.humanize import plural
from kode_tui.tools.background import JobEnd, TaskLog, format_task
from kode_tui.tools.base import (
    MAX_OUTPUT_CHARS,
    Permission,
    Tool,
    ToolEnv,
    ToolError,
    ToolOutput,
    count_lines,
)
from kode_tui.tools.sandbox import Confinement, Outcome, Sandboxed
from kode_tui.wire.events import ShellBlock

if TYPE_CHECKING:
    from kode_tui.tools.command_scope import CommandScope

MAX_TIMEOUT = 300
"""The longest a command may run, in seconds."""

MAX_BACKGROUND_TIMEOUT = 24 * 60 * 60
"""The longest a background command may run, in seconds (Kimi's)."""

KILL_GRACE = 2.0
"""Seconds between SIGTERM and SIGKILL when a process group is stopped."""

PIPE_GRACE = 0.5
"""Seconds the output may stay open after the shell exited (background jobs still writing)."""

MARKER_ENV = "KODE_TUI_SHELL_RUN"
"""Set in every command's environment to a value of its own, to find what it started."""


# --- running -------------------------------------------------------------------------------------


def _signal_group(pid: int, sig: signal.Signals) -> None:
    # Gone already, or (after a very unlikely pid reuse) not ours: nothing to stop.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def terminate_group(
    process: asyncio.subprocess.Process,
    *,
    grace: float | None = None,
    until: asyncio.Future[None] | None = None,
) -> None:
    """Stop a process started with `start_new_session=True` and everything in its group.

    SIGTERM to the group; up to `grace` seconds (default `KILL_GRACE`) for the process, and for
    `until` (e.g. "the output pipe closed", which means every writer is gone), to finish; then
    SIGKILL to the group, even when this wait is itself cancelled.
    """
    _signal_group(process.pid, signal.SIGTERM)
    waits: list[Awaitable[object]] = [process.wait()]
    if until is not None:
        waits.append(asyncio.shield(until))
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*waits), KILL_GRACE if grace is None else grace)
    finally:
        _signal_group(process.pid, signal.SIGKILL)
    await process.wait()


class OutputBuffer:
    """Keeps the first and the last `limit / 2` bytes of a stream, and how much was dropped."""

    def __init__(self, limit: int = MAX_OUTPUT_CHARS) -> None:
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            # Trimming only now and then keeps a chatty command from costing quadratic time.
            if len(self._tail) > 2 * self._tail_limit:
                del self._tail[: -self._tail_limit]

    @property
    def truncated(self) -> bool:
        return self.total > self._head_limit + self._tail_limit

    def text(self) -> str:
        """The output, with a marker where the middle was dropped."""
        if not self.truncated:
            return (self._head + self._tail).decode("utf-8", errors="replace")
        head = bytes(self._head)
        tail = bytes(self._tail[-self._tail_limit :])
        # Whole lines on both sides of the gap, when lines are not absurdly long.
        cut = head.rfind(b"\n")
        if cut > len(head) // 2:
            head = head[: cut + 1]
        cut = tail.find(b"\n")
        if 0 <= cut < len(tail) // 2:
            tail = tail[cut + 1 :]
        omitted = self.total - len(head) - len(tail)
        return (
            head.decode("utf-8", errors="replace")
            + f"\n[... {omitted} bytes of output omitted ...]\n"
            + tail.decode("utf-8", errors="replace")
        )


class _Collector(asyncio.Protocol):
    """Hands the command's output to `sink` (a buffer, a task's log); `closed` is set once no
    one writes."""

    def __init__(self, sink: Callable[[bytes], None], loop: asyncio.AbstractEventLoop) -> None:
        self.sink = sink
        self.closed: asyncio.Future[None] = loop.create_future()

    def data_received(self, data: bytes) -> None:
        self.sink(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


def shell_program() -> str:
    """The shell commands run in: bash, else /bin/sh."""
    # Never a `bash` the work dir holds (an empty or `.` PATH entry is the command's cwd).
    return find_program("bash") or "/bin/sh"


def _environment(marker: str) -> dict[str, str]:
    env = dict(os.environ)
    # stdin is /dev/null: git must fail at once instead of waiting for a password.
    env.setdefault("GIT_TERMINAL_PROMPT", "0")
    env[MARKER_ENV] = marker
    return env


class Escapees:
    """The processes of one command that may have left its process group (`setsid`).

    Killing the group cannot reach them, so they are found on Linux through /proc: by the marker
    every process the command starts inherits in its environment, or by holding the command's
    output pipe (which covers a process that cleared its environment). Each is signalled through
    a pidfd opened before it is checked, so a recycled pid is never hit. Where /proc or pidfds
    are missing (macOS), nothing is found.
    """

    def __init__(
        self, pipe_inode: int | None, prefix: str = "", *, whole_prefix: bool = False
    ) -> None:
        """The processes of one command (`pipe_inode`: its output pipe), or, with `whole_prefix`,
        of every command whose marker starts with `prefix` (one Shell tool's commands)."""
        self.marker = f"{prefix}{secrets.token_hex(8)}"
        self._entry = f"{MARKER_ENV}={prefix if whole_prefix else self.marker}".encode()
        self._whole_prefix = whole_prefix
        self._pipe = f"pipe:[{pipe_inode}]" if pipe_inode is not None else None

    def signal(self, sig: signal.Signals) -> int:
        """Send `sig` to every process of the command that still runs; how many there were."""
        if not hasattr(os, "pidfd_open"):
            return 0
        candidates = self._candidates()
        for pid in candidates:
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                if self._belongs(pid):
                    signal.pidfd_send_signal(fd, sig)
            except OSError:
                pass  # gone meanwhile
            finally:
                os.close(fd)
        return len(candidates)

    def count(self) -> int:
        """How many of the processes still run."""
        return len(self._candidates())

    def _candidates(self) -> list[int]:
        me, uid = os.getpid(), os.getuid()
        try:
            entries = list(os.scandir("/proc"))
        except OSError:
            return []
        found: list[int] = []
        for entry in entries:
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                if entry.stat().st_uid == uid and self._belongs(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
        return found

    def _belongs(self, pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/environ", "rb") as file:
                entries = file.read().split(b"\0")
            if self._whole_prefix:
                return any(entry.startswith(self._entry) for entry in entries)
            if self._entry in entries:
                return True
            if self._pipe is None:
                return False
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            return False
        for fd in fds:
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == self._pipe:
                    return True
        return False


async def _stop_command(
    process: asyncio.subprocess.Process, closed: asyncio.Future[None], escapees: Escapees
) -> None:
    """Stop the command's process group and every process of it that left the group."""
    escapees.signal(signal.SIGTERM)  # first, so a pipe they hold can close within the grace
    try:
        await terminate_group(process, until=closed)
    finally:
        escapees.signal(signal.SIGKILL)


class ShellParams(BaseModel):
    command: str = Field(description="The bash command to run.")
    timeout: int = Field(
        default=60,
        ge=1,
        le=MAX_BACKGROUND_TIMEOUT,
        description=(
            f"Seconds the command may run before it is killed; at most {MAX_TIMEOUT} "
            f"({MAX_BACKGROUND_TIMEOUT} in the background). Defaults to 60."
        ),
    )
    run_in_background: bool = Field(
        default=False, description="Whether to run the command as a background task."
    )
    description: str = Field(
        default="",
        description=(
            "A short description for the background task. Required when run_in_background=true."
        ),
    )

    @model_validator(mode="after")
    def _background_fields(self) -> Self:
        # Kimi CLI 1.52's checks and words.
        if self.run_in_background and not self.description.strip():
            raise ValueError("description is required when run_in_background is true")
        if not self.run_in_background and self.timeout > MAX_TIMEOUT:
            raise ValueError(
                f"timeout must be <= {MAX_TIMEOUT}s for foreground commands; "
                f"use run_in_background=true for longer timeouts (up to {MAX_BACKGROUND_TIMEOUT}s)"
            )
        return self


class Shell(Tool[ShellParams]):
    """Runs a bash command in the work dir and returns its combined output."""

    name = "Shell"
    description = (
        "Run a bash command in the working directory and get its stdout and stderr, merged. "
        "Every call starts a fresh shell: `cd`, variables and other state do not carry over, so "
        "chain related steps with `&&` (e.g. `cd sub && make`). The command gets no input (stdin "
        "is empty), so never run interactive programs, and it is killed, with every process it "
        f"started, after `timeout` seconds (default 60, at most {MAX_TIMEOUT}). A process left "
        "running in the background (`cmd &`) is stopped when the command ends unless its output "
        "goes to a file (`cmd > log 2>&1 &`); even then it is stopped when the session ends. "
        "Long output keeps its beginning and end. A "
        "non-zero exit code is reported as an error with the output. Prefer ReadFile, Glob, "
        "Grep, WriteFile and StrReplaceFile over cat, find, grep, echo > and sed. Avoid "
        "commands that need superuser rights or change files outside the working directory "
        "unless asked to. For a long-running command (a server, a watcher, a long build) set "
        "`run_in_background` with a short `description`: it starts as a background task and "
        "returns its task_id at once (timeout up to "
        f"{MAX_BACKGROUND_TIMEOUT}s); you are notified when it ends, TaskOutput reads its "
        "output and TaskStop stops it."
    )
    params = ShellParams

    SANDBOXED = (
        " Commands run in a sandbox: outside the working directory and /tmp the file system is "
        "read-only (in yolo mode writable), there is no network unless the user allows it, "
        "files that make tools run code (.git/, .envrc, .vscode/, …) cannot be written, and "
        "every process a command starts stops when it ends, background jobs too. When a "
        "command fails because of the sandbox, the user may be asked to run it outside."
    )
    """Added to the description when the model's commands run in the sandbox."""

    def __init__(self, *, sandboxed: bool = False) -> None:
        # Every command of this tool (one session) carries it in its marker, so what they left
        # running in the background can be found and stopped when the session closes.
        self._prefix = f"{secrets.token_hex(4)}-"
        self._sandboxed = sandboxed

    def schema(self) -> dict[str, Any]:
        schema = super().schema()
        if self._sandboxed:
            schema["function"]["description"] += self.SANDBOXED
        return schema

    async def close(self) -> None:
        """Stop every process this tool's commands left running (`cmd > log &`, `setsid`): a
        background job lives as long as the session, not longer (Linux; see `Escapees`)."""
        leftovers = Escapees(None, self._prefix, whole_prefix=True)
        if not await asyncio.to_thread(leftovers.signal, signal.SIGTERM):
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + KILL_GRACE
        while loop.time() < deadline and (await asyncio.to_thread(leftovers.count)) > 0:
            await asyncio.sleep(0.05)
        await asyncio.to_thread(leftovers.signal, signal.SIGKILL)

    async def permission(self, params: ShellParams, env: ToolEnv) -> Permission | None:
        scope = await asyncio.to_thread(_scope_of, params.command, env.work_dir)
        return Permission(
            kind="shell",
            # Kimi's action; the scope is the command's, as it does the same in the background.
            action="run background command" if params.run_in_background else "run command",
            description=params.command,
            scope=scope.key,
            scope_label=scope.label,
            outside_work_dir=scope.outside,
            display=[ShellBlock(command=params.command)],
            always_ask=scope.reason,
        )

    async def run(self, params: ShellParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        if not params.command.strip():
            raise ToolError("Command cannot be empty.", brief="Empty command")
        if params.run_in_background:
            return self._start_background(params, env, tool_call_id)
        buffer = OutputBuffer()
        ran = await self._execute(params.command, params.timeout, env, buffer.add)
        result = _result(params, ran.returncode, buffer, ran.timed_out, ran.stopped_leftovers)
        if env.sandbox is None or ran.outcome is None:
            return result
        return _sandboxed(result, env.sandbox, ran.outcome)

    def _start_background(self, params: ShellParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        """Start the command as a background task (Kimi's result, `_background_ok`)."""
        if env.tasks is None:
            raise ToolError(
                "Background tasks are not available here.", brief="Background task unavailable"
            )

        async def job(log: TaskLog) -> JobEnd:
            ran = await self._execute(params.command, params.timeout, env, log.write)
            notes = _background_notes(ran, params.timeout)
            if notes:
                log.write(f"\n[{notes}]\n")
            if ran.timed_out:
                return JobEnd(
                    exit_code=ran.returncode,
                    failure_reason=f"Command killed by timeout ({params.timeout}s)",
                    timed_out=True,
                )
            return JobEnd(exit_code=ran.returncode)

        try:
            view = env.tasks.start(
                "bash",
                params.description.strip(),
                job,
                command=params.command,
                tool_call_id=tool_call_id,
                timeout_s=params.timeout,
            )
        except (RuntimeError, OSError) as error:
            raise ToolError(
                f"Failed to start background task: {error}", brief="Start failed"
            ) from error
        lines = [
            format_task(view, include_command=True),
            "automatic_notification: true",
            "next_step: You will be automatically notified when it completes.",
            "next_step: Use TaskOutput with this task_id for a non-blocking status/output "
            "snapshot. Only set block=true when you intentionally want to wait.",
            "next_step: Use TaskStop only if the task must be cancelled.",
            "human_shell_hint: For users in the interactive shell, the task-management slash "
            "command is /tasks.",
        ]
        return ToolOutput(
            output="\n".join(lines), message="Background task started", brief=f"Started {view.id}"
        )

    async def _execute(
        self, command: str, timeout: int, env: ToolEnv, sink: Callable[[bytes], None]
    ) -> _Ran:
        """Run `command` (in the sandbox when `env` says so), its output to `sink`."""
        confinement = env.sandbox
        argv = [shell_program(), "-c", command]
        # The output pipe is ours, not asyncio's: Process.wait() then returns when the shell
        # exits, even while a background job holds the pipe, and closing it is up to us.
        read_fd, write_fd = os.pipe()
        escapees = Escapees(os.fstat(read_fd).st_ino, self._prefix)
        environment = _environment(escapees.marker)
        sandboxed: Sandboxed | None = None
        try:
            if confinement is not None:
                sandboxed = await confinement.sandbox.prepare(
                    confinement.profile, argv, env.work_dir, environment
                )
                argv, environment = sandboxed.argv, sandboxed.env
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=env.work_dir,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as error:
            os.close(read_fd)
            if sandboxed is not None and confinement is not None:
                await confinement.sandbox.finish(sandboxed)
            raise ToolError(
                f"Could not start the shell: {error.strerror or error}.", brief="Not started"
            ) from error
        except BaseException:
            os.close(read_fd)
            if sandboxed is not None and confinement is not None:
                await asyncio.shield(confinement.sandbox.finish(sandboxed))
            raise
        finally:
            os.close(write_fd)
        loop = asyncio.get_running_loop()
        collector = _Collector(sink, loop)
        transport: asyncio.BaseTransport | None = None
        outcome: Outcome | None = None
        try:
            transport, _ = await loop.connect_read_pipe(
                lambda: collector, os.fdopen(read_fd, "rb", buffering=0)
            )
            timed_out, stopped_leftovers = await self._wait(
                process, collector.closed, timeout, escapees
            )
        except asyncio.CancelledError:
            await _stop_command(process, collector.closed, escapees)
            raise
        finally:
            # A process that left the group (setsid) may still hold the pipe: stop listening.
            if transport is not None:
                transport.close()
            # Also when interrupted: what the command created must not stay behind.
            if sandboxed is not None and confinement is not None:
                outcome = await asyncio.shield(confinement.sandbox.finish(sandboxed))
        return _Ran(process.returncode, timed_out, stopped_leftovers, outcome)

    @staticmethod
    async def _wait(
        process: asyncio.subprocess.Process,
        closed: asyncio.Future[None],
        timeout: int,
        escapees: Escapees,
    ) -> tuple[bool, bool]:
        """Wait for the shell to exit and its output to end.

        Returns whether the command timed out, and whether processes it left in the background
        were stopped because they still held its output open. Either way the whole command
        stops, including processes that left its group with `setsid`.
        """
        try:
            await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            await _stop_command(process, closed, escapees)
            return True, False
        try:
            await asyncio.wait_for(asyncio.shield(closed), PIPE_GRACE)
        except TimeoutError:
            await _stop_command(process, closed, escapees)
            return False, True
        return False, False


class _Ran(msgspec.Struct, frozen=True):
    """How one command ended."""

    returncode: int | None
    timed_out: bool
    stopped_leftovers: bool
    outcome: Outcome | None
    """What the sandbox did (None: not run in it)."""


def _background_notes(ran: _Ran, timeout: int) -> str:
    """What a background command's log ends with besides its output: how it was stopped and
    what the sandbox took away (a foreground command's result says it in its message)."""
    notes: list[str] = []
    if ran.timed_out:
        notes.append(f"Command killed by timeout ({timeout}s).")
    if ran.stopped_leftovers:
        notes.append(
            "Processes the command left in the background were stopped because they kept its "
            "output open."
        )
    if ran.outcome is not None and ran.outcome.refused:
        names = ", ".join(refused.path for refused in ran.outcome.refused)
        notes.append(f"The sandbox took away what the command created at protected paths: {names}.")
    return " ".join(notes)


def _sandboxed(result: ToolOutput, confinement: Confinement, outcome: Outcome) -> ToolOutput:
    """`result` with what the sandbox did: protected paths it took away, and why the command
    may have failed because of it (the soul offers to run it outside for that reason)."""
    notes: list[str] = []
    if outcome.refused:
        names = ", ".join(refused.path for refused in outcome.refused)
        notes.append(
            f"The sandbox took away what the command created at protected paths (files that "
            f"can make tools run code): {names}. They were moved out of the work dir."
        )
    blocked = confinement.sandbox.blocked(
        confinement.profile, result.output, result.is_error, outcome
    )
    if blocked:
        notes.append(f"It ran in kode-tui's sandbox, and {blocked}.")
    if not notes:
        return result
    brief = f"{result.brief} · stopped by the sandbox" if blocked else result.brief
    return msgspec.structs.replace(
        result, message=" ".join([result.message, *notes]), brief=brief, blocked=blocked
    )


def _result(
    params: ShellParams,
    returncode: int | None,
    buffer: OutputBuffer,
    timed_out: bool,
    stopped_leftovers: bool,
) -> ToolOutput:
    output = buffer.text()
    notes: list[str] = []
    if buffer.truncated:
        notes.append(
            f"Output truncated: it was {buffer.total} bytes; the beginning and the end are "
            "shown, the middle is omitted."
        )
    if stopped_leftovers:
        notes.append(
            "Processes the command left in the background were stopped because they kept its "
            "output open; redirect their output (`cmd > log 2>&1 &`) to keep them running."
        )
    if timed_out:
        message = (
            f"Command timed out after {params.timeout}s and was killed, with every process it "
            "started; the output so far is shown."
        )
        return ToolOutput(
            output=output,
            message=" ".join([message, *notes]),
            brief=f"timed out after {params.timeout}s",
            is_error=True,
        )
    if returncode == 0:
        brief = f"{plural(count_lines(output), 'line')} of output" if output else "no output"
        return ToolOutput(
            output=output,
            message=" ".join(["Command executed successfully.", *notes]),
            brief=brief,
        )
    message = f"Command failed with exit code: {returncode}."
    if returncode is not None and returncode < 0:
        with contextlib.suppress(ValueError):
            message += f" It was killed by signal {signal.Signals(-returncode).name}."
    return ToolOutput(
        output=output,
        message=" ".join([message, *notes]),
        brief=f"exit code {returncode}",
        is_error=True,
    )


def _scope_of(command: str, work_dir: Path) -> CommandScope:
    # The command-scope tables load at the first command, in its thread, not with the tool set
    # (~7 ms before the first request).
    from kode_tui.tools.command_scope import scope_of

    return scope_of(command, work_dir)
