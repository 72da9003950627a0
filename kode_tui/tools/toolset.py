"""The tools one agent has, and the steps of one call: parse, ask what it needs, run, report.

Nothing a model sends can crash the loop: invalid JSON, arguments of the wrong shape, an unknown
tool, a `ToolError` and even a tool's own bug all come back as an error result the model reads.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

import msgspec.structs
from pydantic import BaseModel, ValidationError

from kode_tui import masking
from kode_tui.message import ContentPart, Message, TextPart, ToolCall, system, tool_status
from kode_tui.pathnames import escape_name, scrub_text
from kode_tui.tools import snapshots
from kode_tui.tools.base import Permission, Tool, ToolEnv, ToolError, ToolOutput
from kode_tui.wire.events import BriefBlock, DisplayBlock

log = logging.getLogger(__name__)

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


class PreparedCall(msgspec.Struct, frozen=True):
    """A tool call whose arguments were checked: either a tool and its params, or an error."""

    call: ToolCall
    tool: Tool[Any] | None = None
    params: BaseModel | None = None
    error: ToolOutput | None = None


class ToolSource(Protocol):
    """Tools that come and go while the agent runs (an MCP server's, once it is connected)."""

    def tools(self) -> Sequence[Tool[Any]]:
        """The tools offered now."""
        ...

    async def ready(self) -> None:
        """Return once the tools still being found are there (or gave up)."""
        ...

    def missing(self, name: str) -> str | None:
        """Why the tool `name` is not offered, when it is one of the source's."""
        ...

    async def close(self) -> None:
        """Stop whatever serves the tools."""
        ...


class Toolset:
    def __init__(
        self,
        tools: Iterable[Tool[Any]],
        sources: Sequence[ToolSource] = (),
        takes_images: Callable[[], bool] | None = None,
    ) -> None:
        self._static = {tool.name: tool for tool in tools}
        self._aliases = {alias: tool for tool in self._static.values() for alias in tool.aliases}
        self.sources = list(sources)
        self.takes_images = takes_images
        """Whether the model takes images now (None: it does); the tools that need them are
        offered only then (`Tool.needs_images`)."""

    @property
    def _tools(self) -> dict[str, Tool[Any]]:
        if not self.sources:
            return self._static
        tools = dict(self._static)
        for source in self.sources:
            tools.update((tool.name, tool) for tool in source.tools() if tool.name not in tools)
        return tools

    def __contains__(self, name: object) -> bool:
        return name in self._tools or name in self._aliases

    async def ready(self) -> None:
        """Wait for the tools of every source still starting (a request offers them)."""
        for source in self.sources:
            await source.ready()

    async def close(self) -> None:
        """Let every tool stop what its calls left running (processes in the background)."""
        for tool in self._static.values():
            await tool.close()
        for source in self.sources:
            await source.close()

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def tools(self) -> list[Tool[Any]]:
        """The tools offered now."""
        images = self.takes_images is None or self.takes_images()
        return [tool for tool in self._tools.values() if images or not tool.needs_images]

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema() for tool in self.tools()]

    def prepare(self, call: ToolCall) -> PreparedCall:
        name = call.function.name
        tools = self._tools
        tool = tools.get(name) or self._aliases.get(name)
        if tool is None:
            known = ", ".join(tools) or "none"
            why = next(filter(None, (source.missing(name) for source in self.sources)), "")
            return _failed(
                call,
                f"Tool `{name}` not found. {why + ' ' if why else ''}The tools are: {known}.",
                "no such tool",
            )
        raw = call.function.arguments or "{}"
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError as error:
            return _failed(call, f"Error parsing JSON arguments: {error}.", "invalid arguments")
        except RecursionError:
            return _failed(call, "The arguments are nested too deeply.", "invalid arguments")
        if not isinstance(arguments, dict):
            return _failed(call, "The arguments must be a JSON object.", "invalid arguments")
        try:
            field = _nul_field(arguments)
        except RecursionError:
            return _failed(call, "The arguments are nested too deeply.", "invalid arguments")
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
        await _restore_masked(prepared, env)
        assert prepared.tool is not None and prepared.params is not None
        try:
            permission = await prepared.tool.permission(prepared.params, env)
        except ToolError:
            return None  # nothing will happen: run() raises the same error for the model
        except Exception as error:
            # A bug, or a path the system refuses to look at: never a reason to let the call
            # through unasked. It asks, showing the call as the model sent it.
            log.exception("the approval check of %s failed", prepared.tool.name)
            permission = _unchecked(prepared, error)
        return None if permission is None else _encodable_permission(permission)

    async def run(
        self, prepared: PreparedCall, env: ToolEnv, *, snapshot: bool = True
    ) -> ToolOutput:
        """The call's result; an API key in it (`env` printed by Shell, a .env file read) is
        masked, so it never reaches the model or context.jsonl. A Shell call is run between two
        snapshots of the work dir, which record what it did to files (`snapshots`), unless the
        caller takes them itself (`snapshot=False`)."""
        running = self._run(prepared, env)
        if snapshot and prepared.tool is not None and prepared.tool.name == snapshots.SHELL:
            running = snapshots.around(env, prepared.call.id, running)
        result = _encodable(await running)
        output, message = masking.mask(result.output), masking.mask(result.message)
        if output is not result.output or message is not result.message:
            result = msgspec.structs.replace(result, output=output, message=message)
        return result

    async def _run(self, prepared: PreparedCall, env: ToolEnv) -> ToolOutput:
        if prepared.error is not None:
            return prepared.error
        await _restore_masked(prepared, env)
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


async def _restore_masked(prepared: PreparedCall, env: ToolEnv) -> None:
    """A file writer's call with each `[masked: NAME]` turned back into the key, where the file
    it writes already holds that key: a model that rewrites a `.env` it read masked keeps the
    key in it, but cannot plant a key in a file that did not have it.

    The call's own params object is updated, not replaced: `permission` and `run` must see the
    same one, as what a tool's permission() notes on it (the file content the approval showed,
    for the "changed since" check) is what its run() checks.
    """
    tool, params, raw = prepared.tool, prepared.params, prepared.call.function.arguments or ""
    if tool is None or params is None or not tool.restores_masked or "[masked: " not in raw:
        return
    path = getattr(params, "path", None)
    if not isinstance(path, str):
        return
    held = await asyncio.to_thread(_text_of, env.resolve(path))
    restored = masking.unmask_json(raw, only_in=held)
    if restored == raw:
        return
    try:
        unmasked = tool.params.model_validate_json(restored)
    except ValidationError:
        return
    for name in type(params).model_fields:
        setattr(params, name, getattr(unmasked, name))


_RESTORE_LIMIT = 1 << 20


def _text_of(path: Path) -> str:
    """The start of the file at `path` (a .env is small); empty when there is none or it is no
    regular file (a FIFO would block)."""
    try:
        if not path.is_file():
            return ""
        with path.open("rb") as file:
            return file.read(_RESTORE_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _encodable(result: ToolOutput) -> ToolOutput:
    """`result` with every lone surrogate shown as `\\xHH` (`kode_tui.pathnames.scrub_text`).

    A path that is not UTF-8 in a message (`caf\\xe9.txt` does not exist) would otherwise break
    the context file, the wire log and every later request.
    """
    output, message, brief = (scrub_text(t) for t in (result.output, result.message, result.brief))
    display = [_encodable_block(block) for block in result.display]
    if (
        output is result.output
        and message is result.message
        and brief is result.brief
        and all(new is old for new, old in zip(display, result.display, strict=True))
    ):
        return result
    return msgspec.structs.replace(
        result, output=output, message=message, brief=brief, display=display
    )


def _encodable_permission(permission: Permission) -> Permission:
    """`permission` as text that can be shown, logged and kept in state.json.

    A path that is not UTF-8 appears escaped; the scope (a session approval's key) with
    `escape_name`, which is lossless, so two folders never share one approval.
    """
    display = [_encodable_block(block) for block in permission.display]
    return msgspec.structs.replace(
        permission,
        action=scrub_text(permission.action),
        description=scrub_text(permission.description),
        scope=escape_name(permission.scope),
        scope_label=scrub_text(permission.scope_label),
        display=display,
    )


def _encodable_block(block: DisplayBlock) -> DisplayBlock:
    # scrub_text returns the very string it was given when there is nothing to change.
    update = {
        name: clean
        for name, value in block
        if isinstance(value, str) and (clean := scrub_text(value)) is not value
    }
    return block.model_copy(update=update) if update else block


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


def _unchecked(prepared: PreparedCall, error: Exception) -> Permission:
    """The approval of a call whose own check failed: it asks every time, arguments shown."""
    assert prepared.tool is not None
    name = prepared.tool.name
    arguments = prepared.call.function.arguments or "{}"
    return Permission(
        kind="other",
        action=f"run {name}",
        description=f"{name} {arguments}",
        scope=f"unchecked:{name}",
        scope_label="",
        display=[BriefBlock(text=arguments)],
        always_ask=f"kode-tui could not check this call ({type(error).__name__})",
    )


def _failed(call: ToolCall, message: str, brief: str) -> PreparedCall:
    return PreparedCall(call, error=ToolOutput(message=message, brief=brief, is_error=True))


def tool_message(tool_call_id: str, result: ToolOutput) -> Message:
    """The tool message the model reads, in Kimi's form: `<system>status</system>` + output."""
    content: list[ContentPart] = []
    if result.is_error or result.message:
        content.append(tool_status(result.message, is_error=result.is_error))
    if result.output:
        content.append(TextPart(text=result.output))
    content.extend(result.parts)
    if not content:
        content.append(system("Tool output is empty."))
    return Message(role="tool", content=content, tool_call_id=tool_call_id)
