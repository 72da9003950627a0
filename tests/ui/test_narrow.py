"""A small terminal (80x24) keeps room for the conversation: the demo banner folds after the
first message, and a pending approval leaves the conversation a third of the height and shows
its diff once."""

from __future__ import annotations

from pathlib import Path

import pytest

from kode_tui.soul.llm.demo import DemoProvider
from kode_tui.ui.widgets.approval import ApprovalPanel
from kode_tui.ui.widgets.banner import Banner
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.ui.widgets.tool_block import ToolBlock
from tests.ui_helpers import make_app, ready, screen_text, send, turn_running, wait_for

DIFF_LINE = "+# Notes from the kode-tui demo"
"""A line of the diff the demo's edit asks to approve."""


async def test_the_demo_banner_folds_to_one_line_after_the_first_turn(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        banner = app.screen.query_one(Banner)
        assert banner.region.height > 1  # the whole notice, before anything is sent

        await send(pilot, "hi")
        panel = app.screen.query_one(ApprovalPanel)
        await wait_for(pilot, lambda: panel.current is not None)
        await pilot.press("y")
        await wait_for(pilot, lambda: not turn_running(app))
        await pilot.pause()

        assert banner.region.height == 1
        assert "Offline demo" in screen_text(app)
        await pilot.click(Banner)
        assert not banner.display  # a click still puts it away


@pytest.mark.parametrize("size", [(80, 24), (140, 40)])
async def test_a_pending_approval_leaves_the_conversation_a_third_of_the_screen(
    project: Path, size: tuple[int, int]
) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await send(pilot, "hi")
        panel = app.screen.query_one(ApprovalPanel)
        await wait_for(pilot, lambda: panel.current is not None)
        await pilot.pause()

        conversation = app.screen.query_one(Conversation)
        assert conversation.region.height >= size[1] / 3
        # The panel still shows the diff and its choices.
        assert DIFF_LINE in screen_text(app)
        assert "y  once" in screen_text(app)


@pytest.mark.parametrize("size", [(80, 24), (140, 40)])
async def test_the_diff_of_a_pending_edit_shows_once(project: Path, size: tuple[int, int]) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await send(pilot, "hi")
        panel = app.screen.query_one(ApprovalPanel)
        await wait_for(pilot, lambda: panel.current is not None)
        await pilot.pause()

        assert screen_text(app).count(DIFF_LINE) == 1
        # Approved, the edit's block in the conversation opens on its diff.
        await pilot.press("y")
        await wait_for(pilot, lambda: not panel.has_class("-active"))
        block = next(b for b in app.screen.query(ToolBlock) if b.state.has_diff)
        assert block.expanded
