"""Pins: notes in state.json sent with every request in a system prompt block of their own,
whatever is compacted, counted in the gauge and in `/context`."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import pytest

from kode_tui import masking
from kode_tui.session.state import Pin, load_state
from kode_tui.soul.compaction import (
    CompactionStrategy,
    HidingThenSummaryCompaction,
    LLMSummaryCompaction,
    ToolResultHidingCompaction,
)
from kode_tui.soul.facade import AgentSession
from kode_tui.soul.pins import pinned_block
from tests.soul_helpers import call, make_rig

PIN = "Never touch the vendored/ folder.\nTabs, not spaces."


@pytest.mark.parametrize(
    "strategy",
    [
        LLMSummaryCompaction(max_preserved_messages=0),
        ToolResultHidingCompaction(preserve_recent_n=0),
        HidingThenSummaryCompaction(preserve_recent_n=0),
    ],
    ids=lambda strategy: type(strategy).__name__,
)
async def test_every_request_ends_its_system_prompt_with_the_pins_whatever_was_compacted(
    tmp_path: Path, strategy: CompactionStrategy
) -> None:
    rig = await make_rig(
        tmp_path,
        [
            {"tool_calls": [call("Echo", text="one")]},
            {"text": "Echoed."},
            {"text": "The user asked for an echo."},  # a summary, for the strategies that ask
            {"text": "Still here."},
        ],
    )
    rig.soul.compactor.strategy = strategy
    rig.state.pins = [Pin(text=PIN)]

    assert (await rig.soul.run("echo one")).stop_reason == "done"
    assert await rig.soul.compact()
    assert (await rig.soul.run("and now?")).stop_reason == "done"

    block = pinned_block([PIN])
    assert PIN.splitlines()[0] in block and "   Tabs, not spaces." in block
    prompts = [request.system_prompt for request in rig.provider.requests]
    first, *_, last = prompts
    assert first == last == "You are a test." + block
    # Only the system prompt carries them: the messages (and so the context file) never do.
    assert PIN.splitlines()[0] not in rig.context.path.read_text()


async def test_a_pin_added_after_a_request_is_in_the_gauge_and_in_the_context_rows(
    tmp_path: Path,
) -> None:
    rig = await make_rig(tmp_path, [{"text": "Hi."}])
    assert (await rig.soul.run("hello")).stop_reason == "done"
    before = rig.soul.status().context_tokens
    assert rig.soul.context.token_count > 0

    rig.state.pins = [Pin(text="x" * 400)]
    report = await rig.soul.context_report()

    cost = len(pinned_block(["x" * 400])) // 4
    assert rig.soul.status().context_tokens == before + cost == report.context_tokens
    rows = {row.name: row.tokens for row in report.rows}
    assert rows["pinned notes (1)"] == cost
    assert sum(rows.values()) == report.context_tokens
    assert '<context name="pinned">' in report.system_prompt


async def test_the_facade_pins_edits_and_unpins_saving_each_change(project: Path) -> None:
    opened = await AgentSession.open(project)
    try:
        assert await opened.pins.add("  use uv, not pip  ") == "use uv, not pip"
        await opened.pins.add("second")
        assert await opened.pins.edit(1, "second, edited") == "second, edited"
        assert [p.text for p in load_state(opened.session.state_file).pins] == [
            "use uv, not pip",
            "second, edited",
        ]
        assert await opened.pins.remove(0) == "use uv, not pip"
        assert opened.pins.texts() == ["second, edited"]
        assert [p.text for p in load_state(opened.session.state_file).pins] == ["second, edited"]
        with pytest.raises(ValueError, match="needs some text"):
            await opened.pins.add("   ")
        with pytest.raises(IndexError, match="no pin 5"):
            await opened.pins.remove(4)
    finally:
        await opened.close()


async def test_a_pinned_api_key_is_masked_in_state_json(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-test-" + "".join(random.choices(string.ascii_letters + string.digits, k=24))
    monkeypatch.setenv("OPENAI_API_KEY", key)
    masking.refresh()
    opened = await AgentSession.open(project)
    try:
        await opened.pins.add(f"The staging key is {key}")
    finally:
        await opened.close()
    text = opened.session.state_file.read_text()
    assert key not in text
    assert json.loads(text)["pins"][0]["text"] == "The staging key is [masked: OPENAI_API_KEY]"
