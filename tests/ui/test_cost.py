"""Cost and thinking effort in the app, against the loopback model server: the gauge's $, `/cost`,
the session picker's column, a resumed session's total, and `/think` reaching the request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual._xterm_parser import XTermParser

from kode_tui.config import Config, ModelConfig
from kode_tui.session import Session
from kode_tui.ui.app import KodeApp
from kode_tui.ui.screens.cost import CostScreen
from kode_tui.ui.screens.sessions import SessionPicker
from kode_tui.ui.widgets.gauge import TokenGauge
from tests.llm_server import KEY_ENV, LLMServer
from tests.ui_helpers import make_app, ready, screen_text, send, started, turn_running, wait_for


def idle(app: KodeApp) -> bool:
    """The agent is up and no turn runs."""
    return started(app) and not turn_running(app)


PRICED = "openai/gpt-4o-mini"
"""In litellm's map: $0.15 / M input, $0.075 / M cached, $0.60 / M output."""


def config_for(server: LLMServer, model: str = PRICED, reasoning: bool | None = None) -> Config:
    return Config(
        default_model="loop",
        models={
            "loop": ModelConfig(
                model=model,
                api_base=server.url,
                api_key_env=KEY_ENV,
                max_context_size=4_000_000,  # no compaction after a 1M-token prompt
                reasoning=reasoning,
            )
        },
    )


def gauge_text(app: KodeApp) -> str:
    return str(app.screen.query_one(TokenGauge).render())


async def one_turn(app: KodeApp, pilot: object, text: str = "hi") -> None:
    from textual.pilot import Pilot

    assert isinstance(pilot, Pilot)
    turns = app.agent_session
    assert turns is not None
    await send(pilot, text)
    await wait_for(pilot, lambda: idle(app) and turns.cost().turns)


async def cost_dialog(app: KodeApp, pilot: Any) -> str:
    """`/cost` sent and its dialog's screen text."""
    await send(pilot, "/cost")
    await wait_for(pilot, lambda: isinstance(app.screen, CostScreen))
    await pilot.pause()
    return screen_text(app)


async def test_the_gauge_slash_cost_and_the_picker_show_the_cost_and_a_resumed_session_keeps_it(
    project: Path, server: LLMServer
) -> None:
    """The gauge shows the session's cost and the last turn's; /cost lists each model with
    its tokens and dollars; the session's total is saved, and a resumed session shows it in
    the gauge and the session picker. (One test: each app session costs seconds.)"""
    # 1M prompt tokens of which 400k cached, 100k out: 0.6M*0.15 + 0.4M*0.075 + 0.1M*0.60 = $0.18
    server.reply_text("Hello.", usage=(1_000_000, 100_000, 400_000))
    server.reply_text("Again.", usage=(10_000, 1_000))  # $0.0015 + $0.0006
    app = make_app(project, config=config_for(server))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "hi")
        await wait_for(pilot, lambda: "$0.180" in gauge_text(app))
        assert "$0.180 (last $0.180)" in gauge_text(app)

        text = await cost_dialog(app, pilot)
        assert "Session total: $0.180" in text
        lines = [line.strip(" │") for line in text.splitlines()]
        at = next(i for i, line in enumerate(lines) if line.startswith(PRICED))
        assert lines[at].split("│")[0].split() == [PRICED, "$0.180"]
        # Input counts the cached tokens; none were written to the cache.
        assert lines[at + 1].startswith("1 call · 1M in (400k cached, 0 written) · 100k out")
        assert "Latest turns" in text and "1M in (400k cached) · 100k out  $0.180" in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, CostScreen))

        await send(pilot, "again")
        await wait_for(pilot, lambda: "(last $0.002)" in gauge_text(app))
        assert "$0.182 (last $0.002)" in gauge_text(app)
        await wait_for(pilot, lambda: idle(app))
        session = app.session
        assert session is not None
    saved = json.loads(session.state_file.read_text())
    assert saved["spend"]["models"][PRICED]["usd"] == pytest.approx(0.1821)

    resumed = await Session.find(project, session.id)
    assert resumed is not None
    app = make_app(project, config=config_for(server), session=resumed)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "$0.182" in gauge_text(app))
        await send(pilot, "/sessions")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert isinstance(picker, SessionPicker)
        await wait_for(pilot, lambda: picker.table.row_count == 1)
        assert "Cost" in screen_text(app)
        assert [str(cell) for cell in picker.table.get_row_at(0)][-1] == "$0.182"


async def test_a_model_without_a_price_says_so_and_never_makes_one_up(
    project: Path, server: LLMServer
) -> None:
    server.reply_text("Hello.", usage=(5_000, 100))
    app = make_app(project, config=config_for(server, model="openai/some-local-model"))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "hi")
        await wait_for(pilot, lambda: "price unknown" in gauge_text(app))
        text = await cost_dialog(app, pilot)
        assert "openai/some-local-model" in text and "$0 / price unknown" in text
        assert "Session total: $0 + calls left out" in text


async def test_alt_t_and_think_send_reasoning_effort_only_when_on_and_a_resumed_session_keeps_it(
    project: Path, server: LLMServer
) -> None:
    for answer in ("One.", "Two.", "Three."):
        server.reply_text(answer)
    config = config_for(server, reasoning=True)
    app = make_app(project, config=config)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        opened = app.agent_session
        assert opened is not None
        seen: list[str] = []
        for _ in range(4):  # alt+t cycles the effort, back to off
            await pilot.press("alt+t")
            await wait_for(pilot, lambda: opened.thinking.level not in (seen[-1:] or ["off"]))
            seen.append(opened.thinking.level)
        assert seen == ["low", "medium", "high", "off"]
        assert not [part for part in app.sub_title.split(" · ") if part.startswith("think")]
        await send(pilot, "first")
        await wait_for(pilot, lambda: len(server.requests) == 1 and idle(app))
        await send(pilot, "/think high")
        await wait_for(pilot, lambda: "think high" in app.sub_title)
        await send(pilot, "second")
        await wait_for(pilot, lambda: len(server.requests) == 2 and idle(app))
        session = app.session
        assert session is not None
    assert "reasoning_effort" not in server.requests[0]
    assert server.requests[1]["reasoning_effort"] == "high"
    assert json.loads(session.state_file.read_text())["thinking"] == "high"

    resumed = await Session.find(project, session.id)
    assert resumed is not None
    app = make_app(project, config=config, session=resumed)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        assert "think high" in app.sub_title
        await send(pilot, "third")
        await wait_for(pilot, lambda: len(server.requests) == 3 and idle(app))
    assert server.requests[2]["reasoning_effort"] == "high"


async def test_think_on_a_model_without_support_says_so_in_one_line_and_changes_nothing(
    project: Path, server: LLMServer
) -> None:
    server.reply_text("One.")
    app = make_app(project, config=config_for(server))  # gpt-4o-mini: no reasoning in the map
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "/think high")
        notices = lambda: [n.message for n in app._notifications]  # noqa: E731
        await wait_for(pilot, lambda: any("Thinking unchanged" in n for n in notices()))
        [said] = [n for n in notices() if "Thinking unchanged" in n]
        assert "\n" not in said and "loop has no thinking-effort setting" in said
        opened = app.agent_session
        assert opened is not None and opened.thinking.level == "off"
        await send(pilot, "hi")
        await wait_for(pilot, lambda: len(server.requests) == 1 and idle(app))
    assert "reasoning_effort" not in server.requests[0]


def test_alt_t_from_a_terminal_without_the_kitty_protocol_types_nothing_into_the_prompt() -> None:
    # tmux and most terminals send ESC t, which Textual reads as an alt+t that carries a `t`:
    # the focused prompt typed it, and the binding never ran.
    parser = XTermParser()
    keys = [*parser.feed("\x1bt"), *parser.feed("")]
    assert [(getattr(key, "key", None), getattr(key, "character", "")) for key in keys] == [
        ("alt+t", None)
    ]
