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
from collections.abc import Awaitable, Callable, Collection
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

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str, taken: Collection[str] = ()) -> str:
    """The name a server's tool is offered under: `mcp__SERVER__TOOL`, with each character model
    APIs refuse as `_`; a name too long for them, or already `taken` by another tool of the
    server once so changed, is cut and ends with a hash of the original, so it stays unique."""
    name = f"{PREFIX}{server}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= MAX_NAME and name not in taken:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
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
        self.description = (listed.description or listed.title or "").strip()  # type: ignore[misc]
        self.input_schema: dict[str, Any] = dict(listed.input_schema or {"type": "object"})
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
