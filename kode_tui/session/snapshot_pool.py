"""The snapshots' pool: one store per work dir, shared by all its sessions (`session.snapshot`).

A snapshot must keep the content of every file it sees: when a Shell command later changes a
file, its old content is gone from the disk, and a revert needs it. Kept in each session's own
folder, that cost a whole copy of the work dir (every file up to the size limit) at the start
of every session. The pool keeps it once per work dir instead:

- `blobs/<sha256>`: the content of every file a snapshot read, written without an fsync each
  (thousands at a baseline).
- `index.json`: the newest scan of the work dir by any session: per file (size, mtime_ns,
  ctime_ns, inode, sha256). A new session's first snapshot takes from it every file whose stat is
  unchanged, so it reads only what changed since the work dir's last session.

A session's records name only blobs in its own folder: when a snapshot records a change, the
content before and after is copied from the pool into the session's blobs (checked against its
hash, written durably) before the record is written. So the session folder alone is enough to
revert, export or open it elsewhere, and the pool is a cache: a blob lost in a crash (or the
whole pool deleted while no session runs) costs the next baseline a read, never a wrong revert:
a change whose old content the pool no longer has is left unrecorded, with a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import NamedTuple

from kode_tui.fsutil import atomic_write_bytes, make_private_dir
from kode_tui.session.journal import FileJournal, store_blob

log = logging.getLogger(__name__)

INDEX_NAME = "index.json"
_VERSION = 2
"""Version 1 had no ctime: its entries load with a ctime of 0, so every file is read again."""


class Entry(NamedTuple):
    """One file as a snapshot saw it. An mtime_ns or ctime_ns of 0 is never taken as unchanged:
    a file changed right before the scan, an index of version 1."""

    size: int
    mtime_ns: int
    ctime_ns: int
    """Set by the kernel at every change (content, mode, a restored mtime): no program can put
    it back, so a file rewritten in place with its size and mtime kept is still read again."""
    inode: int
    sha256: str


def load_index(path: Path) -> dict[str, Entry] | None:
    """The index at `path` (a session's `snapshot.json` or the pool's); None when there is
    none yet or it is damaged (then a new baseline reads the files)."""
    try:
        data = json.loads(path.read_bytes())
        version, rows = data["version"], data["files"]
        if version == 1:
            return {
                str(name): Entry(int(size), int(mtime), 0, int(inode), str(sha))
                for name, (size, mtime, inode, sha) in rows.items()
            }
        if version == _VERSION:
            return {
                str(name): Entry(int(size), int(mtime), int(ctime), int(inode), str(sha))
                for name, (size, mtime, ctime, inode, sha) in rows.items()
            }
        return None
    except (OSError, ValueError, AttributeError, KeyError, TypeError, RecursionError):
        return None


def save_index(path: Path, files: dict[str, Entry]) -> None:
    """Write an index crash-safely (temp, fsync, rename)."""
    data = json.dumps({"version": _VERSION, "files": files}, separators=(",", ":"))
    make_private_dir(path.parent)
    atomic_write_bytes(path, data.encode("utf-8", "surrogatepass"))


class SnapshotPool:
    """The blobs and the newest index of one work dir's snapshots."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.blobs = folder / "blobs"
        self.index_path = folder / INDEX_NAME

    def keep(self, sha256: str, content: bytes) -> None:
        """Hold a file's content (blocking; no fsync: see the module's docstring)."""
        store_blob(self.blobs, sha256, content, durable=False)

    def hints(self) -> dict[str, Entry]:
        """The newest scan of the work dir by any session (empty when there is none)."""
        return load_index(self.index_path) or {}

    def save_hints(self, files: dict[str, Entry]) -> None:
        save_index(self.index_path, files)

    def adopt(self, sha256: str, journal: FileJournal) -> bool:
        """Make the session's blob store hold this content, durably, before a record names it;
        False when neither has it intact (then the change cannot be recorded)."""
        if journal.blob_exists(sha256):
            return True
        try:
            content = (self.blobs / sha256).read_bytes()
        except OSError:
            content = None
        if content is None or hashlib.sha256(content).hexdigest() != sha256:
            log.warning("the snapshot pool lost %s (%s): not recorded", sha256[:12], self.folder)
            return False
        journal.store_blob(sha256, content)
        return True
