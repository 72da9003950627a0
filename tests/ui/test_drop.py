"""Drop from context in the TUI: `x` marks blocks, `/drop` asks with the saving and drops,
`/drop N..M` drops checkpoints; History restores what was dropped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from kode_tui.message import Message
from kode_tui.session.rotation import list_rotations
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.app import KodeApp
from kode_tui.ui.drop import _indexes
from kode_tui.ui.screens.drop import DropDialog
from kode_tui.ui.widgets.answer_split import split_answer
from kode_tui.ui.widgets.blocks import AnswerBlock
from kode_tui.ui.widgets.history import reason_text
from kode_tui.ui.widgets.tool_block import ToolBlock
from tests.ui_helpers import make_app, ready, screen_text, send, turn_running, wait_for

SCRIPT: list[dict[str, object]] = [
    {"tool_calls": [{"name": "ReadFile", "arguments": {"path": "README.md"}}]},
    {"text": "It is a tiny project."},
    {"text": "Two."},
]


def roles(app: KodeApp) -> list[str]:
    assert app.agent_session is not None
    return [m.role for m in app.agent_session.travel.timeline().history]


async def two_turns(app: KodeApp, pilot: Pilot[Any], provider: ScriptedProvider) -> None:
    await ready(pilot)
    await send(pilot, "/mode yolo")
    await send(pilot, "read the readme")
    await wait_for(pilot, lambda: len(provider.requests) == 2 and not turn_running(app))
    await send(pilot, "second")
    await wait_for(pilot, lambda: len(provider.requests) == 3 and not turn_running(app))


async def test_x_marks_a_tool_call_drop_takes_it_out_and_slash_drop_takes_a_checkpoint_range(
    project: Path,
) -> None:
    """`x` and /drop take a tool call out with its result, History's restore brings it back,
    then `/drop N..M` drops checkpoints (and names one that is not there)."""
    provider = ScriptedProvider(SCRIPT)
    app = make_app(project, provider)
    async with app.run_test(size=(120, 36)) as pilot:
        await two_turns(app, pilot, provider)
        assert "tool" in roles(app)
        block = app.screen.query_one(ToolBlock)
        # From the prompt: Alt+↑ takes the focus to the conversation's block cursor.
        for _ in range(8):
            if block.has_class("-cursor"):
                break
            await pilot.press("alt+up")
        await pilot.press("x")
        await wait_for(pilot, lambda: block.has_class("-marked"))

        await send(pilot, "/drop")
        await wait_for(pilot, lambda: isinstance(app.screen, DropDialog))
        text = screen_text(app)
        assert "Drop 2 messages, 1 of them tool results" in text and "Saves ~" in text
        await pilot.press("escape")  # cancelled: nothing changes
        await wait_for(pilot, lambda: not isinstance(app.screen, DropDialog))
        assert "tool" in roles(app)

        await send(pilot, "/drop")
        await wait_for(pilot, lambda: isinstance(app.screen, DropDialog))
        await pilot.press("enter")
        await wait_for(pilot, lambda: "tool" not in roles(app))
        await wait_for(pilot, lambda: not app.screen.query(ToolBlock))
        assert app.session is not None
        [rotation] = list_rotations(app.session.context_file)
        assert rotation.reason == "edit" and reason_text(rotation) == "edit: dropped 2"
        await wait_for(pilot, lambda: "edit: dropped 2" in screen_text(app))  # the History row

        # History's restore brings them back, like any other rotation.
        assert app.agent_session is not None
        await app.agent_session.travel.restore(rotation.path.name)
        assert "tool" in roles(app)

        # /drop N..M drops checkpoints.
        await send(pilot, "/drop 0..2")
        await wait_for(pilot, lambda: isinstance(app.screen, DropDialog))
        assert "checkpoints 0 to 2" in screen_text(app)
        await pilot.press("y")
        await wait_for(pilot, lambda: "tool" not in roles(app))
        texts = [m.text for m in app.agent_session.travel.timeline().history if m.role != "user"]
        assert texts == ["Two."]
        await send(pilot, "/drop 7..9")
        await wait_for(
            pilot, lambda: any("no checkpoint 7" in n.message for n in app._notifications)
        )


async def test_x_on_two_checkpoints_of_the_pane_drops_the_range(project: Path) -> None:
    from kode_tui.ui.widgets.timeline import CheckpointTimeline

    provider = ScriptedProvider(SCRIPT)
    app = make_app(project, provider)
    async with app.run_test(size=(120, 36)) as pilot:
        await two_turns(app, pilot, provider)
        timeline = app.screen.query_one(CheckpointTimeline)
        timeline.focus()
        await wait_for(pilot, lambda: timeline.highlighted_checkpoint is not None)
        for checkpoint_id in (2, 0):
            for _ in range(10):
                if timeline.highlighted_checkpoint == checkpoint_id:
                    break
                await pilot.press("up")
            assert timeline.highlighted_checkpoint == checkpoint_id
            await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, DropDialog))
        assert "checkpoints 0 to 2" in screen_text(app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "tool" not in roles(app))


def test_each_block_of_a_long_answer_is_its_message() -> None:
    answer = "".join(f"Paragraph {n}: " + "words " * 60 + "\n\n" for n in range(16))
    first, second, third = split_answer("", answer)
    history = [
        Message(role="user", content="write a lot"),
        Message(role="assistant", content=answer),
        Message(role="user", content="thanks"),
        Message(role="assistant", content="OK"),
    ]
    blocks = [AnswerBlock(second), AnswerBlock("OK"), AnswerBlock(first), AnswerBlock(third)]
    assert _indexes(history, blocks) == [1, 3, 1, 1]
