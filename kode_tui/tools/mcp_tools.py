"""An MCP server's tools as the agent's tools: their names, their approval and their results.

Each tool of the server `NAME` is offered as `mcp__NAME__TOOL` with the server's own JSON schema;
the server checks the arguments. A call is approved as a Shell call is (its scope is the tool,
so "approve for session" covers that tool only). What comes back (text, images, embedded
resources, links) becomes a `ToolOutput` like any tool's: kept in context.jsonl, hidden and
compacted alike, cut when huge. A server error, a timeout or a lost connection is an error the
model reads, never an exception out of the tool.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from kode_tui.humanize import format_size, plural
from kode_tui.message import ContentPart, ImageURL, ImageURLPart, estimate_tool_tokens
from kode_tui.tools.base import Permission, Tool, ToolEnv, ToolError, ToolOutput, truncate

if TYPE_CHECKING:
    # The mcp package takes most of a second to import: only a configured server loads it.
    from mcp import types

    Caller = Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]]
    """Calls the server's tool (its own name) with the arguments; raises when it fails."""

PREFIX = "mcp__"
MAX_NAME = 64
"""OpenAI refuses longer tool names (Anthropic takes 128): names are cut to fit both."""
MAX_IMAGE_BYTES = 5 << 20
"""A larger image is described, not sent (providers refuse such requests)."""
MAX_MESSAGE_BYTES = 8 << 20
"""One message from a server (a tool's result, a page of its tool listing) is read up to this
size, then dropped as it goes on arriving: enough for an image of MAX_IMAGE_BYTES in base64, while
what a model reads of a result is cut far shorter anyway (`truncate`)."""
MAX_DESCRIPTION = 2048
"""A tool's description is cut to this many characters: it is sent with every request."""
MAX_SCHEMA_BYTES = 32 << 10
"""A tool's input schema larger than this (as JSON) is not sent: it is sent with every request."""
TOO_LARGE = "the limit of one MCP message"
"""Ends the error a transport gives for a message over MAX_MESSAGE_BYTES (`too_large`)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def too_large(size: int | None = None) -> str:
    """Why a server's message was dropped: it was over MAX_MESSAGE_BYTES (`size` bytes)."""
    was = f" ({format_size(size)})" if size is not None else ""
    return f"the server's answer{was} was over {format_size(MAX_MESSAGE_BYTES)}, {TOO_LARGE}"


def tool_names(server: str, tools: Iterable[str]) -> dict[str, str]:
    """The name each of a server's `tools` (as the server names them) is offered under:
    `mcp__SERVER__TOOL`, with each character model APIs refuse as `_`.

    A name too long for the APIs, or one two tools would share once so changed, is cut and ends
    with a hash of the original instead (a tool whose name needed no change keeps it), so the
    names are unique; a name depends on the server's listing, not its order, so a session
    continued later meets the same names. Servers never share one: a server's name holds no
    `__` and does not end with `_` (config.py), so `mcp__SERVER__` tells them apart, and it is
    short enough that the cut never reaches it."""
    remote = sorted(set(tools))
    plain = {tool: f"{PREFIX}{server}__{_UNSAFE.sub('_', tool)}" for tool in remote}
    shared = Counter(plain.values())
    names: dict[str, str] = {}
    for tool in remote:
        name = plain[tool]
        if len(name) <= MAX_NAME and (shared[name] == 1 or name == f"{PREFIX}{server}__{tool}"):
            names[tool] = name
    taken = set(names.values())
    for tool in remote:
        if tool in names:
            continue
        salt = 0
        while (name := _hashed(plain[tool], f"{server}\0{tool}", salt)) in taken:
            salt += 1  # a hash that meets another name (or another hash): one more try
        names[tool] = name
        taken.add(name)
    return names


def _hashed(name: str, key: str, salt: int) -> str:
    digest = hashlib.sha256(f"{key}\0{salt}".encode() if salt else key.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


class McpArguments(BaseModel):
    """Whatever the model sends: the server validates the arguments against its schema."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool[McpArguments]):
    """One tool of a connected MCP server."""

    params = McpArguments

    def __init__(self, server: str, listed: types.Tool, name: str, call: Caller) -> None:
        self.server = server
        self.remote = listed.name
        """The tool's name on its server."""
        self.name = name  # type: ignore[misc]  # per instance: each server tool has its own
        description, self.input_schema = _definition(listed)
        self.description = description  # type: ignore[misc]  # per instance, as `name`
        self._call = call
        self.tokens = estimate_tool_tokens([self.schema()])
        """What its definition adds to every request (estimated, as `/context` counts)."""

    def schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description or f"The tool {self.remote} of {self.server}.",
                "parameters": self.input_schema,
            },
        }

    async def permission(self, params: McpArguments, env: ToolEnv) -> Permission:
        arguments = json.dumps(params.model_extra or {}, ensure_ascii=False)
        return Permission(
            kind="other",
            action=f"call a tool of the MCP server {self.server}",
            description=f"{self.name} {arguments}",
            scope=f"mcp:{self.name}",
            scope_label=self.name,
        )

    async def run(self, params: McpArguments, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        try:
            result = await self._call(self.remote, dict(params.model_extra or {}))
        except ToolError:
            raise
        except Exception as error:  # the server's or the connection's: the model reads it
            raise ToolError(f"The MCP server {self.server} failed: {describe(error)}") from None
        return tool_output(result)


def _definition(listed: types.Tool) -> tuple[str, dict[str, Any]]:
    """A listed tool's description and input schema as the model is offered them, within
    MAX_DESCRIPTION and MAX_SCHEMA_BYTES; the description says what was left out."""
    description = (listed.description or listed.title or "").strip()
    if len(description) > MAX_DESCRIPTION:
        note = f"… (cut to {MAX_DESCRIPTION} characters)"
        description = description[: MAX_DESCRIPTION - len(note)].rstrip() + note
    schema: dict[str, Any] = dict(listed.input_schema or {"type": "object"})
    size = len(json.dumps(schema, ensure_ascii=False).encode())
    if size > MAX_SCHEMA_BYTES:
        schema = {"type": "object"}
        description += (
            f"\n(Its input schema, {format_size(size)}, is over {format_size(MAX_SCHEMA_BYTES)} "
            "and is not shown: the server checks the arguments and says what is wrong.)"
        )
    return description.strip(), schema


def tool_output(result: types.CallToolResult) -> ToolOutput:
    """A server's result as a tool's: text joined, images as parts, resources described."""
    texts: list[str] = []
    parts: list[ContentPart] = []
    for block in result.content:
        text, part = _block(block)
        if text:
            texts.append(text)
        if part is not None:
            parts.append(part)
    if not texts and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    output, cut = truncate("\n".join(texts))
    notes = ["Output truncated: its end is omitted."] if cut else []
    media = f", {plural(len(parts), 'image')}" if parts else ""
    if result.is_error:
        return ToolOutput(
            output=output,
            message=" ".join(["The MCP tool reported an error.", *notes]),
            brief="error",
            is_error=True,
            parts=parts,
        )
    brief = f"{plural(len(output.splitlines()), 'line')}{media}" if output else "no output"
    return ToolOutput(
        output=output,
        message=" ".join(["The MCP tool returned a result.", *notes]),
        brief=brief if output or parts else "no output",
        parts=parts,
    )


def _block(block: types.ContentBlock) -> tuple[str, ContentPart | None]:
    """A content block's text for the model, and the part that goes along (an image)."""
    from mcp import types

    if isinstance(block, types.TextContent):
        return block.text, None
    if isinstance(block, types.ImageContent):
        return _image(block.data, block.mime_type, "image")
    if isinstance(block, types.AudioContent):
        return f"[audio ({block.mime_type}): not passed on to the model]", None
    if isinstance(block, types.ResourceLink):
        about = f": {block.description}" if block.description else ""
        return f"[resource link {block.name} <{block.uri}>{about}]", None
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        mime = f" ({resource.mime_type})" if resource.mime_type else ""
        if isinstance(resource, types.TextResourceContents):
            return f"[resource <{resource.uri}>{mime}]\n{resource.text}", None
        if (resource.mime_type or "").startswith("image/"):
            return _image(resource.blob, resource.mime_type or "", f"resource <{resource.uri}>")
        size = len(resource.blob) * 3 // 4
        return f"[resource <{resource.uri}>{mime}: {format_size(size)} of binary data]", None
    return f"[{getattr(block, 'type', 'unknown')} content: not shown]", None


def _image(data: str, mime: str, what: str) -> tuple[str, ContentPart | None]:
    try:
        size = len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return f"[{what}: the server sent data that is not base64]", None
    if not mime.startswith("image/"):
        return f"[{what} ({mime}): not an image type, not passed on]", None
    if size > MAX_IMAGE_BYTES:
        return f"[{what} ({mime}, {format_size(size)}): too large, not passed on]", None
    return "", ImageURLPart(image_url=ImageURL(url=f"data:{mime};base64,{data}"))


def describe(error: BaseException) -> str:
    """One sentence for an error out of the MCP library: the innermost of its exception groups
    (anyio wraps a transport's failure in one), with the kind when the message says nothing."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    cause = error.__cause__
    text = str(error).strip()
    if not text and cause is not None:
        return describe(cause)
    if isinstance(error, TimeoutError):
        return text or "timed out"
    if isinstance(error, FileNotFoundError) and error.filename:
        return f"no such command: {error.filename}"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    first = text.splitlines()[0] if text else ""
    return first or type(error).__name__
