"""A step is whole on disk: one write, cut back when it fails, and tool calls that have no result
(a kill, an old file, a hand edit) get one saying they were interrupted, on disk when they end the
history and in every request wherever they are."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kode_tui.message import INTERRUPTED_RESULT, FunctionBody, Message, ToolCall, paired
from kode_tui.session import Context
from kode_tui.wire import events as ev
from tests.session_helpers import assistant_with_tool_call, tool_result, user
from tests.soul_helpers import call, make_rig


def fd_path(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


class FullDisk:
    """os.write for files whose name ends with `suffix`: the first `room` bytes go through,
    then ENOSPC (a partial write first, as a real full disk does), until `free()`. With `when`,
    the disk fills at the first write holding those bytes."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        suffix: str | tuple[str, ...],
        room: int = 10,
        when: bytes = b"",
    ) -> None:
        self.suffix = suffix
        self.room = room
        self.full = True
        self.when = when
        self.failures = 0
        self._write = os.write
        monkeypatch.setattr(os, "write", self.write)

    def write(self, fd: int, data: Any) -> int:
        if self.when and self.when in bytes(data):
            self.when = b""
        if self.full and not self.when and fd_path(fd).endswith(self.suffix):
            if self.room:
                written = self._write(fd, bytes(data)[: self.room])
                self.room = 0
                return written
            self.failures += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._write(fd, data)

    def free(self) -> None:
        self.full = False


def lines_of(path: Path) -> list[dict[str, Any]]:
    """Every line of `path`, each of which must be a JSON object (no torn or glued line)."""
    data = path.read_bytes()
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.splitlines()]


def assert_paired(history: list[Message]) -> None:
    """Each assistant message's tool calls are followed by exactly one result each."""
    index = 0
    while index < len(history):
        message = history[index]
        index += 1
        assert message.role != "tool", f"a tool result answers no call: {message}"
        if message.role == "assistant" and message.tool_calls:
            ids = [c.id for c in message.tool_calls]
            answered = []
            while index < len(history) and history[index].role == "tool":
                answered.append(history[index].tool_call_id)
                index += 1
            assert sorted(answered) == sorted(ids)


def write_lines(path: Path, messages: list[Message]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(m.model_dump_json(exclude_unset=True) + "\n" for m in messages), encoding="utf-8"
    )


# --- one write per step ------------------------------------------------------------------------


async def test_a_step_reaches_the_file_in_one_write_of_all_its_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rig = await make_rig(
        tmp_path,
        [
            {"tool_calls": [call("Echo", text="a"), call("Echo", text="b")]},
            {"text": "Done."},
        ],
    )
    writes: list[bytes] = []
    real_write = os.write

    def spy(fd: int, data: Any) -> int:
        if fd_path(fd).endswith("context.jsonl"):
            writes.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", spy)

    await rig.soul.run("echo twice")

    (step,) = [w for w in writes if b'"tool_calls"' in w]
    records = [json.loads(line) for line in step.splitlines()]
    assert [r["role"] for r in records] == ["assistant", "_usage", "tool", "tool"]
    assert [r["tool_call_id"] for r in records[2:]] == ["call_1_0", "call_1_1"]


# --- interrupted tool calls --------------------------------------------------------------------


async def test_tool_calls_left_without_results_by_a_kill_are_answered_in_the_file_on_restore(
    tmp_path: Path,
) -> None:
    path = tmp_path / "context.jsonl"
    two_calls = assistant_with_tool_call("call_a", "ls")
    assert two_calls.tool_calls is not None
    second = two_calls.tool_calls[0].model_copy(update={"id": "call_b"})
    two_calls.tool_calls.append(second)
    # Killed after the first result was written (as older versions wrote them one by one).
    write_lines(path, [user("list"), two_calls, tool_result("call_a", "a.txt")])

    async with Context(path) as context:
        assert await context.restore()
        assert_paired(list(context.history))

    on_disk = lines_of(path)
    assert on_disk[-1] == {
        "role": "tool",
        "content": INTERRUPTED_RESULT,
        "tool_call_id": "call_b",
    }
    async with Context(path) as again:  # answered once, not at every start
        await again.restore()
        assert len(again.history) == 4
    assert len(lines_of(path)) == 4


async def test_the_request_pairs_every_tool_call_even_when_the_gap_is_mid_history(
    tmp_path: Path,
) -> None:
    write_lines(
        tmp_path / "session" / "context.jsonl",
        [
            user("first"),
            assistant_with_tool_call("call_gap", "ls"),  # its result never reached the file
            user("second"),
            Message(role="assistant", content="ok"),
            tool_result("call_nobody_made", "orphan"),  # a result of no call
        ],
    )
    rig = await make_rig(tmp_path, [{"tool_calls": [call("Echo", text="x")]}, {"text": "Done."}])

    result = await rig.soul.run("third")

    assert result.stop_reason == "done"
    for request in rig.provider.requests:
        assert_paired(request.history)
    sent = rig.provider.requests[0].history
    assert sent[2].role == "tool" and sent[2].tool_call_id == "call_gap"
    assert sent[2].text == INTERRUPTED_RESULT
    assert all(m.tool_call_id != "call_nobody_made" for m in sent)
    # The file is left as it was: only the request is mended.
    assert sum(1 for line in rig.lines() if line.get("tool_call_id") == "call_nobody_made") == 1


def test_paired_drops_a_second_result_for_the_same_call() -> None:
    history = [
        user("go"),
        assistant_with_tool_call("call_1", "ls"),
        tool_result("call_1", "first"),
        tool_result("call_1", "second"),
    ]
    sent = paired(history)
    assert [m.text for m in sent if m.role == "tool"] == ["first"]


def test_calls_of_one_message_sharing_an_id_or_without_one_are_sent_apart() -> None:
    # A file written by another tool (or edited by hand) may hold two calls under one id, or
    # under none: sent as they are, a provider answers HTTP 400 on every later turn.
    def calls(*ids: str) -> Message:
        return Message(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id=i, function=FunctionBody(name="Shell")) for i in ids],
        )

    history = [
        user("go"),
        calls("a", "a", "a_2"),
        tool_result("a", "first"),
        tool_result("a", "second"),
        user("next"),
        calls("", ""),
        tool_result("", "only"),
    ]

    sent = paired(history)

    assert_paired(sent)
    ids = [[c.id for c in m.tool_calls] for m in sent if m.tool_calls]
    assert all(i and len(set(i)) == len(i) for i in ids)
    assert ids[0][:2] == ["a", "a_3"] and ids[0][2] == "a_2"
    results = [(m.tool_call_id, m.text) for m in sent if m.role == "tool"]
    assert results[:3] == [("a", "first"), ("a_3", "second"), ("a_2", INTERRUPTED_RESULT)]
    assert results[3:] == [(ids[1][0], "only"), (ids[1][1], INTERRUPTED_RESULT)]
    assert paired(history) == sent  # the same request every time: the prompt cache holds
    assert history[1].tool_calls is not None and history[1].tool_calls[1].id == "a"


# --- a full disk -------------------------------------------------------------------------------


async def test_a_step_that_hits_a_full_disk_is_cut_back_told_once_and_the_next_turn_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rig = await make_rig(
        tmp_path,
        [
            {"text": "First answer."},
            {"tool_calls": [call("Echo", text="lost?")]},
            {"tool_calls": [call("Echo", text="kept")]},
            {"text": "Done."},
        ],
    )
    await rig.soul.run("one")
    before = rig.context.path.read_bytes()
    history_before = len(rig.context.history)
    size_before = rig.context.token_count_with_pending

    # The disk fills while the tool runs: the step's write is the first to fail.
    disk = FullDisk(monkeypatch, "context.jsonl", room=10, when=b"lost?")
    result = await rig.soul.run("two")
    await rig.settle()

    assert disk.failures >= 1
    assert result.stop_reason == "error"
    errors = rig.of(ev.Error)
    assert len(errors) == 1
    assert errors[0].message.startswith("disk full:")
    assert "nothing was lost" in errors[0].message
    assert "Traceback" not in errors[0].message
    assert isinstance(rig.events[-1], ev.TurnEnd)
    # The user's message (written before the disk filled) stays; the failed step left nothing.
    assert rig.context.path.read_bytes().startswith(before)
    assert b'"lost?"' not in rig.context.path.read_bytes()
    assert len(rig.context.history) == history_before + 1
    assert rig.context.token_count_with_pending >= size_before
    assert rig.context.history[-1].role == "user"

    disk.free()
    monkeypatch.undo()
    result = await rig.soul.run("three")
    assert result.stop_reason == "done"
    lines = lines_of(rig.context.path)
    assert [line.get("content") for line in lines if line["role"] == "user"] == [
        "one",
        "two",
        "three",
    ]
    await rig.context.close()
    async with Context(rig.context.path) as reopened:
        await reopened.restore()
        assert reopened.warnings == []
        assert_paired(list(reopened.history))


@pytest.mark.parametrize(
    "operation",
    ["message", "checkpoint", "usage", "file_edit", "records", "system_prompt"],
)
async def test_every_write_path_cuts_a_failed_write_back_before_the_next_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    from kode_tui.message import FileEditRecord, UsageRecord
    from kode_tui.session.context import ContextWriteError

    path = tmp_path / "context.jsonl"
    context = Context(path)
    await context.restore()
    if operation != "system_prompt":
        await context.append_message(user("kept"))
    before = path.read_bytes() if path.exists() else b""
    disk = FullDisk(monkeypatch, "context.jsonl", room=5)
    attempts = {
        "message": lambda: context.append_message(user("x" * 100)),
        "checkpoint": lambda: context.checkpoint(),
        "usage": lambda: context.update_token_count(123),
        "file_edit": lambda: context.append_file_edit(
            FileEditRecord(path="a.txt", before=None, after="0" * 64, tool_call_id="t")
        ),
        "records": lambda: context.append_records([user("y" * 100), UsageRecord(token_count=9)]),
        "system_prompt": lambda: context.write_system_prompt("You are a test."),
    }
    with pytest.raises(ContextWriteError) as caught:
        await attempts[operation]()
    assert caught.value.disk_full
    assert (path.read_bytes() if path.exists() else b"") == before
    assert len(context.history) == (0 if operation == "system_prompt" else 1)

    disk.free()
    await context.append_message(user("after"))
    await context.close()
    texts = [line.get("content") for line in lines_of(path) if line["role"] == "user"]
    assert texts[-1] == "after"


async def test_a_cut_that_fails_too_is_made_before_the_next_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "context.jsonl"
    context = Context(path)
    await context.restore()
    await context.append_message(user("kept"))
    disk = FullDisk(monkeypatch, "context.jsonl", room=7)
    real_ftruncate = os.ftruncate
    failing = {"cut": True}

    def ftruncate(fd: int, size: int) -> None:
        if failing["cut"]:
            raise OSError(errno.EIO, "cannot cut now")
        real_ftruncate(fd, size)

    monkeypatch.setattr(os, "ftruncate", ftruncate)
    with pytest.raises(OSError):
        await context.append_message(user("torn"))
    assert len(path.read_bytes()) > len(b'{"role":"user","content":"kept"}\n')  # torn bytes

    disk.free()
    failing["cut"] = False
    await context.append_message(user("after"))
    await context.close()
    assert [line["content"] for line in lines_of(path)] == ["kept", "after"]


def mounted_tmpfs(where: Path, size: str) -> Iterator[Path]:
    import subprocess

    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip() or 'not permitted'}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    yield from mounted_tmpfs(tmp_path / "disk", "256k")


async def test_on_a_really_full_disk_no_record_is_lost_and_work_goes_on_when_room_returns(
    small_disk: Path,
) -> None:
    rig = await make_rig(
        small_disk,
        [{"text": "A" * 2000}, {"text": "B" * 2000}, {"text": "C" * 2000}],
        settings=None,
    )
    await rig.soul.run("first")
    filler = small_disk / "filler"
    with filler.open("wb", buffering=0) as fill:
        try:
            while True:
                fill.write(b"\0" * 4096)
        except OSError as error:
            assert error.errno == errno.ENOSPC

    failed = await rig.soul.run("second")
    await rig.settle()
    assert failed.stop_reason == "error"
    assert [e.message.split(":")[0] for e in rig.of(ev.Error)] == ["disk full"]

    filler.unlink()
    third = await rig.soul.run("third")
    assert third.stop_reason == "done"
    await rig.context.close()
    lines = lines_of(rig.context.path)  # no torn line, nothing glued
    assert any(line.get("content") == "third" for line in lines)
    assert any("A" * 2000 in json.dumps(line) for line in lines)


async def test_a_compaction_that_hits_a_full_disk_leaves_the_context_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kode_tui.soul.compaction import LLMSummaryCompaction

    rig = await make_rig(
        tmp_path,
        [
            {"text": "First."},
            {"text": "Second."},
            {"text": "<current_focus>x</current_focus>"},
            {"text": "<current_focus>y</current_focus>"},
        ],
    )
    rig.soul.compactor.strategy = LLMSummaryCompaction()
    await rig.soul.run("one")
    await rig.soul.run("two")
    before = rig.context.path.read_bytes()
    texts = [m.text for m in rig.context.history]

    FullDisk(monkeypatch, ("context.jsonl", "context.jsonl.tmp"), room=20)
    with pytest.raises(OSError) as caught:
        await rig.soul.compact()

    assert str(caught.value).startswith("disk full:") and "nothing was lost" in str(caught.value)
    assert rig.context.path.read_bytes() == before
    assert [m.text for m in rig.context.history] == texts
    assert not rig.context.path.with_name("context.jsonl.tmp").exists()
    monkeypatch.undo()
    assert await rig.soul.compact()  # room again: it goes through
    assert "<current_focus>y</current_focus>" in rig.context.path.read_text()
    assert_paired(list(rig.context.history))
