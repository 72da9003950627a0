"""Glob: finding files by name (DESIGN.md §6).

The pattern is matched with `wcmatch` over the listing `workfiles` gives, so Glob sees what Grep
and the prompt see: never a file git ignores, a dependency folder or a symlink leading out of
the work dir, unless the caller asks (`include_ignored`) or the pattern names the folder.
"""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

import asyncio
import os
from pathlib import Path

from pydantic import BaseModel, Field

from kode_tui import workfiles
from kode_tui.humanize import plural
from kode_tui.pathnames import escape_name, is_within, unescape_name
from kode_tui.tools.base import (
    MAX_OUTPUT_CHARS,
    Permission,
    Tool,
    ToolEnv,
    ToolError,
    ToolOutput,
    truncate,
)
from kode_tui.tools.files import read_outside_permission
from kode_tui.tools.search import search_root

MAX_GLOB_MATCHES = 1000
MAX_BRACE_VARIANTS = 256
"""Of a pattern's brace alternatives (`{a,b}{c,d}`: four), at most this many."""

# wcmatch and bracex load at the first Glob, not with the tool set: the agent that never globs
# starts without them (~7 ms of the import before the first request).


def _flags() -> int:
    """`**` spans any number of folders (none too); `*` matches names that start with a dot."""
    from wcmatch import glob as wcglob

    return wcglob.GLOBSTAR | wcglob.DOTGLOB


class GlobParams(BaseModel):
    pattern: str = Field(
        description=(
            "The glob pattern, relative to `directory`: `*` and `?` match within one path "
            "segment, `**` matches any number of directories, `{a,b}` either alternative. "
            "E.g. `**/*.py`, `*.{py,md}`, `src/**/*.ts`, `tests/test_*.py`."
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
    include_ignored: bool = Field(
        default=False,
        description=(
            "Also list files that .gitignore excludes (build output, ...) and dependency and "
            "cache folders (`node_modules`, `.venv`, ...)."
        ),
    )


class Glob(Tool[GlobParams]):
    """Lists the files and directories whose paths match a glob pattern."""

    name = "Glob"
    description = (
        "Find files and directories by name with a glob pattern: `*` and `?` match within one "
        "path segment, `**` matches any number of directories and `{a,b}` either alternative, "
        "e.g. `**/*.py`, `*.{py,md}`, `src/**/*.ts`. Paths come back sorted and relative to the "
        f"working directory, at most {MAX_GLOB_MATCHES} of them. Files ignored by .gitignore "
        "and dependency, cache and VCS folders such as `node_modules`, `.venv`, `__pycache__` "
        "or `.git` are left out; name such a folder in the pattern to search inside (e.g. "
        "`node_modules/react/*`), or set `include_ignored`. To search file contents use Grep. "
        "A name that is not valid UTF-8 is shown with `\\xHH` escapes (`caf\\xe9.txt`); pass it "
        "to any tool exactly as shown."
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
        variants = _variants(pattern)
        # Every alternative is checked: `{..,x}/*` must not reach out.
        if not pattern or any(
            variant.startswith("/") or ".." in variant.split("/") for variant in variants
        ):
            raise ToolError(
                f"Pattern `{pattern}` must be a non-empty path relative to the directory searched; "
                "set `directory` to search somewhere else.",
                brief="Invalid pattern",
            )
        # Only what lies in the work dir (or in the folder outside it the user approved) is
        # listed: a symlink leading elsewhere is neither shown nor followed.
        root = search_root(env, folder)
        found = await asyncio.to_thread(
            _glob, folder, variants, params.include_dirs, params.include_ignored, root
        )
        paths = sorted(
            (escape_name(env.display_path(path)) for path in found), key=workfiles.path_key
        )
        if not paths:
            return ToolOutput(
                message=f"No matches found for pattern `{pattern}`.", brief="no matches"
            )
        message = f"Found {plural(len(paths), 'match', 'matches')} for pattern `{pattern}`."
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
            output=output, message=message, brief=plural(len(paths), "match", "matches")
        )


def _variants(pattern: str) -> list[str]:
    """The brace alternatives of `pattern` (`*.{py,md}`: `*.py`, `*.md`), as written."""
    import bracex

    try:
        # Backslashes are kept: they belong to `\\xHH` name escapes (see `pathnames`).
        variants = bracex.expand(pattern, keep_escapes=True, limit=MAX_BRACE_VARIANTS)
    except bracex.ExpansionLimitException as error:
        raise ToolError(
            f"Pattern `{pattern}` has more than {MAX_BRACE_VARIANTS} brace alternatives; "
            "use a simpler pattern.",
            brief="Invalid pattern",
        ) from error
    result = []
    for variant in variants:
        while variant.startswith("./"):
            variant = variant[2:]
        result.append(variant)
    return result


def _glob(
    folder: Path, variants: list[str], include_dirs: bool, include_ignored: bool, root: Path
) -> set[Path]:
    from wcmatch import glob as wcglob

    found: set[Path] = set()
    listings: dict[tuple[Path, bool, int | None], list[str]] = {}
    for variant in variants:
        segments = [unescape_name(s) for s in variant.split("/") if s not in ("", ".")]
        if not segments or ".." in segments:  # `run` refuses these; never walk up regardless
            continue
        # The folders a pattern starts with are entered as named: one that is ignored or a
        # dependency folder (`node_modules/react/*`) is listed all the same, and a symlink
        # there is followed when it leads to a folder inside the root.
        start = folder
        while len(segments) > 1 and not _is_magic(segments[0]):
            start = start / segments.pop(0)
        if start != folder and not (is_within(start, root) and start.is_dir()):
            continue
        if not any(_is_magic(segment) for segment in segments):
            path = start.joinpath(*segments)
            exists = os.path.lexists(path) and is_within(path, root)
            if exists and (include_dirs or not path.is_dir()):
                found.add(path)
            continue
        # A pattern that names a skipped folder (`src/**/node_modules/*`) asks to look inside.
        ignored = include_ignored or not workfiles.SKIP_DIRS.isdisjoint(segments)
        depth = None if "**" in segments else len(segments)
        # A backslash in a name is a plain character (fnmatch's rule); wcmatch's escapes one.
        rest = "/".join(segment.replace("\\", "\\\\") for segment in segments)
        key = (start, ignored, depth)
        if key not in listings:
            listed = workfiles.listing(start, root=root, include_ignored=ignored)
            names = listed.files(depth=depth, folders=include_dirs)
            listings[key] = [name.removesuffix("/") for name in names]
        for name in wcglob.globfilter(listings[key], rest, flags=_flags()):
            path = start / name
            # A symlink to a folder is listed as a file: it is not entered, but it is a folder.
            if include_dirs or not path.is_dir():
                found.add(path)
    return found


def _is_magic(segment: str) -> bool:
    from wcmatch import glob as wcglob

    return wcglob.is_magic(segment.replace("\\", ""), flags=_flags())
