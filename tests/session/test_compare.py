"""Comparing two points of a session: the messages between them and the files' net change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from kode_tui.message import FunctionBody, Message, ToolCall
from kode_tui.session import Context
from kode_tui.session.compare import CheckpointDiff, FileChange, diff_checkpoints, diff_snapshot
from kode_tui.session.journal import FileJournal
from kode_tui.session.timetravel import ContextSnapshot
from kode_tui.ui.screens.compare import CompareScreen
from kode_tui.ui.widgets.rows import Rows
from tests.ui_helpers import Host, static_text


def user(text: str) -> Message:
    return Message(role="user", content=text)


def assistant(text: str) -> Message:
    return Message(role="assistant", content=text)


def snapshot_of(messages: list[Message]) -> ContextSnapshot:
    return ContextSnapshot(Path("context_1.jsonl"), messages, 0, 0, None, [], 0)


async def test_diff_checkpoints_lists_the_messages_and_net_file_changes(tmp_path: Path) -> None:
    async with Context(tmp_path / "s" / "context.jsonl") as context:
        await context.restore()
        journal = FileJournal(context)
        await context.append_message(user("before"))
        first = await context.checkpoint()
        await context.append_message(user("make it new"))
        await journal.record("a.txt", b"old\n", b"mid\n", "call_1")
        await journal.record("b.txt", None, b"created\n", "call_2")
        await journal.record("a.txt", b"mid\n", b"new\n", "call_3")
        await journal.record("gone.bin", b"\xff\xfe\n", None, "call_4")
        await context.append_message(assistant("done"))
        second = await context.checkpoint()
        await context.append_message(user("after"))
        await journal.record("a.txt", b"new\n", b"later\n", "call_5")

        diff = diff_checkpoints(context, first, second, journal)
        assert [m.text for m in diff.added] == ["make it new", "done"]
        assert diff.removed == []
        assert diff.files == [
            FileChange("a.txt", "old\n", "new\n"),
            FileChange("b.txt", None, "created\n"),
            FileChange("gone.bin", "\ufffd\ufffd\n", None),
        ]
        # Given the other way round, the same range; None is "up to now".
        assert diff_checkpoints(context, second, first, journal) == diff
        to_now = diff_checkpoints(context, second, None, journal)
        assert [m.text for m in to_now.added] == ["after"]
        assert to_now.files == [FileChange("a.txt", "new\n", "later\n")]


async def test_a_blob_missing_from_the_store_is_flagged_not_taken_for_absent(
    tmp_path: Path,
) -> None:
    async with Context(tmp_path / "s" / "context.jsonl") as context:
        await context.restore()
        journal = FileJournal(context)
        start = await context.checkpoint()
        edit = await journal.record("a.txt", b"old\n", b"new\n")
        assert edit.before is not None
        (journal.blobs_dir / edit.before).unlink()
        diff = diff_checkpoints(context, start, None, journal)
        assert diff.files == [FileChange("a.txt", None, "new\n", missing=True)]


async def test_an_unknown_checkpoint_is_a_value_error(tmp_path: Path) -> None:
    async with Context(tmp_path / "s" / "context.jsonl") as context:
        await context.restore()
        await context.checkpoint()
        with pytest.raises(ValueError, match="checkpoint 7"):
            diff_checkpoints(context, 0, 7, FileJournal(context))


def test_diff_snapshot_splits_after_the_common_prefix() -> None:
    shared = [user("hello"), assistant("hi")]
    live = [*shared, user("live question"), assistant("live answer")]
    rotated = snapshot_of([*shared, user("old question")])
    diff = diff_snapshot(live, rotated)
    assert [m.text for m in diff.added] == ["live question", "live answer"]
    assert [m.text for m in diff.removed] == ["old question"]
    assert diff.files == []


# --- the screen -----------------------------------------------------------------------------------


def sample_diff() -> CheckpointDiff:
    call = ToolCall(id="call_1", function=FunctionBody(name="WriteFile", arguments="{}"))
    return CheckpointDiff(
        added=[
            user("Say hello properly\nwith details"),
            Message(role="assistant", content=None, tool_calls=[call]),
            Message(role="tool", content="Wrote greet.py", tool_call_id="call_1"),
        ],
        removed=[assistant("An older answer")],
        files=[
            FileChange(
                "greet.py",
                "def greet():\n    return 'hi'\n",
                "def greet():\n    return 'hello'\n",
            ),
            FileChange("NOTES.md", None, "new notes\n"),
        ],
    )


async def test_the_screen_shows_counts_messages_and_coloured_diffs() -> None:
    app = Host(screen=CompareScreen("Checkpoint 0 → 2", sample_diff()))
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        text = static_text(app)
        assert "Messages added (3)" in text
        assert "Messages removed (1)" in text
        assert "Say hello properly…" in text
        assert "WriteFile" in text
        assert "An older answer" in text
        assert "greet.py" in text
        assert "NOTES.md (created)" in text
        assert "-    return 'hi'" in text
        assert "+    return 'hello'" in text
        assert "+new notes" in text
        rows = app.screen.query(".diff-text").first(Static).render()
        assert isinstance(rows, Rows)  # numbered, long lines wrapped beside the numbers
        diff = rows.content(80)
        styles = {str(span.style) for span in diff.spans}
        assert any("$text-success" in style for style in styles)
        assert any("$text-error" in style for style in styles)
        await pilot.press("q")
        await pilot.pause()
        assert app.results


async def test_no_file_changes_is_said_and_escape_closes() -> None:
    app = Host(screen=CompareScreen("Checkpoint 0 → 1", CheckpointDiff([user("hi")], [], [])))
    async with app.run_test(size=(80, 20)) as pilot:
        await pilot.pause()
        text = static_text(app)
        assert "No file changes" in text
        assert "Messages removed (0)" in text
        await pilot.press("escape")
        await pilot.pause()
        assert app.results


def test_the_compare_screen(snap_compare: Any) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await pilot.pause()

    app = Host(screen=CompareScreen("Checkpoint 0 → 2", sample_diff()))
    assert snap_compare(app, run_before=run_before, terminal_size=(90, 36))


def test_checkpoint_notes_for_the_model_are_not_listed_or_counted() -> None:
    from kode_tui.message import Message, shown_messages
    from kode_tui.ui.screens.compare import messages_body

    messages = [
        Message(role="user", content="<system>CHECKPOINT 3</system>"),
        Message(role="user", content="Add a test"),
        Message(role="assistant", content="Done: CHECKPOINT notes are the model's."),
    ]
    assert [m.text for m in shown_messages(messages)] == [
        "Add a test",
        "Done: CHECKPOINT notes are the model's.",
    ]
    body = messages_body(messages).plain
    assert "CHECKPOINT 3" not in body and "Add a test" in body
    assert messages_body(messages[:1]).plain == "(none)"
