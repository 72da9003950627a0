"""Rewinding in one step, as every front end has it: `/undo` takes back the user's last message,
the rewind picker lists their messages, and "restore anyway" overwrites a file changed by hand
only after keeping what it held."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kode_tui.config import Config, ModelChoice
from kode_tui.session import Session
from kode_tui.soul.facade import AgentSession
from kode_tui.soul.llm.scripted import ScriptedProvider
from tests.soul_helpers import print_turn

SCRIPTED = ModelChoice(name="scripted", model="scripted", source="flag")


def write(path: str, content: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "WriteFile", "arguments": {"path": path, "content": content}}]}


async def test_undo_takes_back_the_last_message_and_with_files_what_its_turn_wrote(
    project: Path,
) -> None:
    provider = ScriptedProvider(
        [write("a.txt", "agent a\n"), {"text": "Wrote a."}, write("b.txt", "b\n"), {"text": "B."}]
    )
    session = await Session.create(project)
    for text in ("write a", "write b"):
        assert (await print_turn(project, provider, text, session, yolo=True)).status == 0

    undone = await print_turn(project, provider, "/undo conversation", session)
    assert undone.status == 0, undone.err
    assert undone.out == "Reverted to checkpoint 3; the rest is kept in context_1.jsonl.\n"
    assert (project / "b.txt").exists()  # the conversation only, as asked

    undone = await print_turn(project, provider, "/undo", session)
    assert undone.out == (
        "Reverted to checkpoint 0; the rest is kept in context_2.jsonl; files put back: a.txt.\n"
    )
    assert not (project / "a.txt").exists()
    assert (project / "b.txt").exists()  # written in a turn /undo took back without its files

    nothing = await print_turn(project, provider, "/undo", session)
    assert nothing.status == 2
    assert nothing.err == "kode-tui: nothing to undo: the conversation holds no message of yours.\n"
    bad = await print_turn(project, provider, "/undo files please", session)
    assert bad.status == 2
    assert bad.err == "kode-tui: /undo [conversation|anyway]: takes back your last message.\n"
    assert len(provider.requests) == 4  # no command was a model turn


async def test_the_rewind_points_are_the_users_messages_newest_first_with_their_turns_edits(
    project: Path,
) -> None:
    provider = ScriptedProvider(
        [write("a.txt", "a\n"), {"text": "Wrote a."}, {"text": "Hello."}, {"text": "Again."}]
    )
    opened = await AgentSession.open(project)
    await opened.start(Config(), SCRIPTED, provider=provider, yolo=True)
    try:
        for text in ("write a", "hello", "hello\nagain"):
            await opened.run(text)
        points = await opened.travel.rewind_points()
    finally:
        await opened.close()
    assert [(p.text, p.changed_files) for p in points] == [
        ("hello\nagain", False),
        ("hello", False),
        ("write a", True),
    ]
    assert [p.checkpoint_id for p in points] == [5, 3, 0]
    assert all(p.sent_at is not None for p in points)
    assert points[0].sent_at is not None and points[2].sent_at is not None
    assert points[0].sent_at >= points[2].sent_at


async def test_restoring_anyway_keeps_the_hand_made_version_where_a_restore_brings_it_back(
    project: Path,
) -> None:
    (project / "a.txt").write_text("original\n")
    provider = ScriptedProvider([write("a.txt", "agent\n"), {"text": "Wrote a."}])
    session = await Session.create(project)
    assert (await print_turn(project, provider, "edit a", session, yolo=True)).status == 0
    (project / "a.txt").write_text("mine\n")

    left = await print_turn(project, provider, "/revert 0 files", session)
    assert "Left alone (changed since, or missing): a.txt." in left.out
    assert (project / "a.txt").read_text() == "mine\n"
    back = await print_turn(project, provider, "/restore 1", session)  # the turn again
    assert back.status == 0, back.err

    anyway = await print_turn(project, provider, "/revert 0 files anyway", session)
    assert anyway.status == 0, anyway.err
    assert anyway.out == (
        "Reverted to checkpoint 0; the rest is kept in context_3.jsonl; files put back: a.txt. "
        "What you had changed by hand in a.txt is kept in context_3.jsonl: restoring it with "
        "its files brings it back.\n"
    )
    assert (project / "a.txt").read_text() == "original\n"

    again = await print_turn(project, provider, "/restore 3 files", session)
    assert again.status == 0, again.err
    assert (project / "a.txt").read_text() == "mine\n"
