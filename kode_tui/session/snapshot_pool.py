"""The snapshots' pool: one store per work dir, shared by all its sessions (`session.snapshot`).

A snapshot must keep the content of every file it sees: when a Shell command later changes a
file, its old content is gone from the disk, and a revert needs it. Kept in each session's own
folder, that cost a whole copy of the work dir (every file up to the size limit) at the start
of every session. The pool keeps it once per work dir instead:

- `blobs/<sha256>`: the content of every file a snapshot read, written without an fsync each
  (thousands at a baseline), under a temp name renamed into place: a blob's name never gets
  another content, and no blob is ever written in place.
- `index.json`: the newest scan of the work dir by any session: per file (size, mtime_ns,
  ctime_ns, inode, sha256), and the work dir's path. A new session's first snapshot takes from
  it every file whose stat is unchanged, so it reads only what changed since the work dir's
  last session.
- `lock`: held shared (flock) by every session that uses the pool, from its first snapshot to
  its close; a collection (`session.pool_gc`) takes it exclusively, so it never removes what a
  running session may still copy.

A session's records name only blobs in its own folder: when a snapshot records a change, the
content before and after is checked against its hash and given to the session's blobs, as a
hard link to the pool's blob when both are on one file system (else as a copy), its data and
its name durable before the record is written. So the session folder alone is enough to
revert, export or open it elsewhere, the bytes are on the disk once, and the pool is a cache:
a blob lost in a crash or a collection (or the whole pool deleted while no session runs)
costs the next baseline a read, never a wrong revert: a change whose old content the pool no
longer has is left unrecorded, with a warning.

Files that look like secrets (`looks_secret`: `.env` files, keys, credentials) are never kept
in the pool nor named in its index: a snapshot holds their contents in memory only, and they
reach the session's blobs only when a tool or a Shell command changes them (the change is then
recorded, so that a revert can undo it).
"""

from __future__ import annotations

import fcntl
import fnmatch
import json
import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import msgspec

from kode_tui.fsutil import FILE_MODE, atomic_write_bytes, make_private_dir
from kode_tui.session.journal import FileJournal, store_blob

log = logging.getLogger(__name__)

INDEX_NAME = "index.json"
SESSION_INDEX_NAME = "snapshot.json"
"""A session's own index, in its folder: the work dir's files as that session last saw them."""
LOCK_NAME = "lock"
_VERSION = 2
"""Version 1 had no ctime: its entries load with a ctime of 0, so every file is read again."""

SECRET_PATTERNS = (
    ".env*", "*.env", ".netrc", "_netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials",
    ".htpasswd", "credentials*", "secrets.*", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", "*.tfvars", "*.tfstate",
)  # fmt: skip
"""A work dir file whose name matches one of these (any case) looks like it holds secrets."""
_SECRET = re.compile("|".join(fnmatch.translate(p) for p in SECRET_PATTERNS), re.IGNORECASE)
_SHA256 = re.compile(r"[0-9a-f]{64}")
_new = tuple.__new__


class Entry(NamedTuple):
    """One file as a snapshot saw it. An mtime_ns or ctime_ns of 0 is never taken as unchanged:
    a file changed right before the scan, a secret's entry in a session's index, an index of
    version 1."""

    size: int
    mtime_ns: int
    ctime_ns: int
    """Set by the kernel at every change (content, mode, a restored mtime): no program can put
    it back, so a file rewritten in place with its size and mtime kept is still read again."""
    inode: int
    sha256: str


class Index(msgspec.Struct, frozen=True):
    files: dict[str, Entry]
    work_dir: str | None
    """The work dir, in a pool's index (None in a session's and in version 1)."""


def looks_secret(path: str) -> bool:
    """Whether a work dir file (its relative path) looks like it holds secrets: its name matches
    one of `SECRET_PATTERNS`, in any case."""
    return _SECRET.match(path[path.rfind("/") + 1 :]) is not None


def read_index(path: Path) -> Index:
    """The index at `path` (a session's `snapshot.json` or a pool's); OSError when it cannot be
    read (FileNotFoundError: there is none), ValueError when it is damaged or of a version
    this kode-tui does not know."""
    try:
        data = json.loads(path.read_bytes())
        version, rows = data["version"], data["files"]
        # tuple.__new__: a third faster than Entry(...) on 10,000 files (a session's start).
        if version == 1:
            files = {
                str(name): _new(Entry, (int(size), int(mtime), 0, int(inode), str(sha)))
                for name, (size, mtime, inode, sha) in rows.items()
            }
        elif version == _VERSION:
            files = {
                str(name): _new(Entry, (int(size), int(mtime), int(ctime), int(inode), str(sha)))
                for name, (size, mtime, ctime, inode, sha) in rows.items()
            }
        else:
            raise ValueError(f"{path} is of version {version!r}")
        work_dir = data.get("work_dir")
    except (AttributeError, KeyError, TypeError, RecursionError) as error:
        raise ValueError(f"{path} is damaged: {error!r}") from error
    return Index(files, work_dir if isinstance(work_dir, str) else None)


def load_index(path: Path) -> dict[str, Entry] | None:
    """The files of the index at `path`; None when there is none yet or it is damaged (then a
    new baseline reads the files)."""
    try:
        return read_index(path).files
    except (OSError, ValueError):
        return None


def save_index(path: Path, files: dict[str, Entry], work_dir: Path | None = None) -> None:
    """Write an index crash-safely (temp, fsync, rename)."""
    data: dict[str, object] = {"version": _VERSION, "files": files}
    if work_dir is not None:
        data["work_dir"] = str(work_dir)
    make_private_dir(path.parent)
    text = json.dumps(data, separators=(",", ":"))
    atomic_write_bytes(path, text.encode("utf-8", "surrogatepass"))


class SnapshotPool:
    """The blobs and the newest index of one work dir's snapshots."""

    def __init__(self, folder: Path, work_dir: Path | None = None) -> None:
        self.folder = folder
        self.work_dir = work_dir
        self.blobs = folder / "blobs"
        self.index_path = folder / INDEX_NAME
        self.lock_path = folder / LOCK_NAME
        self._lock_fd: int | None = None

    def keep(self, sha256: str, content: bytes) -> None:
        """Hold a file's content (blocking; no fsync: see the module's docstring)."""
        store_blob(self.blobs, sha256, content, durable=False)

    def hints(self) -> dict[str, Entry]:
        """The newest scan of the work dir by any session (empty when there is none)."""
        return load_index(self.index_path) or {}

    def save_hints(self, files: dict[str, Entry]) -> None:
        save_index(self.index_path, files, self.work_dir)

    def adopt(self, hashes: Iterable[str], journal: FileJournal) -> set[str]:
        """Make the session's blob store hold these contents, durably, before a record names
        them (blocking); of those neither store has intact (their changes cannot be recorded),
        the hashes."""
        lost: set[str] = set()
        taken = False
        for sha in hashes:
            if journal.blob_exists(sha):
                continue
            # A hash from a session's index file: only a real one may become a file name.
            if _SHA256.fullmatch(sha) and journal.take_blob(sha, self.blobs / sha):
                taken = True
                continue
            log.warning("the snapshot pool lost %s (%s): not recorded", sha[:12], self.folder)
            lost.add(sha)
        if taken:
            journal.sync_blobs()  # the new names, once for them all
        return lost

    def hold(self) -> None:
        """Take the pool's lock shared, for as long as this session may use the pool (blocking:
        a collection of the pool holds it for a moment)."""
        while self._lock_fd is None:
            make_private_dir(self.folder)
            fd = os.open(self.lock_path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH)
                held = os.fstat(fd)
                named = os.stat(self.lock_path)
            except FileNotFoundError:
                os.close(fd)  # a collection removed the whole pool meanwhile: make it again
                continue
            except BaseException:
                os.close(fd)
                raise
            if (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino):
                self._lock_fd = fd
            else:
                os.close(fd)

    def release(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)  # drops the flock


def lock_exclusively(folder: Path) -> int | None:
    """The open lock file of the pool in `folder`, locked exclusively; None when a session
    holds it. Closing the descriptor unlocks it."""
    fd = os.open(folder / LOCK_NAME, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
