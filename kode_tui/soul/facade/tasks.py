"""The facade's background tasks (`/tasks`, `AgentSession.tasks`): the session's tasks, their
output as a person may see it (masked), and stopping one."""

from __future__ import annotations

from kode_tui import masking
from kode_tui.soul.facade.live import Live
from kode_tui.tools.background import TaskView

__all__ = ["TaskView", "Tasks", "task_line"]

VIEW_TAIL_BYTES = 64 << 10
"""How much of a task's output the view shows (its end)."""


class Tasks:
    """The background tasks of the running agent, newest first (none without one)."""

    def __init__(self, live: Live) -> None:
        self._live = live

    def views(self) -> list[TaskView]:
        soul = self._live.running
        tasks = soul.env.tasks if soul is not None else None
        return tasks.list_tasks(active_only=False, limit=100) if tasks is not None else []

    def output(self, task_id: str) -> str:
        """The end of the task's output, keys masked (empty when there is none)."""
        soul = self._live.running
        tasks = soul.env.tasks if soul is not None else None
        if tasks is None or tasks.get(task_id) is None:
            return ""
        text, _, _ = tasks.read_tail(task_id, VIEW_TAIL_BYTES)
        return masking.mask(text)

    async def stop(self, task_id: str) -> TaskView | None:
        """Stop the task (the user did); its view after, None when there is no such task."""
        soul = self._live.running
        tasks = soul.env.tasks if soul is not None else None
        if tasks is None or tasks.get(task_id) is None:
            return None
        return await tasks.stop(task_id, "Stopped by the user")


def task_line(view: TaskView) -> str:
    """A task in a line: `bash-1a2b3c4d  running  tests (pytest -q)`."""
    status = view.status if view.exit_code is None else f"{view.status} ({view.exit_code})"
    command = f": {' '.join(view.command.split())}" if view.command else ""
    return f"{view.id}  {status}  {view.description}{command}"
