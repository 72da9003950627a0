"""The revert dialog and the preview of a rotated context, driven as a user would."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from kode_tui.message import Message
from kode_tui.session.rotation import Rotation
from kode_tui.session.timetravel import ContextSnapshot, FilePlan, compare, read_snapshot
from kode_tui.soul.facade import RestorePlan
from kode_tui.soul.timetravel import RestorePreview
from kode_tui.ui.screens.timetravel import PreviewScreen, RestoreDialog, RevertDialog
from kode_tui.ui.widgets.blocks import USER_MARK, UserBlock
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.wire.events import DiffBlock
from tests.conftest import KIMI_FIXTURE
from tests.ui_helpers import Host, screen_text, static_text

ROTATED_AT = 1_700_000_000.0
"""A fixed rotation time, so that the age on screen does not depend on the clock."""


def plan(path: str, action: Any) -> FilePlan:
    return FilePlan(path, Path("/nowhere") / path, action, "after", "before")


MIXED_FILES = [
    plan("hello.py", "restore"),
    plan("greet.py", "delete"),
    plan("README.md", "conflict"),
]


def revert_dialog(files: list[FilePlan]) -> RevertDialog:
    return RevertDialog(
        3,
        "WriteFile hello.py",
        12,
        4100,
        files,
        "Create hello.py that prints a friendly greeting to whoever runs it\nthen run it",
    )


# --- Revert dialog --------------------------------------------------------------------------------


async def test_revert_dialog_explains_what_leaves_and_what_each_file_becomes() -> None:
    app = Host(screen=revert_dialog(MIXED_FILES))
    async with app.run_test(size=(110, 36)) as pilot:
        await pilot.pause()
        text = static_text(app)
    assert "Revert to checkpoint 3: WriteFile hello.py" in text
    assert "12 messages (~4.1k tokens) leave the live context." in text
    assert "nothing is lost" in text
    assert "('Create hello.py that prints a friendly greeting to whoever…')" in text
    assert "The agent changed 3 files after this checkpoint:" in text
    assert "✔ restore  hello.py" in text
    assert "✔ delete   greet.py — the agent created it, so it will be deleted" in text
    assert (
        "⚠ conflict README.md — changed since the agent's edit: left as it is, unless restored "
        "anyway" in text
    )
    assert "revert the conversation and restore the files" in text
    assert "No files to restore" not in text


async def test_revert_dialog_lists_d_for_conflicts_and_says_created_files_are_deleted() -> None:
    conflict = DiffBlock(path="README.md", old_text="agent\n", new_text="mine\n")
    dialog = revert_dialog(MIXED_FILES)
    dialog.conflict_diffs = [conflict]
    app = Host(screen=dialog)
    async with app.run_test(size=(110, 36)) as pilot:
        await pilot.pause()
        text = static_text(app)
    keys = text[text.index("c   revert") :].splitlines()
    assert keys == [
        "c   revert the conversation only (files stay as they are)",
        "f   revert the conversation and restore the files; created ones are deleted",
        "a   restore anyway: the conflicts too; what they hold now is kept in the rotated context",
        "d   show the conflicts: the agent's version of each file against what it holds now",
        "Esc cancel",
    ]


async def test_revert_dialog_says_a_refused_file_is_left_as_it_is() -> None:
    app = Host(screen=revert_dialog([plan(".git/hooks/pre-commit", "refused")]))
    async with app.run_test(size=(110, 36)) as pilot:
        await pilot.pause()
        text = static_text(app)
    assert (
        "⚠ refused  .git/hooks/pre-commit — outside the work dir or can make tools run code: "
        "left as it is" in text
    )


@pytest.mark.parametrize(
    ("key", "expected"),
    [("c", "conversation"), ("f", "files"), ("a", "anyway"), ("escape", None)],
)
async def test_revert_dialog_keys_answer(key: str, expected: str | None) -> None:
    app = Host(screen=revert_dialog(MIXED_FILES))
    async with app.run_test() as pilot:
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
        assert app.results == [expected]
        assert not isinstance(app.screen, RevertDialog)


async def test_revert_dialog_buttons_answer_too() -> None:
    app = Host(screen=revert_dialog(MIXED_FILES))
    async with app.run_test(size=(110, 36)) as pilot:
        await pilot.pause()
        await pilot.click("#revert-with-files")
        await pilot.pause()
        assert app.results == ["files"]


@pytest.mark.parametrize(
    "files",
    [[], [plan("old.txt", "missing"), plan(".envrc", "refused")]],
    ids=["none", "none restorable"],
)
async def test_revert_dialog_offers_no_file_restore_without_restorable_files(
    files: list[FilePlan],
) -> None:
    app = Host(screen=revert_dialog(files))
    async with app.run_test(size=(110, 36)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "No files to restore" in text
        assert "restore the files" not in text
        assert not app.screen.query("#revert-with-files")
        assert not app.screen.query("#revert-anyway")
        await pilot.press("f", "a")
        await pilot.pause()
        assert app.results == []
        await pilot.press("c")
        await pilot.pause()
        assert app.results == ["conversation"]
    if files:
        assert "⚠ missing  old.txt — its earlier content was not saved" in text
    else:
        assert "The agent changed" not in text


async def test_revert_dialog_offers_to_restore_a_conflict_anyway_and_not_f_alone() -> None:
    app = Host(screen=revert_dialog([plan("README.md", "conflict")]))
    async with app.run_test(size=(110, 36)) as pilot:
        await pilot.pause()
        assert "No files to restore" not in screen_text(app)
        assert not app.screen.query("#revert-with-files")
        await pilot.press("f")
        await pilot.click("#revert-anyway")
        await pilot.pause()
        assert app.results == ["anyway"]


async def test_restore_dialog_offers_to_restore_a_conflict_anyway_in_plain_words() -> None:
    preview = RestorePreview(Path("context_2.jsonl"), 9, 4, 1, 900, 3, [plan("a.txt", "conflict")])
    app = Host(screen=RestoreDialog("context_2.jsonl", RestorePlan(preview, [], "context_5.jsonl")))
    async with app.run_test(size=(110, 36)) as pilot:
        await pilot.pause()
        text = static_text(app)
        assert "1 file differs between the two conversations:" in text
        assert (
            "restore anyway: the conflicts too; what they hold now is kept in context_5.jsonl"
            in text
        )
        await pilot.press("a")
        await pilot.pause()
        assert app.results == ["anyway"]


# --- Preview --------------------------------------------------------------------------------------


def fixture_snapshot(folder: Path) -> tuple[ContextSnapshot, list[Message]]:
    """The fixture's context_1.jsonl (read from a copy) and its live context's messages."""
    for name in ("context.jsonl", "context_1.jsonl"):
        shutil.copy(KIMI_FIXTURE / name, folder / name)
    return read_snapshot(folder / "context_1.jsonl"), read_snapshot(
        folder / "context.jsonl"
    ).messages


def compaction_rotation(path: Path) -> Rotation:
    return Rotation(
        path,
        1,
        size=1000,
        mtime=ROTATED_AT,
        reason="compaction",
        time=ROTATED_AT,
        tokens=48_000,
        info={"tokens_before": 48_000, "tokens_after": 3_000, "strategy": "LLMSummaryCompaction"},
    )


def preview(folder: Path) -> PreviewScreen:
    snapshot, live = fixture_snapshot(folder)
    rotation = compaction_rotation(snapshot.path)
    compared = compare(snapshot.messages, live)
    return PreviewScreen(snapshot, rotation, compared, now=ROTATED_AT + 300)


async def test_preview_shows_the_rotated_conversation_and_how_it_differs(tmp_path: Path) -> None:
    app = Host(screen=preview(tmp_path))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        conversation = app.screen.query_one(Conversation)
        users = [str(block.render()) for block in conversation.query(UserBlock)]
        text = screen_text(app)
    assert any("Create hello.py" in user for user in users)
    assert any("Read big.txt and summarise it" in user for user in users)
    assert (
        "context_1.jsonl · compaction 48k→3k · 5m ago · 7 checkpoints · 4.1k tokens · 11 messages"
        in text
    )
    assert "compacted 48k → 3k by LLMSummaryCompaction" in text
    assert "Compared with the live context" in text
    assert "0 messages in both" in text
    assert "11 messages come back from this file" in text
    assert "6 messages leave the live context" in text
    assert f"{USER_MARK} What did we do so far?" in text


async def test_the_previews_header_counts_the_messages_as_its_comparison_does(
    tmp_path: Path,
) -> None:
    # A checkpoint's note for the model is no message a person reads: not counted above either.
    fixture_snapshot(tmp_path)
    with (tmp_path / "context_1.jsonl").open("a") as rotated:
        rotated.write('{"role": "_checkpoint", "id": 7}\n')
        rotated.write('{"role": "user", "content": "<system>CHECKPOINT 7</system>"}\n')
    snapshot = read_snapshot(tmp_path / "context_1.jsonl")
    live = read_snapshot(tmp_path / "context.jsonl").messages
    app = Host(screen=PreviewScreen(snapshot, None, compare(snapshot.messages, live)))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        text = screen_text(app)
    assert "8 checkpoints · 4.1k tokens · 11 messages" in text
    assert "11 messages come back from this file" in text


async def test_preview_restores_only_after_yes(tmp_path: Path) -> None:
    app = Host(screen=preview(tmp_path))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        assert (
            "Restore context_1.jsonl? The live context is kept as a new rotated file."
            in screen_text(app)
        )
        await pilot.press("n")
        await pilot.pause()
        assert app.results == []
        assert "Restore context_1.jsonl?" not in screen_text(app)
        await pilot.press("y")  # not asked: nothing to confirm
        await pilot.pause()
        assert app.results == []
        await pilot.press("r", "y")
        await pilot.pause()
        assert app.results == [True]


async def test_preview_escape_closes_without_restoring(tmp_path: Path) -> None:
    app = Host(screen=preview(tmp_path))
    async with app.run_test() as pilot:
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert app.results == [False]


async def test_preview_without_a_rotation_note_shows_what_the_file_says(tmp_path: Path) -> None:
    snapshot, live = fixture_snapshot(tmp_path)
    app = Host(screen=PreviewScreen(snapshot, None, compare(snapshot.messages, live)))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        text = screen_text(app)
    assert "context_1.jsonl · 7 checkpoints · 4.1k tokens · 11 messages" in text
    assert "compacted 48k" not in text


# --- Snapshots ------------------------------------------------------------------------------------


async def _settle(pilot: Pilot[Any]) -> None:
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


def test_snapshot_revert_dialog_with_files_and_a_conflict(snap_compare: Any) -> None:
    app = Host(screen=revert_dialog([*MIXED_FILES, plan("notes.txt", "missing")]))
    assert snap_compare(app, run_before=_settle, terminal_size=(110, 34))


def test_snapshot_preview_of_a_compaction(tmp_path: Path, snap_compare: Any) -> None:
    # The screen shows the file's name only, never the temp folder it was copied to.
    app = Host(screen=preview(tmp_path))
    assert snap_compare(app, run_before=_settle, terminal_size=(120, 36))


async def test_revert_dialog_names_the_files_whose_shell_edits_are_not_tracked() -> None:
    dialog = RevertDialog(
        3,
        "Shell make",
        2,
        100,
        MIXED_FILES,
        "",
        untracked=[
            "big.bin (over 1,048,576 bytes)",
            "Files git or .gitignore ignore are not tracked.",
        ],
    )
    app = Host(screen=dialog)
    async with app.run_test(size=(110, 36)) as pilot:
        await pilot.pause()
        text = static_text(app)
    assert "Not tracked, so not restored:\nbig.bin (over 1,048,576 bytes)\n" in text
    assert "Files git or .gitignore ignore are not tracked." in text
