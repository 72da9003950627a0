"""Driving the UI in tests: the real app with scripted models, a host for one widget or screen,
the messages widgets are posted, screen text, and waiting for things."""

from __future__ import annotations

import asyncio
import contextlib
import html
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from textual.app import App, ComposeResult
from textual.message import Message
from textual.pilot import Pilot, WaitForScreenTimeout
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

from kode_tui.config import Config, ModelChoice, resolve_model
from kode_tui.session import Context
from kode_tui.soul.facade import AgentSession, Session
from kode_tui.soul.llm import ChatProvider
from kode_tui.soul.llm.demo import DemoProvider
from kode_tui.ui.app import KodeApp
from kode_tui.ui.widgets.approval import ApprovalPanel
from kode_tui.ui.widgets.prompt import PromptInput
from kode_tui.ui.wire_messages import WireMessage
from kode_tui.wire import WireBus
from kode_tui.wire.events import Event

M = TypeVar("M", bound=Message)


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


class Host(App[Any]):
    """An app holding only what a test looks at: `widgets`, or a `screen` pushed over them.

    `results` collects what the pushed screen was dismissed with. A test that needs keys or
    glue of its own subclasses it.
    """

    def __init__(
        self,
        *widgets: Widget,
        screen: Screen[Any] | None = None,
        css_path: str | Path | None = None,
    ) -> None:
        super().__init__(css_path=css_path)
        self._widgets = widgets
        self.pushed = screen
        self.results: list[Any] = []

    def compose(self) -> ComposeResult:
        yield from self._widgets

    def on_mount(self) -> None:
        if self.pushed is not None:
            self.push_screen(self.pushed, self.results.append)


class Posted:
    """Every message the app's widgets were posted, in order, each once: pass it to
    `run_test(message_hook=...)` (Harlequin's functional tests watch an app so).

    Textual calls the hook as each widget takes a message from its queue, so a message that
    bubbles is seen at every widget it reaches; it is kept the first time.
    """

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._seen: set[int] = set()

    def __call__(self, message: Message) -> None:
        if id(message) not in self._seen:
            self._seen.add(id(message))
            self.messages.append(message)

    def of(self, kind: type[M]) -> list[M]:
        """The messages of one kind."""
        return [message for message in self.messages if isinstance(message, kind)]

    @property
    def wire_events(self) -> list[Event]:
        """The wire events widgets were posted (as `WireMessage`s), in order."""
        return [message.event for message in self.of(WireMessage)]

    async def handled(self, pilot: Pilot[Any], event: Event) -> None:
        """Wait until `event`, sent on a bus, has reached a widget that listens for it and the
        widgets have handled it and everything sent before it."""
        await wait_for(pilot, lambda: any(seen is event for seen in self.wire_events))
        # The widget is handling it now: a pause waits until every widget's queue is through.
        await pilot.pause()

    async def deliver(self, pilot: Pilot[Any], bus: WireBus, *events: Event) -> None:
        """Send `events` on `bus`, then wait until the widgets have handled them."""
        for event in events:
            bus.send(event)
        await self.handled(pilot, events[-1])


def screen_text(app: App[Any]) -> str:
    """The text on screen, from the SVG screenshot Textual exports."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


def static_text(app: App[Any]) -> str:
    """The text of the screen's Statics, unwrapped (sentences stay whole)."""
    return "\n".join(str(static.render()) for static in app.screen.query(Static))


SCREEN_WAIT_S = 2.0
"""How long `wait_for` lets Pilot wait for every widget to take the messages pending when it
looked. A widget removed meanwhile (a pane reloaded by a file watch: the read-only view's prune
marker) never takes its own, and `Pilot.pause` then hung its whole 30 s and failed; here the
condition is simply checked again."""


async def wait_for(
    pilot: Pilot[Any], condition: Callable[[], object], timeout: float = 60
) -> float:
    """Pause until `condition()` is true (or fail after `timeout` seconds); the seconds it took.
    The timeout is only a safety net: generous, since a loaded machine starts things slowly."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while not condition():
        if loop.time() - started > timeout:
            raise AssertionError(f"timed out waiting for {condition}")
        # `pilot.pause(0.05)`, with Pilot's wait for the screen cut short (SCREEN_WAIT_S).
        with contextlib.suppress(WaitForScreenTimeout):
            await pilot._wait_for_screen(timeout=SCREEN_WAIT_S)
        await asyncio.sleep(0.05)
        pilot.app.screen._on_timer_update()
    return loop.time() - started


async def facade_of(context: Context) -> AgentSession:
    """The facade over a context a test writes itself: the panes read it as they read the
    app's session (the session folder is the context's)."""
    return AgentSession(await Session.from_dir(context.path.parent), context)


def started(app: KodeApp) -> bool:
    """Whether the session on screen has its agent up (and its panes showing it)."""
    return app.agent_up


async def ready(pilot: Pilot[Any]) -> None:
    """Wait until the main screen and the agent are up, and make approvals answer at once."""
    app = pilot.app
    # The prompt is up first; the agent and then the panes follow (see MainScreen).
    await wait_for(pilot, lambda: app._attached() and (started(app) or app.read_only))
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
    """Wait until the conversation has scrolled to its end and stays there (for snapshots);
    up to 30 s, a safety net for a loaded machine."""
    from kode_tui.ui.widgets.conversation import Conversation

    conversation = pilot.app.screen.query_one(Conversation)
    last = None
    for _ in range(600):
        await pilot.pause(0.05)
        now = (conversation.scroll_y, conversation.max_scroll_y, conversation.virtual_size)
        # Its wire events come as messages: the turn may end before the last is handled.
        drained = conversation.message_queue_size == 0
        # Anchored to its end, a conversation shorter than its view has a negative scroll_y
        # (Textual keeps it bottom - height): it is at its end too, with nothing to scroll.
        at_end = conversation.scroll_y >= conversation.max_scroll_y or not conversation.max_scroll_y
        if now == last and drained and at_end:
            return
        last = now
