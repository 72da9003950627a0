"""Text files as the file tools see them: whether a file may be read as text, and a page of its
numbered lines read without holding the file (or one huge line) in memory.

ReadFile pages through a file with `read_page`; WriteFile and StrReplaceFile check the file
they change with `check_readable` and `check_text_head` first.
"""

from __future__ import annotations

import codecs
from collections import deque
from pathlib import Path
from typing import BinaryIO

import msgspec

from kode_tui.tools.base import MAX_LINE_CHARS, ToolError

SNIFF_BYTES = 8192
"""How much of a file decides whether it is text."""

_COUNT_CHUNK = 1 << 20

_LINE_HEAD_BYTES = 4 * MAX_LINE_CHARS + 4
"""The bytes of a line kept in memory: enough for MAX_LINE_CHARS characters of UTF-8."""

_LINE_CHUNK = 1 << 18
"""The rest of a longer line is read (to count and check it) this many bytes at a time."""


class Page(msgspec.Struct):
    """A page of a text file's lines, and how many lines the file has."""

    lines: list[tuple[int, str]]
    """(line number, text with its line ending) of the lines read."""
    total: int
    cut_lines: list[int]


def check_readable(path: Path, shown: str) -> None:
    """Raise the tool error for a path that is not a regular file (missing, a folder, a FIFO)."""
    if not path.exists():
        raise ToolError(f"`{shown}` does not exist.", brief="File not found")
    if path.is_dir():
        raise ToolError(
            f"`{shown}` is a directory, not a file. Use Glob to list what it holds.",
            brief="Is a directory",
        )
    if not path.is_file():
        # A FIFO or a device would block the read, or never end.
        raise ToolError(f"`{shown}` is not a regular file.", brief="Not a regular file")


def not_text(shown: str, why: str) -> ToolError:
    """The tool error for a file that is not UTF-8 text (`why` says how it was told)."""
    return ToolError(
        f"`{shown}` {why}; only UTF-8 text files can be read or edited with this tool. "
        "Inspect it with a Shell command (e.g. `file`, `xxd`, `iconv`) instead.",
        brief="Not a text file",
    )


def check_text_head(head: bytes, shown: str) -> None:
    """Raise `not_text` when the first bytes of a file are not UTF-8 text."""
    if b"\0" in head:
        raise not_text(shown, "looks like a binary file (it contains NUL bytes)")
    try:
        # Not final: the sniffed block may end inside a multi-byte character.
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        raise not_text(shown, "is not valid UTF-8 text") from None


def _cut_line(body: str, length: int, ending: str) -> tuple[str, bool]:
    """The line as shown: `body` (its first characters) cut at MAX_LINE_CHARS when `length`,
    the whole line's length without its ending, is longer."""
    if length <= MAX_LINE_CHARS:
        return body + ending, False
    marker = f"... [line cut at {MAX_LINE_CHARS} of {length} chars]"
    return body[:MAX_LINE_CHARS] + marker + ending, True


def _split_ending(text: str) -> tuple[str, str]:
    body = text.rstrip("\r\n")
    return body, text[len(body) :]


def _skip_line(file: BinaryIO) -> bool:
    """Move past one line without keeping it; False at the end of the file."""
    head = file.readline(_LINE_HEAD_BYTES)
    if not head:
        return False
    if head.endswith(b"\n") or len(head) < _LINE_HEAD_BYTES:
        return True
    while chunk := file.readline(_LINE_CHUNK):
        if chunk.endswith(b"\n"):
            break
    return True


def _read_line(file: BinaryIO, number: int, shown: str) -> tuple[str, bool] | None:
    """The next line as shown and whether it was cut; None at the end of the file.

    At most `_LINE_HEAD_BYTES` of it are kept: the rest is read in chunks only to check it is
    UTF-8 and to count its characters, so one huge line costs a chunk of memory, not its size.
    """
    head = file.readline(_LINE_HEAD_BYTES)
    if not head:
        return None
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        if head.endswith(b"\n") or len(head) < _LINE_HEAD_BYTES:
            body, ending = _split_ending(decoder.decode(head, final=True))
            return _cut_line(body, len(body), ending)
        body = decoder.decode(head, final=False)
        length, last = len(body), body[-2:]
        while chunk := file.readline(_LINE_CHUNK):
            part = decoder.decode(chunk, final=False)
            length += len(part)
            last = (last + part[-2:])[-2:]
            if chunk.endswith(b"\n"):
                break
        rest = decoder.decode(b"", final=True)
        length += len(rest)
        last = (last + rest)[-2:]
    except UnicodeDecodeError:
        raise not_text(shown, f"is not valid UTF-8 text (line {number})") from None
    ending = "\r\n" if last == "\r\n" else "\n" if last.endswith("\n") else ""
    return _cut_line(body, length - len(ending), ending)


def read_page(path: Path, shown: str, offset: int, wanted: int) -> Page:
    """At most `wanted` lines from line `offset` on (a negative one counts from the end), and
    the file's line count. Blocking: run it in a thread."""
    check_readable(path, shown)
    with open(path, "rb") as file:
        check_text_head(file.read(SNIFF_BYTES), shown)
        file.seek(0)
        if offset > 0:
            return _read_forward(file, shown, offset, wanted)
        return _read_tail(file, shown, -offset, wanted)


def _take(file: BinaryIO, shown: str, first: int, wanted: int, page: Page) -> None:
    for number in range(first, first + wanted):
        line = _read_line(file, number, shown)
        if line is None:
            return
        page.lines.append((number, line[0]))
        if line[1]:
            page.cut_lines.append(number)


def _read_forward(file: BinaryIO, shown: str, offset: int, wanted: int) -> Page:
    page = Page(lines=[], total=0, cut_lines=[])
    skipped = 0
    while skipped < offset - 1 and _skip_line(file):
        skipped += 1
    if skipped < offset - 1:
        page.total = skipped
        return page
    _take(file, shown, offset, wanted, page)
    number = offset - 1 + len(page.lines)
    if len(page.lines) < wanted:
        page.total = number
        return page
    # Counting the rest in big chunks is much faster than iterating over its lines.
    last_byte = b""
    while chunk := file.read(_COUNT_CHUNK):
        number += chunk.count(b"\n")
        last_byte = chunk[-1:]
    if last_byte not in (b"", b"\n"):
        number += 1  # a last line without a line ending
    page.total = number
    return page


def _read_tail(file: BinaryIO, shown: str, count: int, wanted: int) -> Page:
    # Where each of the last `count` lines starts; they are read once the end is known.
    starts: deque[int] = deque(maxlen=count)
    total = 0
    while True:
        start = file.tell()
        if not _skip_line(file):
            break
        starts.append(start)
        total += 1
    page = Page(lines=[], total=total, cut_lines=[])
    if starts:
        file.seek(starts[0])
        _take(file, shown, total - len(starts) + 1, min(wanted, len(starts)), page)
    return page
