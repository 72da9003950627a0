"""Driving the real app in tests: scripted models, screen text, and waiting for things."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from kode_tui.config import Config, ModelChoice, resolve_model
from kode_tui.soul.llm import ChatProvider
from kode_tui.soul.llm.demo import DemoProvider
from kode_tui.ui.app import KodeApp
from kode_tui.ui.widgets.approval import ApprovalPanel
from kode_tui.ui.widgets.prompt import PromptInput


def make_app(
    work_dir: Path,
    provider: ChatProvider | None = None,
    config: Config | None = None,
    **options: Any,
) -> KodeApp:
    config = config or Config()
    choice = resolve_model(config)
    if provider is not None and not isinstance(provider, DemoProvider):
        # A scripted model is not the demo: no banner, and its own name in the header.
        choice = ModelChoice(name=provider.model_name, model=provider.model_name, source="flag")
    return KodeApp(work_dir, config, choice, provider=provider, **options)


def screen_text(app: KodeApp) -> str:
    """The text on screen, from the SVG screenshot Textual exports."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


async def wait_for(pilot: Pilot[Any], condition: Callable[[], object], timeout: float = 10) -> None:
    """Pause until `condition()` is true (or fail after `timeout` seconds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {condition}")
        await pilot.pause(0.05)


async def ready(pilot: Pilot[Any]) -> None:
    """Wait until the main screen and the agent are up, and make approvals answer at once."""
    app = pilot.app
    # The prompt is up first; the panes and then the agent follow (see MainScreen).
    await wait_for(pilot, lambda: app._attached() and (app.agent is not None or app.read_only))
    for panel in app.screen.query(ApprovalPanel):
        panel.key_delay_s = 0
    prompt = app.screen.query_one(PromptInput)
    prompt.cursor_blink = False
    await pilot.pause()


async def send(pilot: Pilot[Any], text: str) -> None:
    prompt = pilot.app.screen.query_one(PromptInput)
    prompt.focus()
    prompt.text = text
    await pilot.press("enter")


def turn_running(app: KodeApp) -> bool:
    turn = app._turn
    return turn is not None and turn.is_running


async def settled(pilot: Pilot[Any]) -> None:
    """Wait until the conversation has scrolled to its end and stays there (for snapshots)."""
    from kode_tui.ui.widgets.conversation import Conversation

    conversation = pilot.app.screen.query_one(Conversation)
    last = None
    for _ in range(60):
        await pilot.pause(0.05)
        now = (conversation.scroll_y, conversation.max_scroll_y, conversation.virtual_size)
        if now == last and conversation.scroll_y >= conversation.max_scroll_y:
            return
        last = now
