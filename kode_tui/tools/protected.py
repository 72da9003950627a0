"""Files whose content makes tools run code: writing them always asks the user.

A write to one of these files is never let through by a mode (auto-edit, yolo) or by "approve
for session", because what it changes is not the file but what later runs: git executes
`core.fsmonitor`, hooks and filter drivers named in its config, direnv runs `.envrc` on `cd`, an
editor runs a folder's tasks when it opens it, an agent runs its hooks and MCP servers, a package
manager runs what its rc file names. In print mode nobody can be asked, so such a write is
rejected, even with `--yolo`.

Protected, anywhere in the path, compared case-insensitively (macOS and Windows file systems
ignore case, and HFS+ ignores some invisible characters too), both as the path was named and as
it resolves (a symlink `notes -> .git/config` is a write to `.git/config`):

- directories: `.git` (config, hooks/, info/attributes, modules/…; also `.git` as a file, the
  gitdir pointer of a worktree or submodule), `.hg`, the usual `core.hooksPath` folders
  (`.husky`, `.githooks`, `.git-hooks`), editor folders that run tasks (`.vscode`, `.idea`,
  `.zed`, `.devcontainer`), agent folders with hooks, commands and MCP servers (`.kode`,
  `.claude`, `.cursor`, `.gemini`), and `.cargo` for its `config`/`config.toml`;
- files: `.gitmodules`, `.gitattributes`, `.gitconfig`, `.lfsconfig`, `.envrc`, `.mise.toml`,
  `mise.toml`, `.pre-commit-config.yaml`, `.mcp.json`, `.npmrc`, `.yarnrc`, `.yarnrc.yml`,
  `.pnpmfile.cjs`, the shell start-up files (`.bashrc`, `.bash_profile`, `.bash_login`,
  `.profile`, `.zshrc`, `.zshenv`, `.zprofile`, `.zlogin`), `sitecustomize.py`,
  `usercustomize.py` and any `*.pth` (Python runs them at start-up);
- also: `.ssh/` (`config` names a ProxyCommand), `.mise/`, `mise.local.toml`, the start-up
  files of other shells and of X (`.kshrc`, `.cshrc`, `.bash_logout`, `.xprofile`, …), and the
  files an editor, debugger or REPL runs from the current folder (`.exrc`, `.vimrc`, `.nvimrc`,
  `.nvim.lua`, `.gdbinit`, `.lldbinit`, `.pdbrc`, `.irbrc`, `.pryrc`, `.Rprofile`,
  `.Renviron`, `.octaverc`), and in `.config/` the folders `git`, `mise`, `fish`, `direnv`,
  `autostart`, `systemd` and `environment.d` (a work dir that is a home folder);
- git directories under other names: the one a `.git` file points to (`gitdir: …`, and a
  worktree's common dir), and any folder git would take for a repository (`HEAD`, `objects/`
  and `refs/`; git finds it by discovery from inside); and the folder the repository's
  `core.hooksPath` names (`scripts/hooks`), wherever it is;
- an existing executable in a folder on PATH (`~/.local/bin/git`): it is what a command runs.
"""

from __future__ import annotations

import errno
import functools
import itertools
import os
import re
import subprocess
from pathlib import Path

from kode_tui import gitcmd

REASON = "writes here can make tools run code"
"""What the approval says about such a write."""

PROTECTED_DIRS = frozenset(
    {".git", ".hg", ".husky", ".githooks", ".git-hooks", ".vscode", ".idea", ".zed"}
    | {".devcontainer", ".kode", ".claude", ".cursor", ".gemini", ".ssh", ".mise"}
)
PROTECTED_FILES = frozenset(
    {
        ".gitmodules",
        ".gitattributes",
        ".gitconfig",
        ".lfsconfig",
        ".envrc",
        ".mise.toml",
        "mise.toml",
        ".pre-commit-config.yaml",
        ".mcp.json",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        ".pnpmfile.cjs",
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".profile",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        "sitecustomize.py",
        "usercustomize.py",
        # more files programs run by themselves: mise's local configs, the start-up files of
        # other shells, and those an editor, debugger or REPL runs from the current folder
        "mise.local.toml",
        ".mise.local.toml",
        ".bash_logout",
        ".zlogout",
        ".kshrc",
        ".mkshrc",
        ".cshrc",
        ".tcshrc",
        ".xprofile",
        ".xinitrc",
        ".xsessionrc",
        ".exrc",
        ".vimrc",
        ".gvimrc",
        ".nvimrc",
        ".nvim.lua",
        ".gdbinit",
        ".lldbinit",
        ".pdbrc",
        ".irbrc",
        ".pryrc",
        ".rprofile",
        ".renviron",
        ".octaverc",
    }
)
PROTECTED_SUFFIXES = (".pth",)
_CARGO_CONFIGS = frozenset({"config", "config.toml"})
_CONFIG_DIRS = frozenset({"git", "mise", "fish", "direnv", "autostart", "systemd", "environment.d"})
"""Folders of `.config/` (a work dir that is a home folder) whose files run or name programs:
git's global config and attributes, mise, fish start-up, direnv, autostart and user units."""

# Code points HFS+ ignores in names (git's is_hfs_dotgit list): `.g\u200cit` is `.git` there.
_IGNORABLE = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")


def _fold(name: str) -> str:
    return _IGNORABLE.sub("", name).casefold()


def protected_parts(parts: tuple[str, ...]) -> bool:
    """Whether a path with these parts (below the work dir) is protected by its names alone."""
    names = [_fold(part) for part in parts]
    if any(name in PROTECTED_DIRS for name in names):
        return True
    if any(a == ".config" and b in _CONFIG_DIRS for a, b in itertools.pairwise(names)):
        return True
    if not names:
        return False
    last = names[-1]
    if last in PROTECTED_FILES or last.endswith(PROTECTED_SUFFIXES):
        return True
    return len(names) >= 2 and names[-2] == ".cargo" and last in _CARGO_CONFIGS


def _relative_parts(path: Path, root: Path) -> tuple[str, ...]:
    """The parts of `path` below `root`; all of them when it lies outside."""
    try:
        return path.relative_to(root).parts
    except ValueError:
        return path.parts


def is_protected(path: Path, work_dir: Path) -> bool:
    """Whether writing `path` (absolute, as named) can make tools run code.

    Only the part below the work dir counts for a path inside it, so a work dir that itself
    lies under, say, `~/.claude/` does not make every file protected.
    """
    named = Path(os.path.normpath(path))
    if protected_parts(_relative_parts(named, work_dir)):
        return True
    real = Path(os.path.realpath(path))
    root = Path(os.path.realpath(work_dir))
    if protected_parts(_relative_parts(real, root)):
        return True
    try:
        return _replaces_a_program(real) or _in_a_git_dir(real, root)
    except OSError as error:
        # A name no file can have (too long, a loop, a file used as a folder) cannot be written
        # either; anything else the system will not let us look at asks, as protected.
        return error.errno not in (errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR)


def _replaces_a_program(real: Path) -> bool:
    """Whether `real` is an executable in a PATH folder (`~/.local/bin/git`): overwriting it
    changes what every tool that runs that name runs. (A new file is not executable.)"""
    if not (real.is_file() and os.access(real, os.X_OK)):
        return False
    return any(
        folder and Path(os.path.realpath(folder)) == real.parent for folder in os.get_exec_path()
    )


def _in_a_git_dir(real: Path, root: Path) -> bool:
    """Whether `real` lies in a git directory not named `.git`: the one a `.git` file points to
    (`gitdir: …`, as in a worktree, a submodule or `git init --separate-git-dir`), or a folder
    git would take for a repository (`HEAD`, `objects/`, `refs/`, this write counted)."""
    folders = [root]
    if real.is_relative_to(root):
        parts = real.relative_to(root).parts
        folders += [root.joinpath(*parts[:n]) for n in range(1, len(parts))]
    if any(real.is_relative_to(hooks) for hooks in hooks_folders(root)):
        return True
    for folder in folders:
        for gitdir in pointed_gitdirs(folder / ".git"):
            if real.is_relative_to(gitdir):
                return True
        if _looks_like_a_git_dir(folder, real):
            return True
    return False


def hooks_folders(root: Path) -> tuple[Path, ...]:
    """The folders `core.hooksPath` names for the repository `root` is in (`scripts/hooks`):
    git runs what they hold. Cached until a config file changes."""
    configs = (root / ".git" / "config", Path(os.path.expanduser("~/.gitconfig")))
    return _read_hooks_folders(root, tuple(_stamp(path) for path in configs))


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


@functools.lru_cache(maxsize=64)
def _read_hooks_folders(root: Path, stamps: tuple[tuple[int, int] | None, ...]) -> tuple[Path, ...]:
    del stamps  # only part of the cache key
    try:
        # kode-tui's own `-c core.hooksPath=/dev/null` shows as scope `command`: skipped below.
        listed = gitcmd.run(
            ["config", "--get-all", "--show-scope", "core.hooksPath"], root, timeout=5
        )
        if listed.returncode != 0:
            return ()
        values: list[str] = []
        for line in os.fsdecode(listed.stdout).splitlines():
            scope, _, value = line.partition("\t")
            if scope != "command" and value:
                values.append(value)
        if not values:
            return ()  # the usual case: no need to ask git where the work tree starts
        top = gitcmd.run(["rev-parse", "--show-toplevel"], root, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ()
    base = os.fsdecode(top.stdout.strip()) if top.returncode == 0 else ""
    return tuple(
        Path(os.path.realpath(os.path.join(base or root, os.path.expanduser(value))))
        for value in values
    )


def pointed_gitdirs(dotgit: Path) -> list[Path]:
    """The git directory a `.git` file names, and its common directory (a worktree's)."""
    try:
        if not dotgit.is_file():
            return []
        text = dotgit.read_text("utf-8", "replace")[:4096]
    except OSError:
        return []
    if not text.startswith("gitdir:"):
        return []
    gitdir = Path(os.path.realpath(dotgit.parent / text[len("gitdir:") :].strip()))
    found = [gitdir]
    try:
        common = (gitdir / "commondir").read_text("utf-8", "replace")[:4096].strip()
    except OSError:
        return found
    if common:
        found.append(Path(os.path.realpath(gitdir / common)))
    return found


def _looks_like_a_git_dir(folder: Path, written: Path) -> bool:
    def present(name: str, kind: str) -> bool:
        entry = folder / name
        if written == entry or (kind == "dir" and written.is_relative_to(entry)):
            return True
        return entry.is_file() if kind == "file" else entry.is_dir()

    return present("HEAD", "file") and present("objects", "dir") and present("refs", "dir")


def holds_protected(folder: Path, limit: int = 5000) -> bool:
    """Whether copying or moving `folder` (a directory) would bring a protected file along,
    e.g. `cp -rT template .` with `template/.envrc`. A tree of more than `limit` entries
    counts as holding one: it is not looked through."""
    seen = 0
    for current, dirs, files in os.walk(folder):
        base = Path(current).relative_to(folder).parts
        for name in [*dirs, *files]:
            seen += 1
            if seen > limit or protected_parts((*base, name)):
                return True
    return False
