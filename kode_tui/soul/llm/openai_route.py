"""The OpenAI-compatible route: `openai/...` models through the OpenAI SDK itself.

For an `openai/` model litellm is a wrapper around the OpenAI SDK's chat completions. Going to
the SDK directly sends the same request and reads the same chunks, but the model process is
ready in under a second and 60 MB instead of litellm's four seconds and 200 MB, and a fast
stream is read several times faster (20k tokens: 1 s on screen instead of 6.7 s, bench_model).
Every other provider goes through litellm (`LiteLLMProvider`); both share the messages, the
chunk reader and the error mapping.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
import threading
import weakref
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from kode_tui.soul.llm import DEFAULT_MAX_CONTEXT_SIZE, LLMError
from kode_tui.soul.llm.litellm_provider import LiteLLMProvider
from kode_tui.soul.llm.model_map import context_size
from kode_tui.soul.llm.sse import sse_batches

__all__ = ["OPENAI_PREFIX", "OpenAIProvider", "load_openai", "prepare", "uses_openai_route"]

OPENAI_PREFIX = "openai/"

_openai: Any = None
_load_lock = threading.Lock()
_clients: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str | None, str | None, float], Any]
] = weakref.WeakKeyDictionary()
"""The clients made, by event loop (a client's connections belong to the loop that made them)."""


def uses_openai_route(model: str) -> bool:
    """Whether `model` is served by the OpenAI SDK directly (else litellm serves it)."""
    return model.startswith(OPENAI_PREFIX)


def load_openai() -> Any:
    """Import the OpenAI SDK once (thread-safe); the module."""
    global _openai
    if _openai is not None:
        return _openai
    with _load_lock:
        if _openai is None:
            import openai

            # The client's modules are imported lazily, on the first request's time otherwise
            # (its transport's HTTP core comes with the first client: see `prepare`).
            importlib.import_module("openai._streaming")
            _openai = openai
    return _openai


async def prepare(provider: OpenAIProvider | None) -> None:
    """Pay what the first request on this loop would pay once, before it waits for it:
    `provider`'s client (its HTTP core's import and an SSL context: ~50 ms), else a throwaway
    client for the import alone; anyio's asyncio backend, imported at the first connection;
    and the loop's thread pool, started by the first name lookup. Nothing is sent."""
    openai = load_openai()
    try:
        made = provider is not None and provider.client(openai) is not None
    except LLMError:  # no key (yet): the request says so, or finds it set by then
        made = False
    if not made:
        openai.DefaultAsyncHttpxClient()
    import anyio  # the SDK's HTTP stack, which imports its asyncio backend at its first call

    await anyio.sleep(0)
    await asyncio.get_running_loop().run_in_executor(None, _nothing)


def _nothing() -> None:
    """A call for the loop's thread pool to start on."""


class OpenAIProvider(LiteLLMProvider):
    """An `openai/` model (OpenAI, or any server that speaks its chat completions API at
    `api_base`) called through the OpenAI SDK. Settings, stream items and errors are
    `LiteLLMProvider`'s; only the call differs."""

    @property
    def max_context_size(self) -> int:
        """The configured size, else litellm's model map's (read from its file in litellm's
        package: importing litellm for it would cost what this route saves), else 128k."""
        if self._max_context_size is None:
            self._max_context_size = context_size(self._model) or DEFAULT_MAX_CONTEXT_SIZE
        return self._max_context_size

    async def _library(self) -> Any:
        return _openai if _openai is not None else await asyncio.to_thread(load_openai)

    def client(self, openai: Any) -> Any:
        """The client a request sent now goes out with (made now, if there is none): the one
        `_open` takes for this provider's settings, on this loop. `LLMError` when the key is
        missing."""
        return _client(openai, self._api_base, self._api_key(), self._timeouts())

    async def _open(self, library: Any, request: dict[str, Any]) -> Any:
        body = dict(request)
        client = _client(
            library, body.pop("api_base", None), body.pop("api_key", None), body.pop("timeout")
        )
        for litellm_only in ("num_retries", "max_retries"):
            body.pop(litellm_only, None)
        body["model"] = body["model"].removeprefix(OPENAI_PREFIX)
        if body.get("tools") is None:
            body.pop("tools", None)  # a `"tools": null` is refused by some servers
        options = {
            "headers": body.pop("extra_headers", None),
            "params": body.pop("extra_query", None),
        }
        body.update(body.pop("extra_body", None) or {})
        # The SDK's own POST, its chunks left as the JSON objects they are: building its typed
        # models was a third of this process's time per chunk (and its stream is not iterated:
        # see `_batches`). Options without an argument in `create` (a server's own, like top_k)
        # go in the body, as litellm sends them.
        return await client.post(
            "/chat/completions",
            body=body,
            cast_to=object,
            stream=True,
            stream_cls=library.AsyncStream[object],
            options={k: v for k, v in options.items() if v},
        )

    def _batches(self, library: Any, response: Any) -> AsyncGenerator[Sequence[Any], None]:
        """The chunks that arrive in one read of the response together (`sse_batches`)."""
        return sse_batches(response, library)


def _client(openai: Any, base_url: str | None, api_key: str | None, timeout: float) -> Any:
    """One client per event loop, server, key and timeout, so the next request reuses its
    connections. The soul retries (with StepRetry events): the SDK must not."""
    # The variables litellm reads for an `openai/` model, read at each call like litellm does.
    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
    api_key = api_key or os.environ.get("OPENAI_API_KEY")
    clients = _clients.setdefault(asyncio.get_running_loop(), {})
    key = (base_url, api_key, timeout)
    client = clients.get(key)
    if client is None:
        client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0
        )
        clients[key] = client
    return client
