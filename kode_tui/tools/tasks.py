"""TaskList, TaskOutput and TaskStop: the model's view of its background tasks, with Kimi CLI
1.52's names, parameters and result forms (`kode_tui.tools.background` runs the tasks).

TaskList and TaskOutput only read (no permission: they run in plan mode); TaskStop asks, as
Kimi's does, with a permission that is no read ("stop background task"), so plan mode refuses
it.
"""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

from pydantic import BaseModel, Field

from kode_tui.tools.background import (
    BackgroundTasks,
    TaskView,
    format_task,
    format_task_list,
)
from kode_tui.tools.base import Permission, Tool, ToolEnv, ToolError, ToolOutput

OUTPUT_PREVIEW_BYTES = 32 << 10
"""The tail of a task's output TaskOutput shows (Kimi's)."""

READ_HINT_LINES = 300


def _tasks(env: ToolEnv) -> BackgroundTasks:
    if env.tasks is None:
        raise ToolError(
            "Background tasks can only be managed by the root agent.",
            brief="Background task unavailable",
        )
    return env.tasks


def _task(env: ToolEnv, task_id: str) -> tuple[BackgroundTasks, TaskView]:
    tasks = _tasks(env)
    view = tasks.get(task_id)
    if view is None:
        raise ToolError(f"Task not found: {task_id}", brief="Task not found")
    return tasks, view


class TaskListParams(BaseModel):
    active_only: bool = Field(
        default=True, description="Whether to list only non-terminal background tasks."
    )
    limit: int = Field(default=20, ge=1, le=100, description="Maximum number of tasks to return.")


class TaskList(Tool[TaskListParams]):
    name = "TaskList"
    description = (
        "List background tasks from the current session.\n\n"
        "Use this when you need to re-enumerate which background tasks still exist, especially "
        "after context compaction or when you are no longer confident which task IDs are still "
        "active.\n\nGuidelines:\n\n"
        "- Prefer the default `active_only=true` unless you specifically need completed or "
        "failed tasks.\n"
        "- Use `TaskOutput` to inspect one task in detail after you have identified the correct "
        "task ID.\n"
        "- Do not guess which tasks are still running when you can call this tool directly.\n"
        "- This tool is read-only and safe to use in plan mode."
    )
    params = TaskListParams

    async def run(self, params: TaskListParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        views = _tasks(env).list_tasks(active_only=params.active_only, limit=params.limit)
        return ToolOutput(
            output=format_task_list(views, active_only=params.active_only),
            message="Task list retrieved.",
            brief=f"{len(views)} task{'' if len(views) == 1 else 's'}",
        )


class TaskOutputParams(BaseModel):
    task_id: str = Field(description="The background task ID to inspect.")
    block: bool = Field(
        default=False, description="Whether to wait for the task to finish before returning."
    )
    timeout: int = Field(
        default=30, ge=0, le=3600, description="Maximum number of seconds to wait when block=true."
    )


class TaskOutput(Tool[TaskOutputParams]):
    name = "TaskOutput"
    description = (
        "Retrieve output from a running or completed background task.\n\n"
        "Use this after `Shell(run_in_background=true)` when you need to inspect progress or "
        "explicitly wait for completion.\n\nGuidelines:\n"
        "- Prefer relying on automatic completion notifications. Use this tool only when you "
        "need task output before the automatic notification arrives.\n"
        "- By default this tool is non-blocking and returns a current status/output snapshot.\n"
        "- Use `block=true` only when you intentionally want to wait for completion or timeout.\n"
        "- This tool returns structured task metadata, a fixed-size output preview, and an "
        "`output_path` for the full log.\n"
        "- When the preview is truncated, use `ReadFile` with the returned `output_path` to "
        "inspect the full log in pages.\n"
        "- This tool works with the generic background task system and should remain the "
        "primary read path for future task types, not just bash."
    )
    params = TaskOutputParams

    async def run(self, params: TaskOutputParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        tasks, view = _task(env, params.task_id)
        if params.block:
            view = await tasks.wait(params.task_id, params.timeout)
        retrieval = "success" if view.ended else ("timeout" if params.block else "not_ready")
        text, size, preview = tasks.read_tail(params.task_id, OUTPUT_PREVIEW_BYTES)
        return ToolOutput(
            output=_format_output(view, retrieval, text.rstrip("\n"), size, preview),
            message=(
                "Task snapshot retrieved."
                if not params.block and retrieval == "not_ready"
                else "Task output retrieved."
            ),
            brief=f"{view.id} {view.status}",
        )


def _format_output(view: TaskView, retrieval: str, output: str, size: int, preview: int) -> str:
    """TaskOutput's result (Kimi's `_format_task_output`)."""
    path = str(view.output_path)
    truncated = size > preview
    lines = [
        f"retrieval_status: {retrieval}",
        f"task_id: {view.id}",
        f"kind: {view.kind}",
        f"status: {view.status}",
        f"description: {view.description}",
    ]
    if view.command:
        lines.append(f"command: {view.command}")
    lines += [
        f"interrupted: {str(view.interrupted).lower()}",
        f"timed_out: {str(view.timed_out).lower()}",
        f"terminal_reason: {'timed_out' if view.timed_out else view.status}",
    ]
    if view.exit_code is not None:
        lines.append(f"exit_code: {view.exit_code}")
    if view.failure_reason:
        lines.append(f"reason: {view.failure_reason}")
    hint = (
        f'full_output_hint: Use ReadFile(path="{path}", line_offset=1, n_lines={READ_HINT_LINES}) '
        "to inspect the full log. Increase line_offset to continue paging through the file."
        if size > 0
        else "full_output_hint: No output file is currently available for this task."
    )
    shown = output or "[no output available]"
    if truncated:
        shown = f"[Truncated. Full output: {path}]\n\n{shown}"
    lines += [
        "",
        f"output_path: {path}",
        f"output_size_bytes: {size}",
        f"output_preview_bytes: {preview}",
        f"output_truncated: {str(truncated).lower()}",
        "",
        f"full_output_available: {str(size > 0).lower()}",
        "full_output_tool: ReadFile",
        hint,
        "",
        "[output]",
        shown,
    ]
    return "\n".join(lines)


class TaskStopParams(BaseModel):
    task_id: str = Field(description="The background task ID to stop.")
    reason: str = Field(
        default="Stopped by TaskStop",
        description="Short reason recorded when the task is stopped.",
    )


class TaskStop(Tool[TaskStopParams]):
    name = "TaskStop"
    description = (
        "Stop a running background task.\n\n"
        "Use this only when a background task must be cancelled. For normal task completion, "
        "prefer waiting for the automatic notification or using `TaskOutput`.\n\nGuidelines:\n"
        "- This is a generic task stop capability, not a bash-specific kill tool.\n"
        "- Use it sparingly because stopping a task is destructive and may leave partial side "
        "effects.\n"
        "- If the task is already complete, this tool will simply return its current state."
    )
    params = TaskStopParams

    async def permission(self, params: TaskStopParams, env: ToolEnv) -> Permission | None:
        if env.tasks is None or env.tasks.get(params.task_id) is None:
            return None  # run() says why nothing happens
        return Permission(
            kind="other",
            action="stop background task",
            description=f"Stop background task `{params.task_id}`",
            scope="task-stop",
            scope_label="stopping background tasks",
        )

    async def run(self, params: TaskStopParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        tasks, _ = _task(env, params.task_id)
        view = await tasks.stop(params.task_id, params.reason.strip() or "Stopped by TaskStop")
        return ToolOutput(
            output=format_task(view, include_command=True),
            message="Task stop requested.",
            brief=f"{view.id} {view.status}",
        )
