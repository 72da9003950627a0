"""Background tasks: one session's jobs that run while the model goes on (Kimi CLI 1.52's).

A job is a coroutine run by this process's event loop (no worker process of its own), with a
description and an output file, `<session dir>/tasks/<id>/output.log` beside Kimi's `spec.json`
and `runtime.json` (Kimi's store layout, so a Kimi CLI that opens the session lists them).
`Shell(run_in_background=true)` starts a `bash` job; `TaskList`, `TaskOutput` and `TaskStop`
(`kode_tui.tools.tasks`) read and stop them; `/tasks` shows them.

The manager, `BackgroundTasks`, belongs to the agent (`kode_tui.soul.agent`): tools reach it as
`ToolEnv.tasks`, the soul takes `take_ended()` before each step to tell the model (Kimi's
notification message, `notification_text`), and `close()` stops what still runs when the session
closes. Its API for any kind of job:

- `start(kind, description, job, *, command="", tool_call_id="") -> TaskView`: runs
  `job(log)` in the background and returns at once. `log` is the task's `TaskLog` (`write()`
  text or bytes, `path`). The job returns a `JobEnd` (exit code, failure, timed out); raising
  an exception fails the task with its text; the task is `killed` when stopped (the job is
  cancelled: it must stop what it started, as a tool's run() does on Esc). A later `agent` kind
  (a background subagent) starts through the same call with `kind="agent"`, and shows in
  TaskList, TaskOutput, TaskStop and `/tasks` like a command.
- `get(id)`, `list_tasks(active_only=, limit=)`, `wait(id, timeout)`, `stop(id, reason)`,
  `tail(id, ...)`, `read_tail(id, max_bytes)`, `owns_output(path)`, `close()`.

Each change of a task's status is sent on the wire as `BackgroundTaskUpdate`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal, cast, get_args

import msgspec.structs

from kode_tui import masking
from kode_tui.fsutil import atomic_write_json, make_private_dir
from kode_tui.message import Message, TextPart
from kode_tui.wire.bus import WireBus
from kode_tui.wire.events import BackgroundTaskUpdate

log = logging.getLogger(__name__)

TaskKind = Literal["bash", "agent"]
TaskStatus = Literal[
    "created", "starting", "running", "awaiting_approval", "completed", "failed", "killed", "lost"
]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "killed", "lost"})
"""Statuses of a task that has ended (Kimi's)."""
_STATUSES: frozenset[str] = frozenset(get_args(TaskStatus))

MAX_RUNNING = 4
"""How many tasks may run at once (Kimi's `background.max_running_tasks` default)."""

NOTIFICATION_TAIL_LINES = 20
NOTIFICATION_TAIL_CHARS = 3_000
"""How much of its output the model is told when a task ends (Kimi's defaults)."""

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def new_task_id(kind: TaskKind) -> str:
    """`bash-` or `agent-` and eight characters of [0-9a-z], as Kimi names tasks."""
    return f"{kind}-{''.join(secrets.choice(_ALPHABET) for _ in range(8))}"


class TaskView(msgspec.Struct, frozen=True):
    """One task as it is now."""

    id: str
    kind: TaskKind
    description: str
    output_path: Path
    command: str = ""
    tool_call_id: str = ""
    status: TaskStatus = "created"
    created_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    failure_reason: str = ""
    interrupted: bool = False
    timed_out: bool = False

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL


class JobEnd(msgspec.Struct, frozen=True):
    """How a job ended: `failed` when the exit code is not 0 or a failure is named."""

    exit_code: int | None = None
    failure_reason: str = ""
    timed_out: bool = False


class TaskLog:
    """The output file of one task (appended to as the job runs)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("ab", buffering=0)
        self.size = 0

    def write(self, data: bytes | str) -> None:
        chunk = data.encode("utf-8", errors="replace") if isinstance(data, str) else data
        # A full disk loses output, never the job (this runs in the output pipe's callback).
        with contextlib.suppress(OSError):
            self._file.write(chunk)
            self.size += len(chunk)

    def close(self) -> None:
        self._file.close()


Job = Callable[[TaskLog], Awaitable[JobEnd]]
"""A background job: does its work writing to the log, and says how it ended."""


class BackgroundTasks:
    """The background tasks of one session (see the module's docstring)."""

    def __init__(
        self,
        directory: Path,
        *,
        bus: WireBus | None = None,
        session_id: str = "",
        max_running: int = MAX_RUNNING,
    ) -> None:
        """`directory`: the session's `tasks/` folder (created on the first task)."""
        self.directory = directory
        self._bus = bus
        self._session_id = session_id
        self._max_running = max_running
        self._views: dict[str, TaskView] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._untold: list[str] = []
        self._closed = False
        self._recover()

    def _recover(self) -> None:
        """Take in the tasks an earlier run of the session left (ours or Kimi CLI's), as Kimi's
        own recover() does when a session goes on, so TaskList, TaskOutput and `/tasks` still
        see them. One that was running then is `lost`: no job outlives the process that ran it
        (Kimi marks its dead workers so too). Its files are left as they are."""
        try:
            folders = sorted(self.directory.iterdir())
        except OSError:  # no task yet
            return
        for folder in folders:
            view = _stored_view(folder)
            if view is not None:
                self._views[view.id] = view

    # --- starting --------------------------------------------------------------------------------

    def start(
        self,
        kind: TaskKind,
        description: str,
        job: Job,
        *,
        command: str = "",
        tool_call_id: str = "",
        timeout_s: int | None = None,
    ) -> TaskView:
        """Run `job` in the background; its view, `running` already. Raises RuntimeError when
        too many tasks run or the session is closing."""
        if self._closed:
            raise RuntimeError("The session is closing.")
        if len(self._running) >= self._max_running:
            raise RuntimeError("Too many background tasks are already running.")
        task_id = new_task_id(kind)
        folder = self.directory / task_id
        make_private_dir(folder)
        now = time.time()
        view = TaskView(
            id=task_id,
            kind=kind,
            description=description,
            output_path=folder / "output.log",
            command=command,
            tool_call_id=tool_call_id,
            status="running",
            created_at=now,
            started_at=now,
        )
        atomic_write_json(
            folder / "spec.json",
            {
                "version": 1,
                "id": task_id,
                "kind": kind,
                "session_id": self._session_id,
                "description": description,
                "tool_call_id": tool_call_id,
                "owner_role": "root",
                "created_at": now,
                "command": command or None,
                "timeout_s": timeout_s,
            },
        )
        output = TaskLog(view.output_path)
        self._set(view)
        runner = asyncio.create_task(self._run(task_id, job, output), name=f"task {task_id}")
        self._running[task_id] = runner
        return view

    async def _run(self, task_id: str, job: Job, output: TaskLog) -> None:
        try:
            end = await job(output)
        except asyncio.CancelledError:
            reason = self._views[task_id].failure_reason or "Stopped"
            self._finish(task_id, "killed", failure_reason=reason, interrupted=True)
            raise
        except Exception as error:  # a job's bug fails its task, never the session
            log.exception("background task %s failed", task_id)
            self._finish(task_id, "failed", failure_reason=f"{type(error).__name__}: {error}")
        else:
            failed = end.timed_out or bool(end.failure_reason) or end.exit_code not in (0, None)
            self._finish(
                task_id,
                "failed" if failed else "completed",
                exit_code=end.exit_code,
                failure_reason=end.failure_reason,
                timed_out=end.timed_out,
            )
        finally:
            output.close()
            self._running.pop(task_id, None)

    def _finish(
        self,
        task_id: str,
        status: TaskStatus,
        *,
        exit_code: int | None = None,
        failure_reason: str = "",
        interrupted: bool = False,
        timed_out: bool = False,
    ) -> None:
        view = msgspec.structs.replace(
            self._views[task_id],
            status=status,
            finished_at=time.time(),
            exit_code=exit_code,
            failure_reason=failure_reason,
            interrupted=interrupted,
            timed_out=timed_out,
        )
        self._set(view)
        self._untold.append(task_id)

    def _set(self, view: TaskView) -> None:
        self._views[view.id] = view
        with contextlib.suppress(OSError):  # the in-memory view is what counts here
            atomic_write_json(
                view.output_path.parent / "runtime.json",
                {
                    "status": view.status,
                    "started_at": view.started_at,
                    "updated_at": time.time(),
                    "finished_at": view.finished_at,
                    "exit_code": view.exit_code,
                    "interrupted": view.interrupted,
                    "timed_out": view.timed_out,
                    "failure_reason": view.failure_reason or None,
                },
            )
        if self._bus is not None:
            self._bus.send(
                BackgroundTaskUpdate(
                    task_id=view.id,
                    kind=view.kind,
                    status=view.status,
                    description=masking.mask(view.description),
                    exit_code=view.exit_code,
                )
            )

    # --- reading ---------------------------------------------------------------------------------

    def get(self, task_id: str) -> TaskView | None:
        return self._views.get(task_id)

    def list_tasks(self, *, active_only: bool = True, limit: int = 20) -> list[TaskView]:
        """The tasks, newest first (Kimi's order)."""
        views = sorted(self._views.values(), key=lambda view: view.created_at, reverse=True)
        if active_only:
            views = [view for view in views if not view.ended]
        return views[:limit]

    async def wait(self, task_id: str, timeout: float) -> TaskView:
        """The task once it ended, or as it is after `timeout` seconds."""
        runner = self._running.get(task_id)
        if runner is not None:
            # wait(), not wait_for(): the task is left running, and only the waiter's own
            # cancellation (Esc) is raised here, not the task's being stopped.
            await asyncio.wait({runner}, timeout=timeout)
        return self._views[task_id]

    def read_tail(self, task_id: str, max_bytes: int) -> tuple[str, int, int]:
        """The last `max_bytes` of the output as text; the file's size and the bytes read."""
        path = self._views[task_id].output_path
        try:
            with path.open("rb") as file:
                size = file.seek(0, os.SEEK_END)
                start = max(0, size - max_bytes)
                file.seek(start)
                data = file.read(size - start)
        except OSError:
            return "", 0, 0
        return data.decode("utf-8", errors="replace"), size, len(data)

    def tail(
        self,
        task_id: str,
        max_bytes: int = NOTIFICATION_TAIL_CHARS,
        max_lines: int = NOTIFICATION_TAIL_LINES,
    ) -> str:
        """The output's last lines (Kimi's `tail_output`)."""
        text, _, _ = self.read_tail(task_id, max_bytes)
        return "\n".join(text.splitlines()[-max_lines:])

    def owns_output(self, path: Path) -> bool:
        """Whether `path` is the output file of one of these tasks (ReadFile reads it without
        asking, as TaskOutput tells the model to)."""
        real = os.path.realpath(path)
        return any(
            real == str(view.output_path) and not view.output_path.is_symlink()
            for view in self._views.values()
        )

    # --- ending ----------------------------------------------------------------------------------

    async def stop(self, task_id: str, reason: str) -> TaskView:
        """Stop the task (its job is cancelled and stops what it started); its view after. A task
        that has ended is left as it was."""
        runner = self._running.get(task_id)
        if runner is None:
            return self._views[task_id]
        self._views[task_id] = msgspec.structs.replace(self._views[task_id], failure_reason=reason)
        runner.cancel()
        await asyncio.wait({runner})
        return self._views[task_id]

    def take_ended(self) -> list[TaskView]:
        """The tasks that ended since the last call, to tell the model once of each."""
        untold, self._untold = self._untold, []
        return [self._views[task_id] for task_id in untold]

    async def close(self) -> None:
        """The session closes: every task still running is stopped."""
        self._closed = True
        for task_id in list(self._running):
            await self.stop(task_id, "Stopped because the session closed")


def _stored_view(folder: Path) -> TaskView | None:
    """The task kept in `folder` (its `spec.json` and `runtime.json`), or None when it holds
    none we can read: a task's files are the session's, which may come from anywhere."""
    if folder.is_symlink() or not folder.is_dir():
        return None
    try:
        spec = json.loads((folder / "spec.json").read_text(encoding="utf-8"))
        runtime = json.loads((folder / "runtime.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(spec, dict) or not isinstance(runtime, dict):
        return None
    kind, status = spec.get("kind"), runtime.get("status")
    if kind not in ("bash", "agent") or status not in _STATUSES:
        return None
    failure = _text(runtime.get("failure_reason"))
    if status not in TERMINAL:
        status, failure = "lost", "The session that ran it ended before it did"
    exit_code = runtime.get("exit_code")
    if isinstance(exit_code, bool) or not isinstance(exit_code, int):
        exit_code = None
    return TaskView(
        id=folder.name,
        kind=cast(TaskKind, kind),
        description=_text(spec.get("description")),
        output_path=folder / "output.log",
        command=_text(spec.get("command")),
        tool_call_id=_text(spec.get("tool_call_id")),
        status=cast(TaskStatus, status),
        created_at=_seconds(spec.get("created_at")) or 0.0,
        started_at=_seconds(runtime.get("started_at")),
        finished_at=_seconds(runtime.get("finished_at")),
        exit_code=exit_code,
        failure_reason=failure,
        interrupted=runtime.get("interrupted") is True,
        timed_out=runtime.get("timed_out") is True,
    )


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _seconds(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def format_task(view: TaskView, *, include_command: bool = False) -> str:
    """One task in lines, as Kimi's tools show it (`format_task`)."""
    lines = [
        f"task_id: {view.id}",
        f"kind: {view.kind}",
        f"status: {view.status}",
        f"description: {view.description}",
    ]
    if include_command and view.command:
        lines.append(f"command: {view.command}")
    if view.exit_code is not None:
        lines.append(f"exit_code: {view.exit_code}")
    if view.failure_reason:
        lines.append(f"reason: {view.failure_reason}")
    return "\n".join(lines)


def format_task_list(views: list[TaskView], *, active_only: bool = True) -> str:
    """Tasks in numbered blocks under a count (Kimi's `format_task_list`)."""
    header = "active_background_tasks" if active_only else "background_tasks"
    if not views:
        return f"{header}: 0\n[no tasks]"
    lines = [f"{header}: {len(views)}", ""]
    for index, view in enumerate(views, start=1):
        lines.extend([f"[{index}]", format_task(view, include_command=True), ""])
    return "\n".join(lines).rstrip()


def notifications(tasks: BackgroundTasks) -> list[Message]:
    """The user messages telling the model of each task that ended since it was last told."""
    return [
        Message(role="user", content=[TextPart(text=notification_text(view, tasks.tail(view.id)))])
        for view in tasks.take_ended()
    ]


def notification_text(view: TaskView, tail: str) -> str:
    """What the model is told of a task that ended (Kimi's notification message), masked."""
    reason = "timed_out" if view.timed_out else view.status
    severity, title = {
        "completed": ("success", "completed"),
        "timed_out": ("error", "timed out"),
        "failed": ("error", "failed"),
        "killed": ("warning", "stopped"),
        "lost": ("warning", "lost"),
    }.get(reason, ("info", "updated"))
    status = f"Status: {view.status}"
    details = []
    if view.finished_at is not None:
        label = "Completed at" if reason == "completed" else "Finished at"
        details.append(
            f"{label}: {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(view.finished_at))}"
        )
    if view.finished_at is not None and view.started_at is not None:
        details.append(f"Duration: {_elapsed(view.finished_at - view.started_at)}")
    if details:
        status += f" ({', '.join(details)})"
    body = [f"Task ID: {view.id}", status, f"Description: {view.description}"]
    if reason != view.status:
        body.append(f"Terminal reason: {reason}")
    if view.exit_code is not None:
        body.append(f"Exit code: {view.exit_code}")
    if view.failure_reason:
        body.append(f"Failure reason: {view.failure_reason}")
    lines = [
        f'<notification id="n{secrets.token_hex(4)}" category="task" type="task.{reason}" '
        f'source_kind="background_task" source_id="{view.id}">',
        f"Title: Background task {title}: {view.description}",
        f"Severity: {severity}",
        *body,
        "<task-notification>",
        f"Task ID: {view.id}",
        f"Task Type: {view.kind}",
        f"Description: {view.description}",
        f"Status: {view.status}",
    ]
    if view.exit_code is not None:
        lines.append(f"Exit code: {view.exit_code}")
    if view.failure_reason:
        lines.append(f"Failure reason: {view.failure_reason}")
    if tail:
        lines.extend(["Output tail:", tail])
    lines += ["</task-notification>", "</notification>"]
    return masking.mask("\n".join(lines))


def _elapsed(seconds: float) -> str:
    """Kimi's `format_elapsed`: `<1s`, `5s`, `1m 30s`, `1h 1m 1s`."""
    if seconds < 1:
        return "<1s"
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"
