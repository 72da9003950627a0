"""One writer per session: an exclusive flock on the session's `lock` file.

The kernel drops the lock when the holder dies, so a crash never leaves a session locked.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from kode_tui.fsutil import FILE_MODE, write_all


class SessionLocked(RuntimeError):
    """Another process (or another Context in this one) is writing this session."""

    def __init__(self, path: Path, pid: int | None) -> None:
        self.path = path
        self.pid = pid
        holder = f"process {pid}" if pid else "another process"
        super().__init__(
            f"{path.parent} is in use by {holder}; close that kode-tui first, "
            "or open another session"
        )


class SessionLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise SessionLocked(self.path, pid) from None
        try:
            os.ftruncate(fd, 0)
            write_all(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass  # the pid only names the holder to a second opener; a full disk must not stop us
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        # Closing drops the flock; the file stays (unlinking it would race with a new holder).
        os.close(self._fd)
        self._fd = None


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None
