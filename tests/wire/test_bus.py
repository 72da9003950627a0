from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from kode_tui.wire import Subscription, WireBus, events
from kode_tui.wire.events import CompactionBegin, CompactionEnd, Event, StatusUpdate, StepBegin


def _status(tokens: int) -> StatusUpdate:
    return StatusUpdate(
        context_tokens=tokens, max_context_tokens=1000, reserved_tokens=100, trigger_tokens=850
    )


async def _collect(subscription: Subscription[Event]) -> list[Event]:
    return [event async for event in subscription]


async def test_subscribers_get_only_the_event_types_they_asked_for() -> None:
    bus = WireBus()
    gauge = bus.subscribe(StatusUpdate, CompactionBegin, CompactionEnd)
    steps = bus.subscribe(StepBegin)
    everything = bus.subscribe()

    sent: list[Event] = [
        StepBegin(n=1),
        _status(10),
        CompactionBegin(),
        events.TurnEnd(),
        CompactionEnd(tokens_before=10, tokens_after=2),
    ]
    for event in sent:
        bus.send(event)
    await bus.close()

    assert await _collect(gauge) == [sent[1], sent[2], sent[4]]
    assert await _collect(steps) == [sent[0]]
    assert await _collect(everything) == sent


async def test_many_subscribers_each_get_every_event_in_order() -> None:
    bus = WireBus()
    subscriptions = [bus.subscribe() for _ in range(5)]
    consumers = [asyncio.create_task(_collect(subscription)) for subscription in subscriptions]
    sent = [StepBegin(n=n) for n in range(200)]

    for event in sent:
        bus.send(event)
        if event.n % 50 == 0:
            await asyncio.sleep(0)
    await bus.close()

    for consumer in consumers:
        assert await consumer == sent


async def test_slow_subscriber_never_blocks_sender_or_others() -> None:
    bus = WireBus()
    bus.subscribe()  # never read
    received: list[Event] = []
    bus.subscribe(callback=received.append)
    sent = [StepBegin(n=n) for n in range(10_000)]

    started = time.perf_counter()
    for event in sent:
        bus.send(event)
    elapsed = time.perf_counter() - started
    await bus.close()

    assert elapsed < 2.0
    assert received == sent


async def test_a_subscribed_event_is_the_very_instance_that_was_sent() -> None:
    bus = WireBus()
    subscription = bus.subscribe(events.ApprovalRequest)
    request = events.ApprovalRequest(
        id="a", tool_call_id="t", action="run command", description="ls"
    )

    bus.send(request)
    received = await anext(subscription)

    assert received is request


async def test_sync_and_async_callbacks_get_every_event_even_after_one_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = WireBus()
    plain: list[Event] = []
    awaited: list[Event] = []
    survived: list[Event] = []

    async def slow_append(event: Event) -> None:
        await asyncio.sleep(0)
        awaited.append(event)

    def fails_on_the_first_step(event: StepBegin) -> None:
        if event.n == 0:
            raise RuntimeError("widget gone")
        survived.append(event)

    bus.subscribe(callback=plain.append)
    bus.subscribe(callback=slow_append)
    bus.subscribe(StepBegin, callback=fails_on_the_first_step)
    sent = [StepBegin(n=0), StepBegin(n=1), _status(5)]

    with caplog.at_level(logging.ERROR, logger="kode_tui.wire.bus"):
        for event in sent:
            bus.send(event)
        await bus.close()

    assert plain == sent
    assert awaited == sent
    assert survived == [sent[1]]
    assert "widget gone" in caplog.text


async def test_unsubscribed_iteration_ends_and_gets_nothing_more() -> None:
    bus = WireBus()
    subscription = bus.subscribe()
    other = bus.subscribe()
    bus.send(StepBegin(n=1))

    bus.unsubscribe(subscription)
    other.close()
    bus.send(StepBegin(n=2))

    assert await _collect(subscription) == []
    assert await _collect(other) == []


async def test_an_unsubscribed_callback_is_not_called_again() -> None:
    bus = WireBus()
    received: list[Event] = []
    subscription = bus.subscribe(callback=received.append)
    bus.send(StepBegin(n=1))
    await subscription.join()

    subscription.close()
    bus.send(StepBegin(n=2))
    await bus.close()

    assert received == [StepBegin(n=1)]


async def test_closing_the_bus_ends_iteration_after_what_was_queued() -> None:
    bus = WireBus()
    subscription = bus.subscribe()
    consumer = asyncio.create_task(_collect(subscription))
    await asyncio.sleep(0)

    bus.send(StepBegin(n=1))
    bus.send(StepBegin(n=2))
    await bus.close()

    assert await asyncio.wait_for(consumer, 10) == [StepBegin(n=1), StepBegin(n=2)]


async def test_close_waits_for_callbacks_to_take_what_was_queued() -> None:
    bus = WireBus()
    received: list[Event] = []

    async def slow(event: Event) -> None:
        await asyncio.sleep(0.001)
        received.append(event)

    bus.subscribe(callback=slow)
    sent = [StepBegin(n=n) for n in range(20)]
    for event in sent:
        bus.send(event)

    await bus.close()

    assert received == sent


async def test_send_after_close_is_dropped_and_subscribe_is_refused() -> None:
    bus = WireBus()
    await bus.close()

    bus.send(StepBegin(n=1))
    with pytest.raises(RuntimeError):
        bus.subscribe()


async def test_send_from_another_thread_arrives_in_order_on_the_loop() -> None:
    bus = WireBus()
    loop_threads: set[int] = set()
    received: list[Event] = []

    def on_event(event: Event) -> None:
        loop_threads.add(threading.get_ident())
        received.append(event)

    bus.subscribe(callback=on_event)
    sent = [StepBegin(n=n) for n in range(500)]

    def worker() -> None:
        for event in sent:
            bus.send(event)

    await asyncio.to_thread(worker)
    await asyncio.sleep(0)  # let the handed-over dispatches run
    await bus.close()

    assert received == sent
    assert loop_threads == {threading.get_ident()}


def test_send_without_a_loop_or_subscribers_does_nothing() -> None:
    WireBus().send(StepBegin(n=1))


async def test_a_late_listener_takes_what_its_subscription_queued_then_goes_on_in_order() -> None:
    """A listener subscribed before it is ready takes what was queued meanwhile, in order, and
    the events after it: none lost, none twice (the conversation mounted after a request)."""
    bus = WireBus()
    backlog = bus.subscribe(StepBegin)
    bus.send(StepBegin(n=1))
    bus.send(_status(1))  # not asked for
    bus.send(StepBegin(n=2))
    seen: list[int] = []
    seen += [event.n for event in backlog.take_queued()]
    live = bus.subscribe(StepBegin, callback=lambda event: seen.append(event.n), direct=True)
    backlog.close()
    bus.send(StepBegin(n=3))
    assert seen == [1, 2, 3]
    assert backlog.take_queued() == []
    live.close()

    ended = bus.subscribe(StepBegin)
    bus.send(StepBegin(n=4))
    await bus.close()
    assert [event.n for event in ended.take_queued()] == [4]
    assert await _collect(ended) == []  # the bus's end still ends the iteration
