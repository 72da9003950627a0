"""Context: what a session's context.jsonl holds, how it is written, reverted and restored."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kode_tui.message import FileEditRecord, UnknownPart, shown_count, shown_messages
from kode_tui.session import lock as lock_module
from kode_tui.session import rotation
from kode_tui.session.context import Context
from kode_tui.session.lock import SessionLock, SessionLocked
from tests.conftest import KIMI_FIXTURE
from tests.session_helpers import dumps, user, write_turns


@pytest.fixture
def session_dir(tmp_path: Path) -> Path:
    return tmp_path / "session"


@pytest.fixture
def path(session_dir: Path) -> Path:
    return session_dir / "context.jsonl"


async def reopened(path: Path) -> Context:
    context = Context(path)
    await context.restore()
    return context


# --- writing and reading back ------------------------------------------------------------------


async def test_restore_of_a_missing_file_finds_nothing_and_creates_nothing(path: Path) -> None:
    context = Context(path)
    assert await context.restore() is False
    assert len(context.history) == 0
    assert context.n_checkpoints == 0
    assert not path.parent.exists()


async def test_restore_of_an_empty_file_finds_nothing(path: Path) -> None:
    path.parent.mkdir()
    path.touch()
    context = Context(path)
    assert await context.restore() is False
    assert context.warnings == []


async def test_what_is_written_is_what_a_restore_reads(path: Path) -> None:
    async with Context(path) as context:
        await context.write_system_prompt("You are kode.")
        await write_turns(context, 3)
        written = dumps(context.history)
    restored = await reopened(path)
    assert dumps(restored.history) == written
    assert restored.n_checkpoints == 6
    assert restored.token_count == 290
    assert restored.system_prompt == "You are kode."
    assert [c.id for c in restored.checkpoints] == [0, 1, 2, 3, 4, 5]
    assert [c.message_index for c in restored.checkpoints] == [0, 1, 3, 4, 6, 7]
    assert restored.warnings == []


async def test_records_are_written_in_kimi_format(path: Path) -> None:
    async with Context(path) as context:
        await context.checkpoint()
        await context.append_message(user("hi"))
        await context.update_token_count(12)
    assert path.read_text().splitlines() == [
        '{"role": "_checkpoint", "id": 0}',
        '{"role":"user","content":"hi"}',
        '{"role": "_usage", "token_count": 12}',
    ]


async def test_each_record_reaches_the_os_before_the_call_returns(path: Path) -> None:
    context = Context(path)
    await context.append_message(user("first"))
    assert path.read_bytes() == b'{"role":"user","content":"first"}\n'
    await context.checkpoint()
    assert path.read_bytes().endswith(b'{"role": "_checkpoint", "id": 0}\n')
    await context.close()


async def test_a_checkpoint_can_announce_itself_to_the_model(path: Path) -> None:
    async with Context(path) as context:
        assert await context.checkpoint(add_user_message=True) == 0
        assert await context.checkpoint(add_user_message=True) == 1
        assert [m.text for m in context.history] == [
            "<system>CHECKPOINT 0</system>",
            "<system>CHECKPOINT 1</system>",
        ]


async def test_pending_tokens_estimate_what_was_added_since_the_last_usage(path: Path) -> None:
    async with Context(path) as context:
        await context.update_token_count(1000)
        await context.append_message(user("x" * 400))
        assert context.pending_tokens == 100
        assert context.token_count_with_pending == 1100
        await context.update_token_count(1200)
        assert context.pending_tokens == 0
        await context.append_message(user("y" * 80))
    restored = await reopened(path)
    assert restored.token_count == 1200
    assert restored.pending_tokens == 20


async def test_messages_are_parsed_only_when_read(path: Path) -> None:
    async with Context(path) as context:
        await write_turns(context, 50)
    restored = await reopened(path)
    # Only the last step is read at restore (to check its tool calls all have results).
    assert "148 not parsed yet" in repr(restored.history)
    assert restored.history[-1].role == "tool"
    assert "148 not parsed yet" in repr(restored.history)
    assert restored.history[4].tool_calls is not None
    assert restored.history[4].tool_calls[0].id == "call_1"


async def test_restoring_twice_is_refused(path: Path) -> None:
    async with Context(path) as context:
        await context.append_message(user("hi"))
    context = await reopened(path)
    with pytest.raises(RuntimeError):
        await context.restore()


async def test_writing_before_restore_picks_up_the_existing_file(path: Path) -> None:
    async with Context(path) as context:
        await write_turns(context, 2)
    async with Context(path) as context:
        assert await context.checkpoint() == 4
        assert len(context.history) == 6


async def test_a_system_prompt_is_prepended_to_a_file_without_one(path: Path) -> None:
    async with Context(path) as context:
        await write_turns(context, 2)
        before = path.read_bytes()
        await context.write_system_prompt("Be brief.")
        assert context.rotations() == []
        assert path.read_bytes().endswith(before)
        assert (
            path.read_text().splitlines()[0] == '{"role": "_system_prompt", "content": "Be brief."}'
        )
        await context.revert_to(2)
        assert [m.text for m in context.history] == ["turn 0", "Running it.", "a.py"]
    restored = await reopened(path)
    assert restored.system_prompt == "Be brief."
    assert restored.n_checkpoints == 2


async def test_a_new_system_prompt_replaces_the_old_one_which_is_kept(path: Path) -> None:
    async with Context(path) as context:
        await context.write_system_prompt("old")
        await write_turns(context, 1)
        await context.write_system_prompt("old")
        assert context.rotations() == []
        await context.write_system_prompt("new")
        (rotated,) = context.rotations()
        assert rotated.reason == "system_prompt"
        assert b'"content": "old"' in rotated.path.read_bytes()
        assert path.read_bytes().count(b"_system_prompt") == 1
        assert len(context.history) == 3
    assert (await reopened(path)).system_prompt == "new"


# --- revert, clear, restore_from --------------------------------------------------------------


async def test_revert_keeps_the_bytes_before_the_checkpoint_and_rotates_the_rest(
    path: Path,
) -> None:
    async with Context(path) as context:
        await write_turns(context, 4)
        before = path.read_bytes()
        offset = context.checkpoints[4].offset
        rotated = await context.revert_to(4)
        assert rotated == path.with_name("context_1.jsonl")
        assert rotated.read_bytes() == before
        assert path.read_bytes() == before[:offset]
        assert [m.text for m in context.history][-1] == "a.py"
        assert len(context.history) == 6
        assert context.n_checkpoints == 4
        assert context.token_count == 190
        assert context.pending_tokens == 0


async def test_memory_after_a_revert_equals_a_fresh_restore(path: Path) -> None:
    async with Context(path) as context:
        await write_turns(context, 5)
        await context.append_message(user("trailing"))
        await context.revert_to(7)
        await context.append_message(user("after"))
        await context.checkpoint()
        in_memory = (dumps(context.history), context.n_checkpoints, context.token_count)
        pending = context.pending_tokens
        checkpoints = list(context.checkpoints)
    restored = await reopened(path)
    assert (dumps(restored.history), restored.n_checkpoints, restored.token_count) == in_memory
    assert restored.pending_tokens == pending
    assert list(restored.checkpoints) == checkpoints


async def test_revert_notes_why_in_rotations_jsonl(path: Path) -> None:
    async with Context(path) as context:
        await write_turns(context, 3)
        await context.revert_to(2, reason="dmail")
        (note,) = [json.loads(line) for line in (path.parent / "rotations.jsonl").open()]
        assert note["file"] == "context_1.jsonl"
        assert note["reason"] == "dmail"
        assert note["checkpoint"] == 2
        assert note["tokens"] == 290
        assert note["messages"] == 9
        (info,) = context.rotations()
        assert (info.number, info.reason, info.checkpoint, info.tokens, info.messages) == (
            1,
            "dmail",
            2,
            290,
            9,
        )
        assert info.size == info.path.stat().st_size


async def test_revert_to_a_missing_checkpoint_touches_nothing(path: Path) -> None:
    async with Context(path) as context:
        await write_turns(context, 2)
        before = {p.name: p.read_bytes() for p in path.parent.iterdir()}
        for bad in (4, 99, -1, True, "1"):
            with pytest.raises(ValueError):
                await context.revert_to(bad)  # type: ignore[arg-type]
        assert {p.name: p.read_bytes() for p in path.parent.iterdir()} == before
        assert len(context.history) == 6


async def test_revert_to_checkpoint_zero_empties_the_conversation(path: Path) -> None:
    async with Context(path) as context:
        await context.write_system_prompt("prompt")
        await write_turns(context, 2)
        await context.revert_to(0)
        assert len(context.history) == 0
        assert context.n_checkpoints == 0
        assert context.token_count == 0
        assert context.system_prompt == "prompt"


async def test_history_read_after_a_revert_comes_from_the_rotated_bytes(path: Path) -> None:
    async with Context(path) as context:
        await write_turns(context, 3)
    context = await reopened(path)
    rotated = await context.revert_to(4)
    rotated.unlink()  # the open file still holds the bytes the history points into
    assert [m.text for m in context.history] == [
        *("turn 0", "Running it.", "a.py"),
        *("turn 1", "Running it.", "a.py"),
    ]
    await context.close()


async def test_clear_starts_empty_and_keeps_the_old_context(path: Path) -> None:
    async with Context(path) as context:
        await context.write_system_prompt("prompt")
        await write_turns(context, 2)
        before = path.read_bytes()
        rotated = await context.clear()
        assert rotated is not None and rotated.read_bytes() == before
        assert path.read_bytes() == b""
        assert (len(context.history), context.n_checkpoints, context.token_count) == (0, 0, 0)
        assert context.system_prompt is None
        assert await context.clear() is None
        assert [r.reason for r in context.rotations()] == ["clear"]


async def test_clear_records_what_a_compaction_tells_it(path: Path) -> None:
    async with Context(path) as context:
        await write_turns(context, 2)
        await context.clear(reason="compaction", tokens_after=300, strategy="Summary")
        (info,) = context.rotations()
        assert info.reason == "compaction"
        assert info.info == {"tokens_after": 300, "strategy": "Summary"}


async def test_restore_from_makes_a_rotation_live_and_keeps_the_current_one(path: Path) -> None:
    async with Context(path) as context:
        await write_turns(context, 3)
        full = path.read_bytes()
        first = await context.revert_to(2)
        await context.append_message(user("another way"))
        current = path.read_bytes()
        second = await context.restore_from(first)
        assert second == path.with_name("context_2.jsonl")
        assert path.read_bytes() == full
        assert second is not None and second.read_bytes() == current
        assert first.read_bytes() == full
        assert len(context.history) == 9
        assert context.n_checkpoints == 6
        assert [r.reason for r in context.rotations()] == ["revert", "restore"]
        assert context.rotations()[1].info == {"source": "context_1.jsonl"}
        await context.append_message(user("continues"))
    restored = await reopened(path)
    assert restored.history[-1].text == "continues"


async def test_restore_from_refuses_the_live_file_and_missing_files(path: Path) -> None:
    async with Context(path) as context:
        await write_turns(context, 1)
        with pytest.raises(ValueError):
            await context.restore_from(path)
        with pytest.raises(FileNotFoundError):
            await context.restore_from(path.with_name("context_9.jsonl"))


async def test_rotation_numbers_continue_after_the_highest_and_leave_gaps(path: Path) -> None:
    async with Context(path) as context:
        await write_turns(context, 3)
        path.with_name("context_7.jsonl").write_text("")
        assert (await context.revert_to(4)).name == "context_8.jsonl"
        assert (await context.revert_to(2)).name == "context_9.jsonl"


async def test_a_rotation_name_taken_meanwhile_is_skipped(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_link = rotation.link

    def racing_link(source: Path, target: Path) -> None:
        if target.name == "context_1.jsonl":
            target.write_text("another writer's file\n")
        real_link(source, target)

    monkeypatch.setattr(rotation, "link", racing_link)
    async with Context(path) as context:
        await write_turns(context, 2)
        assert (await context.revert_to(1)).name == "context_2.jsonl"
    assert path.with_name("context_1.jsonl").read_text() == "another writer's file\n"


async def test_file_edits_are_indexed_by_checkpoint(path: Path) -> None:
    edit = FileEditRecord(path="a.py", before=None, after="ab12", tool_call_id="call_0")
    async with Context(path) as context:
        await context.checkpoint()
        await context.append_file_edit(edit)
        await context.checkpoint()
        await context.append_file_edit(edit.model_copy(update={"path": "b.py"}))
        assert [e.path for e in context.file_edits_since(0)] == ["a.py", "b.py"]
        assert [e.path for e in context.file_edits_since(1)] == ["b.py"]
    restored = await reopened(path)
    assert [e.record.path for e in restored.file_edits] == ["a.py", "b.py"]
    assert len(restored.history) == 0
    await restored.revert_to(1)
    assert [e.record.path for e in restored.file_edits] == ["a.py"]


# --- one writer, private files ----------------------------------------------------------------


async def test_a_second_opener_is_told_which_process_holds_the_session(path: Path) -> None:
    first = Context(path)
    await first.append_message(user("hi"))
    with pytest.raises(SessionLocked) as caught:
        await Context(path).restore()
    assert caught.value.pid == os.getpid()
    assert str(os.getpid()) in str(caught.value)
    await first.close()
    second = await reopened(path)
    assert len(second.history) == 1


def test_a_session_held_by_another_process_names_that_pid(path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import asyncio, sys
                from kode_tui.session.context import Context
                async def main():
                    context = Context({str(path)!r})
                    await context.checkpoint()
                    print("ready", flush=True)
                    sys.stdin.readline()
                asyncio.run(main())
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        import asyncio

        with pytest.raises(SessionLocked, match=f"process {holder.pid}"):
            asyncio.run(Context(path).restore())
    finally:
        holder.communicate("\n", timeout=30)


async def test_session_files_are_private(path: Path) -> None:
    async with Context(path) as context:
        await write_turns(context, 2)
        await context.revert_to(1)
        await context.clear()
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    for name in ("context.jsonl", "context_1.jsonl", "context_2.jsonl", "rotations.jsonl", "lock"):
        assert stat.S_IMODE((path.parent / name).stat().st_mode) == 0o600, name


# --- Kimi CLI's own files ---------------------------------------------------------------------


@pytest.fixture
def kimi_session(tmp_path: Path) -> Path:
    target = tmp_path / "kimi-session"
    shutil.copytree(KIMI_FIXTURE, target)
    for file in target.iterdir():
        file.chmod(0o600)
    return target


async def test_a_kimi_context_restores_completely(kimi_session: Path) -> None:
    context = await reopened(kimi_session / "context.jsonl")
    assert context.warnings == []
    assert [m.role for m in context.history] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert context.n_checkpoints == 3
    assert context.token_count == 4064
    assert context.system_prompt is not None
    assert context.system_prompt.startswith("You are Kimi Code CLI")
    assert context.history[0].text.startswith("<system>Previous context has been compacted.")
    lines = [
        json.loads(line)
        for line in (kimi_session / "context.jsonl").read_text().splitlines()
        if not json.loads(line)["role"].startswith("_")
    ]
    assert [json.loads(m.to_json()) for m in context.history] == lines
    assert [r.number for r in context.rotations()] == [1, 2, 3]
    assert {r.reason for r in context.rotations()} == {None}


async def test_kimi_rotations_restore_and_revert(kimi_session: Path) -> None:
    context = await reopened(kimi_session / "context.jsonl")
    await context.restore_from(kimi_session / "context_1.jsonl")
    assert len(context.history) == 11
    assert context.n_checkpoints == 7
    assert context.history[9].parts[0].type == "think"
    kept = await context.revert_to(5)
    assert kept.name == "context_5.jsonl"
    assert context.history[0].text == "Create hello.py"
    assert len(context.history) == 8
    await context.close()


# --- bad data ---------------------------------------------------------------------------------

GOOD = [
    b'{"role": "_checkpoint", "id": 0}',
    b'{"role":"user","content":"hello"}',
    b'{"role": "_checkpoint", "id": 1}',
    b'{"role": "_usage", "token_count": 10}',
    b'{"role":"assistant","content":"hi there"}',
    b'{"role":"user","content":"more"}',
]


def write_lines(path: Path, *lines: bytes, end: bytes = b"\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + end)


async def assert_good_records_kept(path: Path, *, warnings: int) -> Context:
    context = Context(path)
    assert await context.restore() is True
    assert [m.text for m in context.history] == ["hello", "hi there", "more"]
    assert [c.id for c in context.checkpoints] == [0, 1]
    assert context.token_count == 10
    assert len(context.warnings) == warnings, context.warnings
    return context


async def test_a_torn_last_line_is_copied_aside_then_cut(path: Path) -> None:
    write_lines(path, *GOOD, b'{"role":"assistant","content":"cut sh', end=b"")
    original = path.read_bytes()
    context = await assert_good_records_kept(path, warnings=1)
    assert "cut short" in context.warnings[0]
    (aside,) = path.parent.glob("context.jsonl.damaged-*")
    assert aside.read_bytes() == original
    assert stat.S_IMODE(aside.stat().st_mode) == 0o600
    assert path.read_bytes() == b"\n".join(GOOD) + b"\n"
    await context.append_message(user("next"))
    await context.close()
    restored = await reopened(path)
    assert restored.warnings == []
    assert restored.history[-1].text == "next"


async def test_a_garbage_line_in_the_middle_is_skipped_and_kept(path: Path) -> None:
    write_lines(path, *GOOD[:2], b"\x00\x01garbage{{", *GOOD[2:])
    context = await assert_good_records_kept(path, warnings=1)
    assert "line 3" in context.warnings[0] or ":3:" in context.warnings[0]
    await context.revert_to(1)
    assert b"garbage{{" in path.read_bytes()
    await context.close()


async def test_invalid_utf8_keeps_the_message_with_replacement_characters(path: Path) -> None:
    write_lines(path, *GOOD[:5], b'{"role":"user","content":"mo\xffre"}')
    context = Context(path)
    await context.restore()
    assert len(context.warnings) == 1
    assert "UTF-8" in context.warnings[0]
    assert context.history[-1].text == "mo\ufffdre"
    await context.close()


@pytest.mark.parametrize("line", [b"[1, 2]", b'"text"', b"42", b"null", b'{"content":"no role"}'])
async def test_a_line_that_is_not_a_record_is_skipped(path: Path, line: bytes) -> None:
    write_lines(path, *GOOD[:2], line, *GOOD[2:])
    await assert_good_records_kept(path, warnings=1)


@pytest.mark.parametrize(
    "line",
    [
        b'{"role": "_checkpoint"}',
        b'{"role": "_checkpoint", "id": "7"}',
        b'{"role": "_checkpoint", "id": 7.0}',
        b'{"role": "_checkpoint", "id": true}',
        b'{"role": "_checkpoint", "id": -3}',
    ],
)
async def test_a_checkpoint_without_an_int_id_is_skipped(path: Path, line: bytes) -> None:
    write_lines(path, *GOOD[:4], line, *GOOD[4:])
    context = await assert_good_records_kept(path, warnings=1)
    assert "checkpoint" in context.warnings[0]


async def test_several_problems_warn_once_each(path: Path) -> None:
    write_lines(
        path,
        b"garbage",
        *GOOD[:2],
        b"[]",
        b'{"role": "_checkpoint", "id": "x"}',
        *GOOD[2:],
        b'{"role":"user","content":"torn',
        end=b"",
    )
    context = await assert_good_records_kept(path, warnings=4)
    assert len(set(context.warnings)) == 4


async def test_blank_lines_are_ignored_quietly(path: Path) -> None:
    write_lines(path, b"", *GOOD[:3], b"   ", b"", *GOOD[3:], end=b"\n\n")
    await assert_good_records_kept(path, warnings=0)


async def test_a_complete_last_line_without_newline_is_kept(path: Path) -> None:
    write_lines(path, *GOOD, end=b"")
    context = await assert_good_records_kept(path, warnings=0)
    assert not list(path.parent.glob("*.damaged-*"))
    await context.append_message(user("next"))
    await context.close()
    restored = await reopened(path)
    assert [m.text for m in restored.history] == ["hello", "hi there", "more", "next"]


async def test_control_characters_in_strings_are_accepted(path: Path) -> None:
    write_lines(path, *GOOD, b'{"role":"user","content":"tab\there"}')
    context = await assert_good_records_kept_plus(path, "tab\there")
    await context.close()


async def assert_good_records_kept_plus(path: Path, extra: str) -> Context:
    context = Context(path)
    await context.restore()
    assert [m.text for m in context.history] == ["hello", "hi there", "more", extra]
    assert context.warnings == []
    return context


async def test_two_records_on_one_line_are_garbage(path: Path) -> None:
    write_lines(
        path, *GOOD[:2], b'{"role":"user","content":"a"}{"role":"user","content":"b"}', *GOOD[2:]
    )
    await assert_good_records_kept(path, warnings=1)


async def test_unknown_records_and_parts_are_kept_byte_for_byte(path: Path) -> None:
    unknown_record = b'{"role": "_future_thing", "data": [1, 2]}'
    unknown_part = b'{"role":"user","content":[{"type":"audio_url","audio_url":{"url":"x"}}],"x":1}'
    write_lines(path, *GOOD[:2], unknown_record, unknown_part, *GOOD[2:])
    context = Context(path)
    await context.restore()
    assert context.warnings == []
    assert isinstance(context.history[1].parts[0], UnknownPart)
    assert context.history[1].to_json().encode() == unknown_part
    await context.revert_to(1)
    assert unknown_record in path.read_bytes().splitlines()
    assert unknown_part in path.read_bytes().splitlines()
    await context.close()


async def test_a_message_that_does_not_fit_the_schema_keeps_what_fits(path: Path) -> None:
    write_lines(
        path,
        *GOOD,
        b'{"role":"user","content":[{"type":"text","text":5},{"type":"text","text":"ok"}]}',
    )
    context = Context(path)
    await context.restore()
    last = context.history[-1]
    assert last.role == "user"
    assert [getattr(part, "text", None) for part in last.parts] == [5, "ok"]
    await context.close()


async def test_a_rotation_notes_the_count_the_model_reported_not_the_estimate_after_it(
    path: Path,
) -> None:
    # As a revert notes it. (A compacted context has a count too: the `_usage` estimate that
    # compaction writes, as Kimi CLI does.)
    async with Context(path) as context:
        await write_turns(context, 2)
        await context.append_message(user("x" * 400))
        reported = context.token_count
        assert context.pending_tokens > 0 and reported > 0
        await context.clear()
        (info,) = context.rotations()
        assert info.tokens == reported


@pytest.mark.parametrize("opener,closer", [("[", "]"), ('{"a":', "}")])
async def test_a_line_nested_a_thousand_deep_is_skipped_as_damaged_and_kept(
    path: Path, opener: str, closer: str
) -> None:
    deep = ('{"role":"user","content":' + opener * 1000 + "1" + closer * 1000 + "}").encode()
    if opener == "[":
        deep = deep.replace(b"1", b"", 1)
    content = b'{"role":"user","content":"one"}\n' + deep + b'\n{"role":"user","content":"two"}\n'
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)

    restored = await reopened(path)

    assert [m.text for m in restored.history] == ["one", "two"]
    assert len(restored.warnings) == 1 and "nested too deeply" in restored.warnings[0]
    assert path.read_bytes() == content


async def test_shown_messages_are_counted_without_parsing_every_message(path: Path) -> None:
    """The checkpoint details' count of a long session: the lines that cannot hold a checkpoint
    note are counted unread, and none read to tell is kept parsed (a 10k-message session held
    every message parsed, +40 MiB, from its first frame)."""
    async with Context(path) as context:
        await write_turns(context, 20)
        await context.append_message(user("<system>CHECKPOINT 7</system>"))
        await context.append_message(user("the CHECKPOINT word alone is no note"))
        await write_turns(context, 5, start=20)
        await context.append_message(user("<system>CHECKPOINT 9</system>"))
    restored = await reopened(path)
    history = restored.history
    unparsed = repr(history)
    counts = [history.count_shown(stop) for stop in (0, 10, 81, 82, 83, len(history))]
    assert repr(history) == unparsed  # nothing was kept parsed
    every = list(history)
    assert counts == [len(shown_messages(every[:stop])) for stop in (0, 10, 81, 82, 83, len(every))]
    assert counts[-1] == len(every) - 2
    assert shown_count(every, len(every)) == counts[-1]  # a plain list counts the same


def test_a_lock_shared_for_a_moment_with_a_child_of_ours_is_waited_for(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child process spawned by another thread holds our descriptors until it execs (or, as
    here, while it runs with the lock's passed to it): the lock names our own pid then, and
    taking it waits for the child instead of calling our own session locked."""
    path.parent.mkdir(parents=True)
    held = SessionLock(path.with_name("lock"))
    held.acquire()
    assert held._fd is not None
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        pass_fds=(held._fd,),
    )
    held.release()  # the child alone holds it now, as a forked child would
    waits: list[float] = []

    def child_lets_go(seconds: float) -> None:
        waits.append(seconds)
        if child.poll() is None:
            assert child.stdin is not None
            child.stdin.close()
            child.wait(timeout=30)

    monkeypatch.setattr(lock_module, "sleep", child_lets_go)
    second = SessionLock(path.with_name("lock"))
    second.acquire()
    assert second.held and waits
    second.release()


def test_a_lock_another_process_holds_is_refused_without_waiting(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path.parent.mkdir(parents=True)
    (path.with_name("lock")).write_text("1\n")  # the holder's pid, not ours
    held = SessionLock(path.with_name("lock"))
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('ready', flush=True); sys.stdin.read()",
            str(held.path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        monkeypatch.setattr(lock_module, "sleep", lambda _s: pytest.fail("waited"))
        with pytest.raises(SessionLocked, match="process 1"):
            held.acquire()
    finally:
        child.communicate("", timeout=30)
