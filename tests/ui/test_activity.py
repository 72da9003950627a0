"""The sign of life on the conversation's edge: what the agent does, for how long, how fast."""

from __future__ import annotations

from pathlib import Path

from kode_tui.message import FunctionBody, TextPart
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.widgets.activity import Activity
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from tests.ui.test_conversation import host, settle
from tests.ui_helpers import Posted, make_app, ready, screen_text, send, turn_running, wait_for


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def status(context_tokens: int) -> ev.StatusUpdate:
    return ev.StatusUpdate(
        context_tokens=context_tokens,
        max_context_tokens=128_000,
        reserved_tokens=50_000,
        trigger_tokens=78_000,
    )


def shown(activity: Activity) -> str:
    """The line without its spinner frame."""
    return activity.text()[2:]


def test_a_turn_reads_as_its_steps_go() -> None:
    clock = Clock()
    activity = Activity(clock)
    assert activity.text() == ""

    activity.see(ev.TurnBegin(user_input="hi"))
    activity.see(status(8_200))
    activity.see(ev.StepBegin(n=1))
    assert shown(activity) == "waiting for the model · 0 s · ↑8.2k ↓~0"

    clock.now += 1
    activity.see(ev.ContentPart(part=TextPart(text="x" * 400)))
    clock.now += 2
    assert shown(activity) == "streaming · 3 s · ↑8.2k ↓~100 · 50 tok/s"

    activity.see(ev.ToolCall(id="c1", function=FunctionBody(name="Shell", arguments="")))
    assert shown(activity).startswith("running Shell · 3 s")
    activity.see(
        ev.ApprovalRequest(id="r1", tool_call_id="c1", action="run command", description="ls")
    )
    assert shown(activity).startswith("waiting for your approval")
    activity.see(ev.ApprovalResolved(id="r1", response="approve"))
    assert shown(activity).startswith("running Shell")
    activity.see(ev.ToolResult(tool_call_id="c1", is_error=False, output="a\nb"))
    assert shown(activity).startswith("waiting for the model")

    activity.see(ev.StepBegin(n=2))
    activity.see(
        ev.StepRetry(n=2, attempt=1, max_attempts=10, wait_s=6.0, error="HTTP 429", status_code=429)
    )
    assert shown(activity) == (
        "retrying in 6 s (attempt 2 of 10): 429 rate limited · 3 s · ↑8.2k ↓~0"
    )
    clock.now += 2.5  # the line counts the real wait down
    assert shown(activity).startswith("retrying in 4 s (attempt 2 of 10): 429 rate limited · 6 s")
    clock.now += 4  # the wait is over: the next attempt waits for the model
    assert shown(activity).startswith("waiting for the model (attempt 2 of 10) · 10 s")
    activity.see(ev.ContentPart(part=TextPart(text="ok")))
    assert shown(activity).startswith("streaming · 10 s")

    activity.see(ev.TurnEnd())
    assert activity.text() == ""


def test_the_spinner_moves_on_with_every_second() -> None:
    clock = Clock()
    activity = Activity(clock)
    activity.see(ev.TurnBegin(user_input="hi"))

    frames = set()
    for _ in range(4):
        frames.add(activity.text()[0])
        clock.now += 1

    assert len(frames) == 4


async def test_the_conversation_edge_shows_the_turn_while_it_runs(tmp_path: Path) -> None:
    provider = ScriptedProvider([{"text": "Working on it", "hang": True}])
    app = make_app(tmp_path, provider)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot)
        conversation = app.screen.query_one(Conversation)
        await send(pilot, "hi")
        await wait_for(pilot, lambda: "streaming ·" in str(conversation.border_subtitle))
        assert " s · ↑" in str(conversation.border_subtitle)

        await pilot.press("escape")
        await wait_for(pilot, lambda: not turn_running(app))
        await pilot.pause()
        assert "streaming" not in str(conversation.border_subtitle)


async def test_a_tool_name_from_the_model_is_shown_as_plain_text() -> None:
    hostile = "[@click=app.quit]Shell\x1b[2J[/]"
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(100, 30), message_hook=posted) as pilot:
        call = ev.ToolCall(id="c1", function=FunctionBody(name=hostile, arguments=""))
        await settle(pilot, posted, bus, ev.TurnBegin(user_input="hi"), call)
        shown = screen_text(pilot.app)

    assert "\x1b" not in shown
    assert "running [@click=app.quit]Shell␛[2J[/] ·" in shown
