"""ReadFile, WriteFile and StrReplaceFile: the agent's file tools (DESIGN.md §6).

Names, parameters and result wording follow Kimi CLI's tools, so a model trained on Kimi's calls
them correctly. Reads are text only and paged; writes are atomic, keep the file's mode bits and
are recorded in the session's file journal so a revert can undo them.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

import msgspec
from pydantic import BaseModel, Field, PrivateAttr, model_validator

from kode_tui.fsutil import FileChanged, write_atomically
from kode_tui.humanize import plural
from kode_tui.tools.base import (
    MAX_LINE_CHARS,
    MAX_OUTPUT_CHARS,
    Permission,
    Tool,
    ToolEnv,
    ToolError,
    ToolOutput,
    count_lines,
    truncate,
)
from kode_tui.tools.protected import REASON, is_protected
from kode_tui.tools.textfile import SNIFF_BYTES as SNIFF_BYTES  # Grep sniffs as ReadFile does
from kode_tui.tools.textfile import (
    Page,
    check_readable,
    check_text_head,
    not_text,
    read_page,
)
from kode_tui.wire.events import DiffBlock

MAX_LINES = 1000
"""The most lines one ReadFile call returns."""


def read_outside_permission(env: ToolEnv, path: Path, description: str) -> Permission | None:
    """The approval a read of `path` needs: none inside the work dir nor in the folder of a
    skill the system prompt lists (read, listed and searched as it tells the model to), else
    one per directory.

    The scope is the directory that is really read (symlinks followed), so approving reads in
    one place never covers a link that leads somewhere else.
    """
    if env.is_inside(path):
        return None
    if env.skill_file is not None and env.skill_file(path):
        return None
    # realpath, not resolve(): a symlink loop must ask like any other outside path, not
    # raise out of the approval (which crashed the turn).
    real = Path(os.path.realpath(path))
    folder = real if real.is_dir() else real.parent
    return Permission(
        kind="read",
        action="read outside the work dir",
        description=description,
        scope=f"read:{folder}",
        scope_label=f"reads in {folder}",
        outside_work_dir=True,
    )


# --- ReadFile ------------------------------------------------------------------------------------


class ReadFileParams(BaseModel):
    path: str = Field(
        description=(
            "The path of the file to read, relative to the working directory or absolute. "
            "Files outside the working directory need the user's approval."
        )
    )
    line_offset: int = Field(
        default=1,
        description=(
            "The line number to start reading from (1 is the first line). Set it to read on "
            "in a long file. A negative value counts from the end: -100 reads the last 100 "
            f"lines; it cannot go below -{MAX_LINES}."
        ),
    )
    n_lines: int = Field(
        default=MAX_LINES,
        ge=1,
        description=(
            f"How many lines to read; at most {MAX_LINES}, which is also the default. "
            "Set it when you only need part of the file."
        ),
    )

    @model_validator(mode="after")
    def _check_offset(self) -> ReadFileParams:
        if self.line_offset == 0:
            raise ValueError("line_offset cannot be 0: use 1 for the first line or -1 for the last")
        if self.line_offset < -MAX_LINES:
            raise ValueError(
                f"line_offset cannot be below -{MAX_LINES}; read from a positive line_offset "
                "using the total line count instead"
            )
        return self


class ReadFile(Tool[ReadFileParams]):
    """Reads a UTF-8 text file, a page of at most 1000 numbered lines at a time."""

    name = "ReadFile"
    description = (
        "Read a text file. The content comes back with a line number before each line, like "
        "`cat -n`, after a <system> note that says how many lines were read and how many the "
        f"file has. At most {MAX_LINES} lines are returned per call: to read a longer file, call "
        "again with the `line_offset` the note gives, or read the end with a negative "
        f"`line_offset`. Lines longer than {MAX_LINE_CHARS} characters are cut. Only UTF-8 text "
        "can be read: images and other binary files are refused. To list a directory use Glob; "
        "to find where something is, Grep is faster than reading files one by one. Read several "
        "files in parallel when you need them."
    )
    params = ReadFileParams

    async def permission(self, params: ReadFileParams, env: ToolEnv) -> Permission | None:
        path = env.resolve(params.path)
        if env.tasks is not None and env.tasks.owns_output(path):
            return None  # the session's own task output, as TaskOutput says to read it
        return read_outside_permission(env, path, f"ReadFile {env.display_path(path)}")

    async def run(self, params: ReadFileParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        path = env.resolve(params.path)
        shown = env.display_path(path)
        wanted = min(params.n_lines, MAX_LINES)
        try:
            page = await asyncio.to_thread(read_page, path, shown, params.line_offset, wanted)
        except OSError as error:
            raise ToolError(
                f"Failed to read `{shown}`: {error.strerror or error}.", brief="Read failed"
            ) from error
        return _page_output(page, params)


def _page_output(page: Page, params: ReadFileParams) -> ToolOutput:
    output = "".join(f"{number:6}\t{line}" for number, line in page.lines)
    if page.lines:
        first = page.lines[0][0]
        message = f"{len(page.lines)} lines read from file starting from line {first}."
    else:
        first = params.line_offset if params.line_offset > 0 else page.total + 1
        message = "No lines read from file."
    message += f" Total lines in file: {page.total}."
    output, cut = truncate(output)
    # After a cut, read on from the first line not shown in full.
    shown_lines = output.count("\n") if cut else len(page.lines)
    next_line = first + shown_lines
    if cut:
        message += (
            f" Output truncated at {MAX_OUTPUT_CHARS} characters: lines from {next_line} on are "
            "not shown."
        )
    elif page.lines and len(page.lines) == MAX_LINES and params.n_lines > MAX_LINES:
        message += f" Max {MAX_LINES} lines reached."
    if not page.lines and params.line_offset > page.total + 1:
        message += f" line_offset {params.line_offset} is past the end of the file."
    elif next_line > page.total:
        message += " End of file reached."
    else:
        message += f" To read on, call ReadFile with line_offset={next_line}."
    if page.cut_lines:
        message += (
            f" Lines {_join_numbers(page.cut_lines)} were longer than {MAX_LINE_CHARS} chars "
            "and were cut."
        )
    brief = plural(len(page.lines), "line") if page.lines else "no lines"
    return ToolOutput(output=output, message=message, brief=brief)


# --- writing -------------------------------------------------------------------------------------


class _Change(msgspec.Struct, frozen=True):
    """A file's content before a tool call and the content the call would leave."""

    before: bytes | None
    after: bytes
    message: str
    brief: str

    def diff(self, shown: str) -> DiffBlock:
        old = "" if self.before is None else self.before.decode("utf-8", errors="replace")
        return DiffBlock(path=shown, old_text=old, new_text=self.after.decode("utf-8", "replace"))


async def _edit_permission(
    tool: str, env: ToolEnv, path: Path, display: list[DiffBlock]
) -> Permission:
    shown = env.display_path(path)
    inside = env.is_inside(path)
    # In a thread: the check stats the path's folders and, once per change of git's config,
    # runs git to find `core.hooksPath`; the event loop (the UI) must not wait on that.
    protected = await asyncio.to_thread(is_protected, path, env.work_dir)
    return Permission(
        kind="edit",
        action="edit file",
        description=f"{tool} {shown}",
        scope="edit" if inside else f"edit:{path}",
        scope_label="all edits in the work dir" if inside else f"edits of {path}",
        outside_work_dir=not inside,
        display=display,
        always_ask=REASON if protected else "",
    )


class _Shown(msgspec.Struct, frozen=True):
    """What the approval of a write was computed from: the file and its content's hash."""

    target: str
    digest: str | None
    """sha256 of the content; None when there was no file, `_UNREADABLE` when it failed."""


_UNREADABLE = "unreadable"


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _changed_since_shown(shown_at: _Shown | None, path: Path, change: _Change, shown: str) -> None:
    if shown_at is None:
        return  # run() without permission() (a library caller): nothing was shown
    if shown_at.target != os.path.realpath(path) or shown_at.digest != _digest(change.before):
        raise _changed(shown)


def _changed(shown: str) -> ToolError:
    return ToolError(
        f"`{shown}` changed since the approval was shown; nothing was written. Read it again "
        "and redo the change if it is still wanted.",
        brief="Changed since approval",
    )


async def _apply_change(
    env: ToolEnv, path: Path, change: _Change, shown_at: _Shown | None, tool_call_id: str
) -> ToolOutput:
    """Write `change` and record it, unless the file is no longer what the approval showed."""
    shown = env.display_path(path)
    _changed_since_shown(shown_at, path, change, shown)
    # Shielded: once the file is written, the journal must hear of it even if the user
    # interrupts, or a revert could not undo the edit.
    await asyncio.shield(_write_and_record(env, path, shown, change, tool_call_id))
    return ToolOutput(message=change.message, brief=change.brief, display=[change.diff(shown)])


async def _write_and_record(
    env: ToolEnv, path: Path, shown: str, change: _Change, tool_call_id: str
) -> None:
    journal = env.journal
    hashes: tuple[str | None, ...] = ()
    if journal is not None:
        # The images that undo the edit are kept first: an edit no revert could undo is
        # never made (the session's disk may be full while the work dir's is not).
        try:
            hashes = await journal.keep(change.before, change.after)
        except OSError as error:
            raise ToolError(
                f"Could not keep the copy of `{shown}` that would undo this edit "
                f"({_why(error)}); nothing was written.",
                brief="Write failed",
            ) from error
    try:
        await asyncio.to_thread(write_atomically, path, change.after, expected=change.before)
    except FileChanged:
        raise _changed(shown) from None
    except OSError as error:
        raise ToolError(
            f"Failed to write `{shown}`: {_why(error)}.", brief="Write failed"
        ) from error
    if journal is None:
        return
    try:
        await journal.note(shown, hashes, tool_call_id)
    except OSError as error:
        # Unrecorded, the edit would be out of reach of every revert: take it back.
        try:
            await asyncio.to_thread(_take_back, path, change)
        except (OSError, FileChanged):
            raise ToolError(
                f"`{shown}` was written, but the edit could not be recorded ({_why(error)}): "
                "a revert will not undo it.",
                brief="Not recorded",
            ) from error
        raise ToolError(
            f"The edit of `{shown}` could not be recorded ({_why(error)}), so it was taken "
            "back; the file is as it was.",
            brief="Write failed",
        ) from error


def _why(error: OSError) -> str:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full"
    return error.strerror or str(error)


def _take_back(path: Path, change: _Change) -> None:
    """Put the file back as it was before `change` (only if it still holds what it wrote)."""
    if change.before is not None:
        write_atomically(path, change.before, expected=change.after)
        return
    target = Path(os.path.realpath(path))
    try:
        now: bytes | None = target.read_bytes()
    except FileNotFoundError:
        now = None
    if now != change.after:
        raise FileChanged(str(target))
    target.unlink()


def _read_existing(path: Path, shown: str) -> bytes | None:
    if not path.exists():
        return None
    check_readable(path, shown)
    return _read_bytes(path, shown)


def _read_bytes(path: Path, shown: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise ToolError(
            f"Failed to read `{shown}`: {error.strerror or error}.", brief="Read failed"
        ) from error


# --- WriteFile -----------------------------------------------------------------------------------


class WriteFileParams(BaseModel):
    path: str = Field(
        description=(
            "The path of the file to write, relative to the working directory or absolute. "
            "Missing parent directories are created."
        )
    )
    content: str = Field(description="The text to write.")
    mode: Literal["overwrite", "append"] = Field(
        default="overwrite",
        description=(
            "`overwrite` replaces the whole file (or creates it); `append` adds the content "
            "to the end of the file."
        ),
    )
    # Set by permission(), checked by run(): the same params object travels from one to the other.
    _shown: _Shown | None = PrivateAttr(default=None)


class WriteFile(Tool[WriteFileParams]):
    """Creates, overwrites or appends to a file, atomically, recording the change."""

    name = "WriteFile"
    restores_masked = True
    description = (
        "Write text to a file: create it, replace all of it (`mode` `overwrite`, the default) or "
        "add to its end (`mode` `append`). Missing parent directories are created and an "
        "existing file keeps its permissions. Overwriting throws the old content away, so to "
        "change part of an existing file use StrReplaceFile instead. For a long file (more than "
        "a few hundred lines), write the first part with `overwrite` and the rest in further "
        "calls with `append`. The user may be asked to approve the change."
    )
    params = WriteFileParams

    async def permission(self, params: WriteFileParams, env: ToolEnv) -> Permission | None:
        path = env.resolve(params.path)
        try:
            change = await asyncio.to_thread(self._change, params, path, env.display_path(path))
            display = [change.diff(env.display_path(path))]
            digest = _digest(change.before)
        except ToolError:
            display = []  # run() reports the problem; the user still decides on the call
            digest = _UNREADABLE
        params._shown = _Shown(os.path.realpath(path), digest)
        return await _edit_permission(self.name, env, path, display)

    async def run(self, params: WriteFileParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        path = env.resolve(params.path)
        change = await asyncio.to_thread(self._change, params, path, env.display_path(path))
        return await _apply_change(env, path, change, params._shown, tool_call_id)

    @staticmethod
    def _change(params: WriteFileParams, path: Path, shown: str) -> _Change:
        before = _read_existing(path, shown)
        added = params.content.encode("utf-8")
        n_lines = count_lines(params.content)
        if params.mode == "append":
            after = (before or b"") + added
            verb, brief = "appended to", f"appended {plural(n_lines, 'line')}"
        else:
            after = added
            verb = "created" if before is None else "overwritten"
            brief = f"wrote {plural(n_lines, 'line')}"
        message = f"File successfully {verb}. Current size: {len(after)} bytes."
        return _Change(before=before, after=after, message=message, brief=brief)


# --- StrReplaceFile ------------------------------------------------------------------------------


class Edit(BaseModel):
    old: str = Field(
        description=(
            "The exact text to replace, whitespace and indentation included. It may span "
            "several lines and must occur exactly once unless `replace_all` is true."
        )
    )
    new: str = Field(description="The text to put in its place. It may span several lines.")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of exactly one."
    )


class StrReplaceFileParams(BaseModel):
    path: str = Field(
        description="The path of the file to edit, relative to the working directory or absolute."
    )
    edit: Edit | list[Edit] = Field(
        description=(
            "One edit, or a list of edits applied in order (each sees the result of the ones "
            "before it). If any edit fails, none is applied."
        )
    )

    # Set by permission(), checked by run(): the same params object travels from one to the other.
    _shown: _Shown | None = PrivateAttr(default=None)

    def edits(self) -> list[Edit]:
        return [self.edit] if isinstance(self.edit, Edit) else list(self.edit)


class StrReplaceFile(Tool[StrReplaceFileParams]):
    """Replaces exact strings in a text file; all edits of a call apply, or none."""

    name = "StrReplaceFile"
    restores_masked = True
    description = (
        "Edit a text file by replacing exact strings: each edit's `old` text must appear in the "
        "file exactly as given (whitespace and indentation included) and, unless `replace_all` "
        "is set, exactly once, so include enough surrounding lines to make it unique. Several "
        "edits can be given as a list; they are applied in order and if any of them fails "
        "nothing is written, and the error says why. Prefer this tool to WriteFile for changing "
        "existing files, and to `sed` in Shell. Read the file first so `old` matches it. "
        "The user may be asked to approve the change."
    )
    params = StrReplaceFileParams

    async def permission(self, params: StrReplaceFileParams, env: ToolEnv) -> Permission | None:
        path = env.resolve(params.path)
        inside = env.is_inside(path)
        try:
            change = await asyncio.to_thread(_replace, params, path, env.display_path(path))
        except ToolError:
            params._shown = _Shown(os.path.realpath(path), _UNREADABLE)
            if inside:
                # Nothing will be written, and run() says why: no reason to ask the user.
                return None
            # Outside the work dir even the error would tell the model what the file holds.
            return await _edit_permission(self.name, env, path, [])
        params._shown = _Shown(os.path.realpath(path), _digest(change.before))
        return await _edit_permission(self.name, env, path, [change.diff(env.display_path(path))])

    async def run(
        self, params: StrReplaceFileParams, env: ToolEnv, tool_call_id: str
    ) -> ToolOutput:
        path = env.resolve(params.path)
        change = await asyncio.to_thread(_replace, params, path, env.display_path(path))
        return await _apply_change(env, path, change, params._shown, tool_call_id)


def _replace(params: StrReplaceFileParams, path: Path, shown: str) -> _Change:
    check_readable(path, shown)
    before = _read_bytes(path, shown)
    check_text_head(before[:SNIFF_BYTES], shown)
    try:
        text = before.decode("utf-8")
    except UnicodeDecodeError:
        raise not_text(shown, "is not valid UTF-8 text") from None
    edits = params.edits()
    if not edits:
        raise ToolError("No edits were given.", brief="No edits")
    replacements = 0
    for index, edit in enumerate(edits, start=1):
        label = f"Edit {index} of {len(edits)}" if len(edits) > 1 else "The edit"
        text, count = _apply_edit(text, edit, label, shown)
        replacements += count
    after = text.encode("utf-8")
    message = (
        f"File successfully edited. Applied {plural(len(edits), 'edit')} with "
        f"{plural(replacements, 'total replacement')}."
    )
    brief = plural(replacements, "replacement")
    return _Change(before=before, after=after, message=message, brief=brief)


def _apply_edit(text: str, edit: Edit, label: str, shown: str) -> tuple[str, int]:
    unchanged = " Nothing was written."
    if not edit.old:
        raise ToolError(
            f"{label} has an empty `old` string; give the exact text to replace "
            "(use WriteFile to create or fill a file)." + unchanged,
            brief="Empty old string",
        )
    if edit.old == edit.new:
        raise ToolError(
            f"{label} has identical `old` and `new` strings, so it would change nothing."
            + unchanged,
            brief="old equals new",
        )
    old, new = edit.old, edit.new
    starts = _occurrences(text, old)
    if not starts and "\r\n" in text and "\n" in old and "\r" not in old:
        # The model writes `\n`; a file with Windows line endings should still match.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        starts = _occurrences(text, old)
    if not starts:
        raise _not_found(text, edit.old, label, shown, unchanged)
    if len(starts) > 1 and not edit.replace_all:
        lines = [text.count("\n", 0, start) + 1 for start in starts]
        raise ToolError(
            f"{label}: `old` was found {len(starts)} times in `{shown}`, at lines "
            f"{_join_numbers(lines)}. Include more surrounding context in `old` so it matches "
            "exactly once, or set `replace_all` to true to replace every occurrence." + unchanged,
            brief=f"{len(starts)} matches",
        )
    if edit.replace_all:
        return text.replace(old, new), len(starts)
    return text.replace(old, new, 1), 1


def _occurrences(text: str, old: str) -> list[int]:
    """Start offsets of the non-overlapping occurrences of `old` (the ones `replace` sees)."""
    starts: list[int] = []
    start = text.find(old)
    while start != -1:
        starts.append(start)
        start = text.find(old, start + len(old))
    return starts


def _join_numbers(numbers: list[int], limit: int = 20) -> str:
    shown = ", ".join(str(n) for n in numbers[:limit])
    return shown + (f" and {len(numbers) - limit} more" if len(numbers) > limit else "")


def _not_found(text: str, old: str, label: str, shown: str, unchanged: str) -> ToolError:
    message = f"{label}: `old` was not found in `{shown}`."
    near = _near_match(text, old)
    if near is None:
        message += " Read the file again and copy the text exactly, including indentation."
        return ToolError(message + unchanged, brief="old string not found")
    start, lines = near
    first = lines[0].strip()
    message += (
        f" Did you mean line {start}: `{first}`? A text that differs only in whitespace or "
        "letter case is there (shown below with line numbers); copy it exactly." + unchanged
    )
    output = "".join(f"{start + i:6}\t{line}\n" for i, line in enumerate(lines))
    return ToolError(message, brief="old string not found", output=output)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _near_match(text: str, old: str) -> tuple[int, list[str]] | None:
    """The first place where `old` occurs once whitespace runs (then also case) are ignored."""
    target = _squash(old)
    if not target:
        return None
    lines = text.splitlines()
    width = max(1, len(old.strip().splitlines()))
    fold: Iterable[Callable[[str], str]] = (lambda s: s, str.casefold)
    for normalise in fold:
        wanted = normalise(target)
        for index in range(max(1, len(lines) - width + 1)):
            window = lines[index : index + width]
            if wanted in normalise(_squash("\n".join(window))):
                return index + 1, window
    return None
