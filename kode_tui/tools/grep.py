"""Grep: finding text in files (DESIGN.md §6).

Grep runs ripgrep when it is installed and the Python search of `grep_python` otherwise; both
give ripgrep's output format (`path:line:text`, `path-line-text` for context, `--` between
groups) with paths relative to the work dir, so the model cannot tell which one ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import subprocess
from pathlib import Path

from kode_tui import gitcmd, workfiles
from kode_tui.humanize import plural
from kode_tui.pathnames import escape_name, unescape_name
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
from kode_tui.tools.files import read_outside_permission
from kode_tui.tools.grep_params import GrepParams
from kode_tui.tools.grep_python import (
    GREP_TIMEOUT,
    SearchResult,
    search_with_python,
)
from kode_tui.tools.shell import terminate_group

MAX_GREP_NOTES = 5

_RG_MAX_OUTPUT = 20 << 20


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
        "searched; files ignored by .gitignore, binary files, VCS folders and dependency or "
        "cache folders such as `node_modules` or `.venv` are not, unless `path` names them "
        "(`include_ignored` searches ignored files and dependency folders too). Results are "
        "limited by `head_limit` (250 by default); page with `offset`. Use this tool rather "
        "than `grep` or `rg` in Shell."
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
    noun = "file" if params.output_mode == "files_with_matches" else "line"
    return ToolOutput(output=output, message=" ".join(notes), brief=plural(len(lines), noun))


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

    by_path = sorted(paths, key=workfiles.path_key)
    return sorted(by_path, key=mtime, reverse=True)


# --- the ripgrep backend -------------------------------------------------------------------------


def rg_arguments(rg: str, params: GrepParams, target: str) -> list[str]:
    """The ripgrep command line for a search of `target` (a path as the work dir shows it)."""
    # `--null` ends each path with a NUL, so a name with `:` or bytes that are not UTF-8 is
    # still told apart from the line after it (see `_rg_lines`).
    args = [rg, "--no-heading", "--with-filename", "--null", "--color", "never", "--hidden"]
    # The rules of `workfiles`, as the Python search lists: .gitignore files count outside a
    # git work tree too, and dependency and cache folders are skipped below the path searched.
    args.append("--no-ignore" if params.include_ignored else "--no-require-git")
    for name in sorted(workfiles.VCS_DIRS):
        args += ["--glob", f"!{name}"]
    if not params.include_ignored:
        for name in sorted(workfiles.SKIP_DIRS - workfiles.VCS_DIRS):
            args += ["--glob", f"!{name}/"]
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
