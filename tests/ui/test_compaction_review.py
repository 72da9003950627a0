"""The compaction review screen (issue 17): `/compact` shows the plan before anything changes,
the edited summary is applied with ctrl+s, Esc changes nothing, switching the strategy works
the plan out again, and with `[compaction] review = true` an automatic compaction waits for it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.containers import Vertical
from textual.pilot import Pilot
from textual.widgets import Select, TextArea

from kode_tui.config import CompactionConfig, Config
from kode_tui.message import Message
from kode_tui.soul.compacting import CompactionPlan
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.screens.compaction import CompactionReview
from kode_tui.ui.widgets.history import HistoryPane
from tests.session_helpers import session_with_turns
from tests.ui_helpers import Host, make_app, ready, screen_text, send, turn_running, wait_for


def context_files(session_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in session_dir.glob("*.jsonl")}


async def review_open(pilot: Pilot[Any]) -> CompactionReview:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, CompactionReview))
    screen = pilot.app.screen
    assert isinstance(screen, CompactionReview)
    await pilot.pause()
    return screen


def auto_review_app(tmp_path: Path, *later: dict[str, Any]) -> tuple[Any, ScriptedProvider]:
    """An app whose second message crosses the compaction trigger, with review on; the model
    answers "one.", then "AUTO SUMMARY", then `later`."""
    provider = ScriptedProvider(
        [{"text": "one.", "usage": {"input": 900, "output": 50}}, {"text": "AUTO SUMMARY"}, *later],
        max_context_size=1_000,
    )
    return make_app(tmp_path, provider, Config(compaction=CompactionConfig(review=True))), provider


async def to_auto_review(pilot: Pilot[Any], provider: ScriptedProvider) -> CompactionReview:
    """Send "first", then "second", whose turn opens the review of an automatic compaction."""
    app = pilot.app
    await ready(pilot)
    await send(pilot, "first")
    await wait_for(pilot, lambda: not turn_running(app) and len(provider.requests) == 1)
    await send(pilot, "second")
    return await review_open(pilot)


async def test_compact_shows_the_review_and_ctrl_s_applies_the_edited_summary(
    tmp_path: Path,
) -> None:
    project, session = await session_with_turns(tmp_path, 4)
    provider = ScriptedProvider([{"text": "THE MODEL'S SUMMARY"}])
    app = make_app(project, provider, session=session)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "/compact keep the file names")
        screen = await review_open(pilot)
        text = screen_text(app)
        assert "Review the compaction" in text and "→" in text and "LLMSummary" in text
        editor = screen.query_one(TextArea)
        assert editor.text == "THE MODEL'S SUMMARY"
        editor.text = "THE USER'S SUMMARY"
        await pilot.pause()
        assert "summary edited" in screen_text(app)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: (session.dir / "context_1.jsonl").exists())
        assert not isinstance(app.screen, CompactionReview)
        pane = app.screen.query_one(HistoryPane)
        await wait_for(
            pilot,
            lambda: (
                pane.option_count > 0
                and "summary edited" in str(pane.get_option_at_index(0).prompt)
            ),
        )
        live = (session.dir / "context.jsonl").read_text()
        assert "THE USER'S SUMMARY" in live and "THE MODEL'S SUMMARY" not in live
        assert "keep the file names" in json.dumps(
            [m.model_dump(mode="json") for m in provider.requests[0].history]
        )


async def test_at_80x24_the_review_keeps_its_buttons_and_keys_on_screen(tmp_path: Path) -> None:
    project, session = await session_with_turns(tmp_path, 4)
    provider = ScriptedProvider([{"text": "A SUMMARY\n" * 30}])
    app = make_app(project, provider, session=session)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await send(pilot, "/compact")
        screen = await review_open(pilot)
        await pilot.pause()
        accept = screen.query_one("#review-accept")
        assert 0 < accept.region.bottom <= 24 and accept.region.height > 0
        keys = screen.query_one(".dialog-keys")
        dialog = screen.query_one(Vertical)
        # Inside the dialog's frame, not clipped by it.
        assert keys.region.height == 1 and keys.region.bottom <= dialog.region.bottom
        assert accept.region.bottom <= dialog.region.bottom


async def test_esc_on_the_review_changes_nothing(tmp_path: Path) -> None:
    project, session = await session_with_turns(tmp_path, 4)
    app = make_app(project, ScriptedProvider([{"text": "SUMMARY"}]), session=session)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        before = context_files(session.dir)
        await send(pilot, "/compact")
        await review_open(pilot)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, CompactionReview))
        await pilot.pause()
        assert context_files(session.dir) == before
        assert not (session.dir / "context_1.jsonl").exists()


async def test_switching_the_strategy_works_the_plan_out_again(tmp_path: Path) -> None:
    project, session = await session_with_turns(tmp_path, 8)
    app = make_app(project, ScriptedProvider([{"text": "SUMMARY"}]), session=session)
    async with app.run_test(size=(120, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "/compact")
        screen = await review_open(pilot)
        assert screen.plan.summary == "SUMMARY"
        screen.query_one(Select).value = "ToolResultHidingCompaction"
        await wait_for(pilot, lambda: screen.plan.strategy == "ToolResultHidingCompaction")
        await pilot.pause()
        assert screen.plan.summary is None
        assert screen.query_one(TextArea).read_only
        assert "tool results replaced" in screen_text(app)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: (session.dir / "context_1.jsonl").exists())
        notes = [json.loads(line) for line in (session.dir / "rotations.jsonl").open()]
        assert notes[-1]["strategy"] == "ToolResultHidingCompaction"
        assert "edited" not in notes[-1]


async def test_with_review_on_an_automatic_compaction_waits_for_the_screen(
    tmp_path: Path,
) -> None:
    app, provider = auto_review_app(tmp_path, {"text": "two."})
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await to_auto_review(pilot, provider)
        assert turn_running(app)  # the turn waits for the decision
        assert len(provider.requests) == 2
        screen.query_one(TextArea).text = "REVIEWED SUMMARY"
        await pilot.click("#review-accept")
        await wait_for(pilot, lambda: len(provider.requests) == 3 and not turn_running(app))
        sent = json.dumps([m.model_dump(mode="json") for m in provider.requests[2].history])
        assert "REVIEWED SUMMARY" in sent and "AUTO SUMMARY" not in sent


async def test_a_cancelled_automatic_review_lets_the_turn_go_on(tmp_path: Path) -> None:
    app, provider = auto_review_app(tmp_path, {"text": "two."})
    async with app.run_test(size=(120, 40)) as pilot:
        await to_auto_review(pilot, provider)
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(provider.requests) == 3 and not turn_running(app))
        assert any("Not compacted" in str(n.message) for n in app._notifications)
        sent = [m.text for m in provider.requests[2].history]
        assert "first" in sent and "one." in sent
        assert app.agent_session is not None and app.agent_session.travel.rotations() == []


def sample_plan() -> CompactionPlan:
    kept = (
        Message(role="user", content="Add a --name flag to the greeter"),
        Message(role="assistant", content="Done: hello.py takes --name now."),
    )
    summary = (
        "## Current focus\nThe greeter's command line.\n\n"
        "## Decisions\n- argparse, no click\n- tests in tests/test_hello.py"
    )
    head = Message(role="user", content=summary)
    return CompactionPlan(
        strategy="LLMSummaryCompaction",
        strategies=(
            "LLMSummaryCompaction",
            "ToolResultHidingCompaction",
            "HidingThenSummaryCompaction",
        ),
        instruction=None,
        tokens_before=48_200,
        tokens_after=3_100,
        kept=kept,
        hidden=37,
        summary=summary,
        messages=(head, *kept),
        source=(),
    )


def test_the_compaction_review_screen(snap_compare: Any) -> None:
    async def replan(strategy: str) -> CompactionPlan | None:
        return None

    async def run_before(pilot: Pilot[Any]) -> None:
        await pilot.pause()

    app = Host(
        screen=CompactionReview(sample_plan(), replan),
        css_path=Path(__file__).parents[2] / "kode_tui" / "ui" / "app.tcss",
    )
    assert snap_compare(app, run_before=run_before, terminal_size=(110, 40))


async def test_interrupting_the_turn_closes_its_review_and_changes_nothing(
    tmp_path: Path,
) -> None:
    app, provider = auto_review_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await to_auto_review(pilot, provider)
        opened = app.agent_session
        assert opened is not None and opened.interrupt()
        await wait_for(pilot, lambda: not isinstance(app.screen, CompactionReview))
        await wait_for(pilot, lambda: not turn_running(app))
        assert opened.travel.rotations() == []
