"""`ProcessProvider`: a model served by the model process (DESIGN.md §7).

litellm takes seconds and 150 MB to import, and parsing its chunks holds the GIL; in the UI
process that froze the first request and hitched typing while answers streamed. So litellm
(and the OpenAI SDK, which serves `openai/` models) lives in a child process (worker.py),
started once as kode-tui starts (`model_launch.start_early()`, adopted here) or by `start()`,
shared by every `ProcessProvider` of this process, and started again by the next request after
it died. A request in flight when it dies fails with
an `LLMConnectionError` (which the soul retries).

The parent never waits on the child: a writer thread encodes and sends requests, a reader
thread decodes the replies and hands them to the requesting event loop. Cancelling a stream
(Esc) sends a cancel message and forgets the request at once; the child closes its HTTP
stream. The child's stderr goes to the log, line by line.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import itertools
import logging
import os
import queue
import subprocess
import threading
from collections.abc import AsyncIterator, Sequence
from typing import IO, Any, cast

import msgspec

from kode_tui import model_launch
from kode_tui.message import Message
from kode_tui.soul.llm import (
    DEFAULT_MAX_CONTEXT_SIZE,
    LLMConnectionError,
    StreamItem,
    ToolSchema,
)
from kode_tui.soul.llm.litellm_provider import LiteLLMProvider
from kode_tui.soul.llm.model_map import context_size
from kode_tui.soul.llm.openai_route import uses_openai_route
from kode_tui.soul.llm.worker import (
    ROUTE_LITELLM,
    decode,
    encode,
    message_json,
    reply_error,
    reply_item,
    route,
)

__all__ = ["ProcessProvider", "start", "stop", "worker_pid"]

log = logging.getLogger(__name__)

_DIED = "died"


class _Request:
    """One stream's mailbox: replies arrive from the reader thread, in order."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.replies: asyncio.Queue[list[list[Any]]] = asyncio.Queue()

    def deliver(self, replies: list[list[Any]]) -> None:
        with contextlib.suppress(RuntimeError):  # its loop is closed: nobody is listening
            self.loop.call_soon_threadsafe(self.replies.put_nowait, replies)


class _Worker:
    """The model process and the three threads that talk to it."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._lock = threading.Lock()
        self._requests: dict[int, _Request] = {}
        self._ids = itertools.count(1)
        self._outbox: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self.exit_code: int | None = None
        """Set (under the lock) once the process has ended; no request is taken after."""
        self._process = process
        self.pid = self._process.pid
        for target, name in (
            (self._read, "replies"),
            (self._write, "requests"),
            (self._log_stderr, "stderr"),
        ):
            threading.Thread(target=target, name=f"kode-model-{name}", daemon=True).start()

    def open(self, request: dict[str, Any]) -> tuple[int, _Request] | None:
        """Send `request`; its id and mailbox, or None when the process has already ended."""
        mailbox = _Request(asyncio.get_running_loop())
        with self._lock:
            if self.exit_code is not None:
                return None
            request_id = next(self._ids)
            self._requests[request_id] = mailbox
        self._outbox.put({**request, "op": "stream", "id": request_id})
        return request_id, mailbox

    def close(self, request_id: int, *, cancel: bool) -> None:
        """Forget a request; with `cancel`, also tell the child to stop it."""
        with self._lock:
            self._requests.pop(request_id, None)
            alive = self.exit_code is None
        if cancel and alive:
            self._outbox.put({"op": "cancel", "id": request_id})

    def stop(self) -> None:
        """End the process by closing its stdin: it leaves at once, without tearing down."""
        self._outbox.put(None)

    # --- threads ---------------------------------------------------------------------------

    def _write(self) -> None:
        stdin = _pipe(self._process.stdin)
        try:
            while (request := self._outbox.get()) is not None:
                try:
                    if "history" in request:
                        # Encoded here, not on the event loop: a long history is megabytes.
                        request["history"] = [message_json(m) for m in request["history"]]
                    line = encode(request)
                except Exception as error:  # a bug: that request fails, the others go on
                    log.exception("a request for the model process could not be encoded")
                    self._fail(request["id"], f"the request could not be encoded: {error}")
                    continue
                stdin.write(line)
                stdin.flush()
        except (OSError, ValueError):
            pass  # the process ended: the reader reports it
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _read(self) -> None:
        stdout = cast(io.BufferedReader, self._process.stdout)
        rest = b""
        # Whatever arrived at once goes to each request in one hand-over: one wake-up of its
        # event loop per read, not per token.
        while data := stdout.read1(1 << 16):
            lines, _, rest = (rest + data).rpartition(b"\n")
            if not lines:
                continue
            batches: dict[_Request, list[list[Any]]] = {}
            with self._lock:
                for reply in _replies(lines):
                    mailbox = self._requests.get(reply[0])
                    if mailbox is not None:
                        batches.setdefault(mailbox, []).append(reply)
            for mailbox, replies in batches.items():
                mailbox.deliver(replies)
        code = self._process.wait()
        with self._lock:
            self.exit_code = code
            orphans = list(self._requests.values())
            self._requests.clear()
        self._outbox.put(None)
        if orphans or code != 0:
            log.warning("the model process (pid %d) stopped: exit %d", self.pid, code)
        for mailbox in orphans:
            mailbox.deliver([[0, _DIED, code]])

    def _fail(self, request_id: int, message: str) -> None:
        with self._lock:
            mailbox = self._requests.get(request_id)
        if mailbox is not None:
            mailbox.deliver([[request_id, "err", "error", message, None, None]])

    def _log_stderr(self) -> None:
        for line in _pipe(self._process.stderr):
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                log.warning("model process: %s", text)


def _replies(lines: bytes) -> list[list[Any]]:
    """The replies in `lines` (complete lines); one that is not a reply is logged and skipped."""
    try:
        return list(_lines_decoder.decode_lines(lines))
    except msgspec.DecodeError:
        pass  # an escape msgspec refuses (see `decode`), or not a reply at all: line by line
    replies = []
    for line in lines.splitlines():
        try:
            reply = decode(line)
        except ValueError:
            log.warning("the model process wrote a line that is not a reply: %.200r", line)
            continue
        if isinstance(reply, list) and reply:
            replies.append(reply)
    return replies


_lines_decoder = msgspec.json.Decoder(list[Any])


def _joined(replies: list[list[Any]]) -> list[list[Any]]:
    """`replies` with each run of text deltas (and of plain thinking deltas) that arrived
    together joined into one: at 300 tokens a second, a part per token was a wire event, a
    record and a message to every pane per token, for text that is drawn once a frame."""
    joined: list[list[Any]] = []
    for reply in replies:
        last = joined[-1] if joined else None
        if (
            last is not None
            and reply[1] == last[1]
            and (reply[1] == "t" or (reply[1] == "k" and not reply[3] and not last[3]))
        ):
            joined[-1] = [last[0], last[1], last[2] + reply[2], *last[3:]]
        else:
            joined.append(reply)
    return joined


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    assert stream is not None  # Popen was given PIPE for it
    return stream


_worker: _Worker | None = None
_worker_lock = threading.Lock()


def _current(model: str | None = None) -> _Worker:
    """The running model process, started now if there is none (importing what `model`
    needs first)."""
    global _worker
    with _worker_lock:
        if _worker is None or _worker.exit_code is not None:
            try:
                # The one started as kode-tui started, else a new one.
                process = model_launch.take_early() or model_launch.spawn(
                    route(model) if model else ROUTE_LITELLM
                )
                _worker = _Worker(process)
            except OSError as error:
                raise LLMConnectionError(f"could not start the model process: {error}") from error
        return _worker


def start(model: str | None = None) -> None:
    """Start the model process now (it imports what `model` needs while the UI comes up),
    unless it is running. Quick: it only spawns the process. A failure is logged; the first
    request tries again and reports it."""
    try:
        _current(model)
    except LLMConnectionError as error:
        log.warning("%s", error)


def stop() -> None:
    """End the model process (a later request starts it again)."""
    global _worker
    with _worker_lock:
        worker, _worker = _worker, None
    if worker is not None:
        worker.stop()
    model_launch.stop_early()


def worker_pid() -> int | None:
    """The running model process's id, or the early one's (for tests and diagnostics)."""
    worker = _worker
    if worker is not None and worker.exit_code is None:
        return worker.pid
    return model_launch.early_pid()


def _stopped(code: int) -> LLMConnectionError:
    how = f"killed by signal {-code}" if code < 0 else f"exit {code}"
    return LLMConnectionError(
        f"the model process stopped ({how}); the next request starts it again"
    )


class ProcessProvider(LiteLLMProvider):
    """A model called in the model process: `LiteLLMProvider`'s settings, items and
    errors (it serves the call there), without litellm in this process."""

    _learned_context_size: int | None = None

    @property
    def max_context_size(self) -> int:
        """The configured size; else an `openai/` model's from litellm's map, any other
        model's from what litellm's model info said in the first answer's end; else 128k."""
        return self._size_known_here() or self._learned_context_size or DEFAULT_MAX_CONTEXT_SIZE

    def _size_known_here(self) -> int | None:
        """The configured size, or an `openai/` model's from litellm's map, read here as
        `OpenAIProvider` reads it: this process holds the map anyway (prices, vision), and
        sent with the request, the size spares the model process reading it (~1.6 MiB, 90
        ms); None when only litellm's model info, in the model process, can tell."""
        if self._max_context_size is None and uses_openai_route(self._model):
            self._max_context_size = context_size(self._model) or DEFAULT_MAX_CONTEXT_SIZE
        return self._max_context_size

    async def stream(
        self,
        system_prompt: str | None,
        history: Sequence[Message],
        tools: Sequence[ToolSchema],
    ) -> AsyncIterator[StreamItem]:
        """Stream one assistant response from the model process."""
        request = {
            "model": self._model,
            "api_base": self._api_base,
            "api_key_env": self._api_key_env,
            "max_context_size": self._size_known_here(),
            "timeout": self._timeout,
            "first_token_timeout": self._first_token_timeout,
            "extra": self._extra,
            "images": self.images,
            # The child sees the environment as it is now (a key set after launch, too).
            "env": dict(os.environ),
            "system_prompt": system_prompt,
            "history": list(history),  # encoded by the writer thread
            "tools": list(tools),
        }
        opened = None
        while opened is None:  # None only if it died just now: the next one is new
            worker = _current(self._model)
            opened = worker.open(request)
        request_id, mailbox = opened
        finished = False
        try:
            while True:
                for reply in _joined(await mailbox.replies.get()):
                    tag = reply[1]
                    if tag == "end":
                        finished = True
                        if isinstance(reply[2], int) and reply[2] > 0:
                            self._learned_context_size = reply[2]
                        return
                    if tag == "err":
                        finished = True
                        raise reply_error(reply)
                    if tag == _DIED:
                        finished = True
                        raise _stopped(reply[2])
                    yield reply_item(reply)
        finally:
            worker.close(request_id, cancel=not finished)
