"""The file journal: what tools did to files, so a revert can undo it (DESIGN.md §2).

Each change is a `_file_edit` record in context.jsonl (path, sha256 before and after, the tool call)
and two blobs, `blobs/<sha256>`, holding the file's content before and after. Blobs are content
addressed, written atomically, and never removed: one blob serves every edit that saw that content.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import secrets
import stat
from pathlib import Path

from kode_tui.fsutil import atomic_write_bytes, make_private_dir
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
    if durable:
        atomic_write_bytes(target, content)
        return
    tmp = target.with_name(f".{sha256}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(content)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
