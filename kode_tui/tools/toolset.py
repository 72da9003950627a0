"""The tools one agent has, and the steps of one call: parse, ask what it needs, run, report.

Nothing a model sends can crash the loop: invalid JSON, arguments of the wrong shape, an unknown
tool, a `ToolError` and even a tool's own bug all come back as an error result the model reads.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from kode_tui.message import ContentPart, Message, TextPart, ToolCall, system
from kode_tui.tools.base import Permission, Tool, ToolEnv, ToolError, ToolOutput

log = logging.getLogger(__name__)

MASK = "***"

REJECTED = (
    "The tool call is rejected by the user. "
    "Stop what you are doing and wait for the user to tell you how to proceed."
)


def rejected(feedback: str | None = None) -> ToolOutput:
    """Kimi's result for a call the user rejected (with their feedback, when they gave some)."""
    if feedback:
        return ToolOutput(
            message=f"The tool call is rejected by the user. User feedback: {feedback}",
            brief=f"Rejected: {feedback}",
            is_error=True,
        )
    return ToolOutput(message=REJECTED, brief="Rejected by user", is_error=True)


@dataclass(frozen=True, slots=True)
class PreparedCall:
    """A tool call whose arguments were checked: either a tool and its params, or an error."""

    call: ToolCall
    tool: Tool[Any] | None = None
    params: BaseModel | None = None
    error: ToolOutput | None = None


class Toolset:
    def __init__(self, tools: Iterable[Tool[Any]]) -> None:
        self._tools = {tool.name: tool for tool in tools}

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema() for tool in self._tools.values()]

    def prepare(self, call: ToolCall) -> PreparedCall:
        name = call.function.name
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return _failed(
                call, f"Tool `{name}` not found. The tools are: {known}.", "no such tool"
            )
        raw = call.function.arguments or "{}"
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError as error:
            return _failed(call, f"Error parsing JSON arguments: {error}.", "invalid arguments")
        if not isinstance(arguments, dict):
            return _failed(call, "The arguments must be a JSON object.", "invalid arguments")
        field = _nul_field(arguments)
        if field is not None:
            # No path, pattern or command can hold one: the OS would refuse it deep in the tool.
            return _failed(
                call,
                f"Invalid arguments for {name}: `{field}` contains a NUL byte, which no path, "
                "pattern, command or text file may hold.",
                "NUL byte in arguments",
            )
        try:
            params = tool.params.model_validate(arguments)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in error.errors()
            )
            return _failed(call, f"Invalid arguments for {name}: {problems}.", "invalid arguments")
        return PreparedCall(call, tool, params)

    async def permission(self, prepared: PreparedCall, env: ToolEnv) -> Permission | None:
        """What the call needs allowed; a ToolError here is reported by `run` instead."""
        assert prepared.tool is not None and prepared.params is not None
        try:
            return await prepared.tool.permission(prepared.params, env)
        except ToolError:
            return None  # nothing will happen: run() raises the same error for the model

    async def run(self, prepared: PreparedCall, env: ToolEnv) -> ToolOutput:
        """The call's result; an API key in it (`env` printed by Shell, a .env file read) is
        masked, so it never reaches the model or context.jsonl."""
        result = await self._run(prepared, env)
        if any(secret in result.output or secret in result.message for secret in env.secrets):
            output, message = result.output, result.message
            for secret in env.secrets:
                output = output.replace(secret, MASK)
                message = message.replace(secret, MASK)
            result = dataclasses.replace(result, output=output, message=message)
        return result

    async def _run(self, prepared: PreparedCall, env: ToolEnv) -> ToolOutput:
        if prepared.error is not None:
            return prepared.error
        assert prepared.tool is not None and prepared.params is not None
        try:
            return await prepared.tool.run(prepared.params, env, prepared.call.id)
        except ToolError as error:
            return ToolOutput(
                output=error.output, message=error.message, brief=error.brief, is_error=True
            )
        except Exception as error:
            log.exception("tool %s failed", prepared.tool.name)
            return ToolOutput(
                message=(
                    f"{type(error).__name__}: {error}\n"
                    "This is an unexpected error and the tool is probably not working."
                ),
                brief="tool failed",
                is_error=True,
            )


def _nul_field(value: object, where: str = "") -> str | None:
    """The name of the first argument (`edit.0.old`) whose text holds a NUL byte, if any."""
    if isinstance(value, str):
        return (where or "arguments") if "\0" in value else None
    items: Iterable[tuple[object, object]] = ()
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    for key, item in items:
        found = _nul_field(item, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None


def _failed(call: ToolCall, message: str, brief: str) -> PreparedCall:
    return PreparedCall(call, error=ToolOutput(message=message, brief=brief, is_error=True))


def tool_message(tool_call_id: str, result: ToolOutput) -> Message:
    """The tool message the model reads, in Kimi's form: `<system>status</system>` + output."""
    content: list[ContentPart] = []
    if result.is_error:
        content.append(system(f"ERROR: {result.message}"))
    elif result.message:
        content.append(system(result.message))
    if result.output:
        content.append(TextPart(text=result.output))
    if not content:
        content.append(system("Tool output is empty."))
    return Message(role="tool", content=content, tool_call_id=tool_call_id)
