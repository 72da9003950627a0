"""/fork, F on a History row and /search, as a user does them in the app."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from kode_tui.session import Context, Session
from kode_tui.session.state import load_state
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.screens.search import SearchScreen
from kode_tui.ui.screens.sessions import SessionPicker
from kode_tui.ui.screens.timetravel import PreviewScreen
from kode_tui.ui.widgets.history import HistoryPane
from tests.session_helpers import write_turns
from tests.ui_helpers import make_app, ready, screen_text, send, turn_running, wait_for

SCRIPT = [{"text": "Hello there."}, {"text": "The zebra has stripes."}]


async def two_turns(pilot: Pilot[Any]) -> str:
    """Two turns ("hello", "tell me about zebras"); the session's id."""
    app = pilot.app
    await ready(pilot)
    for text in ("hello", "tell me about zebras"):
        await send(pilot, text)
        await wait_for(pilot, lambda: not turn_running(app))
    assert app.session is not None
    return str(app.session.id)


def switched(app: Any, old_id: str) -> bool:
    session = app.session
    return (
        session is not None
        and session.id != old_id
        and app._attached()
        and (app.agent_session is not None and app.agent_session.started)
    )


async def test_fork_n_opens_a_new_session_holding_the_talk_before_checkpoint_n(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path, ScriptedProvider(SCRIPT))
    async with app.run_test(size=(140, 40)) as pilot:
        source_id = await two_turns(pilot)
        source_file = app.session.context_file
        await send(pilot, "/fork 2")
        await wait_for(pilot, lambda: switched(app, source_id))
        await wait_for(pilot, lambda: "forked from" in screen_text(app))
        text = screen_text(app)
        assert "hello" in text and "Hello there." in text
        assert "zebras" not in text
        assert f"⑂ forked from {source_id[:8]} before checkpoint 2" in text
        forked = app.session
        origin = load_state(forked.state_file).forked_from
        assert origin is not None and (origin.session, origin.checkpoint) == (source_id, 2)
        # The source is untouched, and the picker shows where the fork came from.
        assert b"zebras" in source_file.read_bytes()
        await send(pilot, "/sessions")
        await wait_for(pilot, lambda: isinstance(app.screen, SessionPicker))
        await wait_for(pilot, lambda: "(fork)" in screen_text(app))
        assert f"⑂ forked from {source_id[:8]} before checkpoint 2" in screen_text(app)


async def test_search_opens_a_rotated_match_in_its_preview_and_f_on_its_history_row_forks_it(
    tmp_path: Path,
) -> None:
    """/search lists the matches and Enter opens a rotated one in its preview; back on the
    main screen, F on that context's History row forks it."""
    app = make_app(tmp_path, ScriptedProvider(SCRIPT))
    async with app.run_test(size=(140, 40)) as pilot:
        source_id = await two_turns(pilot)
        await send(pilot, "/clear")
        history = app.screen.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(history.paths) == 1)
        await send(pilot, "/search ZEBRA")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        text = screen_text(app)
        assert "2 messages" in text
        assert f"● {source_id[:8]}  context_1.jsonl  #2  user: tell me about zebras" in text
        assert "assistant: The zebra has stripes." in text
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PreviewScreen))
        assert "tell me about zebras" in screen_text(app)

        while not app._attached():  # the preview (and the search under it, if any) closed
            await pilot.press("escape")
            await pilot.pause()
        history = app.screen.query_one(HistoryPane)
        history.focus()
        await pilot.press("F")
        await wait_for(pilot, lambda: switched(app, source_id))
        await wait_for(pilot, lambda: "zebras" in screen_text(app))
        origin = load_state(app.session.state_file).forked_from
        assert origin is not None
        assert (origin.session, origin.file, origin.checkpoint) == (
            source_id,
            "context_1.jsonl",
            None,
        )
        assert f"⑂ forked from {source_id[:8]} context_1.jsonl" in screen_text(app)


async def test_search_says_no_match_and_search_all_finds_another_work_dirs_session(
    tmp_path: Path,
) -> None:
    """A search with no match says so in a notice; --all finds a session of another work
    dir, and Enter opens it."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = await Session.create(elsewhere)
    async with Context(other.context_file) as context:
        await write_turns(context, 1)
    app = make_app(tmp_path, ScriptedProvider(SCRIPT))
    async with app.run_test(size=(140, 40)) as pilot:
        source_id = await two_turns(pilot)
        await send(pilot, "/search giraffe")
        await wait_for(pilot, lambda: any("giraffe" in str(n.message) for n in app._notifications))
        assert not isinstance(app.screen, SearchScreen)
        await send(pilot, "/search turn 0")
        await wait_for(pilot, lambda: any("turn 0" in str(n.message) for n in app._notifications))
        await send(pilot, "/search --all turn 0")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        # Another session's row names it by its title after its id.
        row = re.compile(rf"{other.id[:8]}  \S.*  context.jsonl  #0  user: turn 0")
        await wait_for(pilot, lambda: row.search(screen_text(app)) is not None)
        assert f"● {other.id[:8]}" not in screen_text(app)  # not this session's
        await pilot.press("enter")
        await wait_for(pilot, lambda: switched(app, source_id))
        assert app.session.id == other.id


async def test_enter_on_a_match_opens_the_preview_at_that_message_not_at_the_end(
    tmp_path: Path,
) -> None:
    from tests.session_helpers import session_with_turns

    project, session = await session_with_turns(tmp_path, 60)
    app = make_app(project, ScriptedProvider([]), session=session)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "/clear")  # the 60 turns go to context_1.jsonl
        history = app.screen.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(history.paths) == 1)
        await send(pilot, "/search turn 7")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PreviewScreen))
        await pilot.pause()
        text = screen_text(app)
        # The match is on screen, near the top; the end of the 60 turns is not.
        assert "turn 7" in text
        assert "turn 59" not in text
