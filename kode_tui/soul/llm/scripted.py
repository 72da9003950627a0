"""ScriptedProvider: a model that answers from a script, for tests and the offline demo.

A script is a JSON list with one object per LLM call:

```json
[
  {"think": "The user wants a file.", "text": "I'll write it.",
   "tool_calls": [{"name": "WriteFile", "arguments": {"path": "a.txt", "content": "hi"}}],
   "usage": {"input": 120, "output": 30}},
  {"error": {"status": 429, "message": "slow down"}},
  {"error": "connection"},
  {"text": "Done."}
]
```

`tool_calls[].id` defaults to `call_<n>_<i>`; `arguments` is an object or a JSON string (a broken
one too, to test how the loop copes); `usage` defaults to an estimate of what was sent and received.
`error` fails the call: an HTTP status (with `"retry_after"`: the seconds a server's
`Retry-After` asked for), `"connection"` or `"timeout"`. `"hang": true` streams the
text and then waits until cancelled. Text is streamed in pieces of a few words.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kode_tui.message import Message, TextPart, ThinkPart, estimate_tokens, estimate_tool_tokens
from kode_tui.soul.llm import (
    DEFAULT_MAX_CONTEXT_SIZE,
    LLMConnectionError,
    LLMError,
    LLMStatusError,
    LLMTimeoutError,
    StreamItem,
    ToolCallDelta,
    ToolCallStart,
    ToolSchema,
)
from kode_tui.wire.events import TokenUsage


@dataclass(frozen=True, slots=True)
class Request:
    """What one call was sent, kept so tests can check it."""

    system_prompt: str | None
    history: list[Message]
    tools: list[ToolSchema]


@dataclass
class ScriptedProvider:
    """Answers each call with the next response of the script."""

    script: list[dict[str, Any]]
    model_name: str = "scripted"
    max_context_size: int = DEFAULT_MAX_CONTEXT_SIZE
    delay: float = 0.0
    """Seconds between streamed pieces (the demo uses a little, tests none)."""
    requests: list[Request] = field(default_factory=list)

    @classmethod
    def from_file(cls, path: Path, **options: Any) -> ScriptedProvider:
        script = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(script, list) or not all(isinstance(r, dict) for r in script):
            raise ValueError(f"{path}: a script is a JSON list of response objects")
        return cls(script, **options)

    @property
    def remaining(self) -> int:
        return len(self.script) - len(self.requests)

    def stream(
        self, system_prompt: str | None, history: Sequence[Message], tools: Sequence[ToolSchema]
    ) -> AsyncIterator[StreamItem]:
        number = len(self.requests)
        self.requests.append(Request(system_prompt, list(history), list(tools)))
        if number >= len(self.script):
            raise LLMError(f"the script has no response for call {number + 1}")
        sent = request_tokens(system_prompt, history, tools)
        return stream_response(self.script[number], number + 1, sent, self.delay)


def request_tokens(
    system_prompt: str | None, history: Sequence[Message], tools: Sequence[ToolSchema] = ()
) -> int:
    """An estimate of the input tokens of a request, for the usage a script leaves out: as
    `/context` estimates each part, so the gauge does not drop when this "model" reports."""
    return estimate_tokens(history) + len(system_prompt or "") // 4 + estimate_tool_tokens(tools)


async def stream_response(
    response: dict[str, Any], number: int, sent_tokens: int, delay: float = 0.0
) -> AsyncIterator[StreamItem]:
    """The stream items of one scripted response."""
    error = response.get("error")
    if error is not None:
        raise _error(error)
    received = 0
    if think := response.get("think"):
        for piece in _pieces(think):
            await _pause(delay)
            yield ThinkPart(think=piece)
        received += len(think) // 4
    if text := response.get("text"):
        for piece in _pieces(text):
            await _pause(delay)
            yield TextPart(text=piece)
        received += len(text) // 4
    if response.get("hang"):
        await asyncio.Event().wait()
    for index, call in enumerate(response.get("tool_calls") or []):
        call_id = call.get("id") or f"call_{number}_{index}"
        arguments = call.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        await _pause(delay)
        yield ToolCallStart(id=call_id, name=call["name"])
        for start in range(0, len(arguments), 40):
            yield ToolCallDelta(id=call_id, arguments_delta=arguments[start : start + 40])
        received += (len(call["name"]) + len(arguments)) // 4
    usage = response.get("usage") or {}
    yield TokenUsage(
        input=int(usage.get("input", sent_tokens)),
        output=int(usage.get("output", received)),
        cache_read=int(usage.get("cache_read", 0)),
    )


def _error(error: Any) -> LLMError:
    if error == "connection":
        return LLMConnectionError("could not connect to the scripted model")
    if error == "timeout":
        return LLMTimeoutError("the scripted model timed out")
    if isinstance(error, dict) and "status" in error:
        status = int(error["status"])
        retry_after = error.get("retry_after")
        return LLMStatusError(
            error.get("message") or f"HTTP {status}",
            status,
            float(retry_after) if retry_after is not None else None,
        )
    return LLMError(str(error))


def _pieces(text: str) -> list[str]:
    """A few words at a time, whitespace kept, so joined they give `text` back."""
    words = re.findall(r"\S+\s*|\s+", text)
    return ["".join(words[i : i + 3]) for i in range(0, len(words), 3)]


async def _pause(delay: float) -> None:
    # Even without a delay, yield to the loop so a cancel can land between pieces.
    await asyncio.sleep(delay)
