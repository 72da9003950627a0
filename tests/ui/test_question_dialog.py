"""AskUserQuestion's dialog at 80x24: a long question with long options still shows every
choice, the typed answer's input and the keys line inside its frame
(kode_tui/ui/screens/question.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.containers import Vertical
from textual.geometry import Region
from textual.widgets import Input, OptionList, Static

from kode_tui.ui.screens.question import QuestionScreen
from kode_tui.wire.events import QuestionItem, QuestionOption, QuestionRequest
from tests.ui.test_approval import asking
from tests.ui_helpers import Host, wait_for

APP_CSS = Path(__file__).parents[2] / "kode_tui" / "ui" / "app.tcss"
LONG = "Which of these approaches should I take for the storage layer's refactoring? " * 3
WHY = "a fairly long description of what this option does and why one would take it " * 2


async def test_a_long_question_keeps_every_choice_and_the_answer_input_on_screen() -> None:
    options = [QuestionOption(label=f"Option {n}", description=WHY) for n in range(1, 5)]
    short = QuestionItem(question="Go?", options=[QuestionOption(label="yes")])
    asked = QuestionRequest(
        id="q1",
        tool_call_id="call-q1",
        questions=[short, QuestionItem(question=LONG, options=options)],
    )
    app = Host(screen=QuestionScreen(asked), css_path=APP_CSS)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: asking(app))
        screen = app.screen
        listing = screen.query_one(OptionList)
        keys = screen.query_one(".dialog-keys", Static)
        await pilot.press("1")  # the short question first: the long one then fits as well
        await wait_for(
            pilot, lambda: LONG.strip() in str(screen.query_one("#question-title", Static).render())
        )

        def fits(*regions: Region) -> bool:
            frame = screen.query_one(Vertical).content_region
            return all(region.height > 0 and frame.contains_region(region) for region in regions)

        await wait_for(pilot, lambda: fits(listing.region, keys.region))  # the options scroll
        assert "Esc dismiss" in str(keys.render())
        await pilot.press("down", "down", "down", "down")  # to "Other: type an answer"
        await pilot.pause()
        assert listing.highlighted == listing.get_option_index("other")
        await pilot.press("enter")
        answer = screen.query_one(Input)
        await wait_for(pilot, lambda: answer.has_focus)
        # The options make room for the input.
        await wait_for(pilot, lambda: fits(answer.region, listing.region, keys.region))
        # Esc while typing goes back to the options; the questions are still asked.
        assert "Esc back to the options" in str(keys.render())
        await pilot.press("escape")
        await wait_for(pilot, lambda: listing.has_focus and not answer.display)
        assert app.screen is screen and app.results == []
        await pilot.press("enter")
        await wait_for(pilot, lambda: answer.has_focus)
        await pilot.press(*"tox", "enter")
        assert await asyncio.wait_for(asked.wait(), 30) == {"Go?": "yes", LONG: "tox"}


async def test_done_with_nothing_ticked_sends_nothing_as_in_kimi() -> None:
    """A question of several choices is not answered with none of them (Kimi's panel does not
    submit it either): Done waits for a tick."""
    options = [QuestionOption(label=label) for label in ("lint", "types")]
    many = QuestionItem(question="Which checks?", options=options, multi_select=True)
    asked = QuestionRequest(id="q2", tool_call_id="call-q2", questions=[many])
    app = Host(screen=QuestionScreen(asked), css_path=APP_CSS)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: asking(app))
        listing = app.screen.query_one(OptionList)
        await pilot.press("end", "enter")  # Done, nothing ticked
        await pilot.pause()
        assert app.results == [] and listing.highlighted == listing.get_option_index("done")
        await pilot.press("2", "end", "enter")
        assert await asyncio.wait_for(asked.wait(), 30) == {"Which checks?": "types"}
