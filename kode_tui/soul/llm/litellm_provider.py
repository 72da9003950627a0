"""`LiteLLMProvider`: any litellm model string as a `ChatProvider` (DESIGN.md §7).

litellm takes seconds to import, so nothing here imports it at module import time:
`load_litellm()` does, once, and the app calls `preload()` after its first frame to do it in a
thread. litellm is untyped, so its objects stay `Any` at this boundary and are read with
`getattr`, never trusted to have a field.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import json
import logging
import os
import re
import threading
import uuid
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from typing import Any

from kode_tui.config import key_variable, missing_key
from kode_tui.message import Message, TextPart, ThinkPart, TokenUsage
from kode_tui.soul.llm import (
    DEFAULT_MAX_CONTEXT_SIZE,
    LLMConnectionError,
    LLMError,
    LLMStatusError,
    LLMTimeoutError,
    StreamItem,
    ToolCallDelta,
    ToolCallStart,
)
from kode_tui.soul.llm.messages import to_openai_messages
from kode_tui.soul.llm.retry_after import retry_after

__all__ = [
    "LiteLLMProvider",
    "is_anthropic_family",
    "load_litellm",
    "preload",
    "to_openai_messages",
]

# What litellm 1.106 imports lazily inside the first `acompletion` (about 0.4 s) and the first
# one with tools (the MCP handler, about 0.4 s more): imported with litellm, in the thread, so
# no first request freezes the UI's event loop. Names missing from another version are skipped.
_WARM_MODULES = (
    "openai.resources.chat",
    "litellm.proxy.openai_files_endpoints.common_utils",
    "litellm.litellm_core_utils.default_encoding",
    "litellm.responses.mcp.chat_completions_handler",
)

_litellm: Any = None
_load_lock = threading.Lock()


def load_litellm() -> Any:
    """Import litellm once (thread-safe), offline and silent, and return the module.

    It reads the bundled cost map instead of fetching it, retries nothing itself and prints
    nothing: the TUI owns the terminal and print mode owns stdout.
    """
    global _litellm
    if _litellm is not None:
        return _litellm
    with _load_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            import litellm

            litellm.suppress_debug_info = True
            litellm.drop_params = True
            _quiet_litellm_warnings()
            for name in _WARM_MODULES:
                try:
                    importlib.import_module(name)
                except Exception:
                    logging.getLogger(__name__).debug("could not preload %s", name, exc_info=True)
            _quiet_litellm_logging()
            _litellm = litellm
    return _litellm


async def preload() -> None:
    """Import litellm in a thread, so the first request does not wait for it."""
    await asyncio.to_thread(load_litellm)


def _quiet_litellm_logging() -> None:
    # litellm attaches a handler that writes to stdout/stderr; a NullHandler and no propagation
    # keep its records off the terminal (and off Python's last-resort stderr handler). The two
    # roots are included so that loggers litellm creates later stop at them too.
    names = {"LiteLLM", "litellm", *logging.Logger.manager.loggerDict}
    for name in names:
        if name.startswith(("LiteLLM", "litellm")):
            logger = logging.getLogger(name)
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
            logger.addHandler(logging.NullHandler())
            logger.propagate = False


def _quiet_litellm_warnings() -> None:
    # litellm's deprecation noise, and pydantic's complaints when litellm serialises its own
    # half-filled models, would land on stderr, under the TUI.
    warnings.filterwarnings("ignore", module=r"litellm(\..*)?$")
    warnings.filterwarnings("ignore", message="Pydantic serializer warnings")
    # pydantic's note on litellm's TypedDicts, made when a request first builds their schemas.
    warnings.filterwarnings("ignore", message=r".* using the `ReadOnly` qualifier")


def is_anthropic_family(model: str) -> bool:
    """Whether `model` is a Claude model (prompt caching marks, signed thinking blocks)."""
    return model.startswith("anthropic/") or "claude" in model.lower()


class LiteLLMProvider:
    """A model reached through litellm, streamed.

    `api_key_env` names the environment variable holding the key (read at each call, never
    stored); without it litellm looks for its usual variable. `extra` holds more keyword
    arguments for `litellm.acompletion` (temperature, reasoning_effort, extra_headers...); they
    cannot override the ones set here.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key_env: str | None = None,
        max_context_size: int | None = None,
        timeout: float = 120,
        first_token_timeout: float | None = None,
        extra: dict[str, Any] | None = None,
        images: bool = True,
    ) -> None:
        self._model = model
        self._api_base = api_base
        self._api_key_env = api_key_env
        self._max_context_size = max_context_size
        self._timeout = timeout
        self._first_token_timeout = first_token_timeout or timeout
        self._extra = dict(extra or {})
        self.images = images
        """Whether the model takes images: without, each image is sent as a note saying so."""

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def reasoning_effort(self) -> str | None:
        """The thinking effort sent as `reasoning_effort` (`low`, `medium`, `high`), or None
        to send none (litellm turns it into Anthropic's thinking budget)."""
        effort = self._extra.get("reasoning_effort")
        return effort if isinstance(effort, str) else None

    @reasoning_effort.setter
    def reasoning_effort(self, effort: str | None) -> None:
        if effort is None:
            self._extra.pop("reasoning_effort", None)
        else:
            self._extra["reasoning_effort"] = effort

    @property
    def max_context_size(self) -> int:
        """The configured size, else litellm's model info (once litellm is loaded), else 128k."""
        if self._max_context_size is None and _litellm is not None:
            # Asked once: litellm raises (slowly) for every model it does not know.
            found = _model_context_size(_litellm, self._model)
            self._max_context_size = found or DEFAULT_MAX_CONTEXT_SIZE
        return self._max_context_size or DEFAULT_MAX_CONTEXT_SIZE

    async def stream(
        self,
        system_prompt: str | None,
        history: Sequence[Message],
        tools: Sequence[dict[str, Any]],
    ) -> AsyncIterator[StreamItem]:
        """Stream one assistant response: deltas in order, then the usage if the provider sent
        one. Every failure is an `LLMError` whose message is one sentence without the key."""
        api_key = self._api_key()
        messages = to_openai_messages(
            system_prompt, history, anthropic=is_anthropic_family(self._model), images=self.images
        )
        request: dict[str, Any] = {
            **self._extra,
            "model": self._model,
            "messages": messages,
            "tools": list(tools) or None,
            "stream": True,
            "stream_options": {"include_usage": True},
            "timeout": self._timeouts(),
            # The soul retries (with StepRetry events); litellm and the OpenAI SDK must not.
            "num_retries": 0,
            "max_retries": 0,
        }
        if self._api_base:
            request["api_base"] = self._api_base
        if api_key is not None:
            request["api_key"] = api_key
        try:
            # Importing the library (seconds on a loaded machine) is no silence of the model's.
            library = await self._library()
            async with asyncio.timeout(self._first_token_timeout):
                response = await self._open(library, request)
        except TimeoutError as exc:
            raise self._silent(first=True) from exc
        except Exception as exc:
            raise self._error(exc, api_key) from exc
        reader = _ChunkReader()
        batches = self._batches(library, response)
        silence = _Silence()
        first = True
        try:
            while True:
                try:
                    batch = await silence.next(
                        batches, self._first_token_timeout if first else self._timeout
                    )
                    first = False
                except StopAsyncIteration:
                    break
                except TimeoutError as exc:
                    raise self._silent(first=first) from exc
                except Exception as exc:
                    if _CUT_OFF.search(str(exc)):
                        raise self._cut_off() from exc
                    raise self._error(exc, api_key) from exc
                for chunk in batch:
                    for item in reader.read(chunk):
                        yield item
        finally:
            silence.stop()
            # Also on cancel or an early stop: give the HTTP connection back.
            close = getattr(response, "aclose", None) or getattr(response, "close", None)
            try:
                await batches.aclose()
                if close is not None:
                    await close()
            except Exception:
                logging.getLogger(__name__).debug("closing the stream failed", exc_info=True)
        if not reader.finished:
            # A stream that just stops (a proxy or server that dropped the rest) is not an
            # answer: taking it as one would keep half a message, or tool calls cut in two.
            raise self._cut_off()
        if reader.usage is not None:
            yield reader.usage

    async def _batches(self, library: Any, response: Any) -> AsyncGenerator[Sequence[Any], None]:
        """The chunks of the stream `_open` returned, in the groups they can be read in:
        litellm hands them out one at a time."""
        async for chunk in response:
            yield (chunk,)

    def _timeouts(self) -> float:
        """The longest wait for bytes, the request's timeout; `stream` holds the stream to the
        shorter one after its first part."""
        return max(self._timeout, self._first_token_timeout)

    async def _library(self) -> Any:
        """The library that sends the request (litellm), imported in a thread the first time."""
        return _litellm if _litellm is not None else await asyncio.to_thread(load_litellm)

    async def _open(self, library: Any, request: dict[str, Any]) -> Any:
        """Send `request` (litellm's `acompletion` arguments) with `library`; the stream of
        chunks."""
        return await library.acompletion(**request)

    def _silent(self, *, first: bool) -> LLMTimeoutError:
        if first:
            return LLMTimeoutError(
                f"{self._model} sent nothing within {self._first_token_timeout:g} s "
                "(loop_control.first_token_timeout)"
            )
        return LLMTimeoutError(
            f"{self._model} stopped sending for {self._timeout:g} s (loop_control.request_timeout)"
        )

    def _cut_off(self) -> LLMConnectionError:
        return LLMConnectionError(
            f"the answer from {self._model} was cut off (the stream ended before it finished)"
        )

    def _api_key(self) -> str | None:
        # A hosted provider's key that is not set: say so before any request (litellm would
        # report it as an authentication failure, or send the request without it).
        missing = missing_key(self._model, self._api_key_env, self._api_base)
        if missing is not None:
            if self._api_key_env:
                raise LLMError(f"{missing} is not set")
            raise LLMError(f"no API key for {self._model}: set {missing}")
        return os.environ.get(self._api_key_env) if self._api_key_env else None

    def _key_hint(self) -> str:
        """The variable a user should check after a 401."""
        return key_variable(self._model, self._api_key_env)

    def _error(self, exc: Exception, api_key: str | None) -> LLMError:
        """One `LLMError` for whatever litellm raised, its text free of the key."""
        model = self._model
        detail = _redact(_detail(exc), api_key)
        encoding = next((e for e in _causes(exc) if isinstance(e, UnicodeEncodeError)), None)
        if encoding is not None:
            # Raised while the request was being built, before anything was sent: litellm
            # calls it a server error (500), but no retry can help. Not an LLMStatusError.
            why = _redact(" ".join(str(encoding).split()), api_key)
            return LLMError(f"the request to {model} could not be encoded, nothing was sent: {why}")
        status = getattr(exc, "status_code", None)
        transport = _transport_failure(exc)
        if transport == "timeout":
            if status in (408, 504):  # a gateway gave up, maybe long before our timeout
                return LLMTimeoutError(f"{model} timed out (HTTP {status}): {detail}")
            waited = max(self._timeout, self._first_token_timeout)
            return LLMTimeoutError(f"{model} did not answer within {waited:g} s")
        if transport is not None:
            where = self._api_base or model
            if transport == "connection refused":
                return LLMConnectionError(f"could not connect to {where}: connection refused")
            return LLMConnectionError(f"connection to {where} failed: {transport}")
        local = _client_side_failure(exc)
        if local is not None:
            # The OpenAI SDK refused before sending anything; litellm calls that a 500, but
            # trying again cannot help.
            if re.search(r"api_key|credentials", str(local), re.IGNORECASE):
                return LLMError(f"no API key for {model}: set {self._key_hint()}")
            return LLMError(f"{model} failed: {_redact(_detail(local), api_key)}")
        if (_litellm is not None and isinstance(exc, _litellm.ContextWindowExceededError)) or (
            status == 400 and _TOO_LONG.search(detail)
        ):
            return LLMStatusError(f"the conversation is too long for {model}: {detail}", 400)
        if not isinstance(status, int):
            return LLMError(f"{model} failed: {detail}")
        error = self._status_error(status, detail)
        error.retry_after = retry_after(_causes(exc))
        return error

    def _status_error(self, status: int, detail: str) -> LLMStatusError:
        model = self._model
        if status == 401:
            return LLMStatusError(
                f"authentication failed for {model}: check {self._key_hint()}", 401
            )
        if status == 403:
            return LLMStatusError(f"permission denied for {model}: {detail}", 403)
        if status == 404:
            return LLMStatusError(f"model not found: {model} ({detail})", 404)
        if status == 429:
            return LLMStatusError(f"{model} is rate limited (HTTP 429): {detail}", 429)
        if status >= 500:
            return LLMStatusError(f"{model} had a server error (HTTP {status}): {detail}", status)
        if status == 400:
            return LLMStatusError(f"{model} rejected the request (HTTP 400): {detail}", 400)
        return LLMStatusError(f"{model} answered HTTP {status}: {detail}", status)


class _Silence:
    """A stream's silence limits: `next()` raises `TimeoutError` when the chunk it waits for
    does not come within its limit. One timer for the whole stream, moved on only when it
    fires: an `asyncio.timeout` per chunk (a timer made and cancelled each time) was a sixth of
    the model process's time per chunk. Cancelling the task is how the wait is cut short, as
    `asyncio.timeout` does it, and a cancel from elsewhere stays a cancel."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task[Any] | None = None
        """The task waiting now (or last)."""
        self._limit = 0.0
        self._asked: float | None = None
        """When the chunk awaited now was asked for; None between waits."""
        self._timer: asyncio.TimerHandle | None = None
        self._expired = False

    async def next(self, chunks: AsyncIterator[Any], limit: float) -> Any:
        """The next chunk of `chunks`, if it comes within `limit` seconds."""
        self._task = task = asyncio.current_task()
        assert task is not None  # awaited in a task
        self._limit, self._asked = limit, self._loop.time()
        due = self._asked + limit
        if self._timer is None or self._timer.when() > due:  # none yet, or the limit shrank
            self._arm(due)
        cancelling = task.cancelling()
        try:
            return await anext(chunks)
        except asyncio.CancelledError as error:
            if self._took_back(cancelling):
                raise TimeoutError from error
            raise
        finally:
            self._asked = None
            self._took_back(cancelling)

    def _took_back(self, cancelling: int) -> bool:
        """Whether the wait just ended was cut short by the limit and nothing else; the
        limit's cancel is taken back from the task (once)."""
        if not self._expired or self._task is None:
            return False
        self._expired = False
        return self._task.uncancel() <= cancelling

    def stop(self) -> None:
        """No more waits: the timer goes."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, when: float) -> None:
        self.stop()
        self._timer = self._loop.call_at(when, self._check)

    def _check(self) -> None:
        self._timer = None
        if self._asked is None or self._task is None:
            return  # not waiting: the next wait arms it again
        due = self._asked + self._limit
        if self._loop.time() < due:
            self._arm(due)
            return
        self._expired = True
        self._task.cancel()


# An OpenAI-compatible server's words for a request over the model's context (litellm turns
# them into a ContextWindowExceededError; the OpenAI SDK leaves them in a 400).
_TOO_LONG = re.compile(r"context[ _]length|maximum context|context window", re.IGNORECASE)

# litellm's words when it notices a stream that ended early itself.
_CUT_OFF = re.compile(r"ended before a finish_reason", re.IGNORECASE)


class _ChunkReader:
    """Turns stream chunks (litellm's `ModelResponseStream` objects, or the JSON objects of the
    OpenAI route) into stream items; remembers the usage."""

    def __init__(self) -> None:
        self.usage: TokenUsage | None = None
        self.finished = False
        """A chunk said why the answer ended (a finish reason): it came whole."""
        self._call_ids: dict[Any, str] = {}

    def read(self, chunk: Any) -> Iterator[StreamItem]:
        usage = _field(chunk, "usage")
        if usage is not None and (
            _field(usage, "prompt_tokens") is not None or _field(usage, "input_tokens") is not None
        ):
            self.usage = _token_usage(usage)
        choices = _field(chunk, "choices") or ()
        if not choices:
            return
        if _field(choices[0], "finish_reason"):
            self.finished = True
        delta = _field(choices[0], "delta")
        if delta is None:
            return
        reasoning = _field(delta, "reasoning_content")
        if reasoning:
            yield ThinkPart(think=reasoning)
        for block in _field(delta, "thinking_blocks") or ():
            signature = _field(block, "signature")
            if _field(block, "type") == "thinking" and signature:
                yield ThinkPart(think="", encrypted=signature)
        content = _field(delta, "content")
        if content:
            yield TextPart(text=content)
        for call in _field(delta, "tool_calls") or ():
            yield from self._tool_call(call)

    def _tool_call(self, call: Any) -> Iterator[StreamItem]:
        # OpenAI names a call once (index, id, name), then sends argument pieces by index only.
        index = _field(call, "index")
        provided_id = _field(call, "id")
        key = index if index is not None else provided_id or len(self._call_ids)
        function = _field(call, "function")
        name = _field(function, "name") if function is not None else None
        arguments = _field(function, "arguments") if function is not None else None
        call_id = self._call_ids.get(key)
        if call_id is None:
            call_id = provided_id or f"call_{uuid.uuid4().hex[:24]}"
            self._call_ids[key] = call_id
            yield ToolCallStart(id=call_id, name=name or "")
        if arguments:
            yield ToolCallDelta(id=call_id, arguments_delta=arguments)


def _field(obj: Any, name: str) -> Any:
    """A field of a litellm object or of a plain dict (litellm hands out both; the OpenAI
    route only dicts)."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _token_usage(usage: Any) -> TokenUsage:
    """The usage as a `TokenUsage`, whose `input` counts the whole prompt, cached tokens too.

    The OpenAI shape (and litellm's, for every provider) has `prompt_tokens` with the cached
    ones in it (`prompt_tokens_details.cached_tokens`; litellm adds Anthropic's
    `cache_read_input_tokens` / `cache_creation_input_tokens` to it). Anthropic's own shape
    (`input_tokens`, as some servers pass it on) leaves them out: they are added here.
    """
    details = _field(usage, "prompt_tokens_details")
    cache_read = (
        (_field(details, "cached_tokens") if details is not None else None)
        or _field(usage, "cache_read_input_tokens")
        or _field(usage, "prompt_cache_hit_tokens")  # DeepSeek's name
        or 0
    )
    cache_creation = _field(usage, "cache_creation_input_tokens") or 0
    prompt = _field(usage, "prompt_tokens")
    if prompt is None:
        prompt = (_field(usage, "input_tokens") or 0) + cache_read + cache_creation
    output = _field(usage, "completion_tokens")
    if output is None:
        output = _field(usage, "output_tokens")
    return TokenUsage(
        input=prompt or 0,
        output=output or 0,
        cache_read=cache_read,
        cache_creation=cache_creation,
    )


def _model_context_size(litellm: Any, model: str) -> int | None:
    try:
        info = litellm.get_model_info(model)
    except Exception:
        return None  # litellm raises for models it does not know
    size = info.get("max_input_tokens") if isinstance(info, dict) else None
    return size if isinstance(size, int) and size > 0 else None


# --- errors ------------------------------------------------------------------------------------

_PREFIX = re.compile(
    r"^\s*(?:litellm\.)?[A-Za-z]*(?:Error|Exception|Timeout)(?:\s*:|\s+-)\s*|^Error code: \d+ - "
)


def _detail(exc: BaseException) -> str:
    """The provider's own words from a litellm exception, without litellm's class-name prefixes."""
    text = str(getattr(exc, "message", None) or exc)
    previous = None
    while previous != text:
        previous, text = text, _PREFIX.sub("", text, count=1)
    text = _error_body_message(text.strip()) or text
    text = " ".join(text.split())
    return (text[:297] + "...") if len(text) > 300 else text or type(exc).__name__


def _error_body_message(text: str) -> str | None:
    """The `message` of a JSON (or Python-literal) error body, when the text is one."""
    if not text.startswith("{") or len(text) > 20_000:
        return None
    body: Any = None
    for parse in (json.loads, ast.literal_eval):
        try:
            body = parse(text)
            break
        except (ValueError, SyntaxError):
            continue
    if not isinstance(body, dict):
        return None
    error = body.get("error", body)
    message = error.get("message") if isinstance(error, dict) else error
    return message if isinstance(message, str) and message else None


def _redact(text: str, api_key: str | None) -> str:
    return text.replace(api_key, "***") if api_key else text


def _transport_failure(exc: BaseException) -> str | None:
    """`"timeout"`, a short reason for a connection failure, or None when the server answered.

    litellm wraps a refused connection as an InternalServerError (status 500) and a dropped
    stream as a MidStreamFallbackError, so the cause chain is what tells them apart.
    """
    import httpx
    import openai

    chain = list(_causes(exc))
    timeout_types = (openai.APITimeoutError, httpx.TimeoutException, TimeoutError)
    if any(isinstance(error, timeout_types) for error in chain):
        return "timeout"
    if any(isinstance(error, ConnectionRefusedError) for error in chain):
        return "connection refused"
    connection_types = (openai.APIConnectionError, httpx.TransportError, ConnectionError)
    for error in chain:
        if isinstance(error, httpx.TransportError | ConnectionError):
            return " ".join(str(error).split())[:200] or "connection error"
    if any(isinstance(error, connection_types) for error in chain):
        return "connection error"
    return None


def _client_side_failure(exc: BaseException) -> BaseException | None:
    """The bare `openai.OpenAIError` behind `exc`: raised by the SDK before any request."""
    import openai

    return next((error for error in _causes(exc) if type(error) is openai.OpenAIError), None)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and everything it wraps: `__cause__`, `__context__`, litellm's `original_exception`."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        error = pending.pop(0)
        if id(error) in seen:
            continue
        seen.add(id(error))
        yield error
        for inner in (
            error.__cause__,
            error.__context__,
            getattr(error, "original_exception", None),
        ):
            if isinstance(inner, BaseException):
                pending.append(inner)
