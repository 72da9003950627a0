"""`/tasks` in the TUI: the background tasks live, the output masked and never markup, `s`
stops one, and the conversation says when a task ended while the session was idle."""

from __future__ import annotations

from pathlib import Path

from textual.containers import Vertical
from textual.widgets import OptionList, Static

from kode_tui import masking
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.screens.tasks import TasksScreen
from kode_tui.ui.widgets.blocks import NoticeBlock
from tests.soul_helpers import call
from tests.ui_helpers import make_app, ready, send, turn_running, wait_for

SECRET_VAR = "KODE_TEST_TASKS_VIEW_SECRET"


async def test_the_tasks_view_shows_masked_output_and_stops_a_task_with_s(project: Path) -> None:
    """At 80x24 the whole view fits: the output pane and the keys line inside the frame."""
    secret = "sk-view-" + "z9" * 12
    (project / "secret.txt").write_text(f"key {secret}\n")
    # A long command (a no-op of 80 words first) and output still leave the keys in sight.
    long = ": " + " ".join(f"word{n}" for n in range(80)) + "; seq 1 40; "
    command = long + "cat secret.txt; echo '[bold]loud[/bold]'; while true; do sleep 0.05; done"
    provider = ScriptedProvider(
        [
            {
                "tool_calls": [
                    call("Shell", command=command, run_in_background=True, description="spin")
                ]
            },
            {"text": "It runs."},
        ]
    )
    masking.register(SECRET_VAR, secret)
    try:
        app = make_app(project, provider, yolo=True)
        async with app.run_test(size=(80, 24)) as pilot:
            await ready(pilot)
            await send(pilot, "start it")
            await wait_for(pilot, lambda: provider.remaining == 0 and not turn_running(app))
            await send(pilot, "/tasks")
            await wait_for(pilot, lambda: isinstance(app.screen, TasksScreen))
            screen = app.screen
            output = screen.query_one("#tasks-output", Static)
            await wait_for(pilot, lambda: "[bold]loud[/bold]" in str(output.render()))
            shown = str(output.render())
            frame = screen.query_one(Vertical).content_region
            for part in ("#tasks-output-box", ".dialog-keys"):
                region = screen.query_one(part).region
                assert region.height > 0 and frame.contains_region(region), part
            assert f"key [masked: {SECRET_VAR}]" in shown and secret not in shown
            listing = screen.query_one(OptionList)
            assert "running  spin" in str(listing.get_option_at_index(0).prompt)

            await pilot.press("s")
            await wait_for(pilot, lambda: "killed" in str(listing.get_option_at_index(0).prompt))
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, TasksScreen))
            notes = [str(block.render()) for block in app.screen.query(NoticeBlock)]
            assert any("background task bash-" in n and "killed: spin" in n for n in notes)
    finally:
        masking.forget(SECRET_VAR)
