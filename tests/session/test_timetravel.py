"""Time travel in the engine: reverting the conversation and the files, restoring rotations."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from kode_tui.config import Config, resolve_model
from kode_tui.session import Context, Session
from kode_tui.session.timetravel import compare, read_snapshot
from kode_tui.soul.agent import open_agent
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.wire import events as ev
from tests.conftest import KIMI_FIXTURE
from tests.session_helpers import records_on_disk


def write(path: str, content: str) -> dict[str, object]:
    return {"name": "WriteFile", "arguments": {"path": path, "content": content}}


async def three_turns(project: Path) -> tuple[object, list[ev.Event]]:
    """Turn 1 writes a.txt, turn 2 rewrites a.txt and creates b.txt, turn 3 only talks."""
    (project / "a.txt").write_text("original a\n")
    provider = ScriptedProvider(
        [
            {"tool_calls": [write("a.txt", "agent a 1\n")]},
            {"text": "First done."},
            {"tool_calls": [write("a.txt", "agent a 2\n"), write("b.txt", "new b\n")]},
            {"text": "Second done."},
            {"text": "Third: just talking."},
        ]
    )
    session = await Session.create(project)
    agent = await open_agent(
        session, Config(), resolve_model(Config()), provider=provider, approval_override="yolo"
    )
    events: list[ev.Event] = []
    agent.bus.subscribe(callback=events.append)
    for text in ("first", "second", "third"):
        assert (await agent.soul.run(text)).stop_reason == "done"
    return agent, events


def user_checkpoint(agent: object, text: str) -> int:
    """The checkpoint right before the user's message `text`."""
    soul = agent.soul  # type: ignore[attr-defined]
    history = soul.context.history
    for checkpoint in soul.context.checkpoints:
        following = [m for m in history[checkpoint.message_index :] if m.role == "user"]
        if following and following[0].text == f"<system>CHECKPOINT {checkpoint.id}</system>":
            following = following[1:]
        if following and following[0].text == text:
            return int(checkpoint.id)
    raise AssertionError(f"no checkpoint before {text!r}")


async def test_revert_with_files_puts_back_what_the_agent_changed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent, events = await three_turns(project)
    soul = agent.soul  # type: ignore[attr-defined]
    k = user_checkpoint(agent, "second")

    preview = soul.travel.revert_preview(k)
    assert {(p.path, p.action) for p in preview.files} == {
        ("a.txt", "restore"),
        ("b.txt", "delete"),
    }
    assert preview.next_user_text == "second" and preview.messages_leaving > 0

    outcome = await soul.travel.revert(k, files=True)
    await agent.close()  # type: ignore[attr-defined]

    assert (project / "a.txt").read_text() == "agent a 1\n"
    assert not (project / "b.txt").exists()
    assert sorted(outcome.files_restored) == ["a.txt", "b.txt"] and outcome.conflicts == []
    assert outcome.next_user_text == "second"
    live = agent.session.context_file.read_text()  # type: ignore[attr-defined]
    assert '"second"' not in live and '"first"' in live
    assert outcome.rotated_file.name == "context_1.jsonl"
    note = json.loads(
        (outcome.rotated_file.parent / "rotations.jsonl").read_text().splitlines()[-1]
    )
    assert note["reason"] == "revert"
    reverted = [e for e in events if isinstance(e, ev.ContextReverted)]
    assert reverted[-1].files_restored and reverted[-1].reason == "user"


async def test_revert_of_the_conversation_only_leaves_files_alone(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent, _ = await three_turns(project)
    k = user_checkpoint(agent, "first")

    outcome = await agent.soul.travel.revert(k)  # type: ignore[attr-defined]
    await agent.close()  # type: ignore[attr-defined]

    assert (project / "a.txt").read_text() == "agent a 2\n"
    assert (project / "b.txt").read_text() == "new b\n"
    assert outcome.files_restored == []


async def test_a_file_changed_by_the_user_is_a_conflict_and_left_as_it_is(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent, _ = await three_turns(project)
    (project / "a.txt").write_text("the user's own change\n")
    k = user_checkpoint(agent, "first")

    preview = agent.soul.travel.revert_preview(k)  # type: ignore[attr-defined]
    assert {(p.path, p.action) for p in preview.files} == {
        ("a.txt", "conflict"),
        ("b.txt", "delete"),
    }
    outcome = await agent.soul.travel.revert(k, files=True)  # type: ignore[attr-defined]
    await agent.close()  # type: ignore[attr-defined]

    assert (project / "a.txt").read_text() == "the user's own change\n"
    assert outcome.conflicts == ["a.txt"] and outcome.files_restored == ["b.txt"]
    assert not (project / "b.txt").exists()


async def test_restoring_a_kimi_rotation_and_back_ends_where_it_began(tmp_path: Path) -> None:
    folder = tmp_path / "kimi-session"
    shutil.copytree(KIMI_FIXTURE, folder)
    before = (folder / "context.jsonl").read_bytes()
    session = await Session.from_dir(folder)
    agent = await open_agent(
        session, Config(), resolve_model(Config()), provider=ScriptedProvider([])
    )
    soul = agent.soul

    first = (await soul.travel.restore(folder / "context_1.jsonl")).rotated_file
    assert first is not None
    assert (folder / "context.jsonl").read_bytes() == (folder / "context_1.jsonl").read_bytes()
    back = (await soul.travel.restore(first)).rotated_file
    await agent.close()

    assert (folder / "context.jsonl").read_bytes() == before
    assert back is not None and back.name == "context_5.jsonl"
    assert sorted(p.name for p in folder.glob("context_*.jsonl")) == [
        f"context_{n}.jsonl" for n in range(1, 6)
    ]


async def test_fifty_reverts_and_restores_keep_every_record(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent, _ = await three_turns(project)
    soul = agent.soul  # type: ignore[attr-defined]
    directory = agent.session.dir  # type: ignore[attr-defined]
    seen = records_on_disk(directory)
    for round_number in range(25):
        rotated = await soul.travel.revert(soul.context.checkpoints[-1].id)
        await soul.travel.restore(rotated.rotated_file)
        now = records_on_disk(directory)
        assert seen <= now, f"round {round_number} lost records"
        seen = now
    await agent.close()  # type: ignore[attr-defined]
    assert len(list(directory.glob("context_*.jsonl"))) == 50


async def test_a_snapshot_is_read_without_the_lock_and_compared(tmp_path: Path) -> None:
    folder = tmp_path / "kimi-session"
    shutil.copytree(KIMI_FIXTURE, folder)
    async with Context(folder / "context.jsonl") as live:
        await live.restore()
        snapshot = read_snapshot(folder / "context_1.jsonl")
        comparison = compare(snapshot.messages, list(live.history))
    assert snapshot.n_checkpoints >= 1 and snapshot.messages
    assert comparison.common + len(comparison.only_there) == len(snapshot.messages)
    assert comparison.only_here


def test_lineage_marks_what_the_live_context_descends_from() -> None:
    from kode_tui.session.timetravel import lineage

    # 1 revert, 2 compaction, 3 restore of 1 (3 is the context that was live), 4 revert.
    found = lineage(
        [
            (1, "revert", None),
            (2, "compaction", None),
            (3, "restore", "context_1.jsonl"),
            (4, "revert", None),
        ]
    )
    assert found.parent == {1: None, 2: 1, 3: 2, 4: 1}
    assert found.live_path == {4, 1}  # 2 and 3 are a branch left behind
    assert lineage([(1, None, None), (2, None, None)]).live_path == {1, 2}  # Kimi: no reasons
    assert lineage([]).live_path == frozenset()


async def test_a_revert_never_writes_outside_the_work_dir_or_into_git(tmp_path: Path) -> None:
    """A session folder from elsewhere holds `_file_edit` records naming any path: reverting
    them must not plant a git hook or a file outside the work dir."""
    project = tmp_path / "project"
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / "a.txt").write_text("original a\n")
    outside = tmp_path / "outside.sh"
    session = await Session.create(project)
    provider = ScriptedProvider([{"text": "ok"}])
    agent = await open_agent(
        session, Config(), resolve_model(Config()), provider=provider, approval_override="yolo"
    )
    soul = agent.soul
    k = await soul.context.checkpoint()
    hook = b"#!/bin/sh\ntouch PWNED\n"
    # Records as a hostile session would hold them: "the file did not exist after the edit,
    # and held this before it", so a revert would create it.
    for path in (".git/hooks/pre-commit", str(outside)):
        await soul.env.journal.record(path, hook, None)
    await soul.env.journal.record("a.txt", b"earlier a\n", b"original a\n")

    preview = soul.travel.revert_preview(k)
    assert {(p.path, p.action) for p in preview.files} == {
        (".git/hooks/pre-commit", "refused"),
        (str(outside), "refused"),
        ("a.txt", "restore"),
    }
    outcome = await soul.travel.revert(k, files=True)
    await agent.close()

    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert not outside.exists()
    assert (project / "a.txt").read_text() == "earlier a\n"
    assert outcome.files_restored == ["a.txt"]
    assert sorted(outcome.conflicts) == sorted([".git/hooks/pre-commit", str(outside)])


# --- restoring a rotated context with its files ---------------------------------------------


async def reverted_with_files(project: Path) -> tuple[object, Path]:
    """three_turns, then a revert with files to before "second": a.txt holds turn 1's edit,
    b.txt (created by turn 2) is gone. Returns the agent and the rotated pre-revert context."""
    agent, _ = await three_turns(project)
    outcome = await agent.soul.travel.revert(  # type: ignore[attr-defined]
        user_checkpoint(agent, "second"), files=True
    )
    assert (project / "a.txt").read_text() == "agent a 1\n"
    assert not (project / "b.txt").exists()
    return agent, outcome.rotated_file


async def test_restoring_with_files_brings_back_the_agents_edits(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent, pre_revert = await reverted_with_files(project)
    soul = agent.soul  # type: ignore[attr-defined]
    events: list[ev.Event] = []
    soul.bus.subscribe(callback=events.append)

    preview = soul.travel.restore_preview(pre_revert)
    assert {(p.path, p.action) for p in preview.files} == {
        ("a.txt", "restore"),
        ("b.txt", "restore"),  # created by the restored turns, deleted by the revert
    }
    assert preview.messages_back > 0 and preview.messages_leaving == 0
    assert preview.checkpoints == read_snapshot(pre_revert).n_checkpoints

    outcome = await soul.travel.restore(pre_revert, files=True)
    await agent.close()  # type: ignore[attr-defined]

    assert (project / "a.txt").read_text() == "agent a 2\n"
    assert (project / "b.txt").read_text() == "new b\n"
    assert sorted(outcome.files_restored) == ["a.txt", "b.txt"] and outcome.conflicts == []
    assert outcome.rotated_file is not None
    assert agent.session.context_file.read_bytes() == pre_revert.read_bytes()  # type: ignore[attr-defined]
    restored = [e for e in events if isinstance(e, ev.ContextRestored)]
    assert sorted(restored[-1].files_restored) == ["a.txt", "b.txt"]


async def test_restoring_leaves_a_file_the_user_changed_as_a_conflict(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent, pre_revert = await reverted_with_files(project)
    (project / "a.txt").write_text("the user's own change\n")
    soul = agent.soul  # type: ignore[attr-defined]

    preview = soul.travel.restore_preview(pre_revert)
    assert {(p.path, p.action) for p in preview.files} == {
        ("a.txt", "conflict"),
        ("b.txt", "restore"),
    }
    outcome = await soul.travel.restore(pre_revert, files=True)
    await agent.close()  # type: ignore[attr-defined]

    assert (project / "a.txt").read_text() == "the user's own change\n"
    assert (project / "b.txt").read_text() == "new b\n"
    assert outcome.conflicts == ["a.txt"] and outcome.files_restored == ["b.txt"]


async def test_restoring_the_conversation_only_leaves_the_files(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent, pre_revert = await reverted_with_files(project)

    outcome = await agent.soul.travel.restore(pre_revert)  # type: ignore[attr-defined]
    await agent.close()  # type: ignore[attr-defined]

    assert (project / "a.txt").read_text() == "agent a 1\n"
    assert not (project / "b.txt").exists()
    assert outcome.files_restored == []
    assert agent.session.context_file.read_bytes() == pre_revert.read_bytes()  # type: ignore[attr-defined]


async def test_restoring_deletes_a_file_only_the_live_conversation_created(tmp_path: Path) -> None:
    """After the revert the live conversation goes its own way: it creates c.txt and edits
    a.txt. Restoring the pre-revert context takes both back to what that conversation left."""
    project = tmp_path / "project"
    project.mkdir()
    agent, pre_revert = await reverted_with_files(project)
    soul = agent.soul  # type: ignore[attr-defined]
    soul.provider.script.extend(
        [
            {"tool_calls": [write("c.txt", "live c\n"), write("a.txt", "live a\n")]},
            {"text": "Another way."},
        ]
    )
    assert (await soul.run("another way")).stop_reason == "done"
    assert (project / "c.txt").exists()

    preview = soul.travel.restore_preview(pre_revert)
    assert {(p.path, p.action) for p in preview.files} == {
        ("a.txt", "restore"),
        ("b.txt", "restore"),
        ("c.txt", "delete"),
    }
    outcome = await soul.travel.restore(pre_revert, files=True)
    await agent.close()  # type: ignore[attr-defined]

    assert not (project / "c.txt").exists()
    assert (project / "a.txt").read_text() == "agent a 2\n"
    assert (project / "b.txt").read_text() == "new b\n"
    assert sorted(outcome.files_restored) == ["a.txt", "b.txt", "c.txt"]


async def test_restoring_back_after_a_restore_puts_the_files_back_too(tmp_path: Path) -> None:
    """Restore and restore back: each way the files follow the conversation."""
    project = tmp_path / "project"
    project.mkdir()
    agent, pre_revert = await reverted_with_files(project)
    soul = agent.soul  # type: ignore[attr-defined]

    there = await soul.travel.restore(pre_revert, files=True)
    assert there.rotated_file is not None
    back = await soul.travel.restore(there.rotated_file, files=True)
    await agent.close()  # type: ignore[attr-defined]

    assert (project / "a.txt").read_text() == "agent a 1\n"
    assert not (project / "b.txt").exists()
    assert sorted(back.files_restored) == ["a.txt", "b.txt"]


async def test_restoring_after_the_live_context_was_compacted_still_finds_the_common_past(
    tmp_path: Path,
) -> None:
    """A compaction leaves the live context without the edits before it (they are in the
    rotation it made): a.txt, edited in the common past and after it, is still not a conflict."""
    project = tmp_path / "project"
    project.mkdir()
    agent, pre_revert = await reverted_with_files(project)
    soul = agent.soul  # type: ignore[attr-defined]
    soul.provider.script.append({"text": "Summary: a.txt was written."})
    assert await soul.compact()
    assert not soul.context.file_edits

    preview = soul.travel.restore_preview(pre_revert)
    assert {(p.path, p.action) for p in preview.files} == {
        ("a.txt", "restore"),
        ("b.txt", "restore"),
    }
    outcome = await soul.travel.restore(pre_revert, files=True)
    await agent.close()  # type: ignore[attr-defined]

    assert (project / "a.txt").read_text() == "agent a 2\n"
    assert (project / "b.txt").read_text() == "new b\n"
    assert outcome.conflicts == []


def test_an_edit_history_reaches_back_through_compactions_reverts_and_restores(
    tmp_path: Path,
) -> None:
    from kode_tui.message import FileEditRecord
    from kode_tui.session.rotation import Rotation
    from kode_tui.session.timetravel import edit_history

    def edit(n: int) -> FileEditRecord:
        return FileEditRecord(path="a.txt", before=str(n - 1), after=str(n))

    def rotation(number: int, reason: str | None, *edits: FileEditRecord, **info: str) -> Rotation:
        path = tmp_path / f"context_{number}.jsonl"
        path.write_text("".join(e.to_json() + "\n" for e in edits))
        return Rotation(path, number, 0, 0.0, reason=reason, info=dict(info))

    # 1: edits 1-2, compacted. 2: edit 3, reverted to before it. 3: edit 4, then restore of 2
    # (3 is the context that was live). Live: a copy of 2 plus edit 5.
    rotations = [
        rotation(1, "compaction", edit(1), edit(2)),
        rotation(2, "revert", edit(3)),
        rotation(3, "restore", edit(4), source="context_2.jsonl"),
    ]
    live = edit_history([edit(3), edit(5)], None, rotations)
    assert [e.after for e in live] == ["1", "2", "3", "5"]
    side_branch = edit_history([edit(4)], 3, rotations)
    assert [e.after for e in side_branch] == ["1", "2", "4"]
    # Kimi CLI notes no reasons: the walk stops at the first rotation it cannot read.
    assert edit_history([edit(5)], None, [rotation(1, None, edit(1))]) == [edit(5)]


async def test_a_restore_never_writes_outside_the_work_dir_or_into_git(tmp_path: Path) -> None:
    """A rotated file's records may name any path (a session folder from elsewhere):
    restoring it with files refuses what a revert refuses."""
    project = tmp_path / "project"
    (project / ".git" / "hooks").mkdir(parents=True)
    outside = tmp_path / "outside.sh"
    session = await Session.create(project)
    agent = await open_agent(
        session, Config(), resolve_model(Config()), provider=ScriptedProvider([])
    )
    soul = agent.soul
    k = await soul.context.checkpoint()
    hook = b"#!/bin/sh\ntouch PWNED\n"
    for path in (".git/hooks/pre-commit", str(outside), "c.txt"):
        await soul.env.journal.record(path, None, hook)
    rotated = (await soul.travel.revert(k)).rotated_file

    preview = soul.travel.restore_preview(rotated)
    assert {(p.path, p.action) for p in preview.files} == {
        (".git/hooks/pre-commit", "refused"),
        (str(outside), "refused"),
        ("c.txt", "restore"),
    }
    outcome = await soul.travel.restore(rotated, files=True)
    await agent.close()

    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert not outside.exists()
    assert (project / "c.txt").read_bytes() == hook
    assert outcome.files_restored == ["c.txt"]


async def test_a_revert_with_files_restores_through_a_symlink_and_keeps_the_link(
    tmp_path: Path,
) -> None:
    """The agent wrote through `link.txt` -> `real.txt`: the revert puts back what it changed
    there, in `real.txt` with the user's mode, and `link.txt` stays a link."""
    project = tmp_path / "project"
    project.mkdir()
    real = project / "real.txt"
    real.write_text("the user's text\n")
    real.chmod(0o640)
    (project / "link.txt").symlink_to("real.txt")
    provider = ScriptedProvider(
        [{"tool_calls": [write("link.txt", "agent text\n")]}, {"text": "Done."}]
    )
    session = await Session.create(project)
    agent = await open_agent(
        session, Config(), resolve_model(Config()), provider=provider, approval_override="yolo"
    )
    assert (await agent.soul.run("edit it")).stop_reason == "done"
    assert real.read_text() == "agent text\n" and (project / "link.txt").is_symlink()
    k = user_checkpoint(agent, "edit it")

    outcome = await agent.soul.travel.revert(k, files=True)
    await agent.close()

    assert outcome.files_restored == ["link.txt"] and outcome.conflicts == []
    assert (project / "link.txt").is_symlink()
    assert os.readlink(project / "link.txt") == "real.txt"
    assert real.read_text() == "the user's text\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(p.name for p in project.iterdir()) == ["link.txt", "real.txt"]


async def test_the_todo_list_follows_a_revert_and_a_restore(tmp_path: Path) -> None:
    """The list the reminders show the model is the one the live conversation left."""
    from kode_tui.session.state import load_state

    project = tmp_path / "project"
    project.mkdir()

    def todos(*titles: str) -> dict[str, object]:
        items = [{"title": title, "status": "pending"} for title in titles]
        return {"tool_calls": [{"name": "TodoWrite", "arguments": {"todos": items}}]}

    provider = ScriptedProvider(
        [todos("plan"), {"text": "Planned."}, todos("plan", "build"), {"text": "More."}]
    )
    session = await Session.create(project)
    agent = await open_agent(session, Config(), resolve_model(Config()), provider=provider)
    soul = agent.soul
    try:
        for text in ("first", "second"):
            assert (await soul.run(text)).stop_reason == "done"
        assert [t.title for t in soul.env.state.todos] == ["plan", "build"]

        reverted = await soul.travel.revert(user_checkpoint(agent, "second"))
        assert [t.title for t in soul.env.state.todos] == ["plan"]
        assert [t.title for t in load_state(session.state_file).todos] == ["plan"]  # saved

        await soul.travel.restore(reverted.rotated_file)
        assert [t.title for t in soul.env.state.todos] == ["plan", "build"]
    finally:
        await agent.close()
