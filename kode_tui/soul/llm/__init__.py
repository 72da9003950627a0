"""The LLM layer (DESIGN.md §7): one small protocol every model speaks through.

A provider streams one assistant response as items: text and think deltas (`TextPart`,
`ThinkPart`), the start of a tool call (`ToolCallStart`), pieces of its JSON arguments
(`ToolCallDelta`) and, at the end, the token usage (`TokenUsage`). The soul assembles the message;
providers assemble nothing but what their wire format forces on them (OpenAI's index-keyed tool-call
deltas, for one).

Failures are `LLMError`s. `is_retryable()` says which ones the soul's retry tries again:
connection errors, timeouts, and HTTP 429, 500, 502, 503, 504 and 529 (Anthropic's
"overloaded"). A status error carries the wait the server asked for (`Retry-After`), if any.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol, TypeAlias, runtime_checkable

import msgspec

from kode_tui.message import Message, TextPart, ThinkPart, TokenUsage

DEFAULT_MAX_CONTEXT_SIZE = 128_000
RETRYABLE_STATUS = frozenset((429, 500, 502, 503, 504, 529))


class ToolCallStart(msgspec.Struct, frozen=True):
    """A new tool call in the stream; its arguments follow as `ToolCallDelta`s."""

    id: str
    name: str


class ToolCallDelta(msgspec.Struct, frozen=True):
    id: str
    arguments_delta: str


StreamItem = TextPart | ThinkPart | ToolCallStart | ToolCallDelta | TokenUsage

ToolSchema: TypeAlias = dict[str, Any]
"""One tool as the model is offered it, in OpenAI function format:
`{"type": "function", "function": {"name": ..., "description": ..., "parameters": {...}}}`."""


class LLMError(Exception):
    """The model could not answer. The message is one sentence a user can read."""


class LLMConnectionError(LLMError):
    """The provider could not be reached (refused, reset, DNS)."""


class LLMTimeoutError(LLMError):
    """The provider did not answer in time."""


class LLMStatusError(LLMError):
    """The provider answered with an HTTP error status."""

    def __init__(self, message: str, status_code: int, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retry_after = retry_after
        """Seconds the server asked to wait before trying again (`Retry-After`), if it did."""


def is_retryable(error: BaseException) -> bool:
    """Whether a failed call is worth trying again (DESIGN.md §7)."""
    if isinstance(error, LLMConnectionError | LLMTimeoutError):
        return True
    return isinstance(error, LLMStatusError) and error.status_code in RETRYABLE_STATUS


@runtime_checkable
class ChatProvider(Protocol):
    """A model the soul can talk to."""

    @property
    def model_name(self) -> str:
        """The name shown to the user, e.g. `anthropic/claude-sonnet-4-5` or `demo`."""
        ...

    @property
    def max_context_size(self) -> int:
        """How many tokens the model's context holds."""
        ...

    def stream(
        self, system_prompt: str | None, history: Sequence[Message], tools: Sequence[ToolSchema]
    ) -> AsyncIterator[StreamItem]:
        """Stream one assistant response to `history`, offering the model `tools`.

        Raises `LLMError` (before or while streaming) when the call fails.
        """
        ...
