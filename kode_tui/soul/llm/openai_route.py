"""The OpenAI-compatible route: `openai/...` models through the OpenAI SDK itself.

For an `openai/` model litellm is a wrapper around the OpenAI SDK's chat completions. Going to
the SDK directly sends the same request and reads the same chunks, but the model process is
ready in about a second and 60 MB instead of litellm's four seconds and 200 MB, and each chunk
costs a fifth of litellm's stream wrapper. Every other provider goes through litellm
(`LiteLLMProvider`); both share the messages, the chunk reader and the error mapping.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import importlib.util
import inspect
import os
import threading
import weakref
from pathlib import Path
from typing import Any

import msgspec

from kode_tui.soul.llm import DEFAULT_MAX_CONTEXT_SIZE
from kode_tui.soul.llm.litellm_provider import LiteLLMProvider

__all__ = ["OPENAI_PREFIX", "OpenAIProvider", "load_openai", "uses_openai_route"]

OPENAI_PREFIX = "openai/"

_openai: Any = None
_create_arguments: frozenset[str] = frozenset()
_load_lock = threading.Lock()
_clients: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str | None, str | None, float], Any]
] = weakref.WeakKeyDictionary()
"""The clients made, by event loop (a client's connections belong to the loop that made them)."""


def uses_openai_route(model: str) -> bool:
    """Whether `model` is served by the OpenAI SDK directly (else litellm serves it)."""
    return model.startswith(OPENAI_PREFIX)


def load_openai() -> Any:
    """Import the OpenAI SDK and its chat resource once (thread-safe); the module."""
    global _openai, _create_arguments
    if _openai is not None:
        return _openai
    with _load_lock:
        if _openai is None:
            import openai

            # Imported lazily by the first client otherwise: on the first request's time.
            completions = importlib.import_module("openai.resources.chat.completions")
            _create_arguments = frozenset(
                inspect.signature(completions.AsyncCompletions.create).parameters
            )
            _openai = openai
    return _openai


class OpenAIProvider(LiteLLMProvider):
    """An `openai/` model (OpenAI, or any server that speaks its chat completions API at
    `api_base`) called through the OpenAI SDK. Settings, stream items and errors are
    `LiteLLMProvider`'s; only the call differs."""

    @property
    def max_context_size(self) -> int:
        """The configured size, else litellm's model map's, else 128k (as litellm's route)."""
        if self._max_context_size is None:
            self._max_context_size = _mapped_context_size(self._model) or DEFAULT_MAX_CONTEXT_SIZE
        return self._max_context_size

    async def _open(self, request: dict[str, Any]) -> Any:
        openai = _openai if _openai is not None else await asyncio.to_thread(load_openai)
        arguments = dict(request)
        client = _client(
            openai, arguments.pop("api_base", None), arguments.pop("api_key", None),
            arguments.pop("timeout"),
        )  # fmt: skip
        for litellm_only in ("num_retries", "max_retries"):
            arguments.pop(litellm_only, None)
        arguments["model"] = arguments["model"].removeprefix(OPENAI_PREFIX)
        if arguments.get("tools") is None:
            arguments.pop("tools", None)  # a `"tools": null` is refused by some servers
        # What the SDK has no argument for (a server's own option) goes in the body, as
        # litellm sends it.
        body = {k: arguments.pop(k) for k in list(arguments) if k not in _create_arguments}
        if body:
            arguments["extra_body"] = {**body, **(arguments.get("extra_body") or {})}
        return await client.chat.completions.create(**arguments)


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


@functools.cache
def _mapped_context_size(model: str) -> int | None:
    """The input size litellm's model map gives an OpenAI model, read from the map's file in
    litellm's package: importing litellm for it would cost what this route saves."""
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    folders = spec.submodule_search_locations if spec is not None else None
    if not folders:
        return None
    try:
        models = msgspec.json.decode((Path(folders[0]) / _MODEL_MAP).read_bytes())
    except (OSError, msgspec.DecodeError):
        return None
    name = model.removeprefix(OPENAI_PREFIX)
    for entry in (models.get(model), models.get(name)):
        if isinstance(entry, dict) and entry.get("litellm_provider") == "openai":
            size = entry.get("max_input_tokens")
            if isinstance(size, int) and size > 0:
                return size
    return None


_MODEL_MAP = "model_prices_and_context_window_backup.json"
