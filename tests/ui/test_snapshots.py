"""SVG snapshots of the screens a user meets (`pytest --snapshot-update` after a deliberate change).

Paths shown on screen must not change between runs, so these tests work in fixed folders
under the system temp dir rather than in pytest's numbered ones.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from kode_tui.session import Session
from kode_tui.session.state import ApprovalGrant, ModelSpend, SessionSpend
from kode_tui.soul.llm.demo import DemoProvider
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.tools.sandbox import Support
from kode_tui.ui.screens.permissions import PermissionsScreen
from kode_tui.ui.screens.sessions import SessionPicker
from kode_tui.ui.widgets.approval import ApprovalPanel
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.ui.widgets.gauge import TokenGauge
from kode_tui.ui.widgets.history import HistoryPane
from kode_tui.ui.widgets.mode_badge import ModeBadge
from tests.conftest import KIMI_FIXTURE
from tests.ui_helpers import make_app, ready, send, settled, turn_running, wait_for

ROOT = Path(tempfile.gettempdir()) / "kode-tui-snapshots"


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # The folder's path is on screen, so it is the same for every test: one test at a time
    # may use it, across pytest-xdist's workers and any other run on this machine.
    with (ROOT.parent / "kode-tui-snapshots.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(ROOT, ignore_errors=True)
        project = ROOT / "project"
        project.mkdir(parents=True)
        (project / "README.md").write_text("# Greeter\n\nSays hello.\n")
        (project / "hello.py").write_text("print('hello')\n")
        monkeypatch.setenv("KODE_TUI_HOME", str(ROOT / "home"))
        monkeypatch.setenv("HOME", str(ROOT / "user-home"))
        # A thought takes no time on a stopped clock: "Thought for <1 s" on any machine.
        monkeypatch.setattr("kode_tui.ui.widgets.blocks._now", lambda: 1000.0)
        # The same screens where bubblewrap is missing (no test here runs a command).
        monkeypatch.setattr("kode_tui.soul.agent.sandbox_support", lambda: Support("/bin/true"))
        yield project
        shutil.rmtree(ROOT, ignore_errors=True)


SIZE = (120, 36)


def test_empty_session(place: Path, snap_compare: Any) -> None:
    app = make_app(place, DemoProvider(delay=0))

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        # The gauge shows the known prompt, once the project context is collected and measured.
        assert app.agent_session is not None
        report = await app.agent_session.context_report()
        assert report is not None
        gauge = app.screen.query_one(TokenGauge)
        await wait_for(
            pilot, lambda: gauge.status and gauge.status.context_tokens == report.context_tokens
        )

    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_a_finished_tool_using_turn(place: Path, snap_compare: Any) -> None:
    provider = ScriptedProvider(
        [
            {
                "think": "The README will say what this is.",
                "text": "Let me read the README.",
                "tool_calls": [{"name": "ReadFile", "arguments": {"path": "README.md"}}],
                "usage": {"input": 2400, "output": 40},
            },
            {
                "text": "It is **Greeter**: a tiny project that says hello.",
                "usage": {"input": 2520, "output": 14},
            },
        ]
    )
    app = make_app(place, provider)

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await send(pilot, "What is this project?")
        await wait_for(pilot, lambda: not turn_running(app) and len(provider.requests) == 2)
        await wait_for(pilot, lambda: "What is this project?" in app.sub_title)
        await settled(pilot)

    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_a_pending_approval_with_its_diff(
    place: Path, snap_compare: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sign of life counts seconds: the clock stands still for the picture.
    monkeypatch.setattr("kode_tui.ui.widgets.activity._now", lambda: 1000.0)
    app = make_app(place, DemoProvider(delay=0))

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await send(pilot, "Show me around")
        panel = app.screen.query_one(ApprovalPanel)
        await wait_for(pilot, lambda: panel.current is not None)
        await settled(pilot)
        conversation = app.screen.query_one(Conversation)
        # Where a scrolled pane's view ends up depends on when the reminders block comes.
        assert conversation.max_scroll_y == 0, "the screen is too short for a steady picture"

    # Tall enough that the conversation needs no scrollbar, whose thumb is not deterministic.
    assert snap_compare(app, run_before=run_before, terminal_size=(120, 80))


def test_the_session_picker(place: Path, snap_compare: Any) -> None:
    import asyncio

    async def sessions() -> None:
        for n, (title, age) in enumerate(
            (("Add a greet() function", 7200), ("Fix the README", 90))
        ):
            # Fixed ids: the line under the table names the highlighted one.
            session = await Session.create(place, f"{n}f0c5e1d-0000-4000-8000-00000000000{n}")
            session.context_file.write_text('{"role":"user","content":"x"}\n')
            session.state.custom_title = title
            if age < 3600:  # the other one is from before kode-tui counted cost: `—`
                spend = ModelSpend(calls=3, input=40_000, output=2_000, usd=0.042)
                session.state.spend = SessionSpend(models={"openai/gpt-4.1": spend})
            session.save_state()
            then = time.time() - age
            os.utime(session.context_file, (then, then))

    asyncio.run(sessions())
    app = make_app(place, ScriptedProvider([]), pick_session=True)

    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, SessionPicker))
        picker = app.screen
        assert isinstance(picker, SessionPicker)
        # The sessions are listed by a worker: the picture is taken once both rows are in.
        await wait_for(pilot, lambda: picker.is_mounted and picker.table.row_count == 2)

    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_the_history_pane_of_a_kimi_session(place: Path, snap_compare: Any) -> None:
    import asyncio

    folder = ROOT / "kimi-session"
    shutil.copytree(KIMI_FIXTURE, folder)
    then = time.time() - 3 * 3600
    for path in folder.iterdir():
        os.utime(path, (then, then))

    session = asyncio.run(Session.from_dir(folder))
    app = make_app(place, ScriptedProvider([]), session=session)

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(pilot)

        # The rotations are read in a thread, and the notice comes as a wire message: on a
        # loaded machine half a second was not always enough.
        # The pane is looked up each time: the one that is drawn is the one to wait for.
        def rows_shown() -> bool:
            history = app.screen.query_one(HistoryPane)
            return len(history.paths) == 3 and history.option_count == 3

        await wait_for(pilot, rows_shown)
        await settled(pilot)
        await wait_for(pilot, rows_shown)

    assert snap_compare(app, run_before=run_before, terminal_size=SIZE)


def test_the_narrow_layout(place: Path, snap_compare: Any) -> None:
    app = make_app(place, DemoProvider(delay=0))
    assert snap_compare(app, run_before=ready, terminal_size=(80, 24))


def session_with_approvals(place: Path) -> Session:
    """A session in yolo with two scopes allowed: one granted with its time, in UTC, one saved
    before grants were kept."""
    import asyncio

    async def create() -> Session:
        session = await Session.create(place)
        session.context_file.write_text('{"role":"user","content":"Tidy the README"}\n')
        session.state.approval_mode = "yolo"
        session.state.session_approvals = ["shell:git status", "edit"]
        session.state.session_approval_grants = {
            "edit": ApprovalGrant(label="all edits in the work dir", granted_at=1_767_225_600)
        }
        session.save_state()
        return session

    return asyncio.run(create())


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_the_mode_badge_with_session_approvals_at_80_columns(
    place: Path, snap_compare: Any
) -> None:
    session = session_with_approvals(place)
    app = make_app(place, ScriptedProvider([]), session=session)

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await wait_for(pilot, lambda: app.screen.query_one(ModeBadge).display)
        await settled(pilot)

    assert snap_compare(app, run_before=run_before, terminal_size=(80, 24))


def test_the_permissions_dialog(place: Path, utc: None, snap_compare: Any) -> None:
    session = session_with_approvals(place)
    app = make_app(place, ScriptedProvider([]), session=session)

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await send(pilot, "/permissions")
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionsScreen))
        await pilot.pause()

    assert snap_compare(app, run_before=run_before, terminal_size=(80, 24))


def test_the_pins_screen(place: Path, snap_compare: Any) -> None:
    from kode_tui.ui.screens.pins import PinsScreen

    app = make_app(place, ScriptedProvider([]))

    async def run_before(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        assert app.agent_session is not None
        await app.agent_session.pins.add("Answer in British English.")
        await app.agent_session.pins.add("Never edit files under vendored/: they are generated.")
        await send(pilot, "/pins")
        await wait_for(pilot, lambda: isinstance(app.screen, PinsScreen))
        await pilot.pause()

    assert snap_compare(app, run_before=run_before, terminal_size=(100, 30))
