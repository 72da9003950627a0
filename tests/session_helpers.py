"""Helpers shared by the context tests."""

from __future__ import annotations

import json
from pathlib import Path

from kode_tui.message import FunctionBody, Message, TextPart, ThinkPart, ToolCall
from kode_tui.session import Session
from kode_tui.session.context import Context


def records_on_disk(directory: Path) -> set[bytes]:
    """Every non-blank line of the live context and of its rotations."""
    lines: set[bytes] = set()
    for path in [directory / "context.jsonl", *directory.glob("context_*.jsonl")]:
        if path.exists():
            lines.update(line for line in path.read_bytes().splitlines() if line.strip())
    return lines


def dumps(messages: object) -> list[str]:
    return [message.to_json() for message in messages]  # type: ignore[attr-defined]


def user(text: str) -> Message:
    return Message(role="user", content=text)


def assistant_with_tool_call(call_id: str, command: str) -> Message:
    return Message(
        role="assistant",
        content=[ThinkPart(think="I should look."), TextPart(text="Running it.")],
        tool_calls=[
            ToolCall(
                id=call_id,
                function=FunctionBody(name="Shell", arguments=json.dumps({"command": command})),
            )
        ],
    )


def tool_result(call_id: str, output: str) -> Message:
    return Message(role="tool", content=output, tool_call_id=call_id)


async def write_turns(context: Context, turns: int, *, start: int = 0) -> None:
    """Turns shaped like the soul's: checkpoint, user, checkpoint, assistant + tool, usage."""
    for turn in range(start, start + turns):
        await context.checkpoint()
        await context.append_message(user(f"turn {turn}"))
        await context.checkpoint()
        await context.update_token_count(100 * turn + 50)
        await context.append_message(
            [assistant_with_tool_call(f"call_{turn}", "ls"), tool_result(f"call_{turn}", "a.py")]
        )
        await context.update_token_count(100 * turn + 90)


async def session_with_turns(tmp_path: Path, turns: int) -> tuple[Path, Session]:
    """A work dir `tmp_path/project` and a closed session of it holding `turns` turns."""
    project = tmp_path / "project"
    project.mkdir()
    session = await Session.create(project)
    async with Context(session.context_file) as context:
        await write_turns(context, turns)
    return project, session
