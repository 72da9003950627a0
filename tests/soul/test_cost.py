"""What model calls cost: litellm's prices applied to the usage (cached tokens at their own
price), the ledger in state.json, and what `/cost` says."""

from __future__ import annotations

from pathlib import Path

import pytest

from kode_tui.humanize import format_usd
from kode_tui.session.state import SessionState, load_state, save_state
from kode_tui.soul.cost import CostLedger, cost_lines
from kode_tui.soul.llm.pricing import price_of, usage_cost
from kode_tui.wire.events import TokenUsage

SONNET = "anthropic/claude-sonnet-4-5"
"""In litellm's map: $3 / M input, $0.30 / M cache read, $3.75 / M cache write, $15 / M output."""
MINI = "openai/gpt-4o-mini"
"""$0.15 / M input, $0.075 / M cached, $0.60 / M output; no cache-write price."""


def test_openai_cached_tokens_are_part_of_the_prompt_and_cost_the_cached_price() -> None:
    price = price_of(MINI)
    assert price is not None
    # 1M prompt tokens of which 400k cached: 600k at $0.15/M, 400k at $0.075/M, 100k out.
    usage = TokenUsage(input=1_000_000, output=100_000, cache_read=400_000)
    assert usage_cost(usage, price) == pytest.approx(0.09 + 0.03 + 0.06)


def test_anthropic_cache_reads_and_writes_each_cost_their_own_price() -> None:
    price = price_of(SONNET)
    assert price is not None
    usage = TokenUsage(input=1_700_000, output=30_000, cache_read=1_000_000, cache_creation=500_000)
    # 200k fresh at $3/M, 1M read at $0.30/M, 500k written at $3.75/M, 30k out at $15/M.
    assert usage_cost(usage, price) == pytest.approx(0.6 + 0.3 + 1.875 + 0.45)


def test_a_missing_cache_price_falls_back_to_the_input_price() -> None:
    price = price_of(MINI)
    assert price is not None and price.cache_creation == price.input


def test_an_unknown_model_and_the_demo_have_no_price() -> None:
    assert price_of("openai/my-local-qwen") is None
    assert price_of("demo") is None


async def test_the_ledger_adds_calls_per_model_and_turn_and_saves_each_one(tmp_path: Path) -> None:
    state = SessionState()
    path = tmp_path / "state.json"
    saves = 0

    async def save() -> None:
        nonlocal saves
        saves += 1
        save_state(state, path)

    ledger = CostLedger(state, save)
    ledger.begin_turn()
    await ledger.add(MINI, TokenUsage(input=1_000_000, output=100_000, cache_read=400_000))
    await ledger.add(MINI, TokenUsage(input=10_000, output=1_000))
    ledger.begin_turn()
    await ledger.add(MINI, TokenUsage(input=10_000, output=1_000))

    assert saves == 3
    status = ledger.status()
    assert status is not None and status.exact and status.priced
    assert status.session_usd == pytest.approx(0.18 + 2 * 0.0021)
    assert status.turn_usd == pytest.approx(0.0021)
    # What a resumed session reads back: the same totals.
    resumed = CostLedger(load_state(path)).report()
    assert resumed.usd == pytest.approx(0.18 + 2 * 0.0021)
    [model] = resumed.models
    assert (model.calls, model.input, model.cache_read, model.output) == (
        3,
        1_020_000,
        400_000,
        102_000,
    )
    assert [turn.calls for turn in resumed.turns] == [2, 1]


async def test_a_model_without_a_price_is_counted_but_never_given_one() -> None:
    state = SessionState()
    ledger = CostLedger(state)
    ledger.begin_turn()
    await ledger.add("openai/my-local-qwen", TokenUsage(input=5_000, output=100))

    status = ledger.status()
    assert status is not None and not status.priced and not status.exact
    lines = cost_lines(ledger.report())
    [row] = [line for line in lines if line.startswith("openai/my-local-qwen")]
    assert row.endswith("$0 / price unknown")
    assert lines[0].startswith("Session total: $0 + calls left out")
    # Nothing but the model's own name is wider than an 80-column dialog's inside.
    assert all(len(line) <= 72 for line in lines if not line.startswith("openai/"))


async def test_the_demo_costs_nothing_and_is_not_counted() -> None:
    state = SessionState()
    ledger = CostLedger(state)
    await ledger.add("demo", TokenUsage(input=5_000, output=100))
    assert state.spend is None and ledger.status() is None


async def test_counting_begun_in_a_session_with_earlier_calls_says_its_total_is_partial() -> None:
    state = SessionState()
    await CostLedger(state, had_calls=True).add(MINI, TokenUsage(input=10_000, output=1_000))
    status = CostLedger(state).status()
    assert status is not None and not status.exact
    assert not CostLedger(SessionState()).report().counted


def test_dollars_read_short() -> None:
    assert [format_usd(x) for x in (0, 0.0004, 0.0421, 1.234, 1234.5)] == [
        "$0",
        "<$0.001",
        "$0.042",
        "$1.23",
        "$1,234.50",
    ]
