"""One LLM call as the soul makes it: what a provider may see of the request (API keys masked),
each streamed item made encodable, and the items gathered into the assistant's message."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import msgspec

from kode_tui import masking
from kode_tui.message import (
    ContentPart,
    FunctionBody,
    Message,
    TextPart,
    ThinkPart,
    ToolCall,
    fresh_call_id,
)
from kode_tui.pathnames import scrub_text
from kode_tui.soul.llm import StreamItem, ToolCallDelta, ToolCallStart
from kode_tui.wire.events import TokenUsage

INTERRUPTED_NOTE = "[interrupted by the user]"
"""Ends an answer the user interrupted, in the context: the model reads that it was cut."""


class RequestsWatched:
    """Who waits for the next request to be handed to the model (`AgentSession.next_request`)."""

    def __init__(self) -> None:
        self._waiting: list[asyncio.Future[None]] = []

    def next(self) -> asyncio.Future[None]:
        """Done once the next request is handed to the model: a front end can hold its screen's
        update until then (painting first would take the interpreter before the request)."""
        future = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        return future

    def sent(self) -> None:
        """The provider is about to have the request: its waiters run when the soul next waits,
        after the provider's first step sent it."""
        for waiting in self._waiting:
            if not waiting.done():
                waiting.set_result(None)
        self._waiting.clear()


class Streamed(msgspec.Struct):
    """One LLM response as it arrives."""

    parts: list[ContentPart] = msgspec.field(default_factory=list)
    calls: dict[str, ToolCall] = msgspec.field(default_factory=dict)
    usage: TokenUsage | None = None
    renamed: dict[str, str] = msgspec.field(default_factory=dict)
    """Provider id -> the id the call is kept under: a repeated (or empty) id gets a new one, so
    two calls are never merged into one and each gets its own result."""

    def call_id(self, item: ToolCallStart | ToolCallDelta) -> str:
        """The id a streamed tool-call item belongs to in this response."""
        return self.renamed.get(item.id, item.id)

    def add(self, item: StreamItem) -> None:
        if isinstance(item, TextPart | ThinkPart):
            last = self.parts[-1] if self.parts else None
            if isinstance(item, TextPart) and isinstance(last, TextPart):
                last.text += item.text
            elif isinstance(item, ThinkPart) and isinstance(last, ThinkPart):
                last.think += item.think
                last.encrypted = item.encrypted or last.encrypted
            else:
                self.parts.append(item.model_copy())
        elif isinstance(item, ToolCallStart):
            call_id = item.id
            if not call_id or call_id in self.calls:
                call_id = fresh_call_id(call_id, self.calls)
                self.renamed[item.id] = call_id
            else:
                self.renamed.pop(item.id, None)
            self.calls[call_id] = ToolCall(
                id=call_id, function=FunctionBody(name=item.name, arguments="")
            )
        elif isinstance(item, ToolCallDelta):
            call_id = self.call_id(item)
            if call_id not in self.calls:  # a provider that never announced the call
                self.calls[call_id] = ToolCall(id=call_id, function=FunctionBody(name=""))
            function = self.calls[call_id].function
            function.arguments = (function.arguments or "") + item.arguments_delta
        else:
            self.usage = item

    def is_empty(self) -> bool:
        """No text, no thought, no tool call: nothing a message could hold."""
        return not self.calls and not any(
            not isinstance(p, TextPart | ThinkPart)
            or (p.text if isinstance(p, TextPart) else p.think)
            for p in self.parts
        )

    def interrupted_message(self) -> Message | None:
        """What the user saw of an answer they interrupted, as the assistant's message that
        says so (its tool calls never ran, so they are left out); None when it had no text."""
        text = "".join(p.text for p in self.parts if isinstance(p, TextPart)).rstrip()
        if not text:
            return None
        return Message(role="assistant", content=f"{text}\n\n{INTERRUPTED_NOTE}")

    def message(self) -> Message:
        parts = [p for p in self.parts if not isinstance(p, TextPart) or p.text]
        content: str | list[ContentPart] = parts
        if len(parts) == 1 and isinstance(parts[0], TextPart):
            content = parts[0].text  # Kimi stores a lone text part as a string
        calls = list(self.calls.values())
        return Message(role="assistant", content=content, tool_calls=calls or None)


def masked(
    system_prompt: str | None, history: Sequence[Message]
) -> tuple[str | None, list[Message]]:
    """What a provider may see: the request with every API key masked (a key the user typed,
    or one in a file they mentioned, stays on this machine). The environment is read again first:
    this is where a changed key is noticed."""
    masking.refresh()
    return masking.mask_value(system_prompt), masking.mask_each(history)


def _encodable(text: str) -> str:
    # Pairs first (`\ud83d\ude00` in a provider's JSON is one emoji), then whatever is left alone.
    if scrub_text(text) is text:  # no surrogate: one C-level check, not a loop per character
        return text
    return scrub_text(text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass"))


def encodable_item(item: StreamItem) -> StreamItem:
    """`item` as text that can be written and sent: a provider's JSON may hold a lone surrogate
    (`\ud83d` alone, an emoji split between two chunks), which failed the write of the step and
    every later request, so the answer was lost."""
    if isinstance(item, TextPart):
        text = _encodable(item.text)
        return item if text is item.text else item.model_copy(update={"text": text})
    if isinstance(item, ThinkPart):
        think = _encodable(item.think)
        return item if think is item.think else item.model_copy(update={"think": think})
    if isinstance(item, ToolCallStart):
        name, call_id = _encodable(item.name), _encodable(item.id)
        if name is item.name and call_id is item.id:
            return item
        return ToolCallStart(id=call_id, name=name)
    if isinstance(item, ToolCallDelta):
        delta, call_id = _encodable(item.arguments_delta), _encodable(item.id)
        if delta is item.arguments_delta and call_id is item.id:
            return item
        return ToolCallDelta(id=call_id, arguments_delta=delta)
    return item
