"""Why a rotation was made and which context it continued, read from the files when no note
says (Kimi CLI keeps no rotations.jsonl); and comparing two contexts message by message."""

from __future__ import annotations

import asyncio
import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kode_tui.message import COMPACTION_OUTPUT_PREFIX, Message, TextPart, system
from kode_tui.session import generations
from kode_tui.session.context import Context
from kode_tui.session.generations import infer_rotations, read_generation
from kode_tui.session.rotation import ROTATIONS_LOG, Rotation, list_rotations
from kode_tui.session.timetravel import compare, lineage, read_snapshot
from tests.conftest import KIMI_FIXTURE, KIMI_OKABE_COMPACTED_FIXTURE
from tests.session_helpers import user, write_turns
from tests.test_kimi_compat import KIMI_PYTHON, kimi
from tests.ui_helpers import facade_of

DMAIL = (
    "You just got a D-Mail from your future self. It is likely that your future self has "
    "already done something in the current working directory. Please read the D-Mail and "
    "decide what to do next. You MUST NEVER mention to the user about this information. "
    "D-Mail content:\n\nUse tabs."
)
"""Kimi CLI 1.52's note (kimisoul.py `_step`), with a mail in it."""


def kimi_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "kimi"
    shutil.copytree(KIMI_FIXTURE, folder)
    return folder / "context.jsonl"


def inferred(live: Path) -> list[Rotation]:
    return infer_rotations(list_rotations(live), live)


def reasons(rotations: list[Rotation]) -> list[tuple[str | None, int | None]]:
    return [(rotation.reason, rotation.checkpoint) for rotation in rotations]


def write_lines(path: Path, *records: Any) -> None:
    """A context file as Kimi writes one: `_` records by json.dumps, messages by pydantic."""
    lines = []
    for record in records:
        if isinstance(record, Message):
            lines.append(record.model_dump_json(exclude_none=True))
        elif isinstance(record, int):
            lines.append(json.dumps({"role": "_checkpoint", "id": record}))
        else:
            lines.append(json.dumps(record))
    path.write_text("".join(line + "\n" for line in lines))


def answer(text: str) -> Message:
    return Message(role="assistant", content=text)


PROMPT = {"role": "_system_prompt", "content": "You are Kimi."}


def usage(count: int) -> dict[str, Any]:
    return {"role": "_usage", "token_count": count}


# --- reasons ------------------------------------------------------------------------------------


def test_the_kimi_fixture_rotations_are_three_compactions_with_their_sizes(tmp_path: Path) -> None:
    rotations = inferred(kimi_copy(tmp_path))
    assert reasons(rotations) == [("compaction", None)] * 3
    assert all(rotation.inferred for rotation in rotations)
    # Before: the rotated file's last reported count and the estimate of the messages after it
    # (the first one left a large tool result unreported); after: what the next request held,
    # as the model reported it (Kimi's own `_usage` estimate counts the messages alone).
    assert [(r.tokens, r.info["tokens_after"]) for r in rotations] == [
        (12374, 12403),
        (12419, 3894),
        (3997, 4050),
    ]


def test_a_kimi_d_mail_after_a_compaction_is_a_d_mail_though_its_context_begins_with_the_summary(
    tmp_path: Path,
) -> None:
    # Kimi CLI's own files: a /compact, then a D-Mail back to checkpoint 1 of the compacted
    # context, which copies the summary into the context it leaves.
    folder = tmp_path / "kimi"
    shutil.copytree(KIMI_OKABE_COMPACTED_FIXTURE, folder)
    rotations = inferred(folder / "context.jsonl")
    assert reasons(rotations) == [("compaction", None), ("dmail", 1)]
    # What the request after the compaction held, as reported (Kimi's own estimate is 41).
    assert rotations[0].info == {"tokens_after": 700}


def test_a_d_mail_a_clear_and_a_revert_are_told_apart_by_what_follows(tmp_path: Path) -> None:
    live = tmp_path / "context.jsonl"
    turns = [PROMPT, 0, user("one"), answer("1"), usage(10), 1, user("two"), answer("2"), usage(20)]
    # A D-Mail to checkpoint 1: the lines before it, checkpoint 1 again, the note.
    write_lines(tmp_path / "context_1.jsonl", *turns, 2, user("three"), answer("3"))
    dmail = Message(role="user", content=[system(DMAIL)])
    write_lines(tmp_path / "context_2.jsonl", *turns[:5], 1, dmail, answer("tabs it is"))
    # /clear: nothing of the old conversation, the system prompt again.
    write_lines(tmp_path / "context_3.jsonl", PROMPT, 0, user("fresh"), answer("ok"), 1, user("on"))
    # A revert to checkpoint 1, then a new turn.
    write_lines(live, PROMPT, 0, user("fresh"), answer("ok"), 1, user("other"))
    assert reasons(inferred(live)) == [("dmail", 1), ("clear", None), ("revert", 1)]


def test_a_clear_with_nothing_after_it_yet_is_a_clear(tmp_path: Path) -> None:
    live = tmp_path / "context.jsonl"
    write_lines(tmp_path / "context_1.jsonl", PROMPT, 0, user("one"), answer("1"))
    write_lines(live, PROMPT)
    assert reasons(inferred(live)) == [("clear", None)]
    live.write_text("")
    assert reasons(inferred(live)) == [("clear", None)]


def test_a_compaction_after_a_checkpoint_note_is_a_compaction(tmp_path: Path) -> None:
    live = tmp_path / "context.jsonl"
    note = Message(role="user", content=[system("CHECKPOINT 0")])
    write_lines(
        tmp_path / "context_1.jsonl", PROMPT, 0, note, user("one"), 1, answer("1"), usage(900)
    )
    summary = Message(role="user", content=[system(COMPACTION_OUTPUT_PREFIX), TextPart(text="s")])
    # The compaction's `_usage` (before checkpoint 1) is its estimate; the step after it reports.
    write_lines(live, PROMPT, 0, note, summary, answer("1"), usage(40), 1, usage(950))
    (rotation,) = inferred(live)
    assert (rotation.reason, rotation.tokens, rotation.info) == (
        "compaction",
        900,
        {"tokens_after": 950},
    )


def test_a_quoted_note_is_not_taken_for_one(tmp_path: Path) -> None:
    live = tmp_path / "context.jsonl"
    write_lines(tmp_path / "context_1.jsonl", PROMPT, 0, user("one"), answer("1"))
    quoted = answer(f"Kimi writes <system>{COMPACTION_OUTPUT_PREFIX}</system> then")
    write_lines(live, PROMPT, 0, user("one"), quoted)
    assert reasons(inferred(live)) == [("revert", 0)]


async def test_lost_notes_of_our_rotations_are_read_back_with_the_lineage(tmp_path: Path) -> None:
    live = tmp_path / "context.jsonl"
    context = Context(live)
    try:
        await write_turns(context, 3)
        await context.revert_to(4)
        await write_turns(context, 1, start=7)
        await context.clear()
        await write_turns(context, 1, start=9)
        await context.restore_from(tmp_path / "context_1.jsonl")
        await context.append_message(user("after the restore"))
    finally:
        await context.close()
    noted = list_rotations(live)
    (tmp_path / ROTATIONS_LOG).unlink()  # a crash before the notes were written
    rotations = inferred(live)
    assert reasons(rotations) == [(r.reason, r.checkpoint) for r in noted]
    assert rotations[2].info["source"] == "context_1.jsonl"
    found = lineage([(r.number, r.reason, r.info.get("source")) for r in rotations])
    assert found.live_path == {1}


def test_notes_are_kept_and_nothing_is_read_when_every_rotation_has_one(tmp_path: Path) -> None:
    live = tmp_path / "context.jsonl"
    write_lines(tmp_path / "context_1.jsonl", PROMPT, 0, user("one"))
    write_lines(live, PROMPT)
    note = {"file": "context_1.jsonl", "reason": "revert", "checkpoint": 0, "time": 1.0}
    (tmp_path / ROTATIONS_LOG).write_text(json.dumps(note) + "\n")
    read: list[Path] = []

    def reader(path: Path) -> generations.Generation | None:
        read.append(path)
        return read_generation(path)

    (rotation,) = infer_rotations(list_rotations(live), live, reader)
    assert (rotation.reason, rotation.inferred, read) == ("revert", False, [])


def test_a_file_over_the_size_cap_is_read_only_at_its_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = tmp_path / "context.jsonl"
    long = [user(f"question {n} " + "x" * 200) for n in range(50)]
    write_lines(tmp_path / "context_1.jsonl", PROMPT, 0, *long, usage(5000))
    summary = Message(role="user", content=[system(COMPACTION_OUTPUT_PREFIX), TextPart(text="s")])
    write_lines(tmp_path / "context_2.jsonl", PROMPT, 0, *long[:45], usage(4000))
    write_lines(live, PROMPT, 0, summary, *long[:40], answer("no"))
    monkeypatch.setattr(generations, "MAX_READ", 4000)
    monkeypatch.setattr(generations, "HEAD_READ", 2000)
    generations._read_cached.cache_clear()
    try:
        head = read_generation(tmp_path / "context_1.jsonl")
        assert head is not None and not head.complete and len(head.messages) < 10
        # Where a revert parts the two is past what was read; a compaction shows at the head.
        assert reasons(inferred(live)) == [(None, None), ("compaction", None)]
    finally:
        generations._read_cached.cache_clear()


# --- comparison ---------------------------------------------------------------------------------


def test_comparison_finds_the_messages_a_compaction_kept(tmp_path: Path) -> None:
    live = kimi_copy(tmp_path)
    rotated = read_snapshot(live.with_name("context_3.jsonl")).messages
    now = read_snapshot(live).messages
    comparison = compare(rotated, now)
    # The last exchange was kept after the summary, at another place.
    assert [message.text for message in comparison.in_both] == [
        "Running it.",
        "<system>Command executed successfully.</system>hello\n",
        "hello.py now defines greet() and prints hello world.",
    ]
    assert now.index(comparison.in_both[0]) == 1 and rotated.index(comparison.in_both[0]) > 1
    assert len(comparison.only_there) == len(rotated) - 3
    assert len(comparison.only_here) == len(now) - 3


def test_comparison_matches_each_message_once_wherever_it_is() -> None:
    there = [user("a"), answer("ok"), user("b"), answer("ok")]
    here = [Message(role="user", content=[TextPart(text="b")]), answer("ok"), user("c")]
    comparison = compare(there, here)
    assert [m.text for m in comparison.in_both] == ["ok", "b"]
    assert [m.text for m in comparison.only_there] == ["a", "ok"]
    assert [m.text for m in comparison.only_here] == ["c"]


def test_a_tool_result_is_the_same_message_only_for_the_same_call() -> None:
    first = Message(role="tool", content="a.py", tool_call_id="call_1")
    second = Message(role="tool", content="a.py", tool_call_id="call_2")
    assert compare([first], [second]).common == 0
    assert compare([first], [first.model_copy()]).common == 1


async def test_the_preview_of_a_kimi_rotation_counts_what_the_compaction_kept(
    tmp_path: Path,
) -> None:
    live = kimi_copy(tmp_path)
    context = Context(live)
    await context.restore()
    try:
        session = await facade_of(context)
        entries = await asyncio.to_thread(session.travel.rotations)
        assert [(e.rotation.path.name, e.rotation.reason, e.on_live_path) for e in entries] == [
            ("context_3.jsonl", "compaction", True),
            ("context_2.jsonl", "compaction", True),
            ("context_1.jsonl", "compaction", True),
        ]
        preview = await session.travel.preview("context_3.jsonl")
        assert preview.rotation is not None and preview.rotation.reason == "compaction"
        assert preview.comparison.common == 3
    finally:
        await context.close()


# --- with Kimi CLI's own Context ------------------------------------------------------------------

KIMI_ROTATE = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from kimi_cli.soul.compaction import COMPACTION_OUTPUT_PREFIX
    from kimi_cli.soul.context import Context
    from kimi_cli.soul.message import system
    from kosong.message import Message, TextPart

    DMAIL = DMAIL_TEXT

    async def turn(context, text, answer, tokens):
        # As KimiSoul does: a checkpoint for the turn, then one before its step.
        await context.checkpoint(add_user_message=False)
        await context.append_message(Message(role="user", content=text))
        await context.checkpoint(add_user_message=False)
        await context.append_message(Message(role="assistant", content=answer))
        await context.update_token_count(tokens)

    async def main():
        context = Context(Path(sys.argv[1]))
        await context.write_system_prompt("You are Kimi.")
        await turn(context, "one", "1", 100)
        await turn(context, "two", "2", 200)
        await turn(context, "three", "3", 300)
        await context.revert_to(1)
        await turn(context, "two again", "2b", 210)
        # What KimiSoul does with a D-Mail (`_agent_loop`).
        await context.revert_to(1)
        await context.checkpoint(add_user_message=False)
        await context.append_message(Message(role="user", content=[system(DMAIL)]))
        # /clear (soul/slash.py).
        await context.clear()
        await context.write_system_prompt("You are Kimi.")
        await turn(context, "fresh", "ok", 400)
        # What compact_context does with the summary.
        await context.clear()
        await context.write_system_prompt("You are Kimi.")
        await context.checkpoint(add_user_message=False)
        await context.append_message([
            Message(role="user", content=[system(COMPACTION_OUTPUT_PREFIX), TextPart(text="s")]),
            Message(role="assistant", content="ok"),
        ])
        await context.update_token_count(20)
        # The next step reports what its request held.
        await context.checkpoint(add_user_message=False)
        await context.update_token_count(450)
        print("{}")

    asyncio.run(main())
    """
)


@pytest.mark.skipif(
    KIMI_PYTHON is None,
    reason="kimi-cli is not installed (set KODE_TUI_KIMI_PYTHON to a Python that has it)",
)
def test_reasons_of_rotations_kimi_cli_made(tmp_path: Path) -> None:
    live = tmp_path / "context.jsonl"
    kimi(KIMI_ROTATE.replace("DMAIL_TEXT", repr(DMAIL)), live)
    rotations = inferred(live)
    assert reasons(rotations) == [
        ("revert", 1),
        ("dmail", 1),
        ("clear", None),
        ("compaction", None),
    ]
    assert (rotations[3].tokens, rotations[3].info["tokens_after"]) == (400, 450)
    found = lineage([(r.number, r.reason, r.info.get("source")) for r in rotations])
    assert found.live_path == {1, 2, 3, 4}
    kept = compare(read_snapshot(rotations[3].path).messages, read_snapshot(live).messages)
    assert [message.text for message in kept.in_both] == ["ok"]
