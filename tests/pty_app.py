"""The real `kode-tui` in a pseudo-terminal: start it, type into it, wait for text, kill it.

No tmux needed: the app gets a 120x36 pty of its own, and a thread drains what it draws so it
never blocks on a full terminal. Text is looked for in the raw output, which holds each word
Textual draws in one piece (the e2e test in tmux reads the screen as a person sees it).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import signal
import struct
import sys
import termios
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

KODE = Path(sys.executable).parent / "kode-tui"


class PtyApp:
    """`kode-tui ARGS` running in a rows x cols pseudo-terminal with exactly `env`."""

    def __init__(
        self,
        args: Sequence[str],
        env: Mapping[str, str],
        *,
        rows: int = 36,
        cols: int = 120,
    ) -> None:
        argv = [str(KODE), *args]
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: size its terminal, then become kode-tui
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
                os.execve(argv[0], argv, dict(env))
            finally:
                os._exit(127)
        self._output = bytearray()
        self._lock = threading.Lock()
        self.status: int | None = None
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self._output += chunk

    @property
    def output(self) -> bytes:
        with self._lock:
            return bytes(self._output)

    def output_since(self, mark: int) -> bytes:
        with self._lock:
            return bytes(self._output[mark:])

    def mark(self) -> int:
        """A position in the output, for `wait_for(..., since=mark)`."""
        with self._lock:
            return len(self._output)

    def type(self, text: str, *, pause: float = 0.02) -> None:
        """Type `text` a key at a time ("\\r" is Enter)."""
        for char in text:
            os.write(self.fd, char.encode())
            time.sleep(pause)

    def wait_for(
        self, what: str | Callable[[], bool], *, timeout: float = 60, since: int = 0
    ) -> None:
        """Until `what` has been drawn (after output position `since`), or `what()` is true.
        The timeout is a safety net: a loaded machine starts the app slowly."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if isinstance(what, str):
                if what.encode() in self.output_since(since):
                    return
            elif what():
                return
            if self.exited():
                raise AssertionError(f"kode-tui exited ({self.status}) while waiting for {what!r}")
            time.sleep(0.02)
        raise AssertionError(
            f"timed out waiting for {what!r}; the tail of the output:\n{self.tail()}"
        )

    def tail(self, size: int = 3000) -> str:
        return self.output[-size:].decode(errors="replace")

    def exited(self) -> bool:
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
        return self.status is not None

    def wait_exit(self, timeout: float = 30) -> int:
        """The exit code, once the app has ended by itself."""
        deadline = time.monotonic() + timeout
        while not self.exited():
            if time.monotonic() > deadline:
                raise AssertionError(f"kode-tui did not exit; the tail:\n{self.tail()}")
            time.sleep(0.02)
        assert self.status is not None
        return os.waitstatus_to_exitcode(self.status)

    def kill(self) -> None:
        """SIGKILL: no handler, no finally, no flush runs in the app."""
        if not self.exited():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            _, self.status = os.waitpid(self.pid, 0)

    def close(self) -> None:
        self.kill()
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self._reader.join(timeout=2)
