"""Reverting from the timeline and restoring from the History pane, as a user does it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.screens.timetravel import PreviewScreen, RestoreDialog, RevertDialog
from kode_tui.ui.widgets.history import HistoryPane
from kode_tui.ui.widgets.prompt import PromptInput
from kode_tui.ui.widgets.timeline import CheckpointTimeline
from tests.ui_helpers import (
    make_app,
    ready,
    screen_text,
    send,
    static_text,
    turn_running,
    wait_for,
)


def write(path: str, content: str) -> dict[str, object]:
    return {"name": "WriteFile", "arguments": {"path": path, "content": content}}


SCRIPT = [
    {"text": "Hello."},
    {"tool_calls": [write("a.txt", "agent a\n")]},
    {"text": "Wrote a."},
    {"tool_calls": [write("b.txt", "agent b\n")]},
    {"text": "Wrote b."},
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("original a\n")
    return project


async def three_turns(pilot: Pilot[Any]) -> None:
    app = pilot.app
    await ready(pilot)
    for text in ("hello", "write a", "write b"):
        await send(pilot, text)
        await wait_for(pilot, lambda: not turn_running(app))


async def open_revert(pilot: Pilot[Any], checkpoint_id: int) -> None:
    timeline = pilot.app.screen.query_one(CheckpointTimeline)
    timeline.focus()
    timeline.highlighted = timeline.checkpoint_ids.index(checkpoint_id)
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, RevertDialog))


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_d_shows_what_changed_escape_cancels_a_revert_and_f_reverts_the_files(
    project: Path,
) -> None:
    """One session of three turns: `d` on a checkpoint and /diff show what changed since,
    Esc leaves a revert undone, then `f` reverts the conversation and the files."""
    from kode_tui.ui.screens.compare import CompareScreen

    app = make_app(project, ScriptedProvider(SCRIPT), yolo=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await three_turns(pilot)
        assert (project / "a.txt").read_text() == "agent a\n"

        # `d` on a checkpoint shows what changed since, and so does /diff.
        timeline = app.screen.query_one(CheckpointTimeline)
        timeline.focus()
        timeline.highlighted = timeline.checkpoint_ids.index(2)
        await pilot.press("d")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        text = screen_text(app)
        assert "a.txt" in text and "+agent a" in text and "-original a" in text
        assert "b.txt" in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, CompareScreen))
        await send(pilot, "/diff 2 5")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        assert "a.txt" in screen_text(app) and "b.txt" not in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, CompareScreen))

        # Escape cancels a revert.
        await open_revert(pilot, 1)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, RevertDialog))
        assert app.session is not None
        assert not (app.session.dir / "context_1.jsonl").exists()

        # `f` reverts the conversation and the files.
        await open_revert(pilot, 1)
        assert "a.txt" in screen_text(app) and "b.txt" in screen_text(app)
        await pilot.press("f")
        await wait_for(pilot, lambda: not isinstance(app.screen, RevertDialog))
        history = app.screen.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(history.paths) == 1)

    assert (project / "a.txt").read_text() == "original a\n"
    assert not (project / "b.txt").exists()
    session = app.session
    assert session is not None
    live = lines(session.context_file)
    assert [r["id"] for r in live if r["role"] == "_checkpoint"] == [0]
    assert [r["content"] for r in live if r["role"] == "user"][-1] == "hello"
    rotated = session.dir / "context_1.jsonl"
    assert '"write b"' in rotated.read_text()
    note = json.loads((session.dir / "rotations.jsonl").read_text().splitlines()[-1])
    assert note["reason"] == "revert"


async def test_a_user_change_is_a_conflict_and_is_left_alone(project: Path) -> None:
    app = make_app(project, ScriptedProvider(SCRIPT), yolo=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await three_turns(pilot)
        (project / "a.txt").write_text("mine now\n")
        await open_revert(pilot, 1)
        assert "conflict" in screen_text(app)
        from kode_tui.ui.screens.diff import DiffScreen

        await pilot.press("d")  # the conflict: the agent's version against the file now
        await wait_for(pilot, lambda: isinstance(app.screen, DiffScreen))
        assert "-agent a" in screen_text(app) and "+mine now" in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RevertDialog))
        await pilot.press("f")
        await wait_for(pilot, lambda: not isinstance(app.screen, RevertDialog))
        await wait_for(pilot, lambda: not (project / "b.txt").exists())
    assert (project / "a.txt").read_text() == "mine now\n"
    assert not (project / "b.txt").exists()


async def test_p_in_a_preview_copies_its_messages_and_r_restores_from_the_history_pane(
    project: Path,
) -> None:
    """`p` in the preview of a rotated context copies its own messages into the prompt; a
    second preview of it, and its comparison, then restore it with `r`."""
    app = make_app(project, ScriptedProvider(SCRIPT), yolo=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await three_turns(pilot)
        await open_revert(pilot, 2)
        await pilot.press("c")
        history = app.screen.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(history.paths) == 1)

        app.screen.query_one(PromptInput).text = ""
        await send(pilot, "/restore 1")
        await wait_for(pilot, lambda: isinstance(app.screen, PreviewScreen))
        await pilot.press("p")
        await wait_for(pilot, lambda: not isinstance(app.screen, PreviewScreen))
        text = app.screen.query_one(PromptInput).text
        assert text.startswith("From an earlier context:")
        assert "user: write b" in text and "assistant: Wrote b." in text
        assert "CHECKPOINT" not in text

        await send(pilot, "/restore 1")
        await wait_for(pilot, lambda: isinstance(app.screen, PreviewScreen))
        assert "write b" in screen_text(app)
        from kode_tui.ui.screens.compare import CompareScreen

        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        assert "write b" in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, PreviewScreen))
        await pilot.press("r")
        await pilot.press("y")
        await wait_for(pilot, lambda: not isinstance(app.screen, PreviewScreen))
        await wait_for(pilot, lambda: len(history.paths) == 2)
        # The live context continues context_1 again; context_2 is the branch left behind
        # (on screen once the rows are drawn).
        await wait_for(
            pilot,
            lambda: all(s in screen_text(app) for s in ("Wrote b.", "● context_1", "○ context_2")),
        )
        # A later rotation continues context_1's line, not context_2's: the pane says so.
        opened = app.agent_session
        assert opened is not None
        await opened.travel.revert(opened.travel.timeline().checkpoints[-1].id)
        await wait_for(pilot, lambda: len(history.paths) == 3)
        await wait_for(
            pilot, lambda: all(s in screen_text(app) for s in ("from context_1", "● context_3"))
        )
    assert app.session is not None
    assert '"write b"' in app.session.context_file.read_text()


async def test_a_dmail_shows_its_jump_on_the_timeline(project: Path) -> None:
    from kode_tui.wire import events as ev

    provider = ScriptedProvider(
        [
            {"tool_calls": [{"name": "ReadFile", "arguments": {"path": "a.txt"}}]},
            {
                "tool_calls": [
                    {
                        "name": "SendDMail",
                        "arguments": {"checkpoint_id": 1, "message": "a.txt says original a"},
                    }
                ]
            },
            {"text": "It says original a."},
        ]
    )
    app = make_app(project, provider, yolo=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        reverted: list[ev.ContextReverted] = []
        assert app.agent_session is not None
        app.agent_session.bus.subscribe(ev.ContextReverted, callback=reverted.append)
        await send(pilot, "what does a.txt say?")
        await wait_for(pilot, lambda: not turn_running(app) and len(provider.requests) == 3)
        await wait_for(pilot, lambda: "D-Mail ↩ from 2" in screen_text(app))
        assert [r.reason for r in reverted] == ["dmail"]
        history = app.screen.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(history.paths) == 1)
        assert "dmail" in screen_text(app)


async def restore_after_a_revert_with_files(pilot: Pilot[Any], project: Path) -> None:
    """Three turns, a revert with files to before "write b" (b.txt goes), then `r` on the
    preview of the rotated context: the restore dialog."""
    app = pilot.app
    await three_turns(pilot)
    await open_revert(pilot, 2)
    await pilot.press("f")
    await wait_for(pilot, lambda: not (project / "b.txt").exists())
    await send(pilot, "/restore 1")
    await wait_for(pilot, lambda: isinstance(app.screen, PreviewScreen))
    await pilot.press("r")
    await wait_for(pilot, lambda: isinstance(app.screen, RestoreDialog))


async def test_restoring_a_context_offers_its_files_as_a_revert_does(project: Path) -> None:
    """After a revert with files, restoring the rotated context brings the conversation and,
    with `f`, the files it says were edited: the same plan and dialog as a revert."""
    app = make_app(project, ScriptedProvider(SCRIPT), yolo=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await restore_after_a_revert_with_files(pilot, project)
        assert "b.txt" in screen_text(app) and "restore" in screen_text(app)
        await pilot.press("f")
        await wait_for(pilot, lambda: (project / "b.txt").exists())
        await wait_for(pilot, lambda: "Wrote b." in screen_text(app))
    assert (project / "b.txt").read_text() == "agent b\n"
    assert (project / "a.txt").read_text() == "agent a\n"


async def test_restoring_the_conversation_only_leaves_the_files(project: Path) -> None:
    app = make_app(project, ScriptedProvider(SCRIPT), yolo=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await restore_after_a_revert_with_files(pilot, project)
        await pilot.press("c")
        await wait_for(pilot, lambda: "Wrote b." in screen_text(app))
    assert not (project / "b.txt").exists()


async def test_c_reverts_the_conversation_only_refills_the_prompt_and_focus_returns_to_it(
    project: Path,
) -> None:
    """`c` reverts the conversation only and puts its message back in the prompt, which has
    the focus again; so it has after a restore."""
    app = make_app(project, ScriptedProvider(SCRIPT), yolo=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await three_turns(pilot)
        prompt = app.screen.query_one(PromptInput)
        # The checkpoint before "write a", from the timeline, which has the focus.
        await open_revert(pilot, 2)
        await pilot.press("c")
        await wait_for(pilot, lambda: prompt.text == "write a")
        assert (project / "a.txt").read_text() == "agent a\n"
        assert (project / "b.txt").read_text() == "agent b\n"
        await pilot.pause()
        assert app.focused is prompt
        # A restore chosen from the History pane, with the keyboard.
        history = app.screen.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(history.paths) == 1)
        history.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PreviewScreen))
        await pilot.press("r")
        await pilot.press("y")
        await wait_for(pilot, lambda: len(history.paths) == 2)
        await pilot.pause()
        assert app.focused is prompt
    assert (project / "a.txt").read_text() == "agent a\n"
    assert (project / "b.txt").read_text() == "agent b\n"


async def test_f_undoes_what_a_bang_command_did_to_the_files(project: Path) -> None:
    app = make_app(project, ScriptedProvider([]), yolo=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "!echo made > made.txt && echo changed > a.txt")
        await wait_for(pilot, lambda: not turn_running(app))
        timeline = app.screen.query_one(CheckpointTimeline)
        await wait_for(pilot, lambda: bool(timeline.checkpoint_ids))
        await open_revert(pilot, timeline.checkpoint_ids[-1])
        text = screen_text(app)
        assert "made.txt" in text and "a.txt" in text
        await pilot.press("f")
        await wait_for(pilot, lambda: not isinstance(app.screen, RevertDialog))

    assert not (project / "made.txt").exists()
    assert (project / "a.txt").read_text() == "original a\n"


async def test_ctrl_t_approves_a_waiting_edit_and_esc_esc_rewinds_anyway_keeping_a_hand_edit(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl+T to auto-edit approves the edit waiting; Esc once on the empty prompt shows a
    hint, twice opens your messages newest first (✎: its turn changed files); Enter asks how
    to revert, Esc there comes back to the list; `a` puts back a file changed by hand anyway,
    and the message leaves, with its text back in the prompt."""
    from textual.widgets import OptionList

    from kode_tui.ui import travel
    from kode_tui.ui.screens.rewind import RewindPicker
    from kode_tui.ui.widgets.approval import ApprovalPanel
    from kode_tui.ui.widgets.timeline import USER_MARK

    monkeypatch.setattr(travel, "ESC_AGAIN_S", 3600.0)  # the two presses: never too slow
    script = [{"tool_calls": [write("a.txt", "agent a\n")]}, {"text": "Wrote a."}, {"text": "Hi."}]
    app = make_app(project, ScriptedProvider(script))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await send(pilot, "write a")
        panel = app.screen.query_one(ApprovalPanel)
        await wait_for(pilot, lambda: panel.current is not None)
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: not turn_running(app))
        assert (project / "a.txt").read_text() == "agent a\n"
        await send(pilot, "hello")
        await wait_for(pilot, lambda: not turn_running(app))
        (project / "a.txt").write_text("mine\n")

        prompt = app.screen.query_one(PromptInput)
        prompt.focus()
        await pilot.press("escape")
        assert prompt.border_subtitle == travel.REWIND_HINT
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RewindPicker))
        listed = app.screen.query_one(OptionList)
        rows = [str(listed.get_option_at_index(n).prompt) for n in range(listed.option_count)]
        assert [row.split(f"{USER_MARK} ")[-1] for row in rows] == ["hello", "write a"]
        assert "✎" not in rows[0] and "✎" in rows[1]
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RevertDialog))
        await pilot.press("escape")  # back to the list, at the same message
        await wait_for(pilot, lambda: isinstance(app.screen, RewindPicker))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RevertDialog))
        assert "⚠ conflict a.txt" in screen_text(app)
        assert "what they hold now is kept in context_1.jsonl" in static_text(app)
        await pilot.press("a")
        await wait_for(pilot, lambda: prompt.text == "write a")
        said = [n.message for n in app._notifications]
    assert (project / "a.txt").read_text() == "original a\n"
    assert any("changed by hand in a.txt is kept in context_1.jsonl" in s for s in said)
    assert app.session is not None
    assert '"mine\\n"' not in (app.session.dir / "context_1.jsonl").read_text()  # only its hash
    assert b"mine\n" in [blob.read_bytes() for blob in (app.session.dir / "blobs").iterdir()]
