"""What Shell commands (and anyone else) do to the work dir's files is recorded, so a revert
with files puts it back (`session.snapshot`)."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

from kode_tui.config import Config, resolve_model
from kode_tui.session import Context, Session
from kode_tui.session.journal import FileJournal
from kode_tui.session.snapshot import RACY_NS, WorkSnapshot
from kode_tui.soul.agent import open_agent
from kode_tui.soul.llm.scripted import ScriptedProvider
from tests.session.test_timetravel import user_checkpoint


def shell(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "Shell", "arguments": {"command": command}}]}


async def shell_turns(project: Path, *commands: str, config: Config | None = None) -> Any:
    """One turn per command: the agent runs it with Shell, then says it is done."""
    script: list[dict[str, Any]] = []
    for command in commands:
        script += [shell(command), {"text": "Done."}]
    script.append({"text": "A later turn's answer."})
    config = config or Config()
    session = await Session.create(project)
    agent = await open_agent(
        session,
        config,
        resolve_model(config),
        provider=ScriptedProvider(script),
        approval_override="yolo",
    )
    for n in range(len(commands)):
        assert (await agent.soul.run(f"turn {n}")).stop_reason == "done"
    return agent


def settle(root: Path) -> None:
    """Wait until every file under `root` last changed over `RACY_NS` ago, so that a snapshot
    trusts its stat: a test can put a file's mtime in the past, never its ctime."""
    newest = max(path.lstat().st_ctime_ns for path in root.rglob("*"))
    while time.time_ns() <= newest + RACY_NS:
        time.sleep(0.005)


def make_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "keep.txt").write_text("keep\n")
    (project / "change.txt").write_text("before\n")
    (project / "gone.txt").write_text("will be deleted\n")
    return project


async def test_revert_with_files_undoes_what_a_shell_command_created_changed_and_deleted(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    agent = await shell_turns(
        project, "echo new > made.txt && echo after > change.txt && rm gone.txt"
    )
    soul = agent.soul
    assert (project / "made.txt").exists() and not (project / "gone.txt").exists()
    k = user_checkpoint(agent, "turn 0")

    preview = soul.travel.revert_preview(k)
    assert {(p.path, p.action) for p in preview.files} == {
        ("made.txt", "delete"),
        ("change.txt", "restore"),
        ("gone.txt", "restore"),
    }
    outcome = await soul.travel.revert(k, files=True)
    await agent.close()

    assert not (project / "made.txt").exists()
    assert (project / "change.txt").read_text() == "before\n"
    assert (project / "gone.txt").read_text() == "will be deleted\n"
    assert sorted(outcome.files_restored) == ["change.txt", "gone.txt", "made.txt"]
    assert outcome.conflicts == []


async def test_a_user_edit_after_the_command_is_a_conflict_and_left_alone(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    agent = await shell_turns(project, "echo after > change.txt && echo new > made.txt")
    (project / "change.txt").write_text("the user's own\n")  # no snapshot since
    k = user_checkpoint(agent, "turn 0")

    preview = agent.soul.travel.revert_preview(k)
    assert {(p.path, p.action) for p in preview.files} == {
        ("change.txt", "conflict"),
        ("made.txt", "delete"),
    }
    outcome = await agent.soul.travel.revert(k, files=True)
    await agent.close()

    assert (project / "change.txt").read_text() == "the user's own\n"
    assert not (project / "made.txt").exists()
    assert outcome.conflicts == ["change.txt"]


async def test_a_user_edit_between_turns_is_recorded_at_the_next_checkpoint(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    agent = await shell_turns(project, "true")
    (project / "change.txt").write_text("formatted\n")
    assert (await agent.soul.run("later")).stop_reason == "done"
    # Reverting to before the first turn also undoes the edit made between the turns.
    outcome = await agent.soul.travel.revert(user_checkpoint(agent, "turn 0"), files=True)
    await agent.close()

    assert outcome.files_restored == ["change.txt"]
    assert (project / "change.txt").read_text() == "before\n"


async def test_ignored_and_too_large_files_are_skipped_and_the_revert_says_so(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    (project / ".gitignore").write_text("build/\n")
    (project / "build").mkdir()
    (project / "build" / "out.o").write_text("old object\n")
    (project / "big.bin").write_bytes(b"x" * 2000)
    config = Config.model_validate({"tools": {"snapshot_max_bytes": 1000}})
    agent = await shell_turns(
        project,
        "echo new > build/out.o && echo y >> big.bin && echo after > change.txt",
        config=config,
    )
    k = user_checkpoint(agent, "turn 0")

    preview = agent.soul.travel.revert_preview(k)
    assert [p.path for p in preview.files] == ["change.txt"]
    assert preview.untracked == [
        "big.bin (over 1,000 bytes)",
        "Files git or .gitignore ignore are not tracked.",
    ]
    outcome = await agent.soul.travel.revert(k, files=True)
    # Restoring the reverted context back says the same of what it cannot put back.
    restore = agent.soul.travel.restore_preview(outcome.rotated_file)
    assert [p.path for p in restore.files] == ["change.txt"]
    assert restore.untracked == preview.untracked
    await agent.close()

    assert (project / "change.txt").read_text() == "before\n"
    assert (project / "build" / "out.o").read_text() == "new\n"


async def test_a_snapshot_of_an_unchanged_tree_reads_no_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    for n in range(2000):
        folder = project / f"d{n % 40}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.py").write_text(f"print({n})\n")
    past = 1_600_000_000
    for folder in project.iterdir():
        for file in folder.iterdir():
            os.utime(file, (past, past))  # not "racily clean": written long before the scan
    settle(project)
    async with Context(tmp_path / "session" / "context.jsonl") as context:
        await context.restore()
        snapshots = WorkSnapshot(project, context, FileJournal(context))
        await snapshots.capture()
        assert snapshots.reads == 2000  # the baseline keeps every file
        assert await snapshots.capture() == []
        assert snapshots.reads == 2000

        (project / "d0" / "f0.py").write_text("changed\n")
        (edit,) = await snapshots.capture("call_1")
        assert snapshots.reads == 2001
        assert (edit.path, edit.tool_call_id) == ("d0/f0.py", "call_1")


async def test_reverting_a_bang_commands_checkpoint_undoes_what_it_did(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    agent = await shell_turns(project)
    assert await agent.soul.shell_escape.run("echo new > made.txt && rm gone.txt")
    checkpoint = agent.soul.context.checkpoints[-1].id

    outcome = await agent.soul.travel.revert(checkpoint, files=True)
    await agent.close()

    assert sorted(outcome.files_restored) == ["gone.txt", "made.txt"]
    assert not (project / "made.txt").exists() and (project / "gone.txt").exists()


def old_tree(project: Path, files: int) -> None:
    """`files` files written long before any scan (not "racily clean")."""
    for n in range(files):
        folder = project / f"d{n % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.py").write_text(f"print({n})\n")
        os.utime(folder / f"f{n}.py", (1_600_000_000, 1_600_000_000))
    settle(project)


async def test_a_second_session_in_the_work_dir_reads_no_unchanged_file_and_copies_none(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    old_tree(project, 200)
    for name in ("one", "two"):
        async with Context(tmp_path / name / "context.jsonl") as context:
            await context.restore()
            journal = FileJournal(context)
            snapshots = WorkSnapshot(project, context, journal)
            await snapshots.capture()
            baseline_reads = snapshots.reads
            # The first session of the work dir reads every file; the next only the one the
            # first saw changed just now ("racily clean": its mtime cannot be trusted yet).
            assert baseline_reads == (200 if name == "one" else 1)
            # The session's own folder holds no copy of the work dir.
            assert not journal.blobs_dir.exists() or not any(journal.blobs_dir.iterdir())

            (project / "d0" / "f0.py").write_text(f"changed by {name}\n")
            (edit,) = await snapshots.capture("call_1")
            # What the record names is in the session's own blobs, durably.
            assert journal.blob(edit.before or "") is not None
            assert journal.blob(edit.after or "") == f"changed by {name}\n".encode()
            assert sorted(p.name for p in journal.blobs_dir.iterdir()) == sorted(
                [edit.before, edit.after]
            )


async def test_a_revert_works_from_the_session_folder_alone_after_the_pool_is_deleted(
    tmp_path: Path,
) -> None:
    import shutil

    from kode_tui.paths import Paths

    project = make_project(tmp_path)
    agent = await shell_turns(project, "echo after > change.txt && rm gone.txt")
    shutil.rmtree(Paths.current().snapshot_pool(project))
    outcome = await agent.soul.travel.revert(user_checkpoint(agent, "turn 0"), files=True)
    await agent.close()

    assert sorted(outcome.files_restored) == ["change.txt", "gone.txt"]
    assert (project / "change.txt").read_text() == "before\n"
    assert (project / "gone.txt").read_text() == "will be deleted\n"


async def test_a_change_whose_old_content_the_pool_lost_is_not_recorded(tmp_path: Path) -> None:
    import shutil

    from kode_tui.paths import Paths

    project = make_project(tmp_path)
    async with Context(tmp_path / "session" / "context.jsonl") as context:
        await context.restore()
        snapshots = WorkSnapshot(project, context, FileJournal(context))
        await snapshots.capture()
        shutil.rmtree(Paths.current().snapshot_pool(project) / "blobs")  # a crash lost them
        (project / "change.txt").write_text("after\n")
        (project / "made.txt").write_text("new\n")
        edits = await snapshots.capture("call_1")
    # The new file's record needs no old content; the changed file's cannot be made, and a
    # revert leaves that file alone rather than guess.
    assert [(e.path, e.before) for e in edits] == [("made.txt", None)]


async def test_a_command_that_rewrites_a_file_in_place_and_puts_its_mtime_back_is_reverted(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path)
    for name in ("keep.txt", "change.txt"):
        os.utime(project / name, (1_600_000_000, 1_600_000_000))
    settle(project)  # the snapshots trust every file's stat
    old = (project / "change.txt").stat()
    # Same size, same inode, and its times put back: only the kernel's ctime tells.
    agent = await shell_turns(
        project, "printf 'AFTER!\\n' 1<>change.txt && touch -r keep.txt change.txt"
    )
    new = (project / "change.txt").stat()
    assert (new.st_size, new.st_mtime_ns, new.st_ino) == (old.st_size, old.st_mtime_ns, old.st_ino)
    assert (project / "change.txt").read_text() == "AFTER!\n"

    outcome = await agent.soul.travel.revert(user_checkpoint(agent, "turn 0"), files=True)
    await agent.close()
    assert outcome.files_restored == ["change.txt"]
    assert (project / "change.txt").read_text() == "before\n"


async def test_an_index_without_ctimes_is_read_again_not_trusted(tmp_path: Path) -> None:
    import json

    from kode_tui.paths import Paths

    project = tmp_path / "project"
    old_tree(project, 20)
    # The pool's index as kode-tui wrote it before ctimes (version 1): every stat matches, but
    # a file may have been rewritten in place since, so none is taken unread.
    files = {}
    for path in sorted(project.rglob("*.py")):
        st, content = path.stat(), path.read_bytes()
        sha = hashlib.sha256(content).hexdigest()
        files[path.relative_to(project).as_posix()] = [st.st_size, st.st_mtime_ns, st.st_ino, sha]
    pool = Paths.current().snapshot_pool(project)
    pool.mkdir(parents=True)
    (pool / "index.json").write_text(json.dumps({"version": 1, "files": files}))
    async with Context(tmp_path / "session" / "context.jsonl") as context:
        await context.restore()
        snapshots = WorkSnapshot(project, context, FileJournal(context))
        await snapshots.capture()
        await snapshots.close()
    assert snapshots.reads == 20


async def test_a_baseline_left_behind_by_a_first_capture_takes_nothing_a_command_does(
    tmp_path: Path,
) -> None:
    # `!cmd` right after the session opens: its first capture runs before the background
    # baseline has started. The baseline must not scan while the command runs, which would
    # take the command's changes for someone else's (a revert then could not undo them).
    project = make_project(tmp_path)
    async with Context(tmp_path / "session" / "context.jsonl") as context:
        await context.restore()
        snapshots = WorkSnapshot(project, context, FileJournal(context))
        snapshots.start()  # the baseline's task, not run yet
        assert await snapshots.capture() == []  # the command's first capture
        (project / "made.txt").write_text("new\n")  # the command, while the baseline may run
        (project / "gone.txt").unlink()
        # The baseline's task waits for the lock ahead of this capture: it must take nothing.
        edits = await snapshots.capture("call_1")  # the command's own capture
        assert sorted((e.path, e.tool_call_id) for e in edits) == [
            ("gone.txt", "call_1"),
            ("made.txt", "call_1"),
        ]
        await snapshots.close()
