"""Small crash-safe file operations: the one atomic writer, and the session engine's helpers.

Two kinds of files are written, by one recipe (temp file, fsync, rename, fsync the folder):
a user's files (`write_atomically`: through symlinks, keeping their mode) and our own files
(`atomic_write_bytes`: new ones 0600, old ones keeping their mode, the name itself replaced).
Session directories we create are 0700 and the files in them 0600: a session holds source code
and command output that other users of the machine have no business reading. A session Kimi CLI
made (0644 files) keeps the modes it has when we rewrite its files.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import sys
from pathlib import Path
from typing import Any

from kode_tui.masking import mask_bytes, mask_json

DIR_MODE = 0o700
FILE_MODE = 0o600


def make_private_dir(path: Path) -> None:
    """Create `path` (and missing parents) as 0700; an existing directory is left as it is."""
    if path.is_dir():
        return
    make_private_dir(path.parent)
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        return
    os.chmod(path, DIR_MODE)  # the umask may have taken bits away


def fsync_dir(path: Path) -> None:
    """Make renames and new names in `path` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_regular(path: Path, limit: int, *, tail: bool = False) -> bytes | None:
    """The first (with `tail`, the last) `limit` bytes of `path` when it is a regular file,
    else (or on error) None.

    Opened without blocking and checked on the open file: a FIFO (or a link to one, or to
    /dev/zero) swapped in after a check must not hang the caller or fill the memory.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as file:
            if tail:
                file.seek(max(os.fstat(fd).st_size - limit, 0))
            return file.read(limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FileChanged(Exception):
    """The file no longer holds what the write was computed from."""


UNCHECKED: Any = object()
"""`expected` when the file's content before the write does not matter."""


def write_atomically(path: Path, data: bytes, *, expected: object = UNCHECKED) -> None:
    """Replace a user's file (the agent's edits, a revert) with `data`, crash-safe.

    A symlink is written through: the file it points to gets `data` and the link stays, as
    with any editor. An existing file keeps its mode bits (and owner, when we may set it); a
    new one gets 0666 less the umask, like any file a program creates. Missing parent
    directories are created. With `expected` (bytes, or None for "no file"), the file is
    compared with it right before the rename, and `FileChanged` is raised instead of replacing
    an edit made meanwhile.
    """
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        old: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        old = None
    keep = None if old is None else (stat.S_IMODE(old.st_mode), old.st_uid, old.st_gid)
    _write_and_rename(target, data, 0o666, keep, expected)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace one of our own files (state.json, blobs, config.toml) with `data`, crash-safe.

    A new file is 0600; a regular file already there keeps its mode (a Kimi CLI session's
    files are 0644, and rewriting one must not change who may read it). The name itself is
    replaced, a symlink there too: a session folder can come from elsewhere (`--session-dir`),
    and a link planted in it must not make us write outside it. (config.toml, which a user may
    link from their dotfiles, is resolved by its caller on purpose.)
    """
    _write_and_rename(path, data, FILE_MODE, (kept_mode(path), -1, -1), UNCHECKED)


def kept_mode(path: Path) -> int:
    """The mode a rewrite of our file `path` gets: that of the regular file there (not followed
    through a symlink), else FILE_MODE."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return FILE_MODE
    return stat.S_IMODE(found.st_mode) if stat.S_ISREG(found.st_mode) else FILE_MODE


def _write_and_rename(
    target: Path,
    data: bytes,
    create_mode: int,
    keep: tuple[int, int, int] | None,
    expected: object,
) -> None:
    """The one recipe: write a temp file beside `target`, fsync, rename over it, fsync the
    directory, so `target` holds its old or its new content at every instant."""
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    # O_EXCL: never write into a file someone else made; `create_mode` goes through the umask.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, create_mode)
    try:
        try:
            if keep is not None:
                mode, uid, gid = keep
                os.fchmod(fd, mode)  # the umask may have taken bits away
                if uid != -1:
                    with contextlib.suppress(PermissionError):
                        # Only root may give a file away; then the owner stays who it was.
                        os.fchown(fd, uid, gid)
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        # Last moment before the rename: the window left for another writer is tiny.
        if expected is not UNCHECKED and _current(target) != expected:
            raise FileChanged(str(target))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def _current(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def atomic_write_json(path: Path, obj: Any) -> None:
    """Replace `path` with `obj` as JSON, API keys masked (state.json, kode.json)."""
    # Masked before it is encoded: a replacement in the encoded text could break an escape.
    atomic_write_bytes(
        path, (json.dumps(mask_json(obj), ensure_ascii=False, indent=2) + "\n").encode()
    )


def append_line(path: Path, line: str, *, durable: bool = False) -> None:
    """Append one line to a small log file (created 0600), handed to the OS before returning
    (`durable`: on disk); API keys in it are masked (rotations.jsonl)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, FILE_MODE)
    try:
        size = os.fstat(fd).st_size
        data = mask_bytes((line + "\n").encode())  # masked inside its JSON strings
        if size and os.pread(fd, 1, size - 1) != b"\n":
            # A torn last line (a crash; a cut that failed too) must not swallow this one.
            data = b"\n" + data
        try:
            write_all(fd, data)
        except OSError:
            # A torn line (a full disk) would swallow the next one: cut it off.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
        if durable:
            sync_data(fd)
    finally:
        os.close(fd)


def copy_range(src_fd: int, dst_fd: int, start: int, end: int) -> None:
    """Copy bytes [start, end) of `src_fd` to the end of `dst_fd`, inside the kernel when it can
    (copy_file_range), else through a buffer.

    The copy goes in 4 MB steps and asks the kernel to start writing each step to disk at once
    (POSIX_FADV_DONTNEED starts writeback of dirty pages), so the fsync that follows waits for
    little: a 35 MB prefix is copied and durable in ~8 ms instead of ~11 ms.
    """
    offset = start
    base = os.lseek(dst_fd, 0, os.SEEK_CUR) - start
    in_kernel = hasattr(os, "copy_file_range")
    while offset < end:
        step = min(_COPY_STEP, end - offset)
        copied = 0
        if in_kernel:
            try:
                copied = os.copy_file_range(src_fd, dst_fd, step, offset)
            except OSError:
                in_kernel = False  # e.g. across file systems on old kernels
        if not copied:
            chunk = os.pread(src_fd, step, offset)
            if not chunk:
                raise OSError(f"copy stopped at byte {offset} of {end}: the source is shorter")
            write_all(dst_fd, chunk)
            copied = len(chunk)
        if _START_WRITEBACK:
            os.posix_fadvise(dst_fd, base + offset, copied, os.POSIX_FADV_DONTNEED)
        offset += copied


_COPY_STEP = 4 << 20
_START_WRITEBACK = hasattr(os, "posix_fadvise") and sys.platform == "linux"


def sync_data(fd: int) -> None:
    """fdatasync where there is one: the data and the size, without the timestamps."""
    if hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:
        os.fsync(fd)
