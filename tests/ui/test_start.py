"""Start-up (issue 31): the first frame waits for nothing of the domain, the model process is up
when the prompt first takes keys, and a message typed at once goes as soon as it can."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from rich.console import RenderableType
from textual import events
from textual.app import App
from textual.color import Color
from textual.geometry import Region
from textual.message import Message
from textual.pilot import Pilot
from textual.screen import Screen

from kode_tui.config import Config
from kode_tui.soul.llm import process
from kode_tui.soul.llm.demo import DemoProvider
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui import collector, preload, screen_hold
from kode_tui.ui.app import KodeApp
from kode_tui.ui.pins import block_text
from kode_tui.ui.screens.main import MainScreen
from kode_tui.ui.widgets.keys_footer import KeysFooter
from kode_tui.ui.widgets.prompt import PromptInput
from tests.llm_server import KEY_ENV, LLMServer, loopback_choice
from tests.ui_helpers import make_app, screen_text, turn_running, wait_for


def test_the_main_screen_lays_out_and_resizes_without_loading_the_domain() -> None:
    """The first frame is the main screen with its prompt and a new session's side panes; its
    resize handler once imported the approval panel, and with it the whole facade (0.3 s
    before the first frame); the panes' modules imported the facade and the events."""
    code = """
import asyncio, sys
from pathlib import Path
from textual.app import App
from kode_tui.ui.screens.main import MainScreen

class First(App[None]):
    def on_mount(self) -> None:
        self.push_screen(MainScreen(Path("."), lambda: [], [], new_session=True))

async def main() -> None:
    async with First().run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert pilot.app.screen.query("#side > TokenGauge, #side > HistoryPane")
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
    domain = ("kode_tui.soul.facade", "kode_tui.wire.events", "kode_tui.message", "pydantic")
    print(sorted(m for m in (*domain, "pathspec") if m in sys.modules))

asyncio.run(main())
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"


class _MainScreenAlone(App[None]):
    """A new session's main screen, as the first frame shows it: no domain behind it."""

    def on_mount(self) -> None:
        self.push_screen(MainScreen(Path("."), lambda: [], [], new_session=True))


async def _shown(pilot: Pilot[Any], app: App[None]) -> None:
    """Wait until `app`'s main screen is laid out and settled."""
    await wait_for(pilot, lambda: isinstance(app.screen, MainScreen) and app.screen.size)
    await pilot.pause()


async def test_the_main_screen_lays_itself_out_again_only_when_the_size_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Textual's Screen laid itself out again on every Resize, of its own size too: when first
    shown (its own layout posts it one) and on a terminal's in-band size report, each a reflow
    and a repaint of every pane before the first request."""
    sizes: list[tuple[int, int]] = []
    refresh_layout = Screen._refresh_layout

    def laid_out(self: Screen[Any], size: Any = None, scroll: bool = False) -> None:
        if isinstance(self, MainScreen) and size is not None:  # a resize's, not a mount's
            sizes.append(tuple(size))
        refresh_layout(self, size, scroll)

    monkeypatch.setattr(Screen, "_refresh_layout", laid_out)

    app = _MainScreenAlone()
    async with app.run_test(size=(120, 36)) as pilot:
        await _shown(pilot, app)
        assert sizes == [(120, 36)]
        app.screen.post_message(events.Resize(app.size, app.size))  # the same size
        await pilot.pause()
        assert sizes == [(120, 36)]
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: app.screen.has_class("-narrow"))
        assert sizes == [(120, 36), (80, 24)]


async def test_the_main_screen_is_styled_once_when_first_shown_and_when_shown_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Textual restyled a whole screen each time it was shown: the first time too, though its
    widgets were styled as they mounted a moment before (~10 ms of the first frame)."""
    restyled: list[str] = []
    update_node_styles = MainScreen.update_node_styles

    def noted(self: MainScreen, animate: bool = True) -> None:
        restyled.append(type(self).__name__)
        update_node_styles(self, animate)

    monkeypatch.setattr(MainScreen, "update_node_styles", noted)

    app = _MainScreenAlone()
    async with app.run_test(size=(120, 36)) as pilot:
        await _shown(pilot, app)
        assert restyled == []
        app.screen.post_message(events.ScreenResume())  # shown again (after a modal, say)
        await wait_for(pilot, lambda: restyled == ["MainScreen"])


def user_texts(request: dict[str, Any]) -> list[str]:
    """What the user typed, as a request to the loopback server carries it (without the
    checkpoint notes and reminders the soul adds), message by message."""
    texts = []
    for message in request["messages"]:
        content = message["content"]
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        if message["role"] == "user" and not content.startswith("<system"):
            texts.append(content)
    return texts


async def test_the_model_process_is_up_when_the_prompt_takes_keys_and_early_messages_go_once(
    project: Path, server: LLMServer, home: Path
) -> None:
    server.reply_text("First answer.")
    server.reply_text("Second answer.")
    pid_at_first_focus: list[int | None] = []

    def first_focus(message: Message) -> None:
        if isinstance(message, events.Focus) and not pid_at_first_focus:
            pid_at_first_focus.append(process.worker_pid())

    app = KodeApp(project, Config(), loopback_choice(server, KEY_ENV), yolo=True)
    async with app.run_test(size=(120, 36), message_hook=first_focus) as pilot:
        prompt = app.screen.query_one(PromptInput)
        # Typed the moment the prompt shows: the agent and the model process may still start.
        for text in ("first", "second"):
            prompt.text = text
            await pilot.press("enter")
        await wait_for(pilot, lambda: len(server.requests) == 2 and not turn_running(app))
        await wait_for(pilot, lambda: not app._queue and not turn_running(app))

    assert pid_at_first_focus and pid_at_first_focus[0] is not None
    assert [user_texts(request) for request in server.requests] == [
        ["first"],
        ["first", "second"],
    ]


class Frame(NamedTuple):
    """What one screen update of the main screen showed."""

    text: str
    background: Color
    side: list[tuple[str | None, Region]]
    focused: str | None


def watch_frames(app: KodeApp) -> list[Frame]:
    """What each update of `app`'s main screen shows, from now on (the test's eyes)."""
    frames: list[Frame] = []
    display = app._display

    def noted(screen: Screen[Any], renderable: RenderableType | None) -> None:
        if renderable is not None and isinstance(screen, MainScreen):
            side = [(pane.id, pane.region) for pane in screen.query("#side > *")]
            focused = screen.focused.id if screen.focused else None
            frames.append(Frame(screen_text(app), screen.styles.background, side, focused))
        display(screen, renderable)

    app._display = noted  # type: ignore[method-assign]
    return frames


@pytest.fixture
def slow_domain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[Pilot[Any]], Awaitable[Any]]]:
    """A module of the domain that takes as long to load as the test wants: awaited with the
    app's pilot, it is loading (`release.set()` lets it end)."""
    (tmp_path / "slow_domain.py").write_text(
        "import threading\nloading = threading.Event()\nrelease = threading.Event()\n"
        "loading.set()\nrelease.wait(60)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(preload, "AFTER_FIRST_FRAME", (*preload.AFTER_FIRST_FRAME, "slow_domain"))

    async def loading(pilot: Pilot[Any]) -> Any:
        # In sys.modules as soon as it starts loading: its events are there once it waits.
        await wait_for(pilot, lambda: hasattr(sys.modules.get("slow_domain"), "release"))
        module = sys.modules["slow_domain"]
        module.loading.wait(60)
        return module

    yield loading
    sys.modules.pop("slow_domain", None)  # the next test's loads again


async def test_the_first_frames_show_the_theme_keys_and_every_pane_whole(
    project: Path,
    home: Path,
    slow_domain: Callable[[Pilot[Any]], Awaitable[Any]],
    request: pytest.FixtureRequest,
) -> None:
    """The first frame has the configured theme's colours; keys typed while the domain loads
    show at once, and a message sent then waits for the agent in sight; so do the side panes,
    each with a new session's content, where they stay (no relayout) when the agent's figures
    come into the gauge; the collector, held off while
    the app starts (as `kode-tui` runs it), runs again, full collections too, once the session
    is on screen."""
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text('theme = "kode-high-contrast"\n')
    app = KodeApp(project, provider=DemoProvider(delay=0))
    frames = watch_frames(app)
    young, middle, full = gc.get_threshold()
    collector.hold()  # as cli._run_app does
    request.addfinalizer(lambda: (gc.set_threshold(young, middle, full), gc.enable()))
    async with app.run_test(size=(120, 36)) as pilot:
        slow = await slow_domain(pilot)
        await pilot.press(*"typed early", "enter")
        await wait_for(pilot, lambda: "waits for the agent" in screen_text(app))
        assert "⧗ typed early" in screen_text(app)
        await pilot.press("up")  # back to edit: nothing is sent, nothing else changes
        await wait_for(pilot, lambda: "waits for the agent" not in screen_text(app))
        assert app.screen.query_one(PromptInput).text == "typed early"
        assert not app.agent_session  # the domain is still loading
        loading = frames[-1]
        slow.release.set()
        await wait_for(pilot, lambda: app.agent_up and "compacts at" in screen_text(app))
        await pilot.pause()
        assert gc.isenabled() and gc.get_threshold() == (young, middle, full)

    theme = app.get_theme("kode-high-contrast")
    assert theme is not None and frames[0].background == Color.parse(theme.background)
    for content in ("Context", "no token count yet", "no checkpoints yet", "History", "no rotated"):
        assert content in loading.text
    assert "compacts at" not in loading.text
    assert [pane for pane, _ in loading.side] == [
        "gauge",
        "timeline",
        "checkpoint-details",
        "history",
    ]
    assert loading.side == frames[-1].side
    assert {frame.focused for frame in frames} == {"prompt"}  # keys typed at once go there


async def test_a_message_typed_while_the_agent_starts_is_requested_before_the_panes_paint(
    project: Path,
    slow_domain: Callable[[Pilot[Any]], Awaitable[Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sent before the agent was up, a message goes as soon as it is: its request before the
    agent's panes are painted, before the footer takes the agent's keys and before the
    conversation and the approval panel are mounted (their work would go first); then the
    footer has those keys and the conversation shows the turn whole, the message once."""
    monkeypatch.setattr(screen_hold, "HOLD_S", 60.0)  # the cap is for hooks, MCP, slow disks
    write = {"name": "WriteFile", "arguments": {"path": "early.txt", "content": "hi\n"}}
    provider = ScriptedProvider([{"tool_calls": [write]}, {"text": "Early answer."}])
    app = KodeApp(project, provider=provider)
    frames = watch_frames(app)
    at_request: list[tuple[int, str, list[str]]] = []  # panes mounted, last frame, footer keys
    stream = provider.stream

    def footer_keys() -> list[str]:
        return [key.description for key in app.screen.query_one(KeysFooter).shown]

    def watched(*request: Any) -> Any:
        panes = len(app.screen.query("#conversation, #approval"))
        at_request.append((panes, frames[-1].text, footer_keys()))
        return stream(*request)

    provider.stream = watched  # type: ignore[method-assign]
    async with app.run_test(size=(120, 36)) as pilot:
        slow = await slow_domain(pilot)
        await pilot.press(*"typed early", "enter")
        await wait_for(pilot, lambda: "waits for the agent" in screen_text(app))
        slow.release.set()
        # Its first answer asks to write a file: the panel, mounted after the request, asks.
        await wait_for(pilot, lambda: bool(app.screen.query("ApprovalPanel.-active")))
        await pilot.press("y")
        await wait_for(pilot, lambda: "Early answer." in conversation_texts(app))
        await wait_for(pilot, lambda: not turn_running(app))
        shown, on_screen, keys = conversation_texts(app), screen_text(app), footer_keys()

    assert len(at_request) == 2  # the message, then the file written
    panes, last_frame, keys_then = at_request[0]
    assert panes == 0
    assert "waits for the agent" in last_frame and "compacts at" not in last_frame
    assert "Approval mode" not in keys_then and "Approval mode" in keys
    assert (project / "early.txt").read_text() == "hi\n"
    assert shown.count("typed early") == 1 and "waits for the agent" not in on_screen


def conversation_texts(app: KodeApp) -> list[str]:
    """The text of each block the conversation shows (none before it is mounted)."""
    return [
        block_text(block) for pane in app.screen.query("#conversation") for block in pane.children
    ]


async def test_a_resumed_sessions_panes_show_it_the_first_time_they_are_drawn(
    project: Path, home: Path
) -> None:
    """Only a new session's side panes are drawn before its agent: a resumed one's show its
    checkpoints in their first frame, never a new session's emptiness first."""
    first = make_app(project, ScriptedProvider([{"text": "Hi."}]))
    async with first.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: first.agent_up)
        first.send("hello")
        await wait_for(pilot, lambda: "no checkpoints yet" not in screen_text(first))
        await wait_for(pilot, lambda: not turn_running(first))
    resumed = first.session
    assert resumed is not None

    app = make_app(project, ScriptedProvider([]), session=resumed)
    frames = watch_frames(app)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.agent_up and "compacts at" in screen_text(app))
        await pilot.pause()

    drawn = [frame.text for frame in frames if "Checkpoints" in frame.text]
    assert drawn and not any("no checkpoints yet" in text for text in drawn)


def test_young_collections_after_the_first_frame_do_not_walk_its_objects(
    request: pytest.FixtureRequest,
) -> None:
    """`young_only` freezes what was made while collections were held (the first frame's
    ~100k objects, all young then): the first young collections walked them all, ~35 ms of
    CPU before the first request."""
    request.addfinalizer(lambda: (collector.release(), gc.unfreeze()))
    collector.hold()
    made = [[] for _ in range(100)]
    collector.young_only()
    tracked = {id(thing) for thing in gc.get_objects()}  # frozen ones are not listed
    assert gc.isenabled()
    assert not any(id(thing) in tracked for thing in made)
