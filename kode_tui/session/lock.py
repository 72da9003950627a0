"""One writer per session: an exclusive flock on the session's `lock` file.

The kernel drops the lock when the holder dies, so a crash never leaves a session locked.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from time import monotonic, sleep

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


_OWN_PID_WAIT = 1.0
"""How long a lock whose file names this process is tried again: a child process forked by
another thread (a git or shell run) shares our lock's open file until it execs; a real second
holder in this process is reported after this wait."""


class SessionLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock, or raise SessionLocked naming its holder. Blocking: when the pid in
        the file is this process's own, the holder may be a child being spawned by another
        thread, which holds our descriptors until it runs its program (`_OWN_PID_WAIT`)."""
        if self._fd is not None:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        deadline = monotonic() + _OWN_PID_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pid = _read_pid(fd)
                if pid == os.getpid() and monotonic() < deadline:
                    sleep(0.01)
                    continue
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
