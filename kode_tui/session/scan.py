"""Reading a context file: one pass that indexes every line without building the messages.

`scan()` checks that every line is a well-formed JSON object, reads the small `_` records
(checkpoints, usage, system prompt, file edits) and notes where each message line starts and
ends. Message bodies stay on disk until someone reads them (see `History`): a 70 MB session opens
in tens of milliseconds, and only the messages that are looked at are ever parsed.

A clean file is checked in one call to msgspec's line decoder; a file with a bad line falls back
to checking line by line. Bad data never raises: each bad line gives one warning and is skipped
(it stays in the file). A last line without its newline is either a complete record (kept) or a
torn write (reported, so the caller can copy the file aside and cut it off).
"""

from __future__ import annotations

import codecs
import gc
import json
import logging
import mmap
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import msgspec

from kode_tui.message import MESSAGE_ROLES, FileEditRecord
from kode_tui.session.checkpoints import CheckpointIndex

log = logging.getLogger(__name__)

# Flags of a message line: how `History` must decode it.
BAD_UTF8 = 1  # undecodable bytes are shown as U+FFFD
LENIENT_JSON = 2  # only Python's json (strict=False) takes it: raw control characters


class _Line(msgspec.Struct, gc=False):
    """The fields of a line the scan needs; everything else is only syntax-checked."""

    role: str
    id: int | None = None
    token_count: int | None = None


class _SystemPromptLine(msgspec.Struct):
    content: str


_line_decoder = msgspec.json.Decoder(_Line)
_system_prompt_decoder = msgspec.json.Decoder(_SystemPromptLine)
# A line nested deeper than the decoder's limit raises RecursionError: damaged like any bad line.
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


class FileEdit(NamedTuple):
    record: FileEditRecord
    checkpoint_count: int
    """Checkpoints before the edit: reverting to checkpoint k undoes the edits with count > k."""


class Scan(msgspec.Struct):
    message_starts: array[int] = msgspec.field(default_factory=lambda: array("q"))
    message_ends: array[int] = msgspec.field(default_factory=lambda: array("q"))
    """Where each message line starts and ends in the file."""
    message_flags: dict[int, int] = msgspec.field(default_factory=dict)
    """Message index -> flags, for the few messages that need a lenient parse."""
    checkpoints: CheckpointIndex = msgspec.field(default_factory=CheckpointIndex)
    file_edits: list[FileEdit] = msgspec.field(default_factory=list)
    token_count: int = 0
    """The count the model last reported (`_usage`); 0 when none was, since the context began
    or was compacted.

    Kimi CLI and kode-tui make a checkpoint before every request, so a `_usage` written while
    checkpoint 0 is the only one cannot be a count the model reported: it is the estimate a
    compaction writes after the messages it leaves (Kimi's counts those messages alone, ours
    the whole next request). Either way it is an estimate, and it is not taken for a report:
    the messages after it count as added since (`usage_index`)."""
    first_token_count: int | None = None
    """The first count the model reported (after a compaction: what the next request held)."""
    estimated_token_count: int | None = None
    """The estimate a compaction wrote (see `token_count`), for a list's row where no count
    was reported since: better than none."""
    usage_index: int = 0
    """How many messages came before the `_usage` record of `token_count`."""
    next_checkpoint_id: int = 0
    system_prompt: str | None = None
    system_prompt_spans: list[tuple[int, int]] = msgspec.field(default_factory=list)
    """(start, end) of every `_system_prompt` line: replacing the prompt cuts them all."""
    warnings: list[str] = msgspec.field(default_factory=list)
    good_size: int = 0
    """Bytes up to the end of the last line that is not a torn tail."""
    torn_tail: bool = False
    """The last line has no newline and is not JSON: a write cut short."""


class _Lines(NamedTuple):
    starts: list[int]
    ends: list[int]
    records: list[Any]
    flags: dict[int, int]
    """Line index -> flags, for the few lines that need them."""


@contextmanager
def paused_gc() -> Iterator[None]:
    """For making tens of thousands of small objects with no cycles among them: the collector
    would only walk them again and again (it doubles the time to parse a big history)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def scan(buf: bytes | mmap.mmap, name: str = "context.jsonl") -> Scan:
    """Index a context file's content (bytes, or an mmap of the file)."""
    data = memoryview(buf).cast("B")
    result = Scan()
    with paused_gc():
        _scan(data, name, result)
    for warning in result.warnings:
        log.warning(warning)
    return result


def _scan(data: memoryview, name: str, result: Scan) -> None:
    lines = _split_fast(data) or _split_slow(data, name, result)
    numbers = _LineNumbers(data)
    for index in _invalid_utf8_lines(data, lines.starts, lines.ends):
        lines.flags[index] = lines.flags.get(index, 0) | BAD_UTF8
        result.warnings.append(
            f"{name}:{numbers.at(lines.starts[index])}: invalid UTF-8, "
            "shown with replacement characters"
        )
    _index(data, lines, name, result, numbers)


def _split_fast(data: memoryview) -> _Lines | None:
    """One C call checks every line; None when a line is bad (the slow path says which)."""
    try:
        records = _line_decoder.decode_lines(data)
    except _DECODE_ERRORS:
        return None
    starts: list[int] = []
    ends: list[int] = []
    raw = data.obj
    find = raw.find  # type: ignore[attr-defined]
    size = len(data)
    pos = 0
    while pos < size:
        end = find(b"\n", pos)
        if end < 0:
            end = size
        if end > pos:
            starts.append(pos)
            ends.append(end)
        pos = end + 1
    # A whitespace-only line, or two objects on one line (Kimi and we call that garbage), make
    # the counts differ: the slow path sorts those out.
    if len(records) != len(starts):
        return None
    return _Lines(starts, ends, records, {})


def _split_slow(data: memoryview, name: str, result: Scan) -> _Lines:
    lines = _Lines([], [], [], {})
    raw = data.obj
    find = raw.find  # type: ignore[attr-defined]
    decode = _line_decoder.decode
    size = len(data)
    pos = 0
    line_no = 0
    while pos < size:
        end = find(b"\n", pos)
        terminated = end >= 0
        if not terminated:
            end = size
        line_no += 1
        line = data[pos:end]
        try:
            record: Any = decode(line)
        except _DECODE_ERRORS:
            text = bytes(line)
            if not text.strip():
                pos = end + 1
                continue
            record = _lenient(text)
            if isinstance(record, str):
                if not terminated and record == NOT_JSON:
                    result.torn_tail = True
                    result.warnings.append(f"{name}:{line_no}: the last line was cut short")
                    result.good_size = pos
                    return lines
                result.warnings.append(f"{name}:{line_no}: skipped, {record}")
                pos = end + 1
                continue
            lines.flags[len(lines.starts)] = LENIENT_JSON
        lines.starts.append(pos)
        lines.ends.append(end)
        lines.records.append(record)
        pos = end + 1
    return lines


def _index(data: memoryview, lines: _Lines, name: str, result: Scan, numbers: _LineNumbers) -> None:
    # The hot loop of a restore: columns are appended to through local names.
    add_start = result.message_starts.append
    add_end = result.message_ends.append
    message_flags = result.message_flags
    index_columns = result.checkpoints
    add_id = index_columns.ids.append
    add_offset = index_columns.offset.append
    add_message_index = index_columns.message_index.append
    add_token_count = index_columns.token_count.append
    add_usage_index = index_columns.usage_index.append
    add_next_id = index_columns.next_id.append
    add_system_prompt = index_columns.system_prompt.append
    add_file_edit_index = index_columns.file_edit_index.append
    file_edits = result.file_edits
    warnings = result.warnings
    flags = lines.flags
    messages = 0
    token_count = 0
    first_token_count: int | None = None
    estimated_token_count: int | None = None
    usage_index = 0
    next_id = 0
    system_prompt: str | None = None
    for index, (start, end, record) in enumerate(
        zip(lines.starts, lines.ends, lines.records, strict=True)
    ):
        role = record.role
        if role in MESSAGE_ROLES:
            add_start(start)
            add_end(end)
            if flags and index in flags:
                message_flags[messages] = flags[index]
            messages += 1
        elif role == "_checkpoint":
            cid = record.id
            if type(cid) is int and cid >= 0:
                add_id(cid)
                add_offset(start)
                add_message_index(messages)
                add_token_count(token_count)
                add_usage_index(usage_index)
                add_next_id(next_id)
                add_system_prompt(system_prompt)
                add_file_edit_index(len(file_edits))
                next_id = cid + 1
            else:
                warnings.append(f"{name}:{numbers.at(start)}: skipped a checkpoint without an id")
        elif role == "_usage":
            count = record.token_count
            if type(count) is int and count >= 0:
                # Before checkpoint 1 it is a compaction's estimate (see `Scan.token_count`).
                if next_id != 1:
                    token_count = count
                    usage_index = messages
                    if first_token_count is None:
                        first_token_count = count
                else:
                    estimated_token_count = count
            else:
                warnings.append(
                    f"{name}:{numbers.at(start)}: skipped a usage record without a token count"
                )
        elif role == "_system_prompt":
            result.system_prompt_spans.append((start, end))
            try:
                system_prompt = _system_prompt_decoder.decode(_text(data, start, end)).content
            except _DECODE_ERRORS:
                warnings.append(
                    f"{name}:{numbers.at(start)}: skipped a system prompt that is not a string"
                )
        elif role == "_file_edit":
            try:
                edit = FileEditRecord.model_validate_json(_text(data, start, end))
            except ValueError:
                warnings.append(f"{name}:{numbers.at(start)}: skipped a malformed file edit")
            else:
                file_edits.append(FileEdit(edit, len(index_columns)))
        elif not role.startswith("_"):
            warnings.append(
                f"{name}:{numbers.at(start)}: skipped a message with unknown role {role!r}"
            )
        # Other `_` records come from newer versions: kept in the file, not interpreted.
    result.token_count = token_count
    result.first_token_count = first_token_count
    result.estimated_token_count = estimated_token_count
    result.usage_index = usage_index
    result.next_checkpoint_id = next_id
    result.system_prompt = system_prompt
    if not result.torn_tail:
        result.good_size = len(data)


NOT_JSON = "not valid JSON"


class _LenientLine:
    __slots__ = ("id", "role", "token_count")

    def __init__(self, obj: dict[str, Any]) -> None:
        self.role: str = obj["role"]
        self.id = obj.get("id")
        self.token_count = obj.get("token_count")


def _lenient(raw: bytes) -> _LenientLine | str:
    """Python's json as a fallback (it takes control characters); a str says what is wrong."""
    try:
        obj = json.loads(raw.decode("utf-8", "replace"), strict=False)
    except ValueError:
        return NOT_JSON
    except RecursionError:
        return "nested too deeply"
    if not isinstance(obj, dict):
        return "not a JSON object"
    if not isinstance(obj.get("role"), str):
        return "no role"
    return _LenientLine(obj)


def _text(data: memoryview, start: int, end: int) -> str:
    return bytes(data[start:end]).decode("utf-8", "replace")


class _LineNumbers:
    """Line numbers for warnings, counted forward from the last question (asked in file order)."""

    def __init__(self, data: memoryview) -> None:
        self._find = data.obj.find  # type: ignore[attr-defined]
        self._offset = 0
        self._line = 1

    def at(self, offset: int) -> int:
        if offset < self._offset:
            self._offset, self._line = 0, 1
        while (newline := self._find(b"\n", self._offset, offset)) >= 0:
            self._offset = newline + 1
            self._line += 1
        return self._line


def _invalid_utf8_lines(data: memoryview, starts: list[int], ends: list[int]) -> list[int]:
    """Indexes of the lines holding bytes that are not UTF-8.

    The whole file is decoded in 1 MB steps first (a few ms for 70 MB); lines are looked at one
    by one only when that finds a bad byte.
    """
    decode = codecs.utf_8_decode
    pos = 0
    size = len(data)
    try:
        while pos < size:
            stop = pos + (1 << 20)
            pos += decode(data[pos:stop], "strict", stop >= size)[1]
    except UnicodeDecodeError:
        pass
    else:
        return []
    bad: list[int] = []
    for index, (start, end) in enumerate(zip(starts, ends, strict=True)):
        try:
            decode(data[start:end], "strict", True)
        except UnicodeDecodeError:
            bad.append(index)
    return bad
