"""The in-process wire: the soul sends events, any number of subscribers receive them.

A subscriber has its own unbounded queue, so `send` never waits and a slow subscriber holds up
nobody but itself (the recorder, print mode, ACP). A listener that only hands an event on (a
widget posting it to itself as a Textual message) may instead be called by `send` itself
(`direct=True`): one task wake-up and one queue fewer per event, for the ones that come per
token. Either way, events reach each subscriber in the order they were sent.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar, cast, overload

from kode_tui.wire.events import Event

logger = logging.getLogger(__name__)

E = TypeVar("E", bound=Event)
E_co = TypeVar("E_co", bound=Event, covariant=True)

Callback = Callable[[E], Awaitable[None] | None]
"""A subscriber function, plain or async."""


class Subscription(Generic[E_co]):
    """The events one subscriber asked for: iterate with `async for`, or let a callback take them.

    Iteration ends once the subscription is closed (`close()`, `WireBus.unsubscribe`) or the bus
    is closed; a bus closing first delivers what was already queued. A direct subscription
    (`WireBus.subscribe(..., direct=True)`) queues nothing: `send` calls its callback.
    """

    def __init__(
        self,
        bus: WireBus,
        event_types: tuple[type[Event], ...],
        callback: Callback[Any] | None,
        *,
        direct: bool = False,
    ) -> None:
        self._bus = bus
        self._event_types = event_types or (Event,)
        # None marks the end; everything queued before it is still delivered.
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._closed = False
        self._ended = False
        self._task: asyncio.Task[None] | None = None
        self._deliver: Callable[[Event], None] = self._queue.put_nowait
        """What the bus does with an event this subscription wants."""
        if callback is not None and direct:
            self._deliver = _guarded(callback)
        elif callback is not None:
            self._task = asyncio.get_running_loop().create_task(
                self._feed(callback), name=f"wire subscriber {callback!r}"
            )

    def close(self) -> None:
        """Stop receiving; events queued and not yet delivered are dropped. Idempotent."""
        if self._closed:
            return
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()
        self._end()

    def take_queued(self) -> list[E_co]:
        """The events queued and not taken yet, taken now (an iterator's, before it iterates:
        a listener that subscribes late goes on from them without losing or doubling one)."""
        taken: list[E_co] = []
        while not self._queue.empty():
            event = self._queue.get_nowait()
            if event is None:  # the end (not an event to wait for): left for an iterator
                self._queue.put_nowait(None)
                self._queue.task_done()
                break
            self._queue.task_done()
            taken.append(cast(E_co, event))
        return taken

    async def join(self) -> None:
        """Wait until every event queued so far has been taken (iterator) or handled (callback)."""
        await self._queue.join()

    def __aiter__(self) -> Subscription[E_co]:
        return self

    async def __anext__(self) -> E_co:
        if self._ended:
            raise StopAsyncIteration
        event = await self._queue.get()
        if event is None:
            self._ended = True
            raise StopAsyncIteration
        self._queue.task_done()
        return cast(E_co, event)  # _wants() lets only E_co in

    def _wants(self, event: Event) -> bool:
        return not self._closed and isinstance(event, self._event_types)

    def _end(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._bus._forget(self)
        self._queue.put_nowait(None)
        # The end marker is not an event to wait for in join().
        self._queue.task_done()

    async def _feed(self, callback: Callback[Any]) -> None:
        while (event := await self._queue.get()) is not None:
            try:
                result = callback(event)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                logger.exception("wire subscriber %r failed on %s", callback, type(event).__name__)
            finally:
                self._queue.task_done()

    async def _finished(self) -> None:
        if self._task is not None:
            await self._task


class WireBus:
    """Fan-out of wire events to subscribers, each with its own queue or called directly."""

    def __init__(self) -> None:
        self._subscriptions: tuple[Subscription[Any], ...] = ()
        """Replaced, never changed in place: a listener may subscribe or close mid-`send`."""
        self._loop: asyncio.AbstractEventLoop | None = _running_loop()
        self._closed = False
        self._dispatching = False
        self._backlog: deque[Event] = deque()
        """Events a direct listener sent while `send` was calling it: delivered after."""

    def send(self, event: Event) -> None:
        """Hand `event` to every subscriber that wants it; never blocks, never fails.

        May be called from any thread: off the bus's loop the event is handed over to the loop,
        and events sent from one thread keep their order.
        """
        running = _running_loop()
        if self._loop is None:
            self._loop = running
        loop = self._loop
        if loop is None or loop is running:
            self._dispatch(event)
            return
        try:
            loop.call_soon_threadsafe(self._dispatch, event)
        except RuntimeError:
            logger.debug("dropped %s: the wire's event loop is closed", type(event).__name__)

    @overload
    def subscribe(
        self,
        event_type: type[E],
        /,
        *,
        callback: Callback[E] | None = None,
        direct: bool = False,
    ) -> Subscription[E]: ...

    @overload
    def subscribe(
        self,
        *event_types: type[Event],
        callback: Callback[Any] | None = None,
        direct: bool = False,
    ) -> Subscription[Event]: ...

    def subscribe(
        self,
        *event_types: type[Event],
        callback: Callback[Any] | None = None,
        direct: bool = False,
    ) -> Subscription[Any]:
        """Receive the events that are instances of `event_types` (all events when none are given).

        With `callback` (plain or async) the bus calls it once per event from a task of its own;
        an exception in it is logged and the next event is delivered as usual. Without it,
        iterate over the returned subscription. A callback needs a running event loop.

        With `direct=True` the callback (plain only) is called by `send` itself, on the bus's
        loop, before `send` returns: it must be cheap and never wait (post a message, append
        to a buffer), as the soul waits for it. It sees events in the order they were sent,
        an event it sends itself included (after the one it is taking); what it raises is
        logged and goes no further, and the next event is delivered as usual.
        """
        if self._closed:
            raise RuntimeError("the wire bus is closed")
        if direct and (callback is None or inspect.iscoroutinefunction(callback)):
            raise TypeError("a direct subscriber is a plain function")
        if self._loop is None:
            self._loop = _running_loop()
        subscription: Subscription[Any] = Subscription(self, event_types, callback, direct=direct)
        self._subscriptions = (*self._subscriptions, subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription[Any]) -> None:
        """Same as `subscription.close()`."""
        subscription.close()

    async def close(self) -> None:
        """End every subscription once it has what was already sent; wait for the callbacks."""
        self._closed = True
        subscriptions = self._subscriptions
        for subscription in subscriptions:
            subscription._end()
        await asyncio.gather(*(subscription._finished() for subscription in subscriptions))

    def _dispatch(self, event: Event) -> None:
        if self._closed:
            logger.debug("dropped %s: the wire bus is closed", type(event).__name__)
            return
        self._backlog.append(event)
        if self._dispatching:
            # Sent by a direct listener: every subscriber gets the event it is taking first.
            return
        self._dispatching = True
        try:
            while self._backlog:
                self._fan_out(self._backlog.popleft())
        finally:
            self._dispatching = False

    def _fan_out(self, event: Event) -> None:
        for subscription in self._subscriptions:
            if subscription._wants(event):
                subscription._deliver(event)

    def _forget(self, subscription: Subscription[Any]) -> None:
        self._subscriptions = tuple(s for s in self._subscriptions if s is not subscription)


def _guarded(listener: Callback[Any]) -> Callable[[Event], None]:
    """`listener`, for `send` to call: what it raises is logged and stays here (the soul is
    the caller), as a queued callback's does."""

    def call(event: Event) -> None:
        try:
            listener(event)
        except Exception:
            logger.exception("wire listener %r failed on %s", listener, type(event).__name__)

    return call


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
