"""The approval mode badge on the prompt and `/permissions`: what is allowed, seen and revoked."""

from __future__ import annotations

import json
import time
from pathlib import Path

from textual.color import Color
from textual.widgets import OptionList

from kode_tui.session import Session, SessionLocked
from kode_tui.session.state import SessionState
from kode_tui.soul.approval import Approval
from kode_tui.soul.llm.demo import DemoProvider
from kode_tui.tools.base import Permission
from kode_tui.ui.app import KodeApp
from kode_tui.ui.screens.dialogs import LockedScreen
from kode_tui.ui.screens.permissions import PermissionsScreen, granted_text
from kode_tui.ui.widgets.approval import ApprovalPanel
from kode_tui.ui.widgets.mode_badge import ModeBadge
from kode_tui.ui.widgets.prompt import PromptInput
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from tests.ui_helpers import make_app, ready, screen_text, send, turn_running, wait_for

EDIT = Permission(
    kind="edit",
    action="edit file",
    description="WriteFile a.py",
    scope="edit",
    scope_label="all edits in the work dir",
)


def badge_of(app: KodeApp) -> ModeBadge:
    return app.screen.query_one(ModeBadge)


def badge_says(app: KodeApp, text: str) -> bool:
    badge = badge_of(app)
    return badge.display and str(badge.render()) == text


def listed(screen: PermissionsScreen) -> list[str]:
    listing = screen.query_one(OptionList)
    return [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]


async def test_the_badge_shows_each_mode_on_the_prompt_at_80_columns(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: badge_says(app, "ask"))
        badge, prompt = badge_of(app), app.screen.query_one(PromptInput)
        # On the prompt's lower border, inside its width, drawn on screen.
        assert badge.region.y == prompt.region.bottom - 1
        assert prompt.region.x < badge.region.x < badge.region.right <= prompt.region.right
        assert app.screen.get_widget_at(badge.region.x, badge.region.y)[0] is badge

        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: badge_says(app, "auto-edit"))
        assert badge.has_class("-auto-edit") and not badge.has_class("-ask")
        await send(pilot, "/mode yolo")
        await wait_for(pilot, lambda: badge_says(app, "yolo"))
        assert badge.has_class("-yolo") and not badge.has_class("-auto-edit")
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: badge_says(app, "ask"))
        assert not badge.has_class("-yolo")


async def test_yolo_from_the_command_line_shows_in_the_warning_colour(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0), yolo=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: badge_says(app, "yolo"))
        badge = badge_of(app)
        warning = Color.parse(app.theme_variables["warning"])
        assert badge.styles.background.rgb == warning.rgb
        assert badge_of(app).styles.background != Color.parse(app.theme_variables["panel"])


async def test_a_read_only_view_has_no_badge_and_no_permissions(project: Path) -> None:
    session = await Session.create(project)
    session.context_file.write_text('{"role":"user","content":"hi"}\n')
    locked = SessionLocked(session.dir / "lock", 4242)
    app = make_app(project, DemoProvider(delay=0), session=session, locked=locked)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, LockedScreen))
        await pilot.press("r")
        await ready(pilot)
        assert app.read_only and not badge_of(app).display
        await send(pilot, "/permissions")
        await wait_for(pilot, lambda: any("read-only" in n.message for n in app._notifications))
        assert not isinstance(app.screen, PermissionsScreen)


async def test_allowing_for_the_session_is_counted_listed_and_revoked_for_good(
    project: Path,
) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await send(pilot, "Show me around")
        panel = app.screen.query_one(ApprovalPanel)
        await wait_for(pilot, lambda: panel.current is not None)
        before = time.time()
        await pilot.press("a")
        await wait_for(pilot, lambda: badge_says(app, "ask · 1 allowed"))
        after = time.time()
        await wait_for(pilot, lambda: not turn_running(app))

        await send(pilot, "/permissions")
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionsScreen))
        screen = app.screen
        assert isinstance(screen, PermissionsScreen)
        [row] = listed(screen)
        assert row.startswith("all edits in the work dir")
        clocks = {time.strftime("%H:%M", time.localtime(t)) for t in (before, after)}
        assert any(row.endswith(f"granted {clock} (just now)") for clock in clocks), row
        assert "d or Delete revoke" in screen_text(app)

        await pilot.press("d")
        await wait_for(pilot, lambda: "Nothing is allowed" in listed(screen)[0])
        await pilot.press("escape")
        await wait_for(pilot, lambda: badge_says(app, "ask"))
        session = app.session
    assert session is not None
    state = json.loads(session.state_file.read_text())
    assert state["session_approvals"] == [] and state["session_approval_grants"] == {}

    # Opened again, the session has nothing allowed.
    app = make_app(project, DemoProvider(delay=0), session=await Session.find(project, session.id))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: badge_says(app, "ask"))
        await send(pilot, "/permissions")
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionsScreen))
        assert isinstance(app.screen, PermissionsScreen)
        assert "Nothing is allowed" in listed(app.screen)[0]


async def test_a_session_saved_without_grant_times_lists_its_approvals(project: Path) -> None:
    session = await Session.create(project)
    session.context_file.write_text('{"role":"user","content":"hi"}\n')
    # As kode-tui wrote it before grants were kept: scopes only.
    session.state_file.write_text(
        json.dumps({"version": 1, "approval_mode": "auto-edit", "session_approvals": ["edit"]})
    )
    reopened = await Session.find(project, session.id)
    app = make_app(project, DemoProvider(delay=0), session=reopened)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: badge_says(app, "auto-edit · 1 allowed"))
        await send(pilot, "/permissions")
        await wait_for(pilot, lambda: isinstance(app.screen, PermissionsScreen))
        assert isinstance(app.screen, PermissionsScreen)
        assert listed(app.screen) == ["edit  time not recorded"]


async def test_a_grant_keeps_its_label_and_time_and_a_revoke_asks_again() -> None:
    bus, state = WireBus(), SessionState()
    saved: list[list[str]] = []
    changes: list[ev.PermissionsChanged] = []
    asked: list[ev.ApprovalRequest] = []

    async def save() -> None:
        saved.append(list(state.session_approvals))

    def answer(request: ev.ApprovalRequest) -> None:
        asked.append(request)
        request.resolve("approve_for_session")

    bus.subscribe(ev.ApprovalRequest, callback=answer)
    told = bus.subscribe(ev.PermissionsChanged, callback=changes.append)
    approval = Approval(bus, state, save)

    await approval.request("WriteFile", "c1", EDIT)
    await approval.request("WriteFile", "c2", EDIT)
    await told.join()
    assert len(asked) == 1
    [grant] = approval.grants()
    assert (grant.scope, grant.label) == ("edit", "all edits in the work dir")
    assert grant.granted_at is not None and time.time() - grant.granted_at < 60
    assert changes[-1] == ev.PermissionsChanged(mode="ask", session_approvals=1)

    assert await approval.revoke("edit")
    assert not await approval.revoke("edit")
    await told.join()
    assert saved[-1] == [] and state.session_approval_grants == {}
    assert changes[-1] == ev.PermissionsChanged(mode="ask", session_approvals=0)
    await approval.request("WriteFile", "c3", EDIT)
    assert len(asked) == 2


def test_permissions_changed_is_not_written_to_wire_jsonl() -> None:
    assert not ev.PermissionsChanged.recorded and ev.ApprovalResolved.recorded


def test_the_grant_time_reads_as_a_clock_and_an_age() -> None:
    now = time.mktime((2026, 11, 24, 15, 0, 0, 0, 0, -1))

    def clock(seconds_ago: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(now - seconds_ago))

    assert granted_text(now - 180, now) == "granted 14:57 (3m ago)"
    assert granted_text(now - 3 * 86_400, now) == f"granted {clock(3 * 86_400)} (3d ago)"
    assert granted_text(now - 30 * 86_400, now) == f"granted {clock(30 * 86_400)}"
    assert granted_text(None, now) == "time not recorded"
