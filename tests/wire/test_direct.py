"""Direct subscribers: `send` calls them itself, in order, and they can neither hold up nor break
the soul (DESIGN.md §3: a slow subscriber never blocks the soul)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from textual.message import Message
from textual.widget import Widget

from kode_tui.message import FunctionBody, TextPart
from kode_tui.ui.wire_messages import WireListener, WireMessage
from kode_tui.wire import Subscription, WireBus
from kode_tui.wire import events as ev
from tests.soul_helpers import call, make_rig
from tests.ui_helpers import Host, wait_for


def _text(text: str) -> ev.ContentPart:
    return ev.ContentPart(part=TextPart(text=text))


def _tool_call(call_id: str) -> ev.ToolCall:
    return ev.ToolCall(id=call_id, function=FunctionBody(name="Echo", arguments="{}"))


async def _collect(subscription: Subscription[ev.Event]) -> list[ev.Event]:
    return [event async for event in subscription]


async def test_a_direct_listener_gets_each_event_within_send_in_the_order_sent() -> None:
    bus = WireBus()
    queued_before = bus.subscribe()
    first: list[ev.Event] = []
    warning = ev.Warning(message="sent by a listener")

    def first_listener(event: ev.Event) -> None:
        first.append(event)
        if isinstance(event, ev.ToolCall):
            bus.send(warning)  # a listener sending: after the event it is taking, for all

    bus.subscribe(callback=first_listener, direct=True)
    later: list[ev.Event] = []
    bus.subscribe(callback=later.append, direct=True)
    queued_after = bus.subscribe()
    sent: list[ev.Event] = [
        ev.StepBegin(n=1),
        _text("Let me "),
        _text("look."),
        _tool_call("c1"),
        _text("more"),
        ev.ToolResult(tool_call_id="c1", output="ok"),
        ev.TurnEnd(),
    ]
    expected = [*sent[:4], warning, *sent[4:]]

    for event in sent:
        bus.send(event)
        # Taken before `send` returned: no task of the bus's own ran in between.
        assert first == later == expected[: expected.index(event) + 1 + (event is sent[3])]
    await bus.close()

    assert first == later == expected
    assert await _collect(queued_before) == expected
    assert await _collect(queued_after) == expected


async def test_a_slow_queued_subscriber_blocks_neither_send_nor_a_direct_listener() -> None:
    bus = WireBus()
    gate = asyncio.Event()
    slow: list[ev.Event] = []

    async def stuck_on_the_first_until_the_gate_opens(event: ev.Event) -> None:
        if event is sent[0]:
            await gate.wait()
        slow.append(event)

    sent = [_text(str(n)) for n in range(1_000)]
    bus.subscribe(callback=stuck_on_the_first_until_the_gate_opens)
    direct: list[ev.Event] = []
    bus.subscribe(callback=direct.append, direct=True)

    for event in sent:
        bus.send(event)
    for _ in range(3):
        await asyncio.sleep(0)  # the slow subscriber's task takes the first event and waits

    assert direct == sent
    assert slow == []  # the rest wait behind the first, in order
    gate.set()
    await bus.close()
    assert slow == sent


async def test_a_failing_direct_listener_does_not_break_the_turn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rig = await make_rig(
        tmp_path,
        [
            {"text": "Echoing it now.", "tool_calls": [call("Echo", text="ab")]},
            {"text": "Done."},
        ],
    )
    taken: list[ev.Event] = []

    def fails_on_every_event(event: ev.Event) -> None:
        taken.append(event)
        raise RuntimeError("the pane is gone")

    rig.bus.subscribe(callback=fails_on_every_event, direct=True)

    with caplog.at_level(logging.ERROR, logger="kode_tui.wire.bus"):
        result = await rig.soul.run("echo ab")
    await rig.bus.close()  # the queued recorder takes what is left

    assert result.stop_reason == "done" and result.steps == 2
    assert [line["content"] for line in rig.lines() if line["role"] == "assistant"][-1] == "Done."
    assert any(line["role"] == "tool" for line in rig.lines())
    # Called for every event after each failure, in the order the queued recorder saw them.
    assert taken == rig.events
    assert isinstance(taken[-1], ev.TurnEnd) and rig.of(ev.ToolResult)
    assert "the pane is gone" in caplog.text


async def test_an_async_function_cannot_be_a_direct_listener() -> None:
    bus = WireBus()

    async def waits(event: ev.Event) -> None:
        await asyncio.sleep(0)

    with pytest.raises(TypeError, match="plain function"):
        bus.subscribe(callback=waits, direct=True)
    with pytest.raises(TypeError, match="plain function"):
        bus.subscribe(direct=True)


async def test_listeners_closed_mid_send_get_nothing_more_and_skip_no_other() -> None:
    bus = WireBus()
    subscriptions: list[Subscription[ev.Event]] = []
    first: list[ev.Event] = []

    def closes_itself_and_the_last(event: ev.Event) -> None:
        first.append(event)
        if isinstance(event, ev.TurnEnd):
            subscriptions[0].close()
            subscriptions[2].close()

    middle: list[ev.Event] = []
    last: list[ev.Event] = []
    for listener in (closes_itself_and_the_last, middle.append, last.append):
        subscriptions.append(bus.subscribe(callback=listener, direct=True))
    sent = [ev.StepBegin(n=1), ev.TurnEnd(), ev.StepBegin(n=2)]

    for event in sent:
        bus.send(event)

    assert first == sent[:2]
    assert middle == sent
    assert last == sent[:1]


class _Pane(WireListener, Widget):
    """A widget listening as the panes do, noting what is posted to it and what it handled."""

    def __init__(self, bus: WireBus) -> None:
        super().__init__()
        self.bus = bus
        self.posted: list[ev.Event] = []
        self.handled: list[ev.Event] = []

    def on_mount(self) -> None:
        self.listen(self.bus, ev.ContentPart, ev.ToolCall)

    def post_message(self, message: Message) -> bool:
        if isinstance(message, WireMessage):
            self.posted.append(message.event)
        return super().post_message(message)

    def on_wire_message(self, message: WireMessage) -> None:
        self.handled.append(message.event)


async def test_a_widget_has_its_wire_message_posted_within_send_until_unmounted() -> None:
    bus = WireBus()
    pane = _Pane(bus)
    async with Host(pane).run_test() as pilot:
        sent: list[ev.Event] = [_text("Let me "), ev.StepBegin(n=2), _tool_call("c1"), _text("x")]
        for event in sent:
            bus.send(event)
        wanted = [event for event in sent if not isinstance(event, ev.StepBegin)]

        assert pane.posted == wanted  # no task of the bus's own in between
        await wait_for(pilot, lambda: len(pane.handled) == len(wanted))
        assert pane.handled == wanted

        await pane.remove()
        bus.send(_text("after"))
        assert pane.posted == wanted
