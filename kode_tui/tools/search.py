"""Glob and Grep: finding files by name and by content (DESIGN.md §6).

Grep runs ripgrep when it is installed and a Python search otherwise; both give ripgrep's output
format (`path:line:text`, `path-line-text` for context, `--` between groups) with paths relative
to the work dir, so the model cannot tell which one ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import itertools
import os
import re
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, Field

from kode_tui import gitcmd
from kode_tui.pathnames import InsideChecker, escape_name, is_within, unescape_name
from kode_tui.tools.base import (
    MAX_LINE_CHARS,
    MAX_OUTPUT_CHARS,
    Permission,
    Tool,
    ToolEnv,
    ToolError,
    ToolOutput,
    truncate,
)
from kode_tui.tools.files import SNIFF_BYTES, read_outside_permission
from kode_tui.tools.shell import terminate_group

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", ".jj", ".sl"})

HEAVY_DIRS = VCS_DIRS | frozenset(
    {
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".eggs",
        ".gradle",
        ".next",
        ".nuxt",
        ".cache",
        "target",
    }
)
"""Folders that wildcards never match or walk into; naming one in a pattern still reaches it."""

MAX_GLOB_MATCHES = 1000
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
MAX_GREP_NOTES = 5

_RG_MAX_OUTPUT = 20 << 20


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _path_key(shown: str) -> tuple[str, ...]:
    # Component-wise, as ripgrep's --sort path orders: `a/b.py` comes before `a.py`.
    return tuple(shown.split("/"))


def expand_braces(pattern: str, limit: int = 256) -> list[str]:
    """`src/*.{ts,tsx}` as `["src/*.ts", "src/*.tsx"]` (nested braces too, at most `limit`)."""
    depth, start = 0, -1
    commas: list[int] = []
    for index, char in enumerate(pattern):
        if char == "{":
            if depth == 0:
                start, commas = index, []
            depth += 1
        elif char == "," and depth == 1:
            commas.append(index)
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0 and commas:
                head, tail = pattern[:start], pattern[index + 1 :]
                bounds = [start, *commas, index]
                results: list[str] = []
                for left, right in itertools.pairwise(bounds):
                    results.extend(expand_braces(head + pattern[left + 1 : right] + tail, limit))
                    if len(results) >= limit:
                        break
                return results[:limit]
    return [pattern]


def _has_magic(segment: str) -> bool:
    return any(char in segment for char in "*?[")


def _scan(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:
        return []  # unreadable folders are skipped, as `find` would after its warning


def _is_dir(entry: os.DirEntry[str], follow: bool = True) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow)
    except OSError:
        return False


# --- Glob ----------------------------------------------------------------------------------------


class GlobParams(BaseModel):
    pattern: str = Field(
        description=(
            "The glob pattern, relative to `directory`: `*` and `?` match within one path "
            "segment, `**` matches any number of directories, `{a,b}` either alternative. "
            "E.g. `*.py`, `src/**/*.ts`, `tests/test_*.py`."
        )
    )
    directory: str | None = Field(
        default=None,
        description=(
            "The directory to search in (absolute or relative to the working directory); "
            "defaults to the working directory."
        ),
    )
    include_dirs: bool = Field(
        default=True, description="Whether directories that match are listed too."
    )


class Glob(Tool[GlobParams]):
    """Lists the files and directories whose paths match a glob pattern."""

    name = "Glob"
    description = (
        "Find files and directories by name with a glob pattern: `*` and `?` match within one "
        "path segment, `**` matches any number of directories and `{a,b}` either alternative, "
        "e.g. `*.py`, `src/**/*.ts`, `**/test_*.py` is not allowed but `tests/**/test_*.py` is. "
        "Paths come back sorted and relative to the working directory, at most "
        f"{MAX_GLOB_MATCHES} of them. Wildcards do not descend into dependency, cache and VCS "
        "folders such as `node_modules`, `.venv`, `__pycache__` or `.git`; name them in the "
        "pattern to search inside (e.g. `node_modules/react/*`). A pattern may not start with "
        "`**`: that would walk the whole tree, so start it with a directory instead. To search "
        "file contents use Grep. A name that is not valid UTF-8 is shown with `\\xHH` escapes "
        "(`caf\\xe9.txt`); pass it to any tool exactly as shown."
    )
    params = GlobParams

    async def permission(self, params: GlobParams, env: ToolEnv) -> Permission | None:
        folder = env.resolve(params.directory) if params.directory else env.work_dir
        return read_outside_permission(
            env, folder, f"Glob {params.pattern} in {env.display_path(folder)}"
        )

    async def run(self, params: GlobParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        folder = env.resolve(params.directory) if params.directory else env.work_dir
        shown = env.display_path(folder)
        if not folder.exists():
            raise ToolError(f"`{shown}` does not exist.", brief="Directory not found")
        if not folder.is_dir():
            raise ToolError(f"`{shown}` is not a directory.", brief="Not a directory")
        pattern = params.pattern.strip()
        while pattern.startswith("./"):
            pattern = pattern[2:]
        # Braces expand first, so every alternative is checked: `{..,x}/*` must not reach out.
        variants = [variant.removeprefix("./") for variant in expand_braces(pattern)]
        # Only what lies in the work dir (or in the folder outside it the user approved) is
        # listed: a symlink leading elsewhere is neither shown nor followed.
        root = _search_root(env, folder)
        if any(variant.startswith("**") for variant in variants):
            listing = await asyncio.to_thread(_top_level, folder, root)
            raise ToolError(
                f"Pattern `{pattern}` starts with `**`, which is not allowed: it would walk the "
                "whole tree, dependency folders included, and flood the context. Start the "
                "pattern with a directory (e.g. `src/**/*.py`) or match the top level (`*.py`). "
                f"The top level of `{shown}` is listed below.",
                brief="Unsafe pattern",
                output=listing,
            )
        if not pattern or any(
            variant.startswith("/") or ".." in variant.split("/") for variant in variants
        ):
            raise ToolError(
                f"Pattern `{pattern}` must be a non-empty path relative to the directory searched; "
                "set `directory` to search somewhere else.",
                brief="Invalid pattern",
            )
        found = await asyncio.to_thread(
            _glob, folder, unescape_name(pattern), params.include_dirs, root
        )
        paths = sorted((escape_name(env.display_path(path)) for path in found), key=_path_key)
        if not paths:
            return ToolOutput(
                message=f"No matches found for pattern `{pattern}`.", brief="no matches"
            )
        message = f"Found {_count(len(paths), 'match', 'matches')} for pattern `{pattern}`."
        if len(paths) > MAX_GLOB_MATCHES:
            message += (
                f" Only the first {MAX_GLOB_MATCHES} matches are returned. "
                "You may want to use a more specific pattern."
            )
            paths = paths[:MAX_GLOB_MATCHES]
        output, cut = truncate("\n".join(paths))
        if cut:
            message += f" Output truncated at {MAX_OUTPUT_CHARS} characters."
        return ToolOutput(
            output=output, message=message, brief=_count(len(paths), "match", "matches")
        )


def _top_level(folder: Path, root: Path) -> str:
    names = [
        escape_name(entry.name) + ("/" if _is_dir(entry) else "")
        for entry in _scan(folder)
        if not _leads_out(entry, root)
    ]
    return "\n".join(sorted(names)[:MAX_GLOB_MATCHES])


def _leads_out(entry: os.DirEntry[str] | Path, root: Path) -> bool:
    """Whether `entry` is a symlink whose target, resolved, lies outside `root`."""
    try:
        link = entry.is_symlink()
    except OSError:
        return True
    return link and not is_within(Path(entry), root)


def _glob(folder: Path, pattern: str, include_dirs: bool, root: Path) -> set[Path]:
    found: set[Path] = set()
    for variant in expand_braces(pattern):
        segments = [segment for segment in variant.split("/") if segment not in ("", ".")]
        if segments and ".." not in segments:  # `run` refuses these; never walk up regardless
            _match(folder, segments, 0, include_dirs, root, found)
    return found


def _match(
    folder: Path, segments: list[str], i: int, dirs: bool, root: Path, found: set[Path]
) -> None:
    segment = segments[i]
    last = i == len(segments) - 1
    if segment == "**":
        if last:
            for path, is_dir in _descendants(folder, root):
                if dirs or not is_dir:
                    found.add(path)
            return
        _match(folder, segments, i + 1, dirs, root, found)
        for entry in _scan(folder):
            # Symlinked folders are not followed through `**`: they can loop.
            if entry.name not in HEAVY_DIRS and _is_dir(entry, follow=False):
                _match(Path(entry.path), segments, i, dirs, root, found)
        return
    if not _has_magic(segment):
        child = folder / segment
        if _leads_out(child, root):
            return
        if last:
            if child.exists() and (dirs or not child.is_dir()):
                found.add(child)
        elif child.is_dir():
            _match(child, segments, i + 1, dirs, root, found)
        return
    regex = re.compile(fnmatch.translate(segment))
    for entry in _scan(folder):
        if entry.name in HEAVY_DIRS or not regex.match(entry.name) or _leads_out(entry, root):
            continue
        is_dir = _is_dir(entry)
        if last:
            if dirs or not is_dir:
                found.add(Path(entry.path))
        elif is_dir:
            _match(Path(entry.path), segments, i + 1, dirs, root, found)


def _descendants(folder: Path, root: Path) -> Iterator[tuple[Path, bool]]:
    for entry in _scan(folder):
        if entry.name in HEAVY_DIRS or _leads_out(entry, root):
            continue
        yield Path(entry.path), _is_dir(entry)
        if _is_dir(entry, follow=False):
            yield from _descendants(Path(entry.path), root)


# --- Grep ----------------------------------------------------------------------------------------

OutputMode = Literal["content", "files_with_matches", "count_matches"]

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


class GrepParams(BaseModel):
    # Kimi's models call with the rg-style aliases (`-i`); code and tests may use the names.
    model_config = ConfigDict(populate_by_name=True)

    pattern: str = Field(description="The regular expression to search for in file contents.")
    path: str = Field(
        default=".",
        description="The file or directory to search in; defaults to the working directory.",
    )
    glob: str | None = Field(
        default=None,
        description="Only search files matching this glob, e.g. `*.js`, `*.{ts,tsx}`, `!*.md`.",
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description=(
            "`content`: the matching lines (with `-B`, `-A`, `-C`, `-n`); "
            "`files_with_matches`: the paths of matching files, newest first; "
            "`count_matches`: the number of matches in each file. "
            "Defaults to `files_with_matches`."
        ),
    )
    before_context: int | None = Field(
        default=None, ge=0, alias="-B", description="Lines to show before each match (content)."
    )
    after_context: int | None = Field(
        default=None, ge=0, alias="-A", description="Lines to show after each match (content)."
    )
    context: int | None = Field(
        default=None,
        ge=0,
        alias="-C",
        description="Lines to show before and after each match (content).",
    )
    line_number: bool = Field(
        default=True, alias="-n", description="Show line numbers (content). Defaults to true."
    )
    ignore_case: bool = Field(default=False, alias="-i", description="Search case-insensitively.")
    type: str | None = Field(
        default=None,
        description="Only search files of this type, e.g. py, js, ts, rust, go, java, md.",
    )
    head_limit: int | None = Field(
        default=250,
        ge=0,
        description=(
            "Return at most this many lines (content), paths or counts, like `| head -N`. "
            "Defaults to 250; 0 means no limit (use it sparingly)."
        ),
    )
    offset: int = Field(
        default=0,
        ge=0,
        description="Skip this many lines or entries first, to page through long results.",
    )
    multiline: bool = Field(
        default=False,
        description="Let the pattern span lines, with `.` matching newlines too.",
    )
    include_ignored: bool = Field(
        default=False,
        description=(
            "Also search files that .gitignore excludes (build output, `node_modules`, ...)."
        ),
    )

    def around(self) -> tuple[int, int]:
        """Context lines before and after each match; `-B`/`-A` win over `-C`."""
        both = self.context or 0
        before = self.before_context if self.before_context is not None else both
        after = self.after_context if self.after_context is not None else both
        return before, after


@dataclass(slots=True)
class SearchResult:
    """What a backend found: lines in ripgrep's format, paths relative to the work dir."""

    lines: list[str] = field(default_factory=list)
    timed_out: bool = False
    warning: str = ""
    notes: list[str] = field(default_factory=list)
    """What was left unsearched (parts of very large files), one sentence each."""


def find_rg() -> str | None:
    """The ripgrep executable on PATH, if there is one (never one the work dir holds)."""
    return gitcmd.find_program("rg")


class Grep(Tool[GrepParams]):
    """Searches file contents with a regular expression: ripgrep if present, else Python.

    `use_rg=False` forces the Python search; `rg_path` names the ripgrep binary (found on PATH
    by default, at each call).
    """

    name = "Grep"
    description = (
        "Search file contents with a regular expression (ripgrep syntax: escape braces as `\\{`). "
        "By default it lists the files that match, newest first; `output_mode` `content` shows "
        "the matching lines as `path:line:text` (context lines as `path-line-text`, with "
        "`-B`/`-A`/`-C`), and `count_matches` the number of matches per file. Narrow the search "
        "with `path`, `glob` (e.g. `*.{ts,tsx}`) or `type` (e.g. `py`). Hidden files are "
        "searched; files ignored by .gitignore, binary files and VCS folders are not "
        "(`include_ignored` searches ignored files too). Results are limited by `head_limit` "
        "(250 by default); page with `offset`. Use this tool rather than `grep` or `rg` in Shell."
    )
    params = GrepParams

    def __init__(self, *, use_rg: bool = True, rg_path: str | None = None) -> None:
        self._use_rg = use_rg
        self._rg_path = rg_path

    async def permission(self, params: GrepParams, env: ToolEnv) -> Permission | None:
        base = env.resolve(params.path)
        return read_outside_permission(
            env, base, f"Grep {params.pattern!r} in {env.display_path(base)}"
        )

    async def run(self, params: GrepParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        base = env.resolve(params.path)
        if not base.exists():
            raise ToolError(f"`{env.display_path(base)}` does not exist.", brief="Path not found")
        if not base.is_dir() and not base.is_file():
            # A FIFO or a device named explicitly: ripgrep would wait on it until the timeout.
            raise ToolError(
                f"`{env.display_path(base)}` is not a regular file or a directory.",
                brief="Not a regular file",
            )
        rg = (self._rg_path or find_rg()) if self._use_rg else None
        result: SearchResult | None = None
        if rg is not None:
            # A ripgrep that cannot start (gone, not executable) leaves the Python search.
            with contextlib.suppress(OSError):
                result = await search_with_rg(rg, params, base, env)
        if result is None:
            result = await search_with_python(params, base, env)
        return _grep_output(params, result, env)


def _grep_output(params: GrepParams, result: SearchResult, env: ToolEnv) -> ToolOutput:
    lines = result.lines
    notes: list[str] = []
    if result.warning:
        notes.append(result.warning)
    notes += result.notes[:MAX_GREP_NOTES]
    if len(result.notes) > MAX_GREP_NOTES:
        notes.append(f"{len(result.notes) - MAX_GREP_NOTES} more files were searched in part.")
    if result.timed_out:
        notes.append(f"Grep timed out after {GREP_TIMEOUT:g}s; the results are partial.")
    if params.output_mode == "files_with_matches":
        lines = _newest_first(lines, env)
    elif params.output_mode == "content":
        # A CRLF file's lines end in \r, which only gets in the way of reading them.
        lines = [_cut(line.removesuffix("\r")) for line in lines]
    else:
        total, files = 0, 0
        for line in lines:
            with contextlib.suppress(ValueError):
                total += int(line[line.rfind(":") + 1 :])
                files += 1
        notes.append(f"Found {total} total occurrences across {files} files.")
    found = len(lines)
    lines = lines[params.offset :]
    limit = params.head_limit
    if limit and len(lines) > limit:
        lines = lines[:limit]
        notes.append(
            f"Results truncated to {limit} lines (total: {found}). "
            f"Use offset={params.offset + limit} to see more."
        )
    if not lines:
        message = "No matches found." if not found else f"No results after offset {params.offset}."
        return ToolOutput(message=" ".join([message, *notes]), brief="no matches")
    output, cut = truncate("\n".join(lines))
    if cut:
        notes.append(
            f"Output truncated at {MAX_OUTPUT_CHARS} characters; narrow the search or page "
            "with offset and head_limit."
        )
    one, many = (
        ("file", "files") if params.output_mode == "files_with_matches" else ("line", "lines")
    )
    return ToolOutput(output=output, message=" ".join(notes), brief=_count(len(lines), one, many))


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[:MAX_LINE_CHARS] + f"... [line cut at {MAX_LINE_CHARS} of {len(line)} chars]"


def _newest_first(paths: list[str], env: ToolEnv) -> list[str]:
    def mtime(shown: str) -> float:
        try:
            return env.resolve(shown).stat().st_mtime
        except OSError:
            return 0.0

    by_path = sorted(paths, key=_path_key)
    return sorted(by_path, key=mtime, reverse=True)


# --- the ripgrep backend -------------------------------------------------------------------------


def rg_arguments(rg: str, params: GrepParams, target: str) -> list[str]:
    """The ripgrep command line for a search of `target` (a path as the work dir shows it)."""
    # `--null` ends each path with a NUL, so a name with `:` or bytes that are not UTF-8 is
    # still told apart from the line after it (see `_rg_lines`).
    args = [rg, "--no-heading", "--with-filename", "--null", "--color", "never", "--hidden"]
    if params.include_ignored:
        args.append("--no-ignore")
    for name in sorted(VCS_DIRS):
        args += ["--glob", f"!{name}"]
    if params.ignore_case:
        args.append("--ignore-case")
    if params.multiline:
        args += ["--multiline", "--multiline-dotall"]
    if params.glob:
        args += ["--glob", unescape_name(params.glob)]
    if params.type:
        args += ["--type", params.type]
    if params.output_mode == "files_with_matches":
        args.append("--files-with-matches")
    else:
        # One thread, in path order: the same order as the Python search, every time.
        args += ["--sort", "path"]
        if params.output_mode == "count_matches":
            args.append("--count-matches")
        else:
            before, after = params.around()
            args += ["--before-context", str(before), "--after-context", str(after)]
            # Always numbered: with `--null` the number's `:`/`-` is what marks a match.
            args.append("--line-number")
    return [*args, "--", params.pattern, target]


async def search_with_rg(rg: str, params: GrepParams, base: Path, env: ToolEnv) -> SearchResult:
    """Run ripgrep in its own process group; it is killed on timeout and on cancellation."""
    process = await asyncio.create_subprocess_exec(
        *rg_arguments(rg, params, env.display_path(base)),
        cwd=env.work_dir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert process.stdout is not None and process.stderr is not None
    out, err = bytearray(), bytearray()
    result = SearchResult()
    try:
        await asyncio.wait_for(
            asyncio.gather(
                _drain(process.stdout, out, _RG_MAX_OUTPUT), _drain(process.stderr, err, 1 << 16)
            ),
            GREP_TIMEOUT,
        )
        await process.wait()
    except TimeoutError:
        result.timed_out = True
        await terminate_group(process)
    except asyncio.CancelledError:
        await terminate_group(process)
        raise
    result.lines = _rg_lines(bytes(out), params)
    problem = err.decode("utf-8", errors="replace").strip()
    if not result.timed_out and process.returncode not in (0, 1):
        if not result.lines:
            raise ToolError(f"Failed to grep: {problem or 'ripgrep failed'}", brief="Grep failed")
        result.warning = f"Some files could not be searched: {problem.splitlines()[0]}"
    return result


_RG_NUMBERED = re.compile(rb"(\d+)([:-])")


def _rg_lines(out: bytes, params: GrepParams) -> list[str]:
    """ripgrep's `--null` output as lines in its usual format, names escaped (`escape_name`).

    A record cut short (the output limit, a timeout) is dropped.
    """
    lines: list[str] = []
    context = params.output_mode == "content" and any(params.around())
    position = 0
    while position < len(out):
        if context and out.startswith(b"--\n", position):
            lines.append("--")
            position += 3
            continue
        nul = out.find(b"\0", position)
        if nul < 0:
            break
        # A path given as `.` comes back as `./src/a.py`; the work dir shows it as `src/a.py`.
        shown = escape_name(out[position:nul].removeprefix(b"./"))
        if params.output_mode == "files_with_matches":
            lines.append(shown)
            position = nul + 1
            continue
        # Split on newlines only: ripgrep prints a line's other breaks (\r, \f, ...) as they are.
        end = out.find(b"\n", nul)
        if end < 0:
            break
        rest = out[nul + 1 : end].decode("utf-8", errors="replace")
        position = end + 1
        if params.output_mode == "count_matches":
            lines.append(f"{shown}:{rest}")
            continue
        numbered = _RG_NUMBERED.match(out, nul + 1, end)
        if numbered is None:
            lines.append(f"{shown}:{rest}")
            continue
        mark = numbered[2].decode()
        text = rest[numbered.end() - nul - 1 :]
        if params.line_number:
            lines.append(f"{shown}{mark}{numbered[1].decode()}{mark}{text}")
        else:
            lines.append(f"{shown}{mark}{text}")
    return lines


async def _drain(stream: asyncio.StreamReader, buffer: bytearray, limit: int) -> None:
    # Reading on past the limit keeps the child from blocking on a full pipe.
    while chunk := await stream.read(1 << 16):
        if len(buffer) < limit:
            buffer += chunk[: limit - len(buffer)]


# --- the Python backend --------------------------------------------------------------------------


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

    for path in _files_to_search(base, params.include_ignored, _search_root(env, base)):
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
                f"{_count(scan.long_lines, 'line', 'lines')} of `{shown}` longer than "
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


def _search_root(env: ToolEnv, base: Path) -> Path:
    """What the files searched must lie in: the work dir, or the approved folder outside it."""
    if env.is_inside(base):
        return env.work_dir
    real = base.resolve()
    return real if real.is_dir() else real.parent


def _mib(size: int) -> str:
    return f"{size / (1 << 20):g} MiB"


@dataclass(slots=True)
class _FileScan:
    """What the search of one file found (`count`: matches, or 1 for a match when listing)."""

    lines: list[str] = field(default_factory=list)
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
    by walking are regular files only, as ripgrep finds them: symlinks are not followed, and a
    file git lists is skipped when its folder, symlinks resolved, lies outside `root`.
    """
    if base.is_file():
        return [base]
    files = None if include_ignored else _git_files(base)
    if files is not None:
        inside = InsideChecker(root)
        files = [path for path in files if inside(path)]
    if files is None:
        files = list(_walk(base, VCS_DIRS if include_ignored else HEAVY_DIRS))
    elif not files and _git_ignores(base):
        # ripgrep searches a folder it is pointed at even when .gitignore names it.
        files = list(_walk(base, VCS_DIRS))
    return sorted(files, key=lambda path: _path_key(str(path.relative_to(base))))


def _git_files(base: Path) -> list[Path] | None:
    """The files git does not ignore under `base`; None when `base` is not in a git work tree."""
    try:
        listed = gitcmd.run(
            ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            base,
            timeout=GREP_TIMEOUT,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    paths = {base / name for name in listed.decode("utf-8", "surrogateescape").split("\0") if name}
    # --cached lists files deleted from the work tree, and submodules as entries; a symlink is
    # not a file git holds but where it leads (ripgrep skips them too).
    return [path for path in paths if not path.is_symlink() and path.is_file()]


def _git_ignores(path: Path) -> bool:
    try:
        return gitcmd.run(["check-ignore", "-q", "."], path, timeout=GREP_TIMEOUT).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def _walk(folder: Path, skip: frozenset[str]) -> Iterator[Path]:
    for entry in _scan(folder):
        if _is_dir(entry, follow=False):
            if entry.name not in skip:
                yield from _walk(Path(entry.path), skip)
        elif entry.is_file(follow_symlinks=False):
            yield Path(entry.path)


def _file_filter(params: GrepParams, base: Path) -> Callable[[Path], bool]:
    includes: list[str] = []
    excludes: list[str] = []
    if params.glob:
        negated = params.glob.startswith("!")
        globs = expand_braces(unescape_name(params.glob.removeprefix("!")))
        (excludes if negated else includes).extend(globs)
    types = FILE_TYPES.get(params.type, ()) if params.type else ()
    explicit_file = base.is_file()
    root = base.parent if explicit_file else base

    def matches(path: Path, pattern: str) -> bool:
        # Like ripgrep: a glob without a slash matches the name, one with a slash the path.
        if "/" not in pattern:
            return fnmatch.fnmatchcase(path.name, pattern)
        relative = path.relative_to(root).as_posix()
        pattern = pattern.removeprefix("/")
        return fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(
            relative, pattern.replace("**/", "")
        )

    def keep(path: Path) -> bool:
        if explicit_file:
            return True  # a file named explicitly is searched whatever the filters say
        if any(matches(path, pattern) for pattern in excludes):
            return False
        if includes and not any(matches(path, pattern) for pattern in includes):
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
