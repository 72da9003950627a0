"""Messages queued during a turn: shown under the prompt, taken back to edit, dropped; and the
prompt's PgUp/PgDn, which page the conversation."""

from __future__ import annotations

from pathlib import Path

from textual import events

from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.ui.widgets.prompt import PromptInput
from kode_tui.ui.widgets.queued import KEYS_HINT, STARTING_HINT, QueuedMessages, queue_rows
from tests.ui_helpers import make_app, ready, screen_text, send, turn_running, wait_for


def test_the_queue_shows_the_newest_rows_cut_to_the_width_the_last_with_its_keys() -> None:
    messages = ["one", "two", "three", "four " + "long " * 30, "five\nsecond line"]
    rows = [row.plain for row in queue_rows(messages, 60)]
    assert rows[0] == "⧗ and 3 queued before"
    assert rows[1].startswith("⧗ four long long") and rows[1].endswith("…")
    assert all(len(row) <= 60 for row in rows) and len(rows[1]) == 60
    # The newest, its first line marked as going on, ends with the keys that act on it.
    assert rows[2].startswith("⧗ five … ") and rows[2].endswith(KEYS_HINT)
    assert queue_rows([], 60) == []
    # Sent while the agent starts: the row says what it waits for.
    waiting = [row.plain for row in queue_rows(["hi"], 60, starting=True)]
    assert waiting == [f"⧗ hi{' ' * (60 - 4 - len(STARTING_HINT))}{STARTING_HINT}"]


async def test_queued_messages_stay_in_sight_to_edit_or_drop_and_pgup_pages_the_conversation(
    project: Path,
) -> None:
    long_answer = "\n\n".join(f"Paragraph {n} of a long answer." for n in range(1, 41))
    provider = ScriptedProvider(
        [{"text": long_answer, "hang": True}, {"text": "Answer to the second."}]
    )
    app = make_app(project, provider)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        prompt = app.screen.query_one(PromptInput)
        queued = app.screen.query_one(QueuedMessages)
        conversation = app.screen.query_one(Conversation)
        await send(pilot, "first")
        await wait_for(pilot, lambda: "Paragraph 40 of" in screen_text(app))

        # PgUp/PgDn typed in the prompt page the conversation; the prompt keeps the keys.
        await wait_for(pilot, lambda: conversation.scroll_y == conversation.max_scroll_y > 0)
        bottom = conversation.scroll_y
        await pilot.press("pageup")
        await wait_for(pilot, lambda: conversation.scroll_y < bottom)
        assert app.focused is prompt
        await pilot.press("pagedown")
        # Back at the end (which may have moved on by a line meanwhile: the turn runs).
        await wait_for(pilot, lambda: conversation.scroll_y == conversation.max_scroll_y)
        bottom = conversation.scroll_y
        assert app.focused is prompt
        # Two in a burst (a held key) go two pages, not one page twice from the same place.
        page = conversation.scrollable_content_region.height
        assert bottom > 2 * page
        for _ in range(2):
            app.post_message(events.Key("pageup", None))
        await wait_for(pilot, lambda: conversation.scroll_y == bottom - 2 * page)
        for _ in range(2):
            app.post_message(events.Key("pagedown", None))
        await wait_for(pilot, lambda: conversation.scroll_y == conversation.max_scroll_y)

        await send(pilot, "second")
        await send(pilot, "third")
        # Both wait in sight, under the prompt, while the turn runs.
        await wait_for(pilot, lambda: "⧗ third" in screen_text(app))
        assert "⧗ second" in screen_text(app) and KEYS_HINT in screen_text(app)
        assert queued.region.y >= prompt.region.bottom

        # ↑ on the empty prompt takes the newest back to edit; Enter queues it again.
        await pilot.press("up")
        await wait_for(pilot, lambda: prompt.text == "third")
        assert "⧗ third" not in screen_text(app)
        await pilot.press(*" edited", "enter")
        await wait_for(pilot, lambda: "⧗ third edited" in screen_text(app))

        # Ctrl+X on the empty prompt drops the newest: it is never sent.
        await pilot.press("ctrl+x")
        await wait_for(pilot, lambda: "third edited" not in screen_text(app))
        assert "⧗ second" in screen_text(app)

        # The turn ends: what is left goes, and the list empties.
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(provider.requests) == 2 and not turn_running(app))
        await wait_for(pilot, lambda: "Answer to the second." in screen_text(app))
        assert not queued.display
        assert app._queue == []
    said = [m.text for m in provider.requests[-1].history if m.role == "user"]
    assert "second" in said and not any("third" in text for text in said)
