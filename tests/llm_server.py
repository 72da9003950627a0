"""A loopback OpenAI-compatible chat server for tests: scripted replies, recorded requests.

    with LLMServer() as server:
        server.reply_text("Hello there")
        provider = LiteLLMProvider("openai/test-model", api_base=server.url, ...)
        ...
        assert server.requests[0]["messages"][-1]["content"] == "hi"

It serves `POST /v1/chat/completions` (and `/chat/completions`) from a thread, so it answers
while the test's event loop is busy awaiting the client. Each request takes the next scripted
reply from a queue; when the queue is empty the server answers 500 with a body saying so.
Streamed replies are SSE `chat.completion.chunk`s shaped like OpenAI's: content and
`reasoning_content` deltas, tool calls by index (id and name first, then the arguments in small
pieces), a finish chunk, a usage chunk (empty `choices`) when the request asked for
`stream_options.include_usage`, then `data: [DONE]`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from kode_tui.config import ModelChoice

Usage = tuple[int, int] | tuple[int, int, int] | dict[str, Any] | None
"""`(prompt, completion)`, `(prompt, completion, cached)`, a full usage object, or None (no
usage chunk at all)."""

ToolCallSpec = tuple[str, str, str]
"""`(id, name, arguments_json)`; an empty id is left out of the chunk, as some servers do."""

KEY_ENV = "KODE_TEST_LLM_KEY"
"""Where the tests' loopback configs look for the key (the `server` fixture sets it)."""

PATHS = frozenset(("/v1/chat/completions", "/chat/completions"))


class HeldReply:
    """A streamed reply that stops after its first delta until released (or the server closes).

    `started` is set once the first delta has been written: the client is mid-stream.
    """

    def __init__(self) -> None:
        self.started = threading.Event()
        self.released = threading.Event()

    def release(self) -> None:
        """Let the reply finish normally."""
        self.released.set()

    async def wait_started(self, timeout: float = 60) -> None:
        """Wait, without blocking the event loop, until the client is mid-stream."""
        if not await asyncio.to_thread(self.started.wait, timeout):
            raise TimeoutError("the held reply was never requested")


@dataclass
class _Stream:
    deltas: list[dict[str, Any]]
    finish_reason: str
    usage: Usage
    delay: float = 0.0
    hold: HeldReply | None = None
    cut: bool = False
    """End the stream after the deltas: no finish reason, no usage, no `[DONE]`."""
    first_delay: float = 0.0


@dataclass
class _Status:
    code: int
    message: str
    headers: dict[str, str] = field(default_factory=dict)


_Reply = _Stream | _Status


def text_pieces(text: str | Sequence[str]) -> list[str]:
    """A string as word-sized deltas ("Hello world" -> ["Hello", " world"]); a list as given."""
    if not isinstance(text, str):
        return list(text)
    return re.findall(r"\s*\S+|\s+", text)


def _argument_pieces(arguments: str, size: int = 7) -> list[str]:
    return [arguments[i : i + size] for i in range(0, len(arguments), size)] or [""]


def _usage_object(usage: Usage) -> dict[str, Any] | None:
    if usage is None or isinstance(usage, dict):
        return usage
    prompt, completion = usage[0], usage[1]
    body: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if len(usage) == 3:
        body["prompt_tokens_details"] = {"cached_tokens": usage[2]}
    return body


SHELL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "Shell",
        "description": "Run a command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}
"""A tool schema for requests that carry one."""


class LLMServer:
    """The server; a context manager (`with LLMServer() as server:`), or `start()`/`close()`."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        """Every request body received, parsed, in order (bodies that are not JSON as `{}`)."""
        self.headers: list[dict[str, str]] = []
        """The headers of each request, in the same order (lower-case names)."""
        self.arrived: list[float] = []
        """When each request was read (`time.perf_counter()`), in the same order."""
        self.finished: list[float] = []
        """When each streamed reply's last byte was written (`time.perf_counter()`), in order."""
        self.errors: list[BaseException] = []
        """Exceptions the server's handlers raised (a bug in a test's script, say)."""
        self._replies: deque[_Reply] = deque()
        self._holds: list[HeldReply] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._closed = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._port = 0

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port it listens on (kept after `close()`: then nothing answers there)."""
        assert self._port, "the server is not started"
        return self._port

    @property
    def url(self) -> str:
        """The api_base to give a client, e.g. `http://127.0.0.1:PORT/v1`."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LLMServer:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.state = self
        self._port = int(self._httpd.server_address[1])
        self._thread = serve_in_thread(self._httpd, "llm-server")
        return self

    def close(self) -> None:
        """Stop serving; held replies end (their connections are dropped)."""
        self._closed.set()
        for hold in self._holds:
            hold.release()
        if self._httpd is not None and self._thread is not None:
            stop_serving(self._httpd, self._thread)
        self._httpd = self._thread = None

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- scripting ---------------------------------------------------------------------------

    def reply_text(
        self,
        text: str | Sequence[str],
        *,
        usage: Usage = (10, 5),
        reasoning: str | Sequence[str] | None = None,
        delay: float = 0.0,
        first_delay: float = 0.0,
    ) -> None:
        """Stream `text` (a string in word-sized deltas, or the given list of deltas), after
        `reasoning` as `reasoning_content` deltas if given; `delay` seconds between chunks,
        `first_delay` seconds from the headers to the first chunk (a model thinking)."""
        deltas = [{"reasoning_content": piece} for piece in text_pieces(reasoning or [])]
        deltas += [{"content": piece} for piece in text_pieces(text)]
        self._push(_Stream(deltas, "stop", usage, delay, first_delay=first_delay))

    def reply_reasoning(
        self, reasoning: str | Sequence[str], text: str | Sequence[str] = "", **kwargs: Any
    ) -> None:
        """Stream `reasoning_content` deltas, then the text (same keywords as `reply_text`)."""
        self.reply_text(text, reasoning=reasoning, **kwargs)

    def reply_tool_calls(
        self,
        calls: Sequence[ToolCallSpec],
        *,
        text: str | Sequence[str] = "",
        usage: Usage = (10, 5),
        delay: float = 0.0,
    ) -> None:
        """Stream `text` (if any), then each call: one chunk with its index, id, name and empty
        arguments, then its arguments in small pieces; finish_reason `tool_calls`."""
        deltas: list[dict[str, Any]] = [{"content": piece} for piece in text_pieces(text)]
        for index, (call_id, name, arguments) in enumerate(calls):
            head: dict[str, Any] = {
                "index": index,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            if call_id:
                head["id"] = call_id
            deltas.append({"tool_calls": [head]})
            deltas += [
                {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
                for piece in _argument_pieces(arguments)
            ]
        self._push(_Stream(deltas, "tool_calls", usage, delay))

    def reply_chunks(
        self,
        deltas: Sequence[dict[str, Any]],
        *,
        finish_reason: str = "stop",
        usage: Usage = (10, 5),
        delay: float = 0.0,
    ) -> None:
        """Stream each dict as a chunk's `choices[0].delta`, verbatim (for odd shapes)."""
        self._push(_Stream(list(deltas), finish_reason, usage, delay))

    def reply_cut(
        self, text: str | Sequence[str] = "This answer will be cut", *, usage: Usage = None
    ) -> None:
        """Stream `text` (and the usage chunk, if given), then end the response cleanly but
        early: no chunk with a finish reason, no `data: [DONE]` (a proxy that dropped the rest)."""
        deltas = [{"content": piece} for piece in text_pieces(text)]
        self._push(_Stream(deltas, "stop", usage, cut=True))

    def reply_status(
        self, code: int, message: str = "scripted error", *, headers: dict[str, str] | None = None
    ) -> None:
        """Answer with HTTP `code` and an OpenAI-style JSON error body carrying `message`."""
        self._push(_Status(code, message, dict(headers or {})))

    def reply_hang(
        self, text: str | Sequence[str] = "Working", *, usage: Usage = (10, 5)
    ) -> HeldReply:
        """Stream the first delta of `text`, then wait until the returned handle is released
        (the rest follows) or the server closes (the connection drops)."""
        hold = HeldReply()
        self._holds.append(hold)
        deltas = [{"content": piece} for piece in text_pieces(text)]
        self._push(_Stream(deltas, "stop", usage, hold=hold))
        return hold

    @property
    def pending(self) -> int:
        """How many scripted replies are still queued."""
        with self._lock:
            return len(self._replies)

    def drop_pending(self) -> None:
        """Forget the scripted replies nobody asked for (a client that was killed, say)."""
        with self._lock:
            self._replies.clear()

    def _push(self, reply: _Reply) -> None:
        with self._lock:
            self._replies.append(reply)

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, _Reply | None]:
        with self._lock:
            self.arrived.append(time.perf_counter())
            self.requests.append(body)
            self.headers.append(headers)
            return len(self.requests), (self._replies.popleft() if self._replies else None)

    # --- chunks ------------------------------------------------------------------------------

    def _chunks(self, reply: _Stream, body: dict[str, Any]) -> Iterator[dict[str, Any] | None]:
        """The chunk objects of a streamed reply; None marks where a held reply waits."""
        base = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
        }
        first = True
        for delta in reply.deltas or [{"content": ""}]:
            if first:
                delta = {"role": "assistant", **delta}
            choice = {"index": 0, "delta": delta, "finish_reason": None}
            yield {**base, "choices": [choice]}
            if first and reply.hold is not None:
                yield None
            first = False
        if not reply.cut:
            choice = {"index": 0, "delta": {}, "finish_reason": reply.finish_reason}
            yield {**base, "choices": [choice]}
        usage = _usage_object(reply.usage)
        if usage is not None and (body.get("stream_options") or {}).get("include_usage"):
            yield {**base, "choices": [], "usage": usage}

    def _completion(self, reply: _Stream, body: dict[str, Any]) -> dict[str, Any]:
        """A non-streamed reply: the deltas merged into one message."""
        message: dict[str, Any] = {"role": "assistant", "content": None}
        calls: dict[int, dict[str, Any]] = {}
        for delta in reply.deltas:
            for key in ("content", "reasoning_content"):
                if key in delta:
                    message[key] = (message.get(key) or "") + delta[key]
            for call in delta.get("tool_calls", ()):
                slot = calls.setdefault(
                    call["index"],
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                slot["id"] = call.get("id", slot["id"])
                function = call.get("function", {})
                slot["function"]["name"] += function.get("name", "")
                slot["function"]["arguments"] += function.get("arguments", "")
        if calls:
            message["tool_calls"] = [calls[index] for index in sorted(calls)]
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
            "usage": _usage_object(reply.usage),
        }


def serve_in_thread(httpd: ThreadingHTTPServer, name: str) -> threading.Thread:
    """Serve `httpd` from a daemon thread (the tests' model server and the bench's field server).
    The poll interval is short: shutdown() waits up to one interval, and tests close often."""
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), name=name, daemon=True)
    thread.start()
    return thread


def stop_serving(httpd: ThreadingHTTPServer, thread: threading.Thread) -> None:
    """Stop what `serve_in_thread` serves and close its socket."""
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    state: LLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Keep handler failures off stderr: a client dropping a kept-alive connection is
        normal; anything else goes to `LLMServer.errors` for the test to look at."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError) and error is not None:
            self.state.errors.append(error)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Small SSE writes would otherwise wait for delayed ACKs (~40 ms per reply).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: pytest output is no place for an access log."""

    @property
    def _state(self) -> LLMServer:
        return cast(_HTTPServer, self.server).state

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.split("?")[0] not in PATHS:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        headers = {name.lower(): value for name, value in self.headers.items()}
        number, reply = self._state._next(body, headers)
        if reply is None:
            message = f"LLMServer: no scripted reply left for request #{number}"
            self._json(500, {"error": {"message": message, "type": "server_error"}})
        elif isinstance(reply, _Status):
            error = {"message": reply.message, "type": "error", "code": str(reply.code)}
            self._json(reply.code, {"error": error}, reply.headers)
        elif body.get("stream"):
            self._stream(reply, body)
        else:
            self._json(200, self._state._completion(reply, body))

    def _json(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, reply: _Stream, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        state = self._state
        try:
            if reply.first_delay:
                time.sleep(reply.first_delay)
            for chunk in state._chunks(reply, body):
                if chunk is None:
                    assert reply.hold is not None
                    reply.hold.started.set()
                    reply.hold.released.wait()
                    if state._closed.is_set():
                        self.close_connection = True
                        return
                    continue
                self._send_chunk(f"data: {json.dumps(chunk)}\n\n")
                if reply.delay:
                    time.sleep(reply.delay)
            if not reply.cut:
                self._send_chunk("data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            state.finished.append(time.perf_counter())
        except (BrokenPipeError, ConnectionResetError):
            # The client hung up mid-stream (a cancelled test): nothing left to answer.
            self.close_connection = True

    def _send_chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def loopback_choice(server: LLMServer, key_env: str) -> ModelChoice:
    """The model of a config that points litellm at `server`, its key in `key_env`."""
    return ModelChoice(
        name="loopback",
        model="openai/test-model",
        source="flag",
        api_base=server.url,
        api_key_env=key_env,
        max_context_size=32_000,
    )


def write_loopback_config(
    home: Path, server: LLMServer, key_env: str, model: str = "openai/test-model"
) -> None:
    """A config.toml in `home` whose default model is `model` at `server`, its key in
    `key_env`: for a kode-tui started as a process (print mode), which reads its model from
    the config."""
    config = home / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f'default_model = "local"\n[models.local]\nmodel = "{model}"\n'
        f'api_base = "{server.url}"\napi_key_env = "{key_env}"\n'
    )
