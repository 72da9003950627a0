"""What a model call cost: litellm's prices (read from its map file, never by importing litellm)
applied to the usage the provider reported.

`TokenUsage.input` is the whole prompt, cached tokens included (the OpenAI count; the providers
turn Anthropic's, which leaves them out, into it). Of it, `cache_read` tokens are billed at the
cache-read price and `cache_creation` tokens at the cache-write price, each falling back to the
input price when the map has none; the rest at the input price.
"""

from __future__ import annotations

import msgspec

from kode_tui.config import DEMO_MODEL
from kode_tui.soul.llm.model_map import ModelEntry, map_entry
from kode_tui.wire.events import TokenUsage


class Price(msgspec.Struct, frozen=True):
    """Dollars per token of each kind."""

    input: float
    output: float
    cache_read: float
    cache_creation: float


def price_of(model: str) -> Price | None:
    """`model`'s prices from litellm's map; None when the map does not know them (a local
    model behind an OpenAI-compatible server, say) or for the demo, which costs nothing."""
    if model == DEMO_MODEL:
        return None
    entry = map_entry(model) or ModelEntry()
    input_price, output_price = (
        _number(entry.input_cost_per_token),
        _number(entry.output_cost_per_token),
    )
    if input_price is None or output_price is None:
        return None
    cache_read = _number(entry.cache_read_input_token_cost)
    cache_creation = _number(entry.cache_creation_input_token_cost)
    return Price(
        input=input_price,
        output=output_price,
        cache_read=input_price if cache_read is None else cache_read,
        cache_creation=input_price if cache_creation is None else cache_creation,
    )


def usage_cost(usage: TokenUsage, price: Price) -> float:
    """The dollars one call's `usage` cost at `price`."""
    cache_read = max(usage.cache_read, 0)
    cache_creation = max(usage.cache_creation, 0)
    fresh = max(usage.input - cache_read - cache_creation, 0)
    return (
        fresh * price.input
        + cache_read * price.cache_read
        + cache_creation * price.cache_creation
        + max(usage.output, 0) * price.output
    )


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)
