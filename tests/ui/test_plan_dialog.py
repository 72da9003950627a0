"""The plan dialog: ExitPlanMode's plan as a document to read, edit and approve into a mode,
or send back with feedback (kode_tui/ui/screens/plan.py, opened by the approval panel)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Button, Input, Select, TextArea

from kode_tui.config import Config
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.screens.plan import PlanReview
from kode_tui.ui.widgets.approval import ApprovalPanel
from kode_tui.wire import WireBus
from kode_tui.wire.events import ApprovalRequest, PlanApproach, PlanAsk, PlanVerdict
from tests.ui_helpers import Host, make_app, ready, send, turn_running, wait_for

PLAN = "# Plan\n\n1. **Fast**: patch it\n2. [b]Safe[/b]: rewrite it\n"
APP_CSS = Path(__file__).parents[2] / "kode_tui" / "ui" / "app.tcss"


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def on_screen(pilot: Pilot[Any], widget: Any) -> bool:
    region, (width, height) = widget.region, pilot.app.size
    return region.width > 0 and region.right <= width and region.bottom <= height


async def test_the_plan_is_sent_back_then_edited_and_approved_into_a_mode_at_80x24_and_140x40(
    project: Path, home: Path
) -> None:
    """ExitPlanMode opens the dialog over the panel: the plan as Markdown (its text never
    markup), every choice on screen at 80x24 and 140x40; sent back with feedback the model
    revises in the same turn; Esc goes back to the panel, `d` opens the plan again; edited
    and approved into auto-edit with an approach, the plan file holds the edit, the model
    receives it, and the session is in auto-edit."""
    script: list[dict[str, object]] = []
    provider = ScriptedProvider(script)
    app = make_app(project, provider, Config(approval_mode="plan"))
    options = [{"label": "Fast"}, {"label": "Safe (Recommended)"}]
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        opened = app.agent_session
        assert opened is not None
        plan_file = home / "plans" / f"{opened.session.state.plan_slug}.md"
        script += [
            call("WriteFile", path=str(plan_file), content=PLAN),
            call("ExitPlanMode", options=options),
            call("ExitPlanMode", options=options),
            {"text": "Building it."},
        ]
        await send(pilot, "plan the fix")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanReview))
        dialog = app.screen
        assert isinstance(dialog, PlanReview)
        await pilot.pause()
        for button in dialog.query(Button):
            assert on_screen(pilot, button), button.id
        assert on_screen(pilot, dialog.query_one(Input))
        assert dialog.query_one("#plan-option", Select).value == "Safe (Recommended)"
        assert dialog.query_one("#plan-mode", Select).value == "ask"
        # Sent back with feedback: the model reads it and writes the plan again.
        dialog.query_one(Input).value = "name the files"
        dialog.query_one(Input).focus()
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: app.screen is not dialog and isinstance(app.screen, PlanReview)
        )
        again = app.screen
        assert isinstance(again, PlanReview)
        await pilot.press("escape")  # back to the panel, still asked
        panel = app.screen.query_one(ApprovalPanel)
        assert panel.current is not None and panel.current.plan is not None
        await pilot.resize_terminal(140, 40)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanReview))
        dialog = app.screen
        assert isinstance(dialog, PlanReview)
        await pilot.pause()
        for button in dialog.query(Button):
            assert on_screen(pilot, button), button.id
        await pilot.press("ctrl+e")
        editor = dialog.query_one(TextArea)
        assert editor.has_focus
        editor.text = "# Plan\n\n1. Safe: rewrite it, with tests\n"
        await pilot.press("ctrl+e")  # read it again, as edited
        dialog.query_one("#plan-mode", Select).value = "auto-edit"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not turn_running(app))
        mode = opened.mode
    said = [
        " ".join(getattr(part, "text", "") for part in message.content)
        for message in provider.requests[-1].history
        if message.role == "tool"
    ]
    assert "User feedback: name the files" in said[-2]
    assert 'Selected approach: "Safe (Recommended)"' in said[-1]
    assert said[-1].endswith("## Approved Plan:\n# Plan\n\n1. Safe: rewrite it, with tests\n")
    assert plan_file.read_text() == "# Plan\n\n1. Safe: rewrite it, with tests\n"
    assert mode == "auto-edit"


def test_the_plan_dialog(snap_compare: Any) -> None:
    """The dialog at 80x24: the plan as Markdown ([b] stays text), the choices, the keys."""
    ask = PlanAsk(
        file_path="/home/me/.kode-tui/plans/plan-1a2b3c4d.md",
        options=[PlanApproach(label="Fast"), PlanApproach(label="Safe (Recommended)")],
        modes=["ask", "auto-edit", "yolo"],
        mode="auto-edit",
    )
    app = Host(screen=PlanReview(PLAN, ask), css_path=APP_CSS)

    async def run_before(pilot: Pilot[Any]) -> None:
        await pilot.pause()

    assert snap_compare(app, run_before=run_before, terminal_size=(80, 24))


async def test_esc_while_editing_the_plan_goes_back_to_reading_it_with_the_edit_kept() -> None:
    """Esc in the editor ends the editing, as in the compaction review: it does not close the
    dialog (the edit would be lost, `d` opens the plan as the model wrote it)."""
    ask = PlanAsk(file_path="/tmp/plan.md", modes=["ask", "auto-edit"], mode="ask")
    app = Host(screen=PlanReview(PLAN, ask), css_path=APP_CSS)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PlanReview))
        dialog = app.screen
        assert isinstance(dialog, PlanReview)
        await pilot.press("ctrl+e")
        editor = dialog.query_one(TextArea)
        await wait_for(pilot, lambda: editor.has_focus)
        editor.text = "# Plan\n\n1. Only the safe way\n"
        await pilot.press("escape")
        await wait_for(pilot, lambda: not dialog.editing)
        assert app.screen is dialog and app.results == []
        assert dialog.verdict("approve").plan == "# Plan\n\n1. Only the safe way\n"
        await pilot.press("escape")  # reading: Esc goes back to the panel
        await wait_for(pilot, lambda: app.results == [None])


async def test_a_plan_edited_then_left_with_esc_opens_again_with_the_edit() -> None:
    """Esc from the dialog back to the panel keeps the edit: `d` opens the plan as edited,
    and approving it from the panel (`y`) sends the edit, not the model's plan."""
    from tests.ui.test_approval import ApprovalHost

    bus = WireBus()
    app = ApprovalHost(bus)
    ask = PlanAsk(file_path="/tmp/plan.md", modes=["ask", "auto-edit"], mode="ask")
    request = ApprovalRequest(
        id="p1",
        tool_call_id="call-p1",
        action="exit plan mode",
        description=PLAN,
        tool_name="ExitPlanMode",
        plan=ask,
    )
    edit = "# Plan\n\n1. Only the safe way\n"
    async with app.run_test(size=(80, 24)) as pilot:
        bus.send(request)
        await wait_for(pilot, lambda: isinstance(app.screen, PlanReview))
        await pilot.press("ctrl+e")
        app.screen.query_one(TextArea).text = edit
        await pilot.press("escape", "escape")  # to reading, then back to the panel
        panel = app.query_one(ApprovalPanel)
        await wait_for(pilot, lambda: not isinstance(app.screen, PlanReview))
        assert panel.current is request
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanReview))
        assert app.screen.query_one(TextArea).text == edit
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PlanReview))
        await pilot.press("y")
        verdict = await asyncio.wait_for(request.wait(), 30)
        assert isinstance(verdict, PlanVerdict) and verdict.plan == edit
        assert verdict.choice == "approve"
