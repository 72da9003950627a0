"""The protected paths of a work dir, and the ones a sandboxed command created
(`kode_tui.tools.sandbox`).

The sandbox mounts every protected path that exists read-only, so the kernel refuses a write to
it. One that does not exist yet cannot be mounted (a mount needs something to mount on), so a
command in the sandbox could create it: `touch .envrc`, `mkdir .vscode`. This module finds what
a command created, so the sandbox can take it away again before anything outside runs it.

How, cheaply: creating, renaming or deleting an entry changes its folder's ctime, which user
space cannot set back (`touch -d` sets the mtime only). So the tree keeps each folder's
(inode, mtime, ctime) and the protected paths it saw; `refresh()` stats every folder it knows
and lists only the ones that changed, walking a new folder whole. A work dir of 1,000 folders
costs about 1,000 `lstat` calls, with no file read. The walk does not follow symlinks and does
not enter a protected folder (`.git`, `.vscode`: mounted read-only as a whole).

Protected is what `kode_tui.tools.protected` says, by name at any depth (ignored folders too:
a `*.pth` in `.venv` runs at every Python start), plus any folder git would take for a
repository (`HEAD`, `objects/`, `refs/`), the folders a PATH entry names inside the work dir,
and the target of a protected symlink (`.envrc -> env.sh`: writing env.sh changes what runs).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import msgspec

from kode_tui.tools.protected import hooks_folders, pointed_gitdirs, protected_parts

Stamp = tuple[int, int, int]
"""A folder's (inode, mtime_ns, ctime_ns)."""

_GIT_DIR_ENTRIES = frozenset({"HEAD", "objects", "refs"})


class Changes(msgspec.Struct):
    """What one `refresh()` found that was not there before."""

    created: list[str] = msgspec.field(default_factory=list)
    """Protected paths (relative, `/`-separated) that appeared, shallowest first."""


class ProtectedTree:
    """The protected paths under `root`, kept up to date by `refresh()` (blocking: call it in a
    thread)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))
        self._dirs: dict[str, Stamp] = {}
        self._protected: set[str] = set()
        self._absent: set[str] = set()
        """Targets of protected symlinks that do not exist (yet)."""
        self._walked = False

    @property
    def protected(self) -> list[Path]:
        """Every protected path that exists under the root (absolute), and the git folders and
        hook folders of the repository the root is in, wherever they are."""
        paths = [self.root / name for name in sorted(self._protected)]
        extra = [*pointed_gitdirs(self.root / ".git"), *hooks_folders(self.root)]
        return paths + [path for path in extra if path.exists()]

    def refresh(self) -> Changes:
        """Look at what changed since the last call (everything, the first time)."""
        changes = Changes()
        if not self._walked:
            self._walked = True
            self._walk("", changes)
            self._watch_git_folders()
            changes.created.clear()  # what was there at the start is no one's doing
            return changes
        root = str(self.root)
        for name, known in list(self._dirs.items()):
            if name not in self._dirs:
                continue  # dropped with a folder above it meanwhile
            current = _stamp(f"{root}/{name}" if name else root)
            if current == known:
                continue
            if current is None or current[0] != known[0]:
                self._drop(name)  # gone, or replaced by another folder: walk it again if new
                if current is None:
                    continue
            self._walk(name, changes)
        self._watch_git_folders()
        for target in list(self._absent):
            if os.path.lexists(self.root / target):
                self._absent.discard(target)
                self._found(target, changes)
        changes.created.sort(key=lambda path: (path.count("/"), path))
        return changes

    def _watch_git_folders(self) -> None:
        """The folder `core.hooksPath` names, and a gitdir a `.git` file points to, are
        protected wherever they are; inside the root and not there yet, they are watched for
        (a command creating `scripts/hooks/pre-commit` for `core.hooksPath = scripts/hooks`)."""
        for folder in [*pointed_gitdirs(self.root / ".git"), *hooks_folders(self.root)]:
            if folder.is_relative_to(self.root) and folder != self.root:
                relative = folder.relative_to(self.root).as_posix()
                if relative not in self._protected and not os.path.lexists(folder):
                    self._absent.add(relative)

    def forget(self, name: str) -> None:
        """`name` (protected) was taken away: no longer there."""
        self._protected.discard(name)
        self._drop(name)

    def _drop(self, name: str) -> None:
        prefix = f"{name}/" if name else ""
        for known in [d for d in self._dirs if d == name or d.startswith(prefix)]:
            del self._dirs[known]
        for known in [p for p in self._protected if p == name or p.startswith(prefix)]:
            self._protected.discard(known)

    def _walk(self, top: str, changes: Changes) -> None:
        """List `top` (a folder, relative) and every new folder below it."""
        root = str(self.root)
        path_folders = {f for f in _path_folders() if f == root or f.startswith(f"{root}/")}
        pending = [top]
        while pending:
            name = pending.pop()
            folder = self.root / name if name else self.root
            stamp = _stamp(folder)
            if stamp is None:
                continue
            entries = list(_entries(folder))
            if name and ({entry for entry, _ in entries} >= _GIT_DIR_ENTRIES):
                self._found(name, changes)  # a repository under another name than .git
                continue
            self._dirs[name] = stamp
            present = {entry for entry, _ in entries}
            prefix = f"{name}/" if name else ""
            for gone in [
                known
                for known in self._protected
                if known.startswith(prefix)
                and "/" not in known[len(prefix) :]
                and known[len(prefix) :] not in present
            ]:
                self._protected.discard(gone)  # deleted meanwhile: creating it again is new
            # The folders above were checked on the way down (the walk never enters a protected
            # one): the entry and its folder's name are all the rules still need.
            parent = name.rsplit("/", 1)[-1]
            for entry_name, kind in entries:
                relative = f"{name}/{entry_name}" if name else entry_name
                is_dir = kind == "dir"
                if protected_parts((parent, entry_name) if name else (entry_name,)) or (
                    is_dir
                    and path_folders
                    and os.path.realpath(folder / entry_name) in path_folders
                ):
                    self._found(relative, changes)
                    if kind == "link":
                        self._follow(folder / entry_name, changes)
                elif is_dir and relative not in self._dirs:
                    pending.append(relative)

    def _found(self, relative: str, changes: Changes) -> None:
        if relative not in self._protected:
            self._protected.add(relative)
            changes.created.append(relative)

    def _follow(self, link: Path, changes: Changes) -> None:
        """A protected symlink's target inside the root is protected too; one that does not
        exist yet is watched for."""
        target = Path(os.path.realpath(link))
        if not target.is_relative_to(self.root) or target == self.root:
            return
        relative = target.relative_to(self.root).as_posix()
        if os.path.lexists(target):
            self._found(relative, changes)
        else:
            self._absent.add(relative)


def _stamp(path: str | Path) -> Stamp | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None
    return info.st_ino, info.st_mtime_ns, info.st_ctime_ns


def _entries(folder: Path) -> Iterator[tuple[str, str]]:
    """The names in `folder`, each with its kind: `dir`, `link` or `file` (anything else)."""
    try:
        with os.scandir(folder) as listing:
            for entry in listing:
                try:
                    if entry.is_symlink():
                        kind = "link"
                    elif entry.is_dir(follow_symlinks=False):
                        kind = "dir"
                    else:
                        kind = "file"
                except OSError:
                    kind = "file"
                yield entry.name, kind
    except OSError:
        return


def _path_folders() -> frozenset[str]:
    """The PATH folders, resolved: a program put there is what a command runs."""
    return frozenset(
        os.path.realpath(folder) for folder in os.get_exec_path() if os.path.isabs(folder)
    )
