"""Pins in the TUI: `/pin`, `p` on a conversation block, the `/pins` screen, and what the
model is sent, counted and keeps after `/compact`."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList, Static, TextArea

from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.screens.compaction import CompactionReview
from kode_tui.ui.screens.dialogs import ContextScreen
from kode_tui.ui.screens.pins import PinsScreen
from kode_tui.ui.widgets.conversation import Conversation
from tests.ui_helpers import make_app, ready, screen_text, send, turn_running, wait_for


def rotated(session_dir: Path) -> bool:
    return any(session_dir.glob("context_*.jsonl"))


def pins_of(app: object) -> list[str]:
    opened = app.agent_session  # type: ignore[attr-defined]
    assert opened is not None
    return list(opened.pins.texts())


async def test_slash_pin_goes_after_the_project_context_and_survives_compact(
    project: Path,
) -> None:
    provider = ScriptedProvider([{"text": "One."}, {"text": "We said hello."}, {"text": "Two."}])
    app = make_app(project, provider)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot)
        await send(pilot, "/pin Answer in French.")
        await wait_for(pilot, lambda: pins_of(app) == ["Answer in French."])
        notes = [note.message for note in app._notifications]
        assert "Pinned (1 in all, /pins): Answer in French." in notes

        await send(pilot, "hello")
        await wait_for(pilot, lambda: len(provider.requests) == 1 and not turn_running(app))
        await send(pilot, "/compact")
        await wait_for(pilot, lambda: isinstance(app.screen, CompactionReview))
        # The review names the pin among what is kept: it is sent whatever is compacted.
        kept = str(app.screen.query_one("#review-kept-title", Static).render())
        assert "+ 1 pin ·" in kept
        await pilot.press("ctrl+s")  # accepted as the model wrote it
        await wait_for(pilot, lambda: not isinstance(app.screen, CompactionReview))
        await wait_for(pilot, lambda: app.session is not None and rotated(app.session.dir))
        await send(pilot, "again")
        await wait_for(pilot, lambda: len(provider.requests) == 3 and not turn_running(app))

    for request in (provider.requests[0], provider.requests[2]):
        prompt = request.system_prompt or ""
        # Last, after the project context: the cached prefix holds when a pin changes.
        assert prompt.index('<context name="directoryStructure">') < prompt.index(
            '<context name="pinned">'
        )
        assert prompt.endswith("1. Answer in French.</context>")


async def test_p_pins_the_message_under_the_block_cursor(project: Path) -> None:
    provider = ScriptedProvider([{"text": "The build uses **make**."}])
    app = make_app(project, provider)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot)
        await send(pilot, "How is it built?")
        await wait_for(pilot, lambda: len(provider.requests) == 1 and not turn_running(app))
        app.screen.query_one(Conversation).focus()
        await pilot.press("alt+up", "p")
        await wait_for(pilot, lambda: pins_of(app) == ["The build uses **make**."])
        await pilot.press("alt+up", "alt+up", "p")  # over the turn's reminders, to the message
        await wait_for(pilot, lambda: len(pins_of(app)) == 2)
        assert pins_of(app)[1] == "How is it built?"


async def test_the_pins_screen_edits_and_unpins_and_the_gauge_and_context_count_them(
    project: Path,
) -> None:
    app = make_app(project, ScriptedProvider([]))
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot)
        opened = app.agent_session
        assert opened is not None
        await opened.pins.add("first note")
        await opened.pins.add("second note")
        await send(pilot, "/context")
        await wait_for(pilot, lambda: isinstance(app.screen, ContextScreen))
        assert "pinned notes (2)" in screen_text(app)
        report = await opened.context_report()
        status = opened.status()
        assert report is not None and status is not None
        assert sum(row.tokens for row in report.rows) == report.context_tokens
        assert status.context_tokens == report.context_tokens
        await pilot.press("escape")

        await send(pilot, "/pins")
        await wait_for(pilot, lambda: isinstance(app.screen, PinsScreen))
        assert "1. first note" in screen_text(app) and "2. second note" in screen_text(app)
        await pilot.press("down", "e")
        editor = app.screen.query_one(TextArea)
        await wait_for(pilot, lambda: editor.has_focus and editor.text == "second note")
        await pilot.press(",", "space", "e", "d", "i", "t", "e", "d")  # typed at its end
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: pins_of(app) == ["first note", "second note, edited"])
        await wait_for(pilot, lambda: app.screen.query_one(OptionList).has_focus)

        before = opened.status()
        await pilot.press("up", "d")
        await wait_for(pilot, lambda: pins_of(app) == ["second note, edited"])
        after = opened.status()
        assert before is not None and after is not None
        assert after.context_tokens < before.context_tokens
        assert "1. second note, edited" in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PinsScreen))
