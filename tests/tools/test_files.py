"""ReadFile, WriteFile and StrReplaceFile: what the model reads, what lands on disk, what the
journal keeps."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import stat
import time
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kode_tui.fsutil import atomic_write_bytes
from kode_tui.session import Context
from kode_tui.session.journal import FileJournal
from kode_tui.tools import files
from kode_tui.tools.base import MAX_OUTPUT_CHARS, ToolEnv, ToolError
from kode_tui.tools.files import (
    ReadFile,
    ReadFileParams,
    StrReplaceFile,
    StrReplaceFileParams,
    WriteFile,
    WriteFileParams,
)
from kode_tui.wire.events import DiffBlock


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
async def context(tmp_path: Path) -> AsyncIterator[Context]:
    ctx = Context(tmp_path / "session" / "context.jsonl")
    await ctx.restore()
    yield ctx
    await ctx.close()


@pytest.fixture
def env(work: Path, context: Context) -> ToolEnv:
    return ToolEnv(work_dir=work, journal=FileJournal(context))


async def read(env: ToolEnv, path: str, **params: Any) -> Any:
    return await ReadFile().run(ReadFileParams(path=path, **params), env, "call_1")


async def write(env: ToolEnv, path: str, content: str, mode: str = "overwrite") -> Any:
    params = WriteFileParams.model_validate({"path": path, "content": content, "mode": mode})
    return await WriteFile().run(params, env, "call_w")


def replace_params(path: str, edit: object) -> StrReplaceFileParams:
    return StrReplaceFileParams.model_validate({"path": path, "edit": edit})


async def replace(env: ToolEnv, path: str, edit: object) -> Any:
    return await StrReplaceFile().run(replace_params(path, edit), env, "call_r")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fill_session_disk(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """ENOSPC for every write to a file of the session whose path holds `where` (the work dir,
    on another disk, keeps its room)."""
    real_write = os.write

    def full_write(fd: int, data: Any) -> int:
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            path = ""
        if where in path:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full_write)


# --- ReadFile ------------------------------------------------------------------------------------


async def test_read_file_numbers_lines_and_words_the_result_like_kimi(
    env: ToolEnv, work: Path
) -> None:
    (work / "a.txt").write_text("one\ntwo\nthree\n")
    result = await read(env, "a.txt")
    assert result.output == "     1\tone\n     2\ttwo\n     3\tthree\n"
    assert result.message == (
        "3 lines read from file starting from line 1. Total lines in file: 3. End of file reached."
    )
    assert result.brief == "3 lines"
    assert not result.is_error


async def test_read_file_pages_a_long_file_and_says_where_to_read_on(
    env: ToolEnv, work: Path
) -> None:
    (work / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 2501)))
    first = await read(env, "long.txt")
    assert first.output.count("\n") == 1000
    assert "Total lines in file: 2500." in first.message
    assert "line_offset=1001" in first.message
    assert "End of file" not in first.message
    last = await read(env, "long.txt", line_offset=2001)
    assert last.output.splitlines()[0] == "  2001\tline 2001"
    assert last.output.count("\n") == 500
    assert last.message.endswith("Total lines in file: 2500. End of file reached.")


async def test_read_file_caps_n_lines_at_1000(env: ToolEnv, work: Path) -> None:
    (work / "long.txt").write_text("x\n" * 1500)
    result = await read(env, "long.txt", n_lines=5000)
    assert result.output.count("\n") == 1000
    assert "Max 1000 lines reached." in result.message
    assert "line_offset=1001" in result.message


async def test_read_file_counts_a_last_line_without_a_line_ending(env: ToolEnv, work: Path) -> None:
    (work / "a.txt").write_text("a\nb\nc")
    partial = await read(env, "a.txt", n_lines=1)
    assert "Total lines in file: 3." in partial.message
    whole = await read(env, "a.txt", n_lines=3)
    assert whole.output == "     1\ta\n     2\tb\n     3\tc"
    assert whole.message.endswith("Total lines in file: 3. End of file reached.")


async def test_read_file_reads_the_end_with_a_negative_offset(env: ToolEnv, work: Path) -> None:
    (work / "log.txt").write_text("".join(f"{n}\n" for n in range(1, 11)))
    result = await read(env, "log.txt", line_offset=-3)
    assert result.output == "     8\t8\n     9\t9\n    10\t10\n"
    assert result.message.startswith("3 lines read from file starting from line 8.")


async def test_read_file_of_an_empty_file_reads_no_lines(env: ToolEnv, work: Path) -> None:
    (work / "empty.txt").write_text("")
    result = await read(env, "empty.txt")
    assert result.output == ""
    assert result.message == "No lines read from file. Total lines in file: 0. End of file reached."


async def test_read_file_past_the_end_says_so(env: ToolEnv, work: Path) -> None:
    (work / "a.txt").write_text("a\n")
    result = await read(env, "a.txt", line_offset=5)
    assert result.output == ""
    assert "past the end of the file" in result.message


async def test_read_file_refuses_binary_files(env: ToolEnv, work: Path) -> None:
    (work / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(ToolError, match="binary"):
        await read(env, "image.png")


async def test_read_file_refuses_text_that_is_not_utf8(env: ToolEnv, work: Path) -> None:
    (work / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    with pytest.raises(ToolError, match="not valid UTF-8"):
        await read(env, "latin1.txt")


async def test_read_file_refuses_bad_utf8_in_a_later_page(env: ToolEnv, work: Path) -> None:
    (work / "mixed.txt").write_bytes(b"ok\n" * 5000 + "café\n".encode("latin-1"))
    with pytest.raises(ToolError, match=r"line 5001"):
        await read(env, "mixed.txt", line_offset=4990)


async def test_read_file_cuts_long_lines_with_a_marker(env: ToolEnv, work: Path) -> None:
    (work / "min.js").write_text("short\n" + "x" * 5000 + "\nend\n")
    result = await read(env, "min.js")
    second = result.output.splitlines()[1]
    assert second.startswith("     2\t" + "x" * 2000 + "... [line cut at 2000 of 5000 chars]")
    assert len(second) < 2100
    assert result.output.splitlines()[2] == "     3\tend"
    assert "Lines 2 were longer than 2000 chars" in result.message


async def test_read_file_truncates_a_huge_page_and_reads_on_from_the_first_line_not_shown(
    env: ToolEnv, work: Path
) -> None:
    (work / "wide.txt").write_text("".join(f"{n:04}" + "y" * 1900 + "\n" for n in range(1, 101)))
    result = await read(env, "wide.txt")
    assert len(result.output) <= MAX_OUTPUT_CHARS
    shown = result.output.count("\n")
    assert 20 < shown < 100
    assert "Output truncated" in result.message
    assert f"line_offset={shown + 1}" in result.message
    follow = await read(env, "wide.txt", line_offset=shown + 1)
    assert follow.output.startswith(f"{shown + 1:6}\t{shown + 1:04}")


async def test_read_file_reports_a_missing_file(env: ToolEnv) -> None:
    with pytest.raises(ToolError, match=r"`nope\.txt` does not exist"):
        await read(env, "nope.txt")


async def test_read_file_reports_a_directory(env: ToolEnv, work: Path) -> None:
    (work / "src").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        await read(env, "src")


def test_read_file_params_refuse_offset_zero_and_zero_lines() -> None:
    with pytest.raises(ValidationError):
        ReadFileParams(path="a", line_offset=0)
    with pytest.raises(ValidationError):
        ReadFileParams(path="a", line_offset=-1001)
    with pytest.raises(ValidationError):
        ReadFileParams(path="a", n_lines=0)
    with pytest.raises(ValidationError):
        ReadFileParams.model_validate({"line_offset": 1})


async def test_read_file_needs_no_approval_inside_the_work_dir(env: ToolEnv, work: Path) -> None:
    (work / "a.txt").write_text("a\n")
    assert await ReadFile().permission(ReadFileParams(path="a.txt"), env) is None


async def test_read_file_outside_the_work_dir_asks_per_directory(
    env: ToolEnv, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "notes.txt").write_text("hi\n")
    permission = await ReadFile().permission(ReadFileParams(path=str(outside / "notes.txt")), env)
    assert permission is not None
    assert permission.kind == "read"
    assert permission.action == "read outside the work dir"
    assert permission.scope == f"read:{outside.resolve()}"
    assert permission.scope_label == f"reads in {outside.resolve()}"
    assert permission.outside_work_dir


async def test_read_file_through_a_link_leading_outside_asks(
    env: ToolEnv, work: Path, tmp_path: Path
) -> None:
    (tmp_path / "secret.txt").write_text("s\n")
    (work / "link.txt").symlink_to(tmp_path / "secret.txt")
    permission = await ReadFile().permission(ReadFileParams(path="link.txt"), env)
    assert permission is not None and permission.outside_work_dir


async def test_a_symlink_loop_asks_and_fails_clearly_instead_of_crashing_the_turn(
    env: ToolEnv, work: Path
) -> None:
    # A hostile repo's `src -> src`: resolving it raised RuntimeError out of permission().
    (work / "loop").symlink_to("loop")
    (work / "a").symlink_to("b")
    (work / "b").symlink_to("a")
    for name in ("loop", "a", "loop/x.txt"):
        params = ReadFileParams(path=name)
        permission = await ReadFile().permission(params, env)
        assert permission is not None and permission.outside_work_dir  # cannot be resolved
        with pytest.raises(ToolError, match="does not exist"):
            await ReadFile().run(params, env, "call")


# --- WriteFile -----------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["/blobs/", "context.jsonl"])
async def test_an_edit_that_cannot_be_journaled_leaves_the_file_as_it_was(
    env: ToolEnv, work: Path, context: Context, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # The session's disk is full, the work dir's is not: the edit was made, then recording it
    # failed with "unexpected error", and no revert could ever undo it.
    (work / "a.txt").write_text("before\n")
    fill_session_disk(monkeypatch, where)

    for name in ("a.txt", "new.txt"):
        with pytest.raises(ToolError, match="the disk is full") as caught:
            await write(env, name, "after\n")
        assert "nothing was written" in caught.value.message or "taken back" in caught.value.message

    assert (work / "a.txt").read_text() == "before\n"
    assert not (work / "new.txt").exists()
    assert not context.file_edits
    assert sorted(p.name for p in work.iterdir()) == ["a.txt"]  # no temp file left


# --- WriteFile, the usual cases -------------------------------------------------------------------


async def test_write_file_creates_parents_and_records_the_edit(
    env: ToolEnv, work: Path, context: Context
) -> None:
    result = await write(env, "pkg/sub/new.py", "print('hi')\nprint('bye')\n")
    assert (work / "pkg/sub/new.py").read_text() == "print('hi')\nprint('bye')\n"
    assert result.message == "File successfully created. Current size: 25 bytes."
    assert result.brief == "wrote 2 lines"
    assert result.display == [
        DiffBlock(path="pkg/sub/new.py", old_text="", new_text="print('hi')\nprint('bye')\n")
    ]
    [edit] = context.file_edits
    assert edit.record.path == "pkg/sub/new.py"
    assert edit.record.before is None
    assert edit.record.after == sha(b"print('hi')\nprint('bye')\n")
    assert edit.record.tool_call_id == "call_w"
    assert env.journal is not None
    assert env.journal.blob(edit.record.after) == b"print('hi')\nprint('bye')\n"


async def test_write_file_overwrites_and_keeps_both_images(
    env: ToolEnv, work: Path, context: Context
) -> None:
    (work / "a.txt").write_text("old\n")
    result = await write(env, "a.txt", "new\n")
    assert result.message == "File successfully overwritten. Current size: 4 bytes."
    [edit] = context.file_edits
    assert env.journal is not None
    assert edit.record.before is not None and edit.record.after is not None
    assert env.journal.blob(edit.record.before) == b"old\n"
    assert env.journal.blob(edit.record.after) == b"new\n"
    # The record is in context.jsonl itself, not only in memory.
    assert '"_file_edit"' in context.path.read_text()


async def test_write_file_appends_to_the_end(env: ToolEnv, work: Path, context: Context) -> None:
    (work / "log.txt").write_text("first\n")
    result = await write(env, "log.txt", "second\n", mode="append")
    assert (work / "log.txt").read_text() == "first\nsecond\n"
    assert result.message == "File successfully appended to. Current size: 13 bytes."
    assert result.brief == "appended 1 line"
    [edit] = context.file_edits
    assert edit.record.before == sha(b"first\n")
    assert edit.record.after == sha(b"first\nsecond\n")


async def test_write_file_replaces_atomically_and_keeps_the_mode(env: ToolEnv, work: Path) -> None:
    script = work / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o751)
    inode = script.stat().st_ino
    await write(env, "run.sh", "echo new\n")
    assert script.read_text() == "echo new\n"
    assert script.stat().st_mode & 0o7777 == 0o751
    assert script.stat().st_ino != inode  # a new file renamed over the old one
    assert sorted(p.name for p in work.iterdir()) == ["run.sh"]  # no temp file left


async def test_write_file_gives_a_new_file_the_umask_mode(env: ToolEnv, work: Path) -> None:
    old = os.umask(0o027)
    try:
        await write(env, "new.txt", "x")
    finally:
        os.umask(old)
    assert (work / "new.txt").stat().st_mode & 0o777 == 0o640


async def test_write_file_through_a_symlink_writes_its_target(env: ToolEnv, work: Path) -> None:
    (work / "real.txt").write_text("old\n")
    (work / "link.txt").symlink_to("real.txt")
    await write(env, "link.txt", "new\n")
    assert (work / "link.txt").is_symlink()
    assert (work / "real.txt").read_text() == "new\n"


async def test_str_replace_through_a_symlink_edits_its_target_and_keeps_link_and_mode(
    env: ToolEnv, work: Path
) -> None:
    (work / "real.txt").write_text("old\n")
    (work / "real.txt").chmod(0o640)
    (work / "link.txt").symlink_to("real.txt")
    result = await replace(env, "link.txt", {"old": "old", "new": "new"})
    assert not result.is_error
    assert os.readlink(work / "link.txt") == "real.txt"
    assert (work / "real.txt").read_text() == "new\n"
    assert (work / "real.txt").stat().st_mode & 0o777 == 0o640


def test_our_own_files_are_private_and_a_link_in_their_place_is_replaced(
    tmp_path: Path,
) -> None:
    """A session folder may come from elsewhere: a link planted as state.json must not make a
    save write where it points."""
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("not ours\n")
    state = tmp_path / "state.json"
    state.symlink_to(elsewhere)
    atomic_write_bytes(state, b"{}\n")
    assert not state.is_symlink() and state.read_bytes() == b"{}\n"
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert elsewhere.read_text() == "not ours\n"


async def test_write_file_onto_a_directory_is_an_error(env: ToolEnv, work: Path) -> None:
    (work / "src").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        await write(env, "src", "x")


async def test_write_file_without_a_journal_still_writes(work: Path) -> None:
    await WriteFile().run(WriteFileParams(path="a.txt", content="x"), ToolEnv(work_dir=work), "c")
    assert (work / "a.txt").read_text() == "x"


async def test_write_file_permission_inside_shows_the_diff(env: ToolEnv, work: Path) -> None:
    (work / "a.txt").write_text("one\n")
    params = WriteFileParams(path="a.txt", content="two\n", mode="append")
    permission = await WriteFile().permission(params, env)
    assert permission is not None
    assert permission.kind == "edit"
    assert permission.action == "edit file"
    assert permission.description == "WriteFile a.txt"
    assert permission.scope == "edit"
    assert permission.scope_label == "all edits in the work dir"
    assert not permission.outside_work_dir
    assert permission.display == [DiffBlock(path="a.txt", old_text="one\n", new_text="one\ntwo\n")]


async def test_write_file_permission_outside_names_the_file(env: ToolEnv, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "x.txt"
    permission = await WriteFile().permission(WriteFileParams(path=str(target), content="x"), env)
    assert permission is not None
    assert permission.scope == f"edit:{target}"
    assert permission.scope_label == f"edits of {target}"
    assert permission.outside_work_dir
    assert permission.display == [DiffBlock(path=str(target), old_text="", new_text="x")]


def test_write_file_params_refuse_an_unknown_mode() -> None:
    with pytest.raises(ValidationError):
        WriteFileParams.model_validate({"path": "a", "content": "x", "mode": "prepend"})


# --- StrReplaceFile ------------------------------------------------------------------------------

SOURCE = """def greet(name):
    print("hello", name)


def part(name):
    print("bye", name)
"""


async def test_str_replace_applies_edits_in_order_and_records_them(
    env: ToolEnv, work: Path, context: Context
) -> None:
    (work / "a.py").write_text(SOURCE)
    result = await replace(
        env,
        "a.py",
        [
            {"old": "def part(name):", "new": "def leave(name):"},
            {"old": "def leave(name):\n    print(", "new": "def leave(name):\n    log("},
        ],
    )
    assert (work / "a.py").read_text() == SOURCE.replace(
        "def part(name):\n    print(", ("def leave(name):\n    log(")
    )
    assert result.message == (
        "File successfully edited. Applied 2 edits with 2 total replacements."
    )
    assert result.display[0].new_text == (work / "a.py").read_text()
    [edit] = context.file_edits
    assert edit.record.before == sha(SOURCE.encode())
    assert edit.record.after == sha((work / "a.py").read_bytes())
    assert edit.record.tool_call_id == "call_r"


async def test_str_replace_writes_nothing_when_any_edit_fails(
    env: ToolEnv, work: Path, context: Context
) -> None:
    (work / "a.py").write_text(SOURCE)
    with pytest.raises(ToolError, match=r"Edit 2 of 2: `old` was not found.*Nothing was written"):
        await replace(
            env,
            "a.py",
            [{"old": "greet", "new": "welcome"}, {"old": "no such text", "new": "x"}],
        )
    assert (work / "a.py").read_text() == SOURCE
    assert context.file_edits == []


async def test_str_replace_reports_every_line_of_an_ambiguous_match(
    env: ToolEnv, work: Path
) -> None:
    (work / "a.py").write_text(SOURCE)
    with pytest.raises(ToolError) as caught:
        await replace(env, "a.py", {"old": "name)", "new": "who)"})
    message = caught.value.message
    assert "found 4 times" in message
    assert "at lines 1, 2, 5, 6" in message
    assert "replace_all" in message and "context" in message
    assert (work / "a.py").read_text() == SOURCE


async def test_str_replace_replace_all_replaces_every_occurrence(env: ToolEnv, work: Path) -> None:
    (work / "a.py").write_text(SOURCE)
    result = await replace(env, "a.py", {"old": "name", "new": "who", "replace_all": True})
    assert "name" not in (work / "a.py").read_text()
    assert result.message.endswith("Applied 1 edit with 4 total replacements.")


async def test_str_replace_suggests_a_line_that_differs_in_whitespace(
    env: ToolEnv, work: Path
) -> None:
    (work / "a.py").write_text(SOURCE)
    with pytest.raises(ToolError) as caught:
        await replace(env, "a.py", {"old": 'print("bye",  name)', "new": "x"})
    assert "did you mean line 6" in caught.value.message.lower()
    assert caught.value.output == '     6\t    print("bye", name)\n'


async def test_str_replace_suggests_a_line_that_differs_in_case(env: ToolEnv, work: Path) -> None:
    (work / "a.py").write_text(SOURCE)
    with pytest.raises(ToolError, match="Did you mean line 5: `def part"):
        await replace(env, "a.py", {"old": "DEF PART(name):", "new": "x"})


async def test_str_replace_suggests_a_multi_line_near_match(env: ToolEnv, work: Path) -> None:
    (work / "a.py").write_text(SOURCE)
    with pytest.raises(ToolError) as caught:
        await replace(env, "a.py", {"old": "def part(name):\n  print('bye', name)", "new": "x"})
    # Quotes differ, so there is no near match: the model is told to copy the text exactly.
    assert "copy the text exactly" in caught.value.message
    with pytest.raises(ToolError) as caught:
        await replace(env, "a.py", {"old": 'def part(name):\n  print("bye", name)', "new": "x"})
    assert "line 5" in caught.value.message
    assert caught.value.output.splitlines() == [
        "     5\tdef part(name):",
        '     6\t    print("bye", name)',
    ]


async def test_str_replace_rejects_identical_old_and_new(env: ToolEnv, work: Path) -> None:
    (work / "a.py").write_text(SOURCE)
    with pytest.raises(ToolError, match="identical"):
        await replace(env, "a.py", {"old": "greet", "new": "greet"})


async def test_str_replace_rejects_an_empty_old_string(env: ToolEnv, work: Path) -> None:
    (work / "a.py").write_text(SOURCE)
    with pytest.raises(ToolError, match="empty `old`"):
        await replace(env, "a.py", {"old": "", "new": "x"})


async def test_str_replace_on_a_missing_file_is_an_error(env: ToolEnv) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        await replace(env, "missing.py", {"old": "a", "new": "b"})


async def test_str_replace_refuses_a_binary_file(env: ToolEnv, work: Path) -> None:
    (work / "blob.bin").write_bytes(b"abc\0def")
    with pytest.raises(ToolError, match="binary"):
        await replace(env, "blob.bin", {"old": "abc", "new": "x"})


async def test_str_replace_matches_a_file_with_windows_line_endings(
    env: ToolEnv, work: Path
) -> None:
    (work / "a.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await replace(env, "a.txt", {"old": "one\ntwo", "new": "1\n2"})
    assert (work / "a.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_str_replace_keeps_the_mode(env: ToolEnv, work: Path) -> None:
    (work / "run.sh").write_text("echo a\n")
    (work / "run.sh").chmod(0o700)
    await replace(env, "run.sh", {"old": "a", "new": "b"})
    assert (work / "run.sh").stat().st_mode & 0o7777 == 0o700


async def test_str_replace_permission_shows_the_diff_of_the_whole_edit(
    env: ToolEnv, work: Path
) -> None:
    (work / "a.py").write_text(SOURCE)
    params = replace_params(
        "a.py", [{"old": "greet", "new": "welcome"}, {"old": "part", "new": "leave"}]
    )
    permission = await StrReplaceFile().permission(params, env)
    assert permission is not None
    assert permission.scope == "edit"
    assert permission.description == "StrReplaceFile a.py"
    assert permission.display == [
        DiffBlock(
            path="a.py",
            old_text=SOURCE,
            new_text=SOURCE.replace("greet", "welcome").replace("part", "leave"),
        )
    ]


async def test_str_replace_that_cannot_apply_needs_no_approval_inside(
    env: ToolEnv, work: Path
) -> None:
    (work / "a.py").write_text(SOURCE)
    params = replace_params("a.py", {"old": "absent", "new": "x"})
    assert await StrReplaceFile().permission(params, env) is None


async def test_str_replace_outside_the_work_dir_always_asks(env: ToolEnv, tmp_path: Path) -> None:
    target = tmp_path / "other.py"
    target.write_text(SOURCE)
    params = replace_params(str(target), {"old": "absent", "new": "x"})
    permission = await StrReplaceFile().permission(params, env)
    assert permission is not None
    assert permission.outside_work_dir
    assert permission.scope == f"edit:{target}"


def test_str_replace_params_take_one_edit_or_a_list() -> None:
    single = replace_params("a", {"old": "x", "new": "y"})
    several = replace_params("a", [{"old": "x", "new": "y"}, {"old": "y", "new": "z"}])
    assert len(single.edits()) == 1 and len(several.edits()) == 2
    with pytest.raises(ValidationError):
        replace_params("a", {"old": "x"})
    with pytest.raises(ValidationError):
        replace_params("a", "x -> y")


def test_the_file_tools_publish_kimi_parameter_names() -> None:
    def properties(tool: Any) -> set[str]:
        return set(tool.schema()["function"]["parameters"]["properties"])

    assert properties(ReadFile()) == {"path", "line_offset", "n_lines"}
    assert properties(WriteFile()) == {"path", "content", "mode"}
    assert properties(StrReplaceFile()) == {"path", "edit"}
    assert [ReadFile.name, WriteFile.name, StrReplaceFile.name] == [
        "ReadFile",
        "WriteFile",
        "StrReplaceFile",
    ]


async def test_an_edit_interrupted_while_writing_still_reaches_the_journal(
    env: ToolEnv, work: Path, context: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = files.write_atomically

    def slow_write(path: Path, data: bytes, **checks: Any) -> None:
        time.sleep(0.2)
        real_write(path, data, **checks)

    monkeypatch.setattr(files, "write_atomically", slow_write)
    task = asyncio.create_task(write(env, "a.txt", "x\n"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(1000):
        if context.file_edits:
            break
        await asyncio.sleep(0.02)
    assert (work / "a.txt").read_text() == "x\n"
    [edit] = context.file_edits
    assert edit.record.after == sha(b"x\n")


# --- the file must still be what the approval showed ---------------------------------------------


async def test_write_file_refuses_to_overwrite_an_edit_made_while_the_approval_was_pending(
    env: ToolEnv, work: Path
) -> None:
    (work / "a.txt").write_text("original\n")
    params = WriteFileParams(path="a.txt", content="model\n")
    permission = await WriteFile().permission(params, env)
    assert permission is not None
    (work / "a.txt").write_text("the user's edit\n")  # while the question is on screen
    with pytest.raises(ToolError, match="changed since the approval was shown; nothing was"):
        await WriteFile().run(params, env, "call")
    assert (work / "a.txt").read_text() == "the user's edit\n"


async def test_write_file_refuses_a_file_created_while_the_approval_was_pending(
    env: ToolEnv, work: Path
) -> None:
    params = WriteFileParams(path="new.txt", content="model\n")
    await WriteFile().permission(params, env)
    (work / "new.txt").write_text("the user's file\n")
    with pytest.raises(ToolError, match="changed since the approval"):
        await WriteFile().run(params, env, "call")
    assert (work / "new.txt").read_text() == "the user's file\n"


async def test_str_replace_file_writes_only_the_diff_that_was_approved(
    env: ToolEnv, work: Path
) -> None:
    (work / "a.py").write_text("x = 1\ny = 2\n")
    params = replace_params("a.py", {"old": "x = 1", "new": "x = 10"})
    await StrReplaceFile().permission(params, env)
    # The edit still applies, but to other content than the approval showed.
    (work / "a.py").write_text("x = 1\ny = 3\n")
    with pytest.raises(ToolError, match="changed since the approval"):
        await StrReplaceFile().run(params, env, "call")
    assert (work / "a.py").read_text() == "x = 1\ny = 3\n"


async def test_a_write_whose_symlink_was_retargeted_since_the_approval_is_refused(
    env: ToolEnv, work: Path
) -> None:
    (work / "a.txt").write_text("a\n")
    (work / "b.txt").write_text("a\n")
    (work / "link.txt").symlink_to("a.txt")
    params = WriteFileParams(path="link.txt", content="model\n")
    await WriteFile().permission(params, env)
    (work / "link.txt").unlink()
    (work / "link.txt").symlink_to("b.txt")
    with pytest.raises(ToolError, match="changed since the approval"):
        await WriteFile().run(params, env, "call")
    assert (work / "b.txt").read_text() == "a\n"


async def test_a_write_restoring_a_masked_key_still_refuses_a_file_changed_since_the_approval(
    env: ToolEnv, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kode_tui import masking
    from kode_tui.message import FunctionBody, ToolCall
    from kode_tui.tools.toolset import Toolset

    key = "sk-test-" + hashlib.sha256(str(work).encode()).hexdigest()[:24]
    monkeypatch.setenv("OPENAI_API_KEY", key)
    masking.refresh()
    (work / ".env").write_text(f"OPENAI_API_KEY={key}\n")
    # The model rewrites the .env it read masked: the marker becomes the key again.
    arguments = '{"path": ".env", "content": "OPENAI_API_KEY=[masked: OPENAI_API_KEY]\\nX=1\\n"}'
    call = ToolCall(id="c", function=FunctionBody(name="WriteFile", arguments=arguments))
    toolset = Toolset([WriteFile()])
    prepared = toolset.prepare(call)
    assert await toolset.permission(prepared, env) is not None
    (work / ".env").write_text(f"OPENAI_API_KEY={key}\nUSER=1\n")  # while the question is up

    result = await toolset.run(prepared, env)

    assert result.is_error and "changed since the approval" in result.message
    assert (work / ".env").read_text() == f"OPENAI_API_KEY={key}\nUSER=1\n"


async def test_an_unchanged_file_is_written_after_the_approval(env: ToolEnv, work: Path) -> None:
    (work / "a.txt").write_text("original\n")
    params = WriteFileParams(path="a.txt", content="model\n", mode="append")
    await WriteFile().permission(params, env)
    result = await WriteFile().run(params, env, "call")
    assert not result.is_error
    assert (work / "a.txt").read_text() == "original\nmodel\n"


def test_the_last_check_before_the_rename_keeps_a_concurrent_edit(work: Path) -> None:
    target = work / "a.txt"
    target.write_text("seen\n")
    with pytest.raises(files.FileChanged):
        files.write_atomically(target, b"new\n", expected=b"something else\n")
    assert target.read_text() == "seen\n"
    assert [p.name for p in work.iterdir()] == ["a.txt"]  # no temp file left behind


# --- ReadFile keeps bounded slices of a huge line ----------------------------------------------


@pytest.mark.parametrize(
    ("lines", "params", "shown_line"),
    [
        (["{huge}\n", "end\n"], {}, 1),
        (["start\n", "{huge}"], {"line_offset": -1}, 2),
        (["{huge}\n", "end\n"], {"line_offset": 2}, 2),
    ],
)
async def test_read_file_of_a_huge_single_line_keeps_memory_bounded(
    env: ToolEnv, work: Path, lines: list[str], params: dict[str, int], shown_line: int
) -> None:
    huge = "é" + "x" * (6 * 1024 * 1024)
    (work / "big.txt").write_text("".join(line.format(huge=huge) for line in lines))
    del huge
    tracemalloc.start()
    try:
        result = await read(env, "big.txt", **params)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * 1024 * 1024  # the line is 6 MiB: held whole, it costs three times that
    assert "Total lines in file: 2." in result.message
    if shown_line == 2 and "line_offset" in params and params["line_offset"] == 2:
        assert result.output == "     2\tend\n"
    else:
        assert f"[line cut at 2000 of {6 * 1024 * 1024 + 1} chars]" in result.output
        assert f"Lines {shown_line} were longer than 2000 chars" in result.message


async def test_read_file_still_refuses_a_huge_line_that_is_not_utf8(
    env: ToolEnv, work: Path
) -> None:
    (work / "bad.txt").write_bytes(b"x" * 100_000 + b"\xff" + b"x" * 10 + b"\n")
    with pytest.raises(ToolError, match=r"not valid UTF-8 text \(line 1\)"):
        await read(env, "bad.txt")
