"""litellm's model map (context sizes and prices), read from its file in litellm's package
without importing litellm, and the models `/model` offers."""

from __future__ import annotations

import functools
import importlib.util
import mmap
import os
from collections.abc import Mapping
from pathlib import Path

import msgspec

from kode_tui.config import API_KEY_ENV_VARS, DEFAULT_MODELS, DEMO_MODEL, Config, missing_key

MODEL_MAP_FILE = "model_prices_and_context_window_backup.json"

KNOWN_MODELS: Mapping[str, tuple[str, ...]] = {
    "ANTHROPIC_API_KEY": (
        "anthropic/claude-sonnet-4-5",
        "anthropic/claude-opus-4-5",
        "anthropic/claude-haiku-4-5",
    ),
    "OPENAI_API_KEY": ("openai/gpt-5", "openai/gpt-5-mini", "openai/gpt-4.1", "openai/o3"),
    "MOONSHOT_API_KEY": ("moonshot/kimi-k2.5",),
    "GEMINI_API_KEY": ("gemini/gemini-2.5-pro", "gemini/gemini-2.5-flash"),
    "DEEPSEEK_API_KEY": ("deepseek/deepseek-chat", "deepseek/deepseek-reasoner"),
    "OPENROUTER_API_KEY": ("openrouter/anthropic/claude-sonnet-4.5",),
}
"""A few models of each provider `/model` offers when the provider's key is set."""


class ModelOption(msgspec.Struct, frozen=True):
    """One row of the `/model` picker."""

    name: str
    """What `/model NAME` takes: an alias, `demo` or a litellm model string."""
    model: str
    """The litellm model string (the alias's), or `demo`."""
    context_size: int | None = None
    input_price: float | None = None
    """Dollars per million input tokens, from litellm's map."""
    output_price: float | None = None
    missing_key: str | None = None
    """The variable to set before this model can be used, or None."""


class ModelEntry(msgspec.Struct, frozen=True, gc=False):
    """What kode-tui reads of one entry of litellm's map, as the file has it (checked where it
    is used). Every other key is skipped as the file is read: the whole map as dicts held
    ~6 MiB in each process that read it (the UI's and the model process's), this ~1.6 MiB."""

    litellm_provider: object = None
    max_input_tokens: object = None
    input_cost_per_token: object = None
    output_cost_per_token: object = None
    cache_read_input_token_cost: object = None
    cache_creation_input_token_cost: object = None
    supports_reasoning: object = None
    supports_vision: object = None


_MapFile = dict[str, ModelEntry | str | float | bool | list[object] | None]
"""The file's shape: entries, and whatever else a key may hold (skipped)."""


@functools.cache
def model_map() -> dict[str, ModelEntry]:
    """litellm's model map as its file gives it, or empty when litellm or the file is not there."""
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    folders = spec.submodule_search_locations if spec is not None else None
    if not folders:
        return {}
    try:
        # Mapped, not read: the 3.5 MB file is not copied before it is decoded (~2 ms).
        with (
            (Path(folders[0]) / MODEL_MAP_FILE).open("rb") as file,
            mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped,
        ):
            found = msgspec.json.decode(mapped, type=_MapFile)
    except (OSError, ValueError, msgspec.DecodeError):  # ValueError: an empty file
        return {}
    return {key: entry for key, entry in found.items() if isinstance(entry, ModelEntry)}


def map_entry(model: str) -> ModelEntry | None:
    """The map's entry for `model`, found by its whole name or without its provider prefix
    (the map spells `anthropic/claude-sonnet-4-5` as `claude-sonnet-4-5`)."""
    models = model_map()
    provider, _, bare = model.partition("/")
    for key in (model, bare) if bare else (model,):
        entry = models.get(key)
        if entry is not None and (key == model or entry.litellm_provider == provider):
            return entry
    return None


def context_size(model: str) -> int | None:
    """The input size the map gives `model`; None when it does not know it."""
    entry = map_entry(model)
    size = entry.max_input_tokens if entry is not None else None
    return size if isinstance(size, int) and size > 0 else None


def _option(name: str, model: str, configured: int | None, missing: str | None) -> ModelOption:
    entry = map_entry(model) or ModelEntry()
    prices = (entry.input_cost_per_token, entry.output_cost_per_token)
    per_million = [p * 1_000_000 if isinstance(p, int | float) else None for p in prices]
    return ModelOption(
        name=name,
        model=model,
        context_size=configured or context_size(model),
        input_price=per_million[0],
        output_price=per_million[1],
        missing_key=missing,
    )


def model_options(config: Config, env: Mapping[str, str] | None = None) -> list[ModelOption]:
    """The configured aliases (each with the key it lacks, if any), `demo`, then the known
    models of each provider whose key is set in `env` (default `os.environ`)."""
    env = os.environ if env is None else env
    options = [
        _option(
            alias,
            entry.model,
            entry.max_context_size,
            missing_key(entry.model, entry.api_key_env, entry.api_base, env),
        )
        for alias, entry in config.models.items()
    ]
    options.append(ModelOption(name=DEMO_MODEL, model=DEMO_MODEL))
    seen = {option.name for option in options}
    for var in API_KEY_ENV_VARS:
        if missing_key(DEFAULT_MODELS[var].model, env=env) is not None:
            continue
        for model in KNOWN_MODELS[var]:
            if model not in seen:
                seen.add(model)
                size = DEFAULT_MODELS[var].max_context_size
                options.append(_option(model, model, size, None))
    return options
