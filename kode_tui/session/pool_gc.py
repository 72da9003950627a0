"""Collecting the snapshots' pools (`session.snapshot_pool`): `kode-tui --gc`, and the automatic
rule at a session's close.

A pool's blobs are live when its `index.json` names them, or the `snapshot.json` of a session
of its work dir (`sessions/<the same hash>/*/`) does, under a name that does not look like a
secret (`snapshot_pool.looks_secret`: the pool never keeps those, so the blobs an older
kode-tui kept of them go). Everything else in `blobs/` is removed, temp files a crash left
too. A session's own `blobs/` are never touched: its records need them, and a blob it shares
with the pool (a hard link) stays on the disk through its name there.

A pool is collected only while its `lock` is held exclusively; every session holds it shared
from its first snapshot to its close, so a pool in use (by a session of any process, one opened
by path too) is skipped whole: nothing a running session may still copy is removed. A pool
whose work dir no longer exists and of which no session is left is removed whole.

What a collection cannot see: a session folder kept outside `sessions/` (opened with
`--session-dir`). Its next run reads again what the collection removed, and a change made to a
file while it was closed is not recorded if the pool no longer has the file's older content;
a revert never goes wrong for it.

The automatic rule (`collect_grown`): when a session closes and its pool holds more than twice
the blobs its index names, plus `GROWTH_SLACK`, the pool is collected then, unless another
session holds it. Checking costs one listing of `blobs/` (~5 ms for 10,000 blobs); a
collection reads the index of each session of the work dir (~10 ms for 10,000 files) and
removes at most `CLOSE_REMOVES` dead blobs (the next close goes on where it stopped).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

import msgspec

from kode_tui.paths import Paths
from kode_tui.session.metadata import known_work_dirs
from kode_tui.session.snapshot_pool import (
    INDEX_NAME,
    LOCK_NAME,
    SESSION_INDEX_NAME,
    SnapshotPool,
    lock_exclusively,
    looks_secret,
    read_index,
)

POOLS_DIR_NAME = "snapshots"
GROWTH_SLACK = 1000
"""Blobs a pool may hold beyond twice what its index names before a close collects it."""
CLOSE_REMOVES = 2000
"""At most this many blobs a close removes (~0.05 s on an SSD); the next close goes on."""
_MIB = 1 << 20


class Collected(msgspec.Struct):
    """What a collection did."""

    files: int = 0
    """Files removed from the pools."""
    freed: int = 0
    """Bytes those files held and nothing else did (a blob a session shares stays)."""
    pools: int = 0
    """Pools collected."""
    removed: int = 0
    """Pools removed whole: their work dir is gone, and no session of it is left."""
    in_use: int = 0
    """Pools skipped because a session holds them."""
    unreadable: list[Path] = msgspec.field(default_factory=list)
    """Indexes that could not be read: their pool was skipped (their blobs are unknown)."""

    def __str__(self) -> str:
        text = f"freed {self.files:,} files, {self.freed / _MIB:.1f} MiB"
        notes = []
        if self.removed:
            notes.append(f"{self.removed} pool(s) of work dirs that are gone removed")
        if self.in_use:
            notes.append(f"{self.in_use} pool(s) in use skipped")
        if self.unreadable:
            notes.append(f"{len(self.unreadable)} pool(s) skipped for a damaged index, such as "
                         f"{self.unreadable[0]}")  # fmt: skip
        return f"{text} ({'; '.join(notes)})" if notes else text


def collect_all(paths: Paths | None = None) -> Collected:
    """Collect every pool under the home (`kode-tui --gc`); OSError when a folder cannot be
    read or a file removed."""
    paths = paths or Paths.current()
    collected = Collected()
    try:
        folders = sorted(path for path in (paths.home / POOLS_DIR_NAME).iterdir() if path.is_dir())
    except FileNotFoundError:
        return collected
    work_dirs = {name: str(path) for name, path in known_work_dirs().items()}
    for folder in folders:
        sessions = paths.sessions_dir / folder.name
        collect_pool(folder, sessions, collected, work_dirs.get(folder.name))
    return collected


def collect_grown(pool: SnapshotPool, named: int, index: Path) -> Collected | None:
    """The automatic rule, for a session that just let go of `pool`, whose index names `named`
    blobs and whose own index is `index`: collect the pool when it grew past the rule; None
    when it did not."""
    try:
        count = sum(1 for _ in os.scandir(pool.blobs))
    except FileNotFoundError:
        return None
    if count <= 2 * named + GROWTH_SLACK:
        return None
    collected = Collected()
    sessions = Paths.current().sessions_dir / pool.folder.name
    collect_pool(pool.folder, sessions, collected, None, also=(index,), limit=CLOSE_REMOVES)
    return collected


def collect_pool(
    folder: Path,
    sessions: Path,
    collected: Collected,
    work_dir: str | None,
    *,
    also: Iterable[Path] = (),
    limit: int | None = None,
) -> None:
    """Collect the pool in `folder`, whose work dir's session folders are in `sessions`, into
    `collected`, removing at most `limit` files (None: all that are dead); `work_dir` is its
    work dir when its index does not say (None: unknown), and `also` more session indexes to
    keep alive."""
    fd = lock_exclusively(folder)
    if fd is None:
        collected.in_use += 1
        return
    try:
        session_dirs = _folders(sessions)
        # dict: the closing session's own index is among the work dir's, usually.
        indexes = list(dict.fromkeys([*(d / SESSION_INDEX_NAME for d in session_dirs), *also]))
        live, recorded = _live(folder / INDEX_NAME, indexes, collected)
        if live is None:
            return
        work_dir = recorded or work_dir
        gone = work_dir is not None and not os.path.isdir(work_dir) and not session_dirs
        complete = _remove_dead(folder / "blobs", set() if gone else live, collected, limit)
        if gone and complete and _remove_pool(folder):
            collected.removed += 1
        collected.pools += 1
    finally:
        os.close(fd)


def _live(
    pool_index: Path, indexes: list[Path], collected: Collected
) -> tuple[set[str] | None, str | None]:
    """The blobs the indexes name (None when one cannot be read: then nothing is known), and
    the work dir the pool's index records."""
    live: set[str] = set()
    recorded = None
    for path in [pool_index, *indexes]:
        try:
            index = read_index(path)
        except FileNotFoundError:
            continue
        except ValueError:
            collected.unreadable.append(path)
            return None, None
        live.update(entry.sha256 for name, entry in index.files.items() if not looks_secret(name))
        if path == pool_index:
            recorded = index.work_dir
    return live, recorded


def _remove_dead(blobs: Path, live: set[str], collected: Collected, limit: int | None) -> bool:
    """Remove from `blobs` the files that are not live blobs, at most `limit` of them; whether
    none is left."""
    try:
        entries = list(os.scandir(blobs))
    except FileNotFoundError:
        return True
    removed = 0
    for entry in entries:
        if entry.name in live or entry.is_dir(follow_symlinks=False):
            continue
        if removed == limit:
            return False
        removed += 1
        found = entry.stat(follow_symlinks=False)
        try:
            os.unlink(entry.path)
        except FileNotFoundError:
            continue
        collected.files += 1
        if found.st_nlink == 1:
            collected.freed += found.st_size
    return True


def _remove_pool(folder: Path) -> bool:
    """Remove the pool `folder` whose blobs are gone; False when it holds something else (it is
    left)."""
    for name in (INDEX_NAME, LOCK_NAME):
        (folder / name).unlink(missing_ok=True)
    with contextlib.suppress(FileNotFoundError):
        (folder / "blobs").rmdir()
    try:
        folder.rmdir()
    except OSError:
        return False
    return True


def _folders(path: Path) -> list[Path]:
    try:
        return [entry for entry in path.iterdir() if entry.is_dir()]
    except FileNotFoundError:
        return []
