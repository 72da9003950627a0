"""SetTodoList: the agent's todo list, kept in the session's state.json (Kimi CLI 1.52's
`SetTodoList`, which kode-tui called `TodoWrite` before and still answers to)."""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

import json
from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel, Field, ValidationError

from kode_tui.message import Message
from kode_tui.session.state import TodoItem, TodoStatus
from kode_tui.tools.base import Tool, ToolEnv, ToolOutput
from kode_tui.wire.events import TodoBlock
from kode_tui.wire.events import TodoItem as TodoDisplayItem
from kode_tui.wire.readings import TODO_LISTS


class Todo(BaseModel):
    title: str = Field(description="What to do, in a few words.", min_length=1)
    status: TodoStatus = Field(description="pending, in_progress or done.")


class TodoParams(BaseModel):
    todos: list[Todo] | None = Field(
        default=None,
        description=(
            "The whole updated list (it replaces the previous one). Omit it to read the current "
            "list; pass [] to clear it."
        ),
    )


class SetTodoList(Tool[TodoParams]):
    # Offered under Kimi's name only: a session written here then works in Kimi CLI, and one
    # tool under two names would double its definition's tokens and leave the model choosing.
    # `TodoWrite` (older kode-tui sessions' calls, which a model repeats) still runs it.
    name: ClassVar[str] = "SetTodoList"
    aliases: ClassVar[tuple[str, ...]] = ("TodoWrite",)
    description: ClassVar[str] = (
        "Keep a todo list for a task with several steps, so you and the user can see the plan "
        "and the progress. Pass the whole list each time: it replaces the previous one. Mark an "
        "item in_progress when you start it and done as soon as it is finished; keep one item "
        "in_progress at a time. Do not use it for a question or a task of one or two steps. "
        "Omit `todos` to read the current list."
    )
    params = TodoParams

    async def run(self, params: TodoParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        if params.todos is None:
            if not env.state.todos:
                return ToolOutput(output="Todo list is empty.")
            lines = ["Current todo list:"]
            lines += [f"- [{todo.status}] {todo.title}" for todo in env.state.todos]
            return ToolOutput(output="\n".join(lines), display=[_block(env.state.todos)])
        env.state.todos = [TodoItem(title=todo.title, status=todo.status) for todo in params.todos]
        if env.save_state is not None:
            await env.save_state()
        done = sum(todo.status == "done" for todo in params.todos)
        return ToolOutput(
            output="Todo list updated",
            message="Todo list updated",
            brief=f"{done}/{len(params.todos)} done" if params.todos else "cleared",
            display=[_block(env.state.todos)],
        )


def _block(todos: list[TodoItem]) -> TodoBlock:
    return TodoBlock(items=[TodoDisplayItem(title=t.title, status=t.status) for t in todos])


def todos_in(history: Sequence[Message]) -> list[TodoItem]:
    """The todo list the conversation `history` left: the one its last todo call (under either
    name) that set a list gave (empty when none did). After a revert, the session's list is this
    one again."""
    for message in reversed(history):
        for call in reversed(message.tool_calls or ()):
            if call.function.name not in TODO_LISTS:
                continue
            try:
                params = TodoParams.model_validate(json.loads(call.function.arguments or "{}"))
            except (ValueError, ValidationError, RecursionError):
                continue  # a call the tool refused changed nothing
            if params.todos is not None:
                return [TodoItem(title=todo.title, status=todo.status) for todo in params.todos]
    return []
