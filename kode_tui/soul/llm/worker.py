"""The model process: litellm and the OpenAI SDK run here, never in the UI process (DESIGN.md §7).

`python -m kode_tui.soul.llm.worker [openai|litellm]` imports the library the first model
needs (the OpenAI SDK for an `openai/` model, litellm for the others; the other one when a
request needs it); `... from-config [--config FILE] [--model NAME]` (model_launch.py, started
before the UI has read the config) reads the config to know which (none for the demo). Then it
serves requests read from stdin, one JSON object a line, and
streams each answer back on stdout, one JSON array a line. `ProcessProvider` (process.py) is
the other end. Every request runs through `LiteLLMProvider` (or `OpenAIProvider`,
openai_route.py), so what is sent, the stream items and the error mapping are the in-process
ones.

Requests (parent -> child):

    {"op": "stream", "id": 7, "model": ..., "api_base": ..., "api_key_env": ...,
     "max_context_size": ..., "timeout": ..., "first_token_timeout": ..., "extra": {...},
     "env": {...},
     "system_prompt": ..., "history": [<message JSON>...], "tools": [...]}
    {"op": "cancel", "id": 7}

Replies (child -> parent), each starting with the request's id:

    [7, "t", text]                    TextPart
    [7, "k", think, encrypted]        ThinkPart
    [7, "s", call_id, name]           ToolCallStart
    [7, "d", call_id, arguments]      ToolCallDelta
    [7, "u", input, output, cache_read, cache_creation]   TokenUsage
    [7, "end", max_context_size]      the answer is complete
    [7, "err", kind, message, status, retry_after]
                                      an LLMError (kind: status, connection, timeout, error;
                                      retry_after: the seconds the server asked to wait)

A cancelled request sends nothing more. Stdin's end (the parent exited) ends the process at
once, without tearing litellm down.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import logging
import os
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import msgspec
from pydantic import TypeAdapter

from kode_tui.errors import ConfigError
from kode_tui.message import Message, TextPart, ThinkPart, TokenUsage
from kode_tui.model_launch import FROM_CONFIG
from kode_tui.soul.llm import (
    LLMConnectionError,
    LLMError,
    LLMStatusError,
    LLMTimeoutError,
    StreamItem,
    ToolCallDelta,
    ToolCallStart,
)
from kode_tui.soul.llm.deferred_inits import deferred_inits
from kode_tui.soul.llm.litellm_provider import LiteLLMProvider, load_litellm
from kode_tui.soul.llm.openai_route import (
    OpenAIProvider,
    load_openai,
    prepare,
    uses_openai_route,
)

log = logging.getLogger(__name__)

ROUTE_OPENAI, ROUTE_LITELLM = "openai", "litellm"
"""The process's first argument: the library it imports at start (see `route`)."""


def route(model: str) -> str:
    """Which library serves `model`: the OpenAI SDK for an `openai/` model, else litellm."""
    return ROUTE_OPENAI if uses_openai_route(model) else ROUTE_LITELLM


_FLUSH_SIZE = 1 << 16
"""Replies queued past this many bytes are written at once, without waiting for the loop."""

_FLUSH_AFTER = 0.05
"""Replies are written together at most this often (see `_Server.send`)."""

_WAITED = 0.002
"""A stream item that took longer than this to come was waited for: the model sends slower
than this process reads (see `_Server._paced`)."""

_READ_AHEAD = 0.005
"""How long before the next write of replies a paced stream is read again."""

_MAX_LINE = 1 << 31
"""A request carries the whole history: its line may be as long as the context file."""

# --- the protocol, shared with process.py ------------------------------------------------------

_encoder = msgspec.json.Encoder()


def encode(value: Any) -> bytes:
    """One protocol line. msgspec is fast, but refuses lone surrogates (a file name that is not
    UTF-8 in a prompt); the standard library writes them as `\\udcxx` escapes instead."""
    try:
        return _encoder.encode(value) + b"\n"
    except UnicodeEncodeError:
        return json.dumps(_plain(value)).encode("ascii") + b"\n"


def decode(line: bytes) -> Any:
    """A protocol line back to Python; the escapes `encode` falls back to come back as they were
    (msgspec rejects them)."""
    try:
        return msgspec.json.decode(line)
    except msgspec.DecodeError:
        return json.loads(line)


def message_json(message: Message) -> msgspec.Raw:
    """A message as the context file writes it, ready to embed in a request line."""
    try:
        return msgspec.Raw(message.to_json().encode())
    except (ValueError, UnicodeEncodeError):  # pydantic's serialization error is a ValueError
        return msgspec.Raw(json.dumps(message.model_dump(exclude_unset=True)).encode("ascii"))


def _plain(value: Any) -> Any:
    """`value` with every embedded `msgspec.Raw` parsed back, for `json.dumps`."""
    if isinstance(value, msgspec.Raw):
        return decode(bytes(value))
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def item_reply(request_id: int, item: StreamItem) -> list[Any]:
    """The reply line for one stream item."""
    if isinstance(item, TextPart):
        return [request_id, "t", item.text]
    if isinstance(item, ThinkPart):
        return [request_id, "k", item.think, item.encrypted]
    if isinstance(item, ToolCallStart):
        return [request_id, "s", item.id, item.name]
    if isinstance(item, ToolCallDelta):
        return [request_id, "d", item.id, item.arguments_delta]
    return [
        request_id,
        "u",
        item.input,
        item.output,
        item.cache_read,
        item.cache_creation,
    ]


def reply_item(reply: Sequence[Any]) -> StreamItem:
    """The stream item a reply line carries (its tag is one `item_reply` writes)."""
    tag = reply[1]
    if tag == "t":
        return TextPart(text=reply[2])
    if tag == "k":
        return ThinkPart(think=reply[2], encrypted=reply[3])
    if tag == "s":
        return ToolCallStart(id=reply[2], name=reply[3])
    if tag == "d":
        return ToolCallDelta(id=reply[2], arguments_delta=reply[3])
    if tag == "u":
        return TokenUsage(
            input=reply[2], output=reply[3], cache_read=reply[4], cache_creation=reply[5]
        )
    raise ValueError(f"unknown reply {tag!r}")


def error_reply(request_id: int, error: LLMError) -> list[Any]:
    status = error.status_code if isinstance(error, LLMStatusError) else None
    retry_after = error.retry_after if isinstance(error, LLMStatusError) else None
    if isinstance(error, LLMStatusError):
        kind = "status"
    elif isinstance(error, LLMTimeoutError):
        kind = "timeout"
    elif isinstance(error, LLMConnectionError):
        kind = "connection"
    else:
        kind = "error"
    return [request_id, "err", kind, str(error), status, retry_after]


def reply_error(reply: Sequence[Any]) -> LLMError:
    """The `LLMError` an error reply stands for: the same class, message, status and wait."""
    kind, message, status = reply[2], reply[3], reply[4]
    if kind == "status" and isinstance(status, int):
        return LLMStatusError(message, status, reply[5])
    if kind == "timeout":
        return LLMTimeoutError(message)
    if kind == "connection":
        return LLMConnectionError(message)
    return LLMError(message)


# --- the child ---------------------------------------------------------------------------------


class _Server:
    def __init__(self, out_fd: int) -> None:
        self._out_fd = out_fd
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._pending: list[bytes] = []
        self._size = 0
        self._flushed = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def send(self, reply: list[Any], *, last: bool = False) -> None:
        """Queue a reply. Replies go out together at most once every `_FLUSH_AFTER` (the
        first after a pause at once): the UI draws a stream once a frame, and a write per
        token cost both processes a wake-up per token. A request's `last` reply, and a
        queue past `_FLUSH_SIZE`, go out at once."""
        self._pending.append(encode(reply))
        self._size += len(self._pending[-1])
        if last or self._size >= _FLUSH_SIZE:
            self.flush()
        elif self._timer is None:
            loop = asyncio.get_running_loop()
            wait = max(0.0, self._flushed + _FLUSH_AFTER - loop.time())
            self._timer = loop.call_later(wait, self.flush)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        data = memoryview(b"".join(self._pending))
        self._pending.clear()
        self._size = 0
        self._flushed = asyncio.get_running_loop().time()
        while data:  # a blocking pipe: one call writes it all, but a signal may cut it short
            data = data[os.write(self._out_fd, data) :]

    async def serve(self, library: str | None = None, first: LiteLLMProvider | None = None) -> None:
        """Answer requests until stdin ends. Before, what the first request served by
        `library` would pay once is paid: for the OpenAI SDK, the client of `first` (the
        provider the first request is expected to use) among it."""
        if library == ROUTE_OPENAI:
            await _prepare_first(first)
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_MAX_LINE)
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", buffering=0)
        )
        while line := await reader.readline():
            try:
                request = decode(line)
                self._handle(request)
            except Exception:
                log.exception("a request could not be read")
        for task in self._tasks.values():
            task.cancel()

    async def _paced(self, items: AsyncIterator[StreamItem]) -> AsyncIterator[StreamItem]:
        """`items`, read in bursts while the model sends slower than this process reads: after
        two items in a row that had to be waited for, the stream is read again only
        `_READ_AHEAD` before the next write of replies, so what came meanwhile is read in one
        go and still leaves in that write. Read as it came, a 300 tok/s answer woke this
        process and its HTTP stack once a token: half of its CPU. A stream faster than this
        process is never held: one wait there is a hiccup of the sender, not its pace."""
        loop = asyncio.get_running_loop()
        waited = False
        while True:
            asked = loop.time()
            try:
                item = await anext(items)
            except StopAsyncIteration:
                return
            waited, waited_before = loop.time() - asked > _WAITED, waited
            yield item
            if waited and waited_before:
                rest = self._flushed + _FLUSH_AFTER - _READ_AHEAD - loop.time()
                if rest > 0:
                    await asyncio.sleep(rest)

    def _handle(self, request: dict[str, Any]) -> None:
        request_id = int(request["id"])
        if request["op"] == "cancel":
            task = self._tasks.pop(request_id, None)
            if task is not None:
                task.cancel()
            return
        task = asyncio.create_task(self._stream(request_id, request))
        self._tasks[request_id] = task
        task.add_done_callback(lambda _: self._tasks.pop(request_id, None))

    async def _stream(self, request_id: int, request: dict[str, Any]) -> None:
        _take_environment(request.get("env") or {})
        provider = _provider_class(request["model"])(
            request["model"],
            api_base=request.get("api_base"),
            api_key_env=request.get("api_key_env"),
            max_context_size=request.get("max_context_size"),
            timeout=request.get("timeout") or 120,
            first_token_timeout=request.get("first_token_timeout"),
            extra=request.get("extra"),
            images=request.get("images", True),
        )
        try:
            history = _history_adapter().validate_python(request["history"])
            # An async generator: closed (its HTTP response with it) also when a cancel lands
            # while `_paced` waits between its items.
            stream = cast(
                AsyncGenerator[StreamItem, None],
                provider.stream(request.get("system_prompt"), history, request.get("tools") or ()),
            )
            async with contextlib.aclosing(stream):
                async for item in self._paced(stream):
                    self.send(item_reply(request_id, item))
        except LLMError as error:
            self.send(error_reply(request_id, error), last=True)
            return
        except Exception as error:
            # A bug, not a provider's failure: the traceback goes to the log (stderr), the
            # user gets one sentence.
            log.exception("the request to %s failed", request["model"])
            failure = LLMError(f"{request['model']} failed: {type(error).__name__}: {error}")
            self.send(error_reply(request_id, failure), last=True)
            return
        self.send([request_id, "end", provider.max_context_size], last=True)


def _provider_class(model: str) -> type[LiteLLMProvider]:
    """The OpenAI SDK for an `openai/` model, litellm for every other one."""
    return OpenAIProvider if uses_openai_route(model) else LiteLLMProvider


@functools.cache
def _history_adapter() -> TypeAdapter[list[Message]]:
    return TypeAdapter(list[Message])


def _warm(library: str) -> None:
    """Import what a request served by `library` needs now, before a request waits for it."""
    if library == ROUTE_OPENAI:
        # The SDK imports aiohttp when it can (litellm installs it), for an optional client of
        # its own this route never uses: ~8 MiB and ~0.1 s. litellm, if a request needs it
        # later, imports aiohttp as usual. The SDK's types import the models of its whole API
        # in their packages' `__init__`s (~150 ms), for names a chat completion never asks for.
        with _unimportable("aiohttp"), deferred_inits("openai.types"):
            load_openai()
    else:
        load_litellm()
    _history_adapter()


async def _prepare_first(first: LiteLLMProvider | None) -> None:
    """`prepare` the first request of the OpenAI SDK's route (`first`'s client, if it is one of
    its models). Its HTTP core imports h2 when it can, for HTTP/2, which the SDK's client never
    speaks: ~7 ms of this process's start. A failure is logged: the first request pays it
    then, and reports what fails."""
    try:
        with _unimportable("h2"):
            await prepare(first if isinstance(first, OpenAIProvider) else None)
    except Exception:
        log.exception("could not prepare the first request")


@contextlib.contextmanager
def _unimportable(module: str) -> Iterator[None]:
    """`import module` raises ImportError inside, unless it was imported already. Only for
    this process's start: no other thread imports anything then."""
    if module in sys.modules:
        yield
        return
    sys.modules[module] = None  # type: ignore[assignment]  # the import system's "not found"
    try:
        yield
    finally:
        if sys.modules.get(module, sys) is None:
            del sys.modules[module]


def _configured(arguments: list[str]) -> LiteLLMProvider | None:
    """The provider of the model the config (`--config FILE`, else the default) and `--model
    NAME` choose, as the UI makes it (`soul.agent.make_provider`); None for the demo, or a
    config the UI will refuse. Ollama is not probed (the UI does): a model found there warms
    at its first request."""
    from kode_tui.config import load_config, resolve_model

    options = dict(zip(arguments[::2], arguments[1::2], strict=False))
    config_file = options.get("--config")
    try:
        config = load_config(Path(config_file) if config_file else None)
        choice = resolve_model(config, options.get("--model"), ollama=lambda: None)
    except ConfigError:
        return None
    if choice.is_demo:
        return None
    return _provider_class(choice.model)(
        choice.model,
        api_base=choice.api_base,
        api_key_env=choice.api_key_env,
        max_context_size=choice.max_context_size,
        timeout=config.loop_control.request_timeout,
        first_token_timeout=config.loop_control.first_token_timeout,
    )


_OWN_ENV = frozenset(("LITELLM_LOCAL_MODEL_COST_MAP",))
"""What this process sets for itself (see `load_litellm`), kept whatever the parent has."""


def _take_environment(env: dict[str, str]) -> None:
    """Make this process's environment the parent's as of the request: a key set after
    launch (or a test's) reaches litellm as it would in process."""
    for name in [name for name in os.environ if name not in env and name not in _OWN_ENV]:
        os.environ.pop(name, None)
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


def main() -> None:
    """Serve requests until stdin ends, then leave without tearing the heap down."""
    # Protocol lines go to a private copy of stdout; fd 1 itself becomes stderr, so whatever
    # litellm or a C library prints lands in the log, never in the protocol.
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    # Start-up's imports make objects that live as long as the process (~80k with the OpenAI
    # SDK, ~450k with litellm): collections walking them again and again while it starts cost
    # ~60 ms of the SDK's start; hardly any of it is garbage (~1-2k objects), frozen with them.
    gc.disable()
    library: str | None = sys.argv[1] if len(sys.argv) > 1 else ROUTE_LITELLM
    first = None
    if library == FROM_CONFIG:
        first = _configured(sys.argv[2:])
        library = route(first.model_name) if first is not None else None
    if library is not None:
        _warm(library)
    gc.freeze()  # never walked again, also not while answers stream
    gc.enable()
    try:
        asyncio.run(_Server(out_fd).serve(library, first))
    finally:
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
