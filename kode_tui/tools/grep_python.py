"""Grep's Python search: the `re` module over the work dir's files, when ripgrep is not there.

It gives ripgrep's output format and reads the files `workfiles` lists, as ripgrep would find
them; files are read in bounded slices, and what a limit leaves unsearched is said.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import msgspec

from kode_tui import workfiles
from kode_tui.humanize import plural
from kode_tui.pathnames import escape_name, unescape_name
from kode_tui.tools.base import ToolEnv, ToolError
from kode_tui.tools.files import SNIFF_BYTES
from kode_tui.tools.grep_params import GrepParams
from kode_tui.tools.search import search_root

GREP_TIMEOUT = 30.0
"""Seconds a search may take; after that the results found so far are returned."""

# The Python search reads files in bounded slices (ripgrep has its own limits): a 400 MiB
# one-line file must not cost gigabytes. What a limit leaves unsearched is said in the result.
GREP_LINE_BYTES = 1 << 20
"""Of a longer line, only this much is searched."""
GREP_FILE_BYTES = 64 << 20
"""Of a larger file, only this much is searched."""
GREP_MULTILINE_BYTES = 16 << 20
"""A multiline search needs a file's whole text at once: of a larger file, only this much."""

FILE_TYPES: dict[str, tuple[str, ...]] = {
    "py": ("*.py", "*.pyi"),
    "js": ("*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"),
    "ts": ("*.ts", "*.tsx", "*.mts", "*.cts"),
    "rust": ("*.rs",),
    "go": ("*.go",),
    "java": ("*.java", "*.jsp", "*.properties"),
    "kotlin": ("*.kt", "*.kts"),
    "c": ("*.c", "*.h"),
    "cpp": ("*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h", "*.inl"),
    "cs": ("*.cs",),
    "ruby": ("*.rb", "Gemfile", "*.gemspec", "Rakefile"),
    "php": ("*.php",),
    "swift": ("*.swift",),
    "sh": ("*.sh", "*.bash", "*.zsh", ".bashrc", ".zshrc"),
    "md": ("*.md", "*.markdown", "*.mdx"),
    "markdown": ("*.md", "*.markdown", "*.mdx"),
    "json": ("*.json",),
    "yaml": ("*.yaml", "*.yml"),
    "toml": ("*.toml", "Cargo.lock"),
    "html": ("*.html", "*.htm"),
    "css": ("*.css", "*.scss", "*.sass", "*.less"),
    "sql": ("*.sql",),
    "txt": ("*.txt",),
    "make": ("Makefile", "makefile", "GNUmakefile", "*.mk"),
    "docker": ("Dockerfile", "*.dockerfile"),
}
"""ripgrep's `--type` names (the common ones) for the Python search."""


class SearchResult(msgspec.Struct):
    """What a backend found: lines in ripgrep's format, paths relative to the work dir."""

    lines: list[str] = msgspec.field(default_factory=list)
    timed_out: bool = False
    warning: str = ""
    notes: list[str] = msgspec.field(default_factory=list)
    """What was left unsearched (parts of very large files), one sentence each."""


async def search_with_python(params: GrepParams, base: Path, env: ToolEnv) -> SearchResult:
    """Search with the `re` module in a thread; the thread stops early on timeout or cancel."""
    flags = re.IGNORECASE if params.ignore_case else 0
    if params.multiline:
        flags |= re.DOTALL | re.MULTILINE
    try:
        regex = re.compile(params.pattern, flags)
    except re.error as error:
        raise ToolError(
            f"Invalid regular expression `{params.pattern}`: {error}.", brief="Invalid regex"
        ) from error
    if params.type and params.type not in FILE_TYPES:
        raise ToolError(
            f"Unknown file type `{params.type}`. Known types: {', '.join(sorted(FILE_TYPES))}.",
            brief="Unknown type",
        )
    stop = threading.Event()
    try:
        return await asyncio.to_thread(_python_search, params, regex, base, env, stop)
    except asyncio.CancelledError:
        stop.set()
        raise


def _python_search(
    params: GrepParams, regex: re.Pattern[str], base: Path, env: ToolEnv, stop: threading.Event
) -> SearchResult:
    deadline = time.monotonic() + GREP_TIMEOUT
    keep = _file_filter(params, base)
    result = SearchResult()
    before, after = params.around()
    prefilter = _prefilter(params, regex)

    def stopped() -> bool:
        if stop.is_set():
            return True
        if time.monotonic() > deadline:
            result.timed_out = True
            return True
        return False

    for path in _files_to_search(base, params.include_ignored, search_root(env, base)):
        if stopped():
            break
        if not keep(path):
            continue
        shown = escape_name(env.display_path(path))
        try:
            with open(path, "rb") as file:
                if b"\0" in file.read(SNIFF_BYTES):
                    continue  # binary, as ripgrep decides it
                file.seek(0)
                if params.multiline:
                    scan = _search_whole(file, regex, shown, before, after, params)
                else:
                    scan = _search_lines(
                        file, regex, prefilter, shown, before, after, params, stopped
                    )
        except OSError:
            continue
        if scan.capped:
            result.notes.append(f"Only the first {_mib(scan.capped)} of `{shown}` were searched.")
        if scan.long_lines:
            result.notes.append(
                f"{plural(scan.long_lines, 'line')} of `{shown}` longer than "
                f"{_mib(GREP_LINE_BYTES)} were searched in their first {_mib(GREP_LINE_BYTES)} "
                "only."
            )
        if params.output_mode == "content":
            if scan.lines:
                if (before or after) and result.lines:
                    result.lines.append("--")
                result.lines += scan.lines
        elif params.output_mode == "files_with_matches":
            if scan.count:
                result.lines.append(shown)
        elif scan.count:
            result.lines.append(f"{shown}:{scan.count}")
    return result


def _mib(size: int) -> str:
    return f"{size / (1 << 20):g} MiB"


class _FileScan(msgspec.Struct):
    """What the search of one file found (`count`: matches, or 1 for a match when listing)."""

    lines: list[str] = msgspec.field(default_factory=list)
    count: int = 0
    long_lines: int = 0
    capped: int = 0
    """The byte limit the file was cut at, 0 when it was read whole."""


def _search_whole(
    file: BinaryIO,
    regex: re.Pattern[str],
    shown: str,
    before: int,
    after: int,
    params: GrepParams,
) -> _FileScan:
    """A multiline search: the pattern may span lines, so it sees (up to a cap) the whole text."""
    data = file.read(GREP_MULTILINE_BYTES + 1)
    scan = _FileScan()
    if len(data) > GREP_MULTILINE_BYTES:
        data, scan.capped = data[:GREP_MULTILINE_BYTES], GREP_MULTILINE_BYTES
    text = data.decode("utf-8", errors="replace")
    del data
    if params.output_mode == "content":
        matched = _matched_lines(regex, text, multiline=True)
        if matched:
            scan.lines = _content_lines(shown, text, matched, before, after, params)
            scan.count = len(matched)
    elif params.output_mode == "files_with_matches":
        scan.count = int(_has_match(regex, text, multiline=True))
    else:
        scan.count = _count_matches(regex, text, multiline=True)
    return scan


def _blocks(file: BinaryIO, scan: _FileScan) -> Iterator[str]:
    """The file as text in blocks of whole lines, never more than about two line limits.

    A line longer than `GREP_LINE_BYTES` keeps only its first `GREP_LINE_BYTES` (counted in
    `scan.long_lines`); reading stops after `GREP_FILE_BYTES` (`scan.capped`). So one huge
    single-line file costs a few MiB, not several times its size.
    """
    step = GREP_LINE_BYTES  # a line that fits in one read is never longer than the limit
    budget = GREP_FILE_BYTES
    carry = b""  # the start of a line that goes on in the next read
    dropping = False  # the line in `carry` was cut: the rest of it is skipped
    while True:
        data = file.read(min(step, budget)) if budget > 0 else b""
        if not data:
            if budget <= 0 and file.read(1):
                scan.capped = GREP_FILE_BYTES
            if carry:
                yield carry.decode("utf-8", errors="replace")
            return
        budget -= len(data)
        first = data.find(b"\n")
        if first < 0:
            if not dropping:
                room = GREP_LINE_BYTES - len(carry)
                if len(data) > room:
                    dropping = True
                    scan.long_lines += 1
                carry += data[:room]
            continue
        head = data[:first]
        if not dropping and len(carry) + len(head) > GREP_LINE_BYTES:
            scan.long_lines += 1
            head = head[: GREP_LINE_BYTES - len(carry)]
        elif dropping:
            head = b""
        last = data.rfind(b"\n")
        block = carry + head + data[first : last + 1]
        carry, dropping = data[last + 1 :], False
        yield block.decode("utf-8", errors="replace")


def _search_lines(
    file: BinaryIO,
    regex: re.Pattern[str],
    prefilter: re.Pattern[str] | None,
    shown: str,
    before: int,
    after: int,
    params: GrepParams,
    stopped: Callable[[], bool],
) -> _FileScan:
    """A line-by-line search of a file read in bounded blocks (see `_blocks`)."""
    scan = _FileScan()
    content = params.output_mode == "content"
    recent: deque[tuple[int, str]] = deque(maxlen=before)  # context lines before a match
    after_left = 0  # context lines still to show after the last match
    printed = 0  # the number of the last line shown
    number = 0  # the number of the last line read
    for text in _blocks(file, scan):
        if stopped():
            break
        if prefilter is not None and not after_left and not prefilter.search(text):
            # Most blocks hold no match: one search over the block, then on to the next.
            body = text.removesuffix("\n")
            count = body.count("\n") + 1
            if before:
                tail = body.rsplit("\n", before)[-before:]
                recent.extend(enumerate(tail, number + count - len(tail) + 1))
            number += count
            continue
        for line in _split_lines(text):
            number += 1
            if params.output_mode == "count_matches":
                scan.count += sum(1 for _ in regex.finditer(line))
                continue
            if regex.search(line) is None:
                if after_left:
                    after_left -= 1
                    scan.lines.append(_content_line(shown, number, line, "-", params))
                    printed = number
                else:
                    recent.append((number, line))
                continue
            scan.count += 1
            if not content:
                return scan  # files_with_matches: one match is enough
            first = recent[0][0] if recent else number
            if (before or after) and printed and first > printed + 1:
                scan.lines.append("--")
            for old_number, old_line in recent:
                scan.lines.append(_content_line(shown, old_number, old_line, "-", params))
            recent.clear()
            scan.lines.append(_content_line(shown, number, line, ":", params))
            printed, after_left = number, after
    return scan


def _content_line(shown: str, number: int, line: str, mark: str, params: GrepParams) -> str:
    if params.line_number:
        return f"{shown}{mark}{number}{mark}{line}"
    return f"{shown}{mark}{line}"


_LINE_BOUND_SYNTAX = re.compile(r"\\[AZzB]|\(\?<[=!]")


def _prefilter(params: GrepParams, regex: re.Pattern[str]) -> re.Pattern[str] | None:
    """The pattern over a whole file at once, when a miss there proves a miss on every line.

    One C-speed search per file instead of one per line: most files do not match. Anchors that
    see the string's ends (`\\A`, `\\Z`, `\\B`, lookbehinds) could match a line but not the
    whole text, so those patterns are searched line by line only.
    """
    if params.multiline or _LINE_BOUND_SYNTAX.search(params.pattern):
        return None
    return re.compile(params.pattern, regex.flags | re.MULTILINE)


def _files_to_search(base: Path, include_ignored: bool, root: Path) -> list[Path]:
    """The files under `base` a search reads, in path order.

    A file named explicitly is read as it is (its approval covered where it leads). Files found
    in the listing are regular files only, as ripgrep finds them: git also lists symlinks,
    submodules and files deleted from the work tree, and ripgrep reads none of them.
    """
    if base.is_file():
        return [base]
    names = workfiles.listing(
        base, root=root, include_ignored=include_ignored, timeout=GREP_TIMEOUT
    ).files()
    names.sort(key=workfiles.path_key)
    files = (base / name for name in names)
    return [path for path in files if not path.is_symlink() and path.is_file()]


def _file_filter(params: GrepParams, base: Path) -> Callable[[Path], bool]:
    # Loaded at the first search without ripgrep, not with the tool set (~7 ms at start).
    from wcmatch import glob as wcglob

    # ripgrep's `--glob`: `**` spans folders, `{a,b}` either, `*` matches dot files too, and a
    # glob without a slash matches the file name, one with a slash the path.
    flags = wcglob.GLOBSTAR | wcglob.BRACE | wcglob.DOTGLOB | wcglob.MATCHBASE
    if base.is_file():
        return lambda path: True  # a file named explicitly is searched whatever the filters say
    negated = bool(params.glob and params.glob.startswith("!"))
    glob = unescape_name(params.glob.removeprefix("!")).removeprefix("/") if params.glob else ""
    types = FILE_TYPES.get(params.type, ()) if params.type else ()

    def keep(path: Path) -> bool:
        if glob:
            matched = wcglob.globmatch(path.relative_to(base).as_posix(), glob, flags=flags)
            if matched == negated:
                return False
        return not types or any(fnmatch.fnmatchcase(path.name, pattern) for pattern in types)

    return keep


def _line_starts(text: str) -> list[int]:
    starts = [0]
    starts.extend(match.end() for match in re.finditer("\n", text))
    return starts


def _split_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()  # the empty string after the last line ending is not a line
    return lines


def _has_match(regex: re.Pattern[str], text: str, multiline: bool) -> bool:
    if multiline:
        return regex.search(text) is not None
    return any(regex.search(line) for line in _split_lines(text))


def _matched_lines(regex: re.Pattern[str], text: str, multiline: bool) -> set[int]:
    """The 1-based numbers of the lines a match touches."""
    lines = _split_lines(text)
    if not multiline:
        return {number for number, line in enumerate(lines, 1) if regex.search(line)}
    starts = _line_starts(text)
    matched: set[int] = set()
    for match in regex.finditer(text):
        first = _line_of(starts, match.start())
        # A match ending right after a newline does not touch the next line.
        end = max(match.start(), match.end() - 1)
        matched.update(range(first, _line_of(starts, end) + 1))
    return {number for number in matched if number <= len(lines)}


def _line_of(starts: list[int], offset: int) -> int:
    low, high = 0, len(starts)
    while low + 1 < high:
        middle = (low + high) // 2
        if starts[middle] <= offset:
            low = middle
        else:
            high = middle
    return low + 1


def _count_matches(regex: re.Pattern[str], text: str, multiline: bool) -> int:
    if multiline:
        return sum(1 for _ in regex.finditer(text))
    return sum(1 for line in _split_lines(text) for _ in regex.finditer(line))


def _content_lines(
    shown: str, text: str, matched: set[int], before: int, after: int, params: GrepParams
) -> list[str]:
    lines = _split_lines(text)
    printed: set[int] = set()
    for number in matched:
        printed.update(range(max(1, number - before), min(len(lines), number + after) + 1))
    out: list[str] = []
    previous = 0
    for number in sorted(printed):
        if (before or after) and previous and number > previous + 1:
            out.append("--")
        mark = ":" if number in matched else "-"
        prefix = f"{shown}{mark}{number}{mark}" if params.line_number else f"{shown}{mark}"
        out.append(prefix + lines[number - 1])
        previous = number
    return out
