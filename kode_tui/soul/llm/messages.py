"""A kode_tui history as the chat messages litellm and the OpenAI SDK take: think parts left
out (Anthropic's signed ones as `thinking_blocks`), tool results as text, images as `image_url`
parts for models that take them, Anthropic's prompt-cache marks, and strings every provider can
encode."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from kode_tui.message import ImageURLPart, Message, TextPart, ThinkPart, system_text
from kode_tui.pathnames import scrub_text

CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}


IMAGE_NOT_SENT = "[image not sent: this model does not take images]"
"""What a model that takes no images reads where an image was (the user was told)."""

TOOL_IMAGES_NOTE = system_text("The images the tool results above returned, in order.")
"""The text of the user message that carries the images of tool results."""


def to_openai_messages(
    system_prompt: str | None,
    history: Sequence[Message],
    *,
    anthropic: bool = False,
    images: bool = True,
) -> list[dict[str, Any]]:
    """The chat messages litellm expects for a kode_tui history.

    Think parts are not sent back as text; with `anthropic`, signed ones travel as litellm's
    `thinking_blocks`, and the system prompt and the last user (or tool) message carry
    `cache_control` marks, so each step reads the previous steps from Anthropic's prompt cache.

    Images go as `image_url` parts; those of tool results (ReadMediaFile's, an MCP tool's) in a
    user message after the group of results, since OpenAI takes only text in a tool message.
    Without `images` (a model that takes none), each image is sent as `IMAGE_NOT_SENT`.
    """
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    tool_images: list[dict[str, Any]] = []
    for message in history:
        if message.role != "tool" and tool_images:
            messages.append(_tool_images_message(tool_images))
            tool_images = []
        converted = _convert(message, anthropic, images)
        if converted is not None:
            messages.append(converted)
        if message.role == "tool" and images:
            tool_images.extend(
                _image_block(part) for part in message.parts if isinstance(part, ImageURLPart)
            )
    if tool_images:
        messages.append(_tool_images_message(tool_images))
    if anthropic:
        _mark_cache_breakpoints(messages)
    return [_without_surrogates(message) for message in messages]


def _without_surrogates(value: Any) -> Any:
    """`value` with every string made encodable: a lone surrogate (a file name that is not
    UTF-8, say, that escaped every other guard) is shown as `\\xHH` instead of failing the
    request, now and on every later turn."""
    # Walked for every message of every request: a container with nothing to change is kept,
    # not copied (`_convert` has just built it; a second copy made long requests twice as slow).
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        changed: dict[str, Any] | None = None
        for key, item in value.items():
            clean = _without_surrogates(item)
            if clean is not item:
                changed = changed if changed is not None else dict(value)
                changed[key] = clean
        return value if changed is None else changed
    if isinstance(value, list):
        items = [_without_surrogates(item) for item in value]
        return value if all(map(operator.is_, items, value)) else items
    return value


def _convert(message: Message, anthropic: bool, images: bool) -> dict[str, Any] | None:
    out: dict[str, Any] = {"role": message.role}
    if message.name:
        out["name"] = message.name
    if message.role == "tool":
        # Some providers reject a list here, and Kimi writes tool results as lists of text parts.
        out["content"] = _tool_text(message, images)
        out["tool_call_id"] = message.tool_call_id or ""
        return out
    if message.role == "assistant":
        out["content"] = message.text or (None if message.tool_calls else "")
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.function.name,
                        "arguments": call.function.arguments or "{}",
                    },
                }
                for call in message.tool_calls
            ]
        if anthropic:
            blocks = [
                {"type": "thinking", "thinking": part.think, "signature": part.encrypted}
                for part in message.parts
                if isinstance(part, ThinkPart) and part.encrypted
            ]
            if blocks:
                out["thinking_blocks"] = blocks
        return out
    out["content"] = _content(message, images)
    return out


def _tool_text(message: Message, images: bool) -> str:
    """A tool result's text; an image in it is sent after the results (or as the note)."""
    if images or isinstance(message.content, str):
        return message.text
    return "".join(
        part.text if isinstance(part, TextPart) else IMAGE_NOT_SENT
        for part in message.parts
        if isinstance(part, TextPart | ImageURLPart)
    )


def _image_block(part: ImageURLPart) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": part.image_url.url}}


def _tool_images_message(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": TOOL_IMAGES_NOTE}, *blocks]}


def _content(message: Message, images: bool) -> str | list[dict[str, Any]]:
    if isinstance(message.content, str):
        return message.content
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, ImageURLPart):
            parts.append(_image_block(part) if images else {"type": "text", "text": IMAGE_NOT_SENT})
    if not parts:
        return ""
    if len(parts) == 1 and parts[0]["type"] == "text":
        return str(parts[0]["text"])
    return parts


def _mark_cache_breakpoints(messages: list[dict[str, Any]]) -> None:
    """Mark the system prompt and the newest user-side message as Anthropic cache breakpoints.

    Anthropic sends tool results as user messages, so in a tool loop the newest user-side
    message is the last tool result: marking it lets each step reuse the previous step's cache
    (Claude Code does the same). Two marks stay well under Anthropic's limit of four.
    """
    if messages and messages[0]["role"] == "system" and isinstance(messages[0]["content"], str):
        messages[0]["content"] = [
            {"type": "text", "text": messages[0]["content"], "cache_control": CACHE_CONTROL}
        ]
    for message in reversed(messages):
        if message["role"] == "tool":
            message["cache_control"] = CACHE_CONTROL  # litellm puts it on the tool_result block
            return
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            message["content"] = [{"type": "text", "text": content, "cache_control": CACHE_CONTROL}]
            return
        for block in reversed(content):
            if block.get("type") == "text":
                block["cache_control"] = CACHE_CONTROL
                return
        return
