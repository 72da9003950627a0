"""The files of the work dir: one listing, with one set of ignore rules, for every tool and widget.

In a git work tree the listing is git's own (`git ls-files`: tracked files, and untracked ones
git does not ignore), run through `gitcmd` so the repository's config runs nothing. Elsewhere,
when git is missing, and when ignored files are asked for, it is a walk; unless ignored files
are asked for, the walk honours the `.gitignore` files of the folder listed and below it with
`pathspec` (git's own rules: negations, anchors, directory patterns, nested files). A folder
named explicitly is listed even when git ignores it (ripgrep searches such a folder too).

Every listing leaves out the folders in `SKIP_DIRS` below the folder listed and every entry
whose real location, symlinks resolved, lies outside the root (DESIGN.md §13); a symlink that
stays inside is listed, but the walk never enters one (it could loop).

Names are `str` as `os.fsdecode` gives them (bytes that are not UTF-8 as lone surrogates, see
`pathnames`), relative to the folder listed, `/`-separated: show them through `escape_name`.
"""

from __future__ import annotations

import bisect
import os
import subprocess
from abc import ABC, abstractmethod
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from kode_tui import gitcmd
from kode_tui.fsutil import read_regular
from kode_tui.pathnames import InsideChecker, is_within

if TYPE_CHECKING:
    import pathspec

VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", ".jj", ".sl"})
"""Version control folders: never listed, not even when ignored files are asked for."""

SKIP_DIRS = VCS_DIRS | frozenset(
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
"""Dependency, cache and VCS folders that listings do not enter unless ignored files are asked
for: they dwarf the project and tell nothing about it. A folder listed by name is listed."""

GIT_TIMEOUT = 30.0
GITIGNORE_MAX_BYTES = 1 << 20
"""Of a `.gitignore`, only this much is read."""
MAX_STARS = 2
"""`*` wildcards a `.gitignore` pattern may have in one path component. pathspec matches with
Python's backtracking regexes, where each more `*` multiplies the work by the name's length:
a repo's `*a*a*a*a*b` took 17 s to test one 255-character name. Real patterns (`*.py[cod]`,
`*.min.*`) have one or two; a pattern with more is skipped: what it names is listed."""

Entry = tuple[str, bool]
"""One entry of a directory: its name, and whether it is a folder the listing enters."""


def path_key(path: str) -> tuple[str, ...]:
    """The sort key of a `/`-separated path, component-wise as ripgrep's `--sort path` orders:
    `a/b.py` comes before `a.py`."""
    return tuple(path.split("/"))


class Listing(ABC):
    """The files under one folder: one directory at a time (`entries`) or all (`files`)."""

    @abstractmethod
    def entries(self, rel: str) -> list[Entry] | None:
        """The entries of directory `rel` (`""` for the folder, `"a/b/"` below it), unsorted;
        None when it cannot be read."""

    @abstractmethod
    def files(
        self, *, limit: int | None = None, depth: int | None = None, folders: bool = False
    ) -> list[str]:
        """Every file (a symlink counts as one) under the folder, at most `depth` levels down
        (1: the folder's own), and with `folders` every folder too, written with a trailing
        `/`, before what it holds; at most `limit` of them."""


def listing(
    folder: Path,
    *,
    root: Path | None = None,
    include_ignored: bool = False,
    use_git: bool = True,
    timeout: float = GIT_TIMEOUT,
) -> Listing:
    """The listing of `folder`, whose entries must really lie in `root` (`folder` by default).

    Blocking (it may run git): call it from a thread in async code. `include_ignored` lists
    what git and `.gitignore` files leave out, and `SKIP_DIRS` but the VCS folders.
    """
    root = folder if root is None else root
    if use_git and not include_ignored:
        paths = git_paths(folder, timeout=timeout)
        if paths is not None and (paths or not _git_ignores(folder, timeout)):
            return _GitListing(folder, root, paths)
    return _WalkListing(folder, root, include_ignored)


def git_paths(folder: Path, *, timeout: float = GIT_TIMEOUT) -> list[str] | None:
    """What git lists under `folder` (tracked files, untracked ones it does not ignore),
    relative to it, sorted, once each; None when `folder` is not in a git work tree."""
    try:
        listed = gitcmd.run(
            ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            folder,
            timeout=timeout,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    # A conflicted file is listed once per stage.
    return sorted({os.fsdecode(name) for name in listed.split(b"\0") if name})


def _git_ignores(folder: Path, timeout: float) -> bool:
    try:
        return gitcmd.run(["check-ignore", "-q", "."], folder, timeout=timeout).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


class _GitListing(Listing):
    """Directories from git's sorted list: each is one contiguous run of paths, so a listing
    jumps from child to child with bisect and never visits the files further down.

    git lists a symlink as a file, and the files of a folder that is a symlink now: those whose
    real location is outside the root are left out.
    """

    def __init__(self, folder: Path, root: Path, paths: list[str]) -> None:
        self._folder = folder
        self._paths = paths
        self._inside = InsideChecker(root)

    def entries(self, rel: str) -> list[Entry]:
        paths = self._paths
        # "/" + 1 is "0": every path under "a/" sorts at or after "a/" and before "a0".
        lo = bisect.bisect_left(paths, rel)
        hi = bisect.bisect_left(paths, rel[:-1] + "0") if rel else len(paths)
        found: list[Entry] = []
        i = lo
        while i < hi:
            rest = paths[i][len(rel) :]
            slash = rest.find("/")
            if slash < 0:
                if self._inside(self._folder / paths[i]):
                    found.append((rest, False))
                i += 1
                continue
            name = rest[:slash]
            if name not in SKIP_DIRS and self._inside(self._folder / f"{rel}{name}"):
                found.append((name, True))
            i = bisect.bisect_left(paths, f"{rel}{name}0", i, hi)
        return found

    def files(
        self, *, limit: int | None = None, depth: int | None = None, folders: bool = False
    ) -> list[str]:
        found: list[str] = []
        seen: set[str] = set()
        for path in self._paths:
            parts = path.split("/")
            if not SKIP_DIRS.isdisjoint(parts[:-1]):
                continue
            if folders:
                for end in range(1, len(parts) if depth is None else min(len(parts), depth + 1)):
                    folder = "/".join(parts[:end]) + "/"
                    if folder not in seen:
                        seen.add(folder)
                        if self._inside(self._folder / folder):
                            found.append(folder)
            if (depth is None or len(parts) <= depth) and self._inside(self._folder / path):
                found.append(path)
            if limit is not None and len(found) >= limit:
                return found[:limit]
        return found


_Rules: TypeAlias = "list[tuple[str, pathspec.GitIgnoreSpec]]"
"""The `.gitignore` files that apply in a directory, outermost first: (where it lies, rules)."""


class _WalkListing(Listing):
    def __init__(self, folder: Path, root: Path, include_ignored: bool) -> None:
        self._folder = folder
        self._root = root
        self._skip = VCS_DIRS if include_ignored else SKIP_DIRS
        self._gitignore = not include_ignored
        self._rules: dict[str, _Rules] = {}

    def entries(self, rel: str) -> list[Entry] | None:
        rules = self._rules_in(rel) if self._gitignore else []
        found: list[Entry] = []
        try:
            with os.scandir(self._folder / rel) as scan:
                for entry in scan:
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                        leads_out = entry.is_symlink() and not is_within(Path(entry), self._root)
                    except OSError:
                        continue
                    if leads_out or (is_dir and entry.name in self._skip):
                        continue
                    if rules and _ignored(rules, f"{rel}{entry.name}{'/' if is_dir else ''}"):
                        continue
                    found.append((entry.name, is_dir))
        except OSError:
            return None
        return found

    def files(
        self, *, limit: int | None = None, depth: int | None = None, folders: bool = False
    ) -> list[str]:
        found: list[str] = []
        # Breadth first, so a listing cut off at `limit` still holds the top levels.
        pending: deque[tuple[str, int]] = deque([("", 1)])
        while pending:
            rel, level = pending.popleft()
            for name, is_dir in sorted(self.entries(rel) or ()):
                if is_dir:
                    if depth is None or level < depth:
                        pending.append((f"{rel}{name}/", level + 1))
                    if not folders:
                        continue
                found.append(f"{rel}{name}/" if is_dir else f"{rel}{name}")
                if limit is not None and len(found) >= limit:
                    return found
        return found

    def _rules_in(self, rel: str) -> _Rules:
        """The rules of the `.gitignore` files of `rel` and of the folders above it."""
        rules = self._rules.get(rel)
        if rules is None:
            above = self._rules_in(rel[: rel.rstrip("/").rfind("/") + 1]) if rel else []
            own = self._read_gitignore(rel)
            rules = [*above, (rel, own)] if own is not None else above
            self._rules[rel] = rules
        return rules

    def _read_gitignore(self, rel: str) -> pathspec.GitIgnoreSpec | None:
        path = self._folder / rel / ".gitignore"
        if os.path.islink(path) and not is_within(path, self._root):
            return None
        data = read_regular(path, GITIGNORE_MAX_BYTES)
        if not data:
            return None
        lines = data.decode("utf-8", "surrogateescape").splitlines()
        # pathspec loads at the first `.gitignore` a walk meets, not with every module that
        # lists files (the agent's start: ~7 ms).
        import pathspec

        try:
            return pathspec.GitIgnoreSpec.from_lines(line for line in lines if _tame(line))
        except ValueError:
            return None  # a pattern pathspec cannot read: git would skip it; so do we


def _tame(pattern: str) -> bool:
    """Whether matching `pattern` costs time in proportion to a name's length (`MAX_STARS`)."""
    return all(part == "**" or part.count("*") <= MAX_STARS for part in pattern.split("/"))


def _ignored(rules: _Rules, path: str) -> bool:
    """Whether the `.gitignore` rules leave out `path` (a folder's ends with `/`): the last
    file that says anything about it decides, as in git."""
    ignored = False
    for base, spec in rules:
        include = spec.check_file(path[len(base) :]).include
        if include is not None:
            ignored = include
    return ignored
