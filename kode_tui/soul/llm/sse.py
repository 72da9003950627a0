"""The chunks of an OpenAI-compatible stream, a network read at a time (openai_route.py).

The OpenAI SDK's stream hands out one chunk per server-sent event, each through a line
splitter, a decoder and `json.loads` inside a stack of async generators: of the model process's
time for an answer written as fast as a server can (20k tokens), that was a third. `sse_batches`
reads the same response's bytes and hands out every chunk that arrived in one read at once, its
JSON decoded by msgspec. An event in the usual form, one `data:` line, is read here; any other
(comments, `event:` or `id:` fields, data over several lines) goes through the SDK's own decoder,
so the format's rules stay the SDK's. What the SDK's stream does with an event is kept: `[DONE]`
ends the stream, an event carrying an `error` raises its `APIError`, a broken connection its
`APITimeoutError` or `APIConnectionError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncGenerator
from typing import Any

import msgspec

__all__ = ["SSEChunks", "sse_batches"]

_DATA = b"data: "
_DRAIN_S = 0.1
"""How long the rest of a response after `[DONE]` is read (its connection is reused after)."""


class SSEChunks:
    """Bytes of an event stream in, the JSON chunks of its complete events out.

    `sse_decoder` is the SDK's decoder (`openai._streaming.SSEDecoder()`): what it reads from
    the lines of one event is what the event says, for the events not in the usual form.
    """

    def __init__(self, sse_decoder: Any) -> None:
        self._decoder = sse_decoder
        self._rest = b""
        self.done = False
        """`[DONE]` came: nothing after it is read."""

    def feed(self, data: bytes) -> list[Any]:
        """The chunks of the events `data` completes (with what came before it), in order;
        `StreamError` for an event whose chunk carries an `error`."""
        text = self._rest + data
        if b"\r" in text:
            # CR and CRLF end lines too. A CR last may be the first half of a CRLF: kept.
            held = b"\r" if text.endswith(b"\r") else b""
            text = text[: len(text) - len(held)].replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            *events, rest = text.split(b"\n\n")
            self._rest = rest + held
        else:
            *events, self._rest = text.split(b"\n\n")
        chunks: list[Any] = []
        for event in events:
            if not event:
                continue  # more blank lines than one between events
            if event.startswith(_DATA) and b"\n" not in event:
                payload: bytes | None = event[len(_DATA) :]
                name = None
            else:
                payload, name = self._read_event(event)
            if payload is None:
                continue
            if payload.startswith(b"[DONE]"):
                self.done = True
                break
            if name is not None and name.startswith("thread."):
                continue  # the Assistants API's events: no chunk of a chat completion
            chunk = _decode(payload)
            if isinstance(chunk, dict) and chunk.get("error"):
                raise StreamError(chunk["error"])
            chunks.append(chunk)
        return chunks

    def _read_event(self, event: bytes) -> tuple[bytes | None, str | None]:
        """The data and name of an event not in the usual form (None: only comments)."""
        sse = None
        for line in (*event.split(b"\n"), b""):
            sse = self._decoder.decode(line.decode("utf-8"))
        return (None, None) if sse is None else (sse.data.encode(), sse.event)


class StreamError(Exception):
    """An event of the stream carried an error (`body`, the server's object or message)."""

    def __init__(self, body: Any) -> None:
        message = body.get("message") if isinstance(body, dict) else None
        super().__init__(
            message
            if isinstance(message, str) and message
            else "An error occurred during streaming"
        )
        self.body = body


def _decode(payload: bytes) -> Any:
    """An event's JSON. msgspec is fast but stricter than `json.loads` (a lone surrogate's
    escape, NaN): what it refuses is read as the SDK reads it."""
    try:
        return msgspec.json.decode(payload)
    except msgspec.DecodeError:
        return json.loads(payload)


async def sse_batches(stream: Any, openai: Any) -> AsyncGenerator[list[Any], None]:
    """The chunks of the SDK's `stream` (an `AsyncStream`, not iterated), a list per read of
    its response; its response is closed after, also when the reader stops early."""
    response = stream.response
    # httpx, or httpx2 for SDK 3: the transport's errors, which the SDK's stream wraps.
    http = sys.modules[type(response).__module__.partition(".")[0]]
    events = SSEChunks(openai._streaming.SSEDecoder())
    reads = response.aiter_bytes()
    try:
        while not events.done:
            try:
                data = await anext(reads)
            except StopAsyncIteration:
                return
            except http.TimeoutException as error:
                raise openai.APITimeoutError(request=response.request) from error
            except http.RequestError as error:
                raise openai.APIConnectionError(request=response.request) from error
            try:
                chunks = events.feed(data)
            except StreamError as error:
                raise openai.APIError(
                    str(error), request=response.request, body=error.body
                ) from None
            if chunks:
                yield chunks
        # HTTP/1.1 reuses the connection only once the response was read to its end.
        with contextlib.suppress(Exception):
            async with asyncio.timeout(_DRAIN_S):
                async for _ in reads:
                    pass
    finally:
        with contextlib.suppress(Exception):
            await reads.aclose()
        await response.aclose()
