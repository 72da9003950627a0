"""Wire events reach widgets as Textual messages (STYLE.md 6b).

A widget that shows wire events mixes in `WireListener`, calls `listen(bus, *event_types)` when
it is mounted and handles `WireMessage` in `on_wire_message`. The bus's callback does nothing but
post the message, so the widget's own message loop handles its events one at a time, in the
order they were sent, and a test can watch them with `App.run_test(message_hook=...)`.

Posting is all it does, so the bus calls it from `send` (a direct subscriber): an event goes
from the soul straight into the widget's message queue, with no queue and task of the bus's
own between them. The widget's queue stays: its handlers mount blocks and wait for them, and
between two frames the pane must be free for keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from textual.message import Message

if TYPE_CHECKING:
    from textual.geometry import Size

    # Names only: the side panes import this module for the first frame, before the domain.
    from kode_tui.soul.facade import Subscription, WireBus
    from kode_tui.wire.events import Event


class WireMessage(Message, bubble=False, verbose=True):
    """A wire event for the widget that listens for it.

    It does not bubble: it is for that widget alone, and text deltas come one per token.
    """

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class _Listener(Protocol):
    _wire_subscription: Subscription[Event] | None
    _wire_waiting: tuple[WireBus, tuple[type[Event], ...], Subscription[Event]] | None

    @property
    def size(self) -> Size: ...

    def post_message(self, message: Message) -> bool: ...

    def listen(
        self,
        bus: WireBus,
        *event_types: type[Event],
        backlog: Subscription[Event] | None = None,
    ) -> None: ...


class WireListener:
    """Mixed into a widget: receive wire events as `WireMessage`s until unmounted."""

    _wire_subscription: Subscription[Event] | None = None
    _wire_waiting: tuple[WireBus, tuple[type[Event], ...], Subscription[Event]] | None = None
    """A `listen` with a backlog, until the widget is laid out (`on_resize`)."""

    def listen(
        self: _Listener,
        bus: WireBus,
        *event_types: type[Event],
        backlog: Subscription[Event] | None = None,
    ) -> None:
        """Post the events of `event_types` on `bus` to this widget, from now on: first those
        `backlog` (a subscription to `bus` made earlier) queued meanwhile, then closed. With a
        backlog, a widget not laid out yet starts once it is: what it mounts needs a place."""
        if backlog is not None and not self.size:
            self._wire_waiting = (bus, event_types, backlog)
            return
        if self._wire_subscription is not None:
            self._wire_subscription.close()
        widget = self

        def post(event: Event) -> None:
            widget.post_message(WireMessage(event))

        if backlog is not None:  # taken and closed before `send` can call `post`: in order
            for event in backlog.take_queued():
                if isinstance(event, event_types):
                    post(event)
            backlog.close()
        self._wire_subscription = bus.subscribe(*event_types, callback=post, direct=True)

    def on_resize(self: _Listener) -> None:
        # Textual calls the resize handler of every class of a widget, the mixin's too.
        waiting, self._wire_waiting = self._wire_waiting, None
        if waiting is not None:
            bus, event_types, backlog = waiting
            self.listen(bus, *event_types, backlog=backlog)

    def _on_unmount(self: _Listener) -> None:
        # Textual calls the unmount handler of every class of a widget, the mixin's too.
        if self._wire_subscription is not None:
            self._wire_subscription.close()
            self._wire_subscription = None
