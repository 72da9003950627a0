"""The file journal: what tools did to files, so a revert can undo it (DESIGN.md §2).

Each change is a `_file_edit` record in context.jsonl (path, sha256 before and after, the tool call)
and two blobs, `blobs/<sha256>`, holding the file's content before and after. Blobs are content
addressed, written atomically, and never removed: one blob serves every edit that saw that content.

A blob is written under a temp name and renamed into place, never written in place, and a name
that exists is left alone: so a blob may be a hard link shared with another store (the
snapshots' pool, a fork's session), and no write through one name changes what another holds.
Every blob is 0600 (less the umask): a hard link is made only to a blob no one else may read.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import secrets
import stat
from pathlib import Path

from kode_tui.fsutil import FILE_MODE, fsync_dir, make_private_dir, write_all
from kode_tui.message import FileEditRecord
from kode_tui.session.context import Context

BLOBS_DIR_NAME = "blobs"
_HASH = re.compile(r"[0-9a-f]{64}")


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


class FileJournal:
    """Records the file changes of one session's tools into its context and blob store."""

    def __init__(self, context: Context, blobs_dir: Path | None = None) -> None:
        self._context = context
        self._blobs = blobs_dir or context.path.parent / BLOBS_DIR_NAME

    @property
    def blobs_dir(self) -> Path:
        return self._blobs

    async def record(
        self,
        path: str,
        before: bytes | None,
        after: bytes | None,
        tool_call_id: str | None = None,
    ) -> FileEditRecord:
        """Keep both images of a file a tool just changed (None: the file did not exist)."""
        return await self.note(path, await self.keep(before, after), tool_call_id)

    async def keep(self, before: bytes | None, after: bytes | None) -> tuple[str | None, ...]:
        """Store both images in the blob store; their hashes, for `note`.

        Called before the file is touched: when the store cannot take them (a full disk), the
        edit is refused instead of being made without a way to undo it.
        """
        return tuple(await asyncio.to_thread(self._store, before, after))

    async def note(
        self, path: str, hashes: tuple[str | None, ...], tool_call_id: str | None = None
    ) -> FileEditRecord:
        """Write the `_file_edit` record of a change whose images `keep` stored."""
        before_hash, after_hash = hashes
        edit = FileEditRecord(
            path=path, before=before_hash, after=after_hash, tool_call_id=tool_call_id
        )
        await self._context.append_file_edit(edit)
        return edit

    def blob(self, sha256: str) -> bytes | None:
        """The content with this hash, or None when the store does not have it intact.

        A session folder may come from anywhere and its records name the blobs: a name that is
        no hash (`../../.ssh/id_rsa`), a pipe, or a link whose content does not hash to its
        name is none, so a revert never writes a file from outside the store.
        """
        if not _HASH.fullmatch(sha256):
            return None
        content = _read_regular(self._blobs / sha256)
        return content if content is not None and digest(content) == sha256 else None

    def blob_exists(self, sha256: str) -> bool:
        return _HASH.fullmatch(sha256) is not None and (self._blobs / sha256).is_file()

    def _store(self, *contents: bytes | None) -> list[str | None]:
        hashes: list[str | None] = []
        for content in contents:
            if content is None:
                hashes.append(None)
                continue
            sha = digest(content)
            self.store_blob(sha, content)
            hashes.append(sha)
        return hashes

    def store_blob(self, sha256: str, content: bytes) -> None:
        """Keep `content` (whose hash is `sha256`) durably unless the store has it (blocking)."""
        store_blob(self._blobs, sha256, content)

    def take_blob(self, sha256: str, source: Path) -> bool:
        """Add the blob `source` of another store (the snapshots' pool) as `sha256`, a hard link
        to it when both are on one file system, else a copy; False when its content does not
        have that hash (or it cannot be read). Its content is durable when this returns, its
        name after `sync_blobs` (blocking)."""
        return take_blob(self._blobs, sha256, source)

    def sync_blobs(self) -> None:
        """Make the names `take_blob` added durable."""
        fsync_dir(self._blobs)


def _read_regular(path: Path) -> bytes | None:
    """The whole content of `path` when it is a regular file (opened without blocking: a pipe
    put where a blob is expected must not hang a revert), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            return None
        return file.read()


def store_blob(folder: Path, sha256: str, content: bytes, *, durable: bool = True) -> None:
    """Keep `content` (whose hash is `sha256`) in the blob store `folder` unless it has it.

    Not `durable`: written and renamed into place without an fsync, for thousands at once (the
    snapshots' pool, a cache whose blobs are checked against their hash when used).
    """
    target = folder / sha256
    if target.exists():
        return
    make_private_dir(folder)
    _write_blob(target, content, sync=durable)
    if durable:
        fsync_dir(folder)


def take_blob(folder: Path, sha256: str, source: Path) -> bool:
    """`FileJournal.take_blob` for the blob store `folder`."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            return False
        with os.fdopen(fd, "rb", closefd=False) as file:
            content = file.read()
        if digest(content) != sha256:
            return False
        make_private_dir(folder)
        target = folder / sha256
        if not found.st_mode & 0o077:  # only its owner may read it, shared as well
            os.fsync(fd)  # the pool writes without one; the link shares these very bytes
            if _link(source, target, found):
                return True
        # Another file system, no hard links there, a mode that is not ours, or the name taken
        # by something else: the copy replaces the name.
        _write_blob(target, content, sync=True)
        return True
    finally:
        os.close(fd)


def _link(source: Path, target: Path, expected: os.stat_result) -> bool:
    """Whether `target` could be made a hard link to `source`, the file `expected` (checked:
    the name `source` may have been replaced since it was opened)."""
    try:
        os.link(source, target)
        linked = os.lstat(target)
    except OSError:
        return False
    return (linked.st_dev, linked.st_ino) == (expected.st_dev, expected.st_ino)


def _write_blob(target: Path, content: bytes, *, sync: bool) -> None:
    """Write `content` under a temp name (0600, less the umask) and rename it over `target`,
    with an fsync of the file when `sync` (of the folder: the caller's)."""
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, FILE_MODE)
    try:
        try:
            write_all(fd, content)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
