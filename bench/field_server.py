"""A loopback model server that speaks what every peer of the field calls (issue 31).

`FieldServer` answers on 127.0.0.1 in the three streaming dialects the programs we compare with
use: OpenAI chat.completions (kode-tui, kimi-cli, Mistral Vibe, OpenCode), the OpenAI Responses
API (Codex) and Anthropic Messages (Claude Code, with `/v1/messages/count_tokens`). A *turn* is a
streamed request for the main model: it takes the next scripted answer (`reply`), paced at a
given delay per token, and its arrival and last byte are recorded (`arrived`, `finished`). Every
other request (a title, a quota probe, a model list, a request for the small model, one without
`stream`) gets a short answer at once and is only logged (`side`), so only the turn is timed.
`tests/llm_server.py` stays the tests' server; this one exists for the bench's peers.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, cast

from tests.llm_server import serve_in_thread, stop_serving

MAIN_MODEL, SMALL_MODEL = "fake-model", "fake-small"
SIDE_ANSWER = "ok"


@dataclass
class Answer:
    """A scripted answer: its text pieces (one SSE event each) and the pause after each."""

    pieces: list[str]
    delay: float = 0.0
    expect: str | None = None
    """Text the turn's request must hold (the message typed for it), so that a side request
    that arrives meanwhile (a title for the last turn, say) does not take the answer."""


class FieldServer:
    """The server; `with FieldServer() as server:`."""

    def __init__(self) -> None:
        self.arrived: list[float] = []
        """When each turn request was read (`time.perf_counter()`)."""
        self.finished: list[float] = []
        """When each turn's last byte was written."""
        self.requests: list[dict[str, Any]] = []
        """Each turn request's body."""
        self.side: list[tuple[float, str, str]] = []
        """(time, path, model) of every request that was not a turn."""
        self.errors: list[BaseException] = []
        self._answers: deque[Answer] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """The OpenAI-style base URL (`http://127.0.0.1:PORT/v1`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root(self) -> str:
        """The base URL without `/v1` (Anthropic clients add it themselves)."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FieldServer:
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.state = self
        self.port = int(self._httpd.server_address[1])
        self._thread = serve_in_thread(self._httpd, "field-server")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._httpd is not None and self._thread is not None:
            stop_serving(self._httpd, self._thread)

    def reply(self, pieces: list[str], delay: float = 0.0, expect: str | None = None) -> None:
        """Queue the answer of the next turn (one whose request holds `expect`, if given)."""
        with self._lock:
            self._answers.append(Answer(pieces, delay, expect))

    def drop_pending(self) -> None:
        """Forget answers no turn took."""
        with self._lock:
            self._answers.clear()

    def _take(self, path: str, body: dict[str, Any]) -> Answer | None:
        """The answer for this request: a scripted one for a turn, None for a side request."""
        model = str(body.get("model", ""))
        with self._lock:
            turn = body.get("stream") and SMALL_MODEL not in model and self._answers
            expect = self._answers[0].expect if self._answers else None
            if not turn or (expect is not None and expect not in json.dumps(body)):
                self.side.append((time.perf_counter(), path, model))
                return None
            self.arrived.append(time.perf_counter())
            self.requests.append(body)
            return self._answers.popleft()


# --- the three dialects: each yields SSE event texts ---------------------------------------------


def _sse(data: dict[str, Any], event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def chat_events(pieces: list[str], model: str, ident: int) -> Iterator[str]:
    """OpenAI chat.completions chunks, then `[DONE]`."""
    base = {"id": f"chatcmpl-{ident}", "object": "chat.completion.chunk", "created": 0}
    base["model"] = model
    for n, piece in enumerate(pieces):
        delta = {"role": "assistant", "content": piece} if n == 0 else {"content": piece}
        yield _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    yield _sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": len(pieces),
        "total_tokens": 10 + len(pieces),
    }
    yield _sse({**base, "choices": [], "usage": usage})
    yield "data: [DONE]\n\n"


def responses_events(pieces: list[str], model: str, ident: int) -> Iterator[str]:
    """OpenAI Responses events: created, the message item and its text part, the deltas, done."""
    rid, mid = f"resp_{ident}", f"msg_{ident}"
    text = "".join(pieces)
    response = {"id": rid, "object": "response", "created_at": 0, "model": model}
    yield _sse({"type": "response.created", "response": {**response, "status": "in_progress"}})
    item = {"id": mid, "type": "message", "role": "assistant", "status": "in_progress"}
    yield _sse(
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}}
    )
    part = {"type": "output_text", "text": "", "annotations": []}
    where = {"item_id": mid, "output_index": 0, "content_index": 0}
    yield _sse({"type": "response.content_part.added", **where, "part": part})
    for piece in pieces:
        yield _sse({"type": "response.output_text.delta", **where, "delta": piece})
    yield _sse({"type": "response.output_text.done", **where, "text": text})
    done_part = {**part, "text": text}
    yield _sse({"type": "response.content_part.done", **where, "part": done_part})
    done_item = {**item, "status": "completed", "content": [done_part]}
    yield _sse({"type": "response.output_item.done", "output_index": 0, "item": done_item})
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": len(pieces),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10 + len(pieces),
    }
    completed = {**response, "status": "completed", "output": [done_item], "usage": usage}
    yield _sse({"type": "response.completed", "response": completed})


def messages_events(pieces: list[str], model: str, ident: int) -> Iterator[str]:
    """Anthropic Messages events: message_start, one text block, message_delta, message_stop."""
    message = {
        "id": f"msg_{ident}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    yield _sse({"type": "message_start", "message": message}, "message_start")
    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    yield _sse(block, "content_block_start")
    for piece in pieces:
        delta = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": piece},
        }
        yield _sse(delta, "content_block_delta")
    yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": len(pieces)},
    }
    yield _sse(end, "message_delta")
    yield _sse({"type": "message_stop"}, "message_stop")


def _whole(path: str, model: str, ident: int) -> dict[str, Any]:
    """A non-streamed answer in the dialect of `path`."""
    if path.endswith("/messages"):
        return {
            "id": f"msg_{ident}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": SIDE_ANSWER}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
    if path.endswith("/responses"):
        content = [{"type": "output_text", "text": SIDE_ANSWER, "annotations": []}]
        item = {"id": f"msg_{ident}", "type": "message", "role": "assistant", "content": content}
        return {
            "id": f"resp_{ident}",
            "object": "response",
            "status": "completed",
            "model": model,
            "output": [item],
            "usage": {"input_tokens": 10, "output_tokens": 1, "total_tokens": 11},
        }
    message = {"role": "assistant", "content": SIDE_ANSWER}
    return {
        "id": f"chatcmpl-{ident}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }


DIALECTS = {
    "/chat/completions": chat_events,
    "/responses": responses_events,
    "/messages": messages_events,
}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    state: FieldServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client dropping its connection is normal; anything else is kept for the bench."""
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError) and error is not None:
            self.state.errors.append(error)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small SSE writes would wait for delayed ACKs

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the bench prints its own lines."""

    @property
    def _state(self) -> FieldServer:
        return cast(_HTTPServer, self.server).state

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        self._state.side.append((time.perf_counter(), path, ""))
        if path.endswith("/models"):
            models = [
                {
                    "id": m,
                    "object": "model",
                    "type": "model",
                    "display_name": m,
                    "created": 0,
                    "owned_by": "bench",
                }
                for m in (MAIN_MODEL, SMALL_MODEL)
            ]
            self._json(200, {"object": "list", "data": models, "has_more": False})
        else:
            self._json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            self._state.side.append((time.perf_counter(), path, str(body.get("model", ""))))
            self._json(200, {"input_tokens": 10})
            return
        dialect = next((events for end, events in DIALECTS.items() if path.endswith(end)), None)
        if dialect is None:
            self._state.side.append((time.perf_counter(), path, "?"))
            self._json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        state = self._state
        model, ident = str(body.get("model", MAIN_MODEL)), next(state._ids)
        answer = state._take(path, body)
        if answer is None and not body.get("stream"):
            self._json(200, _whole(path, model, ident))
            return
        pieces, delay = (answer.pieces, answer.delay) if answer else ([SIDE_ANSWER], 0.0)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for n, event in enumerate(dialect(pieces, model, ident)):
                self._chunk(event.encode())
                if delay and n < len(pieces):
                    time.sleep(delay)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            if answer is not None:
                state.finished.append(time.perf_counter())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _json(self, code: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
